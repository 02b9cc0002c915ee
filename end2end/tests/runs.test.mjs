// The Runs page in a real browser: hydration, demo runs, an unreadable run with
// its reason, a new run appearing without a reload, filters in the URL, no errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { demoSession, watchErrors, workspace } from './support.mjs';

const session = demoSession();

test('the runs page hydrates, lists the demo, and follows the disk', async () => {
  const page = await session.browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${session.server.url}/runs`);
  // Only the WASM app sets this marker; server rendering cannot.
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });

  for (const name of ['explore-qwen', 'momentum-qwen', 'reversal-llama', 'crashed-qwen', 'broken-snapshot']) {
    await page.waitForSelector(`tr[data-run="${name}"]`);
  }
  const broken = await page.textContent('tr[data-run="broken-snapshot"] .status');
  assert.match(broken, /unreadable: snapshot\.json: line 3 column \d+: EOF while parsing a value/);
  const crashed = await page.textContent('tr[data-run="crashed-qwen"] .status');
  assert.match(crashed, /interrupted: process \d+ is gone and no stop was recorded/);
  assert.equal(await page.getAttribute('tr[data-run="explore-qwen"]', 'data-status'), 'running');
  // A run that wrote every planned round is finished — its own word and
  // colour, not stopped's, and the same badge on its own page.
  assert.equal(await page.getAttribute('tr[data-run="momentum-qwen"]', 'data-status'), 'finished');
  assert.equal((await page.textContent('tr[data-run="momentum-qwen"] .badge')).trim(), 'finished');
  const colour = (sel) => page.$eval(sel, (e) => getComputedStyle(e).backgroundColor);
  const finished = await colour('tr[data-run="momentum-qwen"] .badge');
  const colours = new Set([finished, await colour('tr[data-run="explore-qwen"] .badge'),
    await colour('tr[data-run="crashed-qwen"] .badge'), await colour('tr[data-run="broken-snapshot"] .badge')]);
  assert.equal(colours.size, 4, 'finished, running, interrupted and unreadable differ in colour');
  const options = await page.$$eval('select.status-filter option', (os) => os.map((o) => o.value));
  for (const s of ['finished', 'stopped', 'interrupted']) assert.ok(options.includes(s), `the filter offers ${s}`);

  // A run appears on disk: the page shows it without a reload.
  await page.evaluate(() => { window.__sameDocument = true; });
  const campaign = await (await fetch(`${session.server.url}/api/campaign`)).json();
  const dir = join(campaign.root, 'runs', 'e2e', 'appeared-run');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'snapshot.json'), JSON.stringify({
    schema_version: 1, name: 'appeared-run', settings: { model: 'e2e-model', rounds: 2 },
  }));
  await page.waitForSelector('tr[data-run="appeared-run"]', { timeout: 15_000 });
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload happened');
  assert.match(await page.textContent('tr[data-run="appeared-run"] .status'), /starting/);

  // Filters live in the URL and narrow the table.
  await page.selectOption('select.status-filter', 'unreadable');
  await page.waitForFunction(() => document.querySelectorAll('tr.run').length === 1);
  assert.match(page.url(), /status=unreadable/);
  await page.goto(`${session.server.url}/runs?q=reversal`);
  await page.waitForSelector('body[data-hydrated="true"]');
  const shown = await page.$$eval('tr.run', (rows) => rows.map((r) => r.dataset.run));
  assert.deepEqual(shown, ['reversal-llama']);
  await page.goto(`${session.server.url}/runs?status=finished`);
  await page.waitForSelector('body[data-hydrated="true"]');
  const done = await page.$$eval('tr.run', (rows) => rows.map((r) => r.dataset.status));
  assert.ok(done.length >= 4 && done.every((s) => s === 'finished'), `finished only: ${done}`);
  await page.goto(`${session.server.url}/runs/momentum-qwen`);
  await page.waitForSelector('body[data-hydrated="true"]');
  assert.equal((await page.textContent('dd.status .badge')).trim(), 'finished');
  assert.equal(await colour('dd.status .badge'), finished, 'the same colour on the run\'s page');

  if (process.env.RUNBOARD_SCREENSHOT) {
    await page.goto(`${session.server.url}/runs`);
    await page.waitForSelector('body[data-hydrated="true"]');
    await page.screenshot({ path: join(workspace, process.env.RUNBOARD_SCREENSHOT) });
  }
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
