// Upkeep in the browser: a draft forgotten for weeks and a killed writer's
// temporary file are listed on the Upkeep page with their actions; each
// action asks first, naming what it does, and the finding goes once done.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { closeConsole, consoleCampaign, postJson, startServer, startBrowser, watchErrors } from './support.mjs';

let server;
let browser;
let root;

before(async () => {
  root = consoleCampaign('runboard-e2e-upkeep-', { name: 'e2e upkeep', command: JSON.stringify(['true']) });
  server = await startServer(['--root', root]);
  browser = await startBrowser();
});

after(() => closeConsole({ server, browser, root }));

test('a stale draft and a dead writer\'s temporary file are listed and cleared after a confirmation', async () => {
  const saved = await postJson(server.url, '/api/drafts', { label: 'forgotten', max_cells: 1, endpoint: 'gpu-a' });
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  const draft = join(root, saved.body.path);
  const weeksAgo = new Date(Date.now() - 20 * 86_400_000);
  utimesSync(draft, weeksAgo, weeksAgo);
  // A process that has ended: its pid names the writer that left the file.
  const deadPid = Number(execFileSync('sh', ['-c', 'sh -c "echo \\$\\$"']).toString().trim());
  const temp = join(root, 'specs', 'drafts', `.forgotten.json.tmp-${deadPid}-0`);
  writeFileSync(temp, '{"half":');
  const hourAgo = new Date(Date.now() - 3_600_000);
  utimesSync(temp, hourAgo, hourAgo);

  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/upkeep`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  const draftRow = `li.finding[data-kind="stale_draft"][data-target="${saved.body.path}"]`;
  await page.waitForSelector(draftRow);
  assert.match(await page.textContent(`${draftRow} .words`), /unchanged since .* \(over 14 days\)/);
  assert.ok(await page.$('li.finding[data-kind="temp_file"]'), 'the temporary file is listed');
  assert.ok(await page.$('table.disk'), 'disk use is shown');

  // Dismissing the question does nothing.
  let asked = '';
  page.once('dialog', (d) => { asked = d.message(); d.dismiss(); });
  await page.click(`${draftRow} button.act`);
  assert.match(asked, /^Delete the draft specs\/drafts\/.*\? It was never launched/);
  assert.ok(existsSync(draft), 'kept when not confirmed');

  // Accepting it deletes the draft, says so, and the finding goes.
  page.once('dialog', (d) => d.accept());
  await page.click(`${draftRow} button.act`);
  await page.waitForSelector('p.said.ok');
  assert.match(await page.textContent('p.said.ok'), /^Done: deleted the draft specs\/drafts\/.* \(\d[\d.]* (B|KiB|MiB) freed\)\.$/);
  await page.waitForSelector(draftRow, { state: 'detached' });
  assert.ok(!existsSync(draft), 'the draft is gone');

  page.once('dialog', (d) => d.accept());
  await page.click('li.finding[data-kind="temp_file"] button.act');
  await page.waitForSelector('li.finding[data-kind="temp_file"]', { state: 'detached' });
  assert.ok(!existsSync(temp), 'the temporary file is swept');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
