// The Auto page in a real browser against a server whose autopilot ticks
// every second, on a campaign with real batches: a settings refusal shown in
// words, the fix saved, the explain panel's guards, auto on launching a batch
// (pushed to the page), the hold while it runs, and off — no console errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { closeConsole, consoleCampaign, startServer, startBrowser, watchErrors } from './support.mjs';

let server;
let browser;
let root;

before(async () => {
  root = consoleCampaign('runboard-e2e-auto-', {
    name: 'e2e auto',
    command: `["sh", "-c", "sleep 4; printf '{{\\"tokens\\": 100, \\"score\\": 0.5}}' > {out}/result.json"]`,
  });
  server = await startServer(['--root', root, '--auto-tick', '1']);
  browser = await startBrowser();
});

// The batch auto mode launched is ended (turning auto off leaves it running).
after(() => closeConsole({ server, browser, root }));

test('auto page: a refused setting in words, explain, on launches and holds, off', async () => {
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/auto`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  assert.equal(await page.getAttribute('.auto-mode', 'data-mode'), 'off');
  assert.match(await page.textContent('.explain .verdict'), /^off/);

  // No model enabled: the server refuses the settings and the page says why.
  await page.check('input[name="tasks_t1"]');
  await page.click('button.save-settings');
  await page.waitForSelector('form.auto-settings .refusal');
  assert.match(await page.textContent('form.auto-settings .refusal'), /enable at least one model/);

  // Fixed and saved: the explain panel lists every guard.
  await page.check('input[name="models_local-m"]');
  await page.fill('input[name="max_cells"]', '2');
  await page.dispatchEvent('input[name="max_cells"]', 'change');
  await page.fill('input[name="wait_minutes"]', '0');
  await page.dispatchEvent('input[name="wait_minutes"]', 'change');
  await page.click('button.save-settings');
  await page.waitForSelector('form.auto-settings .said.ok');
  // The explain panel is fetched again after the save: wait for its new
  // answer rather than reading the one from before it.
  await page.waitForFunction(
    () => /valid/.test(document.querySelector('tr.guard[data-guard="settings"]')?.textContent ?? ''),
    null, { timeout: 10_000 });
  assert.match(await page.textContent('tr[data-guard="mode"]'), /off/);

  // On: the loop launches a batch within a tick or two; the page follows it.
  await page.click('button.auto-on');
  await page.waitForSelector('.auto-mode[data-mode="on"]', { timeout: 10_000 });
  await page.waitForSelector('tr.lane.status-busy', { timeout: 20_000 });
  await page.waitForSelector('tr[data-event="batch_launched"]', { timeout: 10_000 });
  await page.waitForFunction(() => /its batch .* is running/.test(document.querySelector('.auto-mode .words')?.textContent ?? ''), null, { timeout: 15_000 });
  assert.match(await page.textContent('.explain .verdict'), /holds, because its batch .* is running/);
  // The headline and the tick preview come from one evaluation: they agree.
  const verdict = (await page.textContent('.explain .verdict')).trim();
  const headline = (await page.textContent('.auto-mode .words')).trim();
  const unit = verdict.match(/its batch (\S+)/)[1];
  assert.match(headline, /^Holds since .*: /);
  assert.ok(headline.includes(unit), `the headline names what the preview names: ${headline} / ${verdict}`);
  assert.match(await page.textContent('tr[data-guard="current batch"]'), /holds/);

  await page.click('button.auto-off');
  await page.waitForSelector('.auto-mode[data-mode="off"]', { timeout: 10_000 });
  // Every control this page made is a line of the audit log, the refused
  // save too, newest first: off, on, the saved settings, the refused one.
  await page.waitForFunction(() => document.querySelector('table.audit tbody tr')?.dataset.op === 'auto_mode'
    && /"mode":"off"/.test(document.querySelector('table.audit tbody tr')?.textContent ?? ''), null, { timeout: 10_000 });
  const controls = await page.$$eval('table.audit tbody tr', rows => rows.map(r => [r.dataset.op, r.className, r.querySelector('.from').textContent]));
  assert.deepEqual(controls.slice(0, 2).map(c => c[0]), ['auto_mode', 'auto_mode']);
  assert.ok(controls.some(c => c[0] === 'auto_settings' && c[1] === 'refused'), `the refused save is recorded: ${JSON.stringify(controls)}`);
  assert.ok(controls.some(c => c[0] === 'auto_settings' && c[1] === 'ok'), JSON.stringify(controls));
  assert.ok(controls.every(c => /\(page\)$/.test(c[2])), `each from a page: ${JSON.stringify(controls)}`);
  // The one refused save answered 422, which the browser logs; nothing else.
  assert.deepEqual(errors, ['Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)'], 'no other console errors');
  await page.close();
});
