// The console in a real browser on its own campaign, with real batches: the
// coverage, a draft, a preflight refusal shown in words, the fix, the launch,
// then the live view through starting, running, pause (stopped, resumable),
// resume, and stop and abort (aborted, Resume gone) — with no console errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { consoleCampaign, startServer, startBrowser, watchErrors } from './support.mjs';

let server;
let browser;
let root;

before(async () => {
  root = consoleCampaign('runboard-e2e-console-', {
    name: 'e2e console',
    command: `["sh", "-c", "sleep 3; printf '{{\\"tokens\\": 100, \\"score\\": 0.5}}' > {out}/result.json"]`,
    models: '[[models]]\nname = "paid-m"\nkind = "paid"\ndaily_cap = 1\nprice_per_1k_tokens = 2.0\n',
  });
  // The paid model was already launched once today: its daily cap is reached.
  mkdirSync(join(root, 'runsets'));
  writeFileSync(join(root, 'runsets', 'run_index.csv'),
    'run_set,spec,label,launched_at,kind,launcher,unit,tag,cells,model,endpoint\n'
    + `earlier,specs/committed/0001-x.json,x,${new Date().toISOString()},launch,local,rb-earlier,console,1,paid-m,\n`);
  server = await startServer(['--root', root]);
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

test('coverage, a refused draft fixed, launch, pause, resume, stop and abort', async () => {
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/coverage`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  assert.match(await page.textContent('p.totals'), /8 gaps of 8/);
  // Each square says its numbers in words on hover.
  const title = await page.getAttribute('td.square[data-row="base"][data-col="t1"]', 'title');
  assert.match(title, /condition = base, task = t1: 4 gaps of 4/);

  // A draft on the paid model: the preflight refuses it, in words, beside Launch.
  await page.fill('input[name="label"]', 'e2e');
  await page.fill('input[name="max_cells"]', '4');
  await page.selectOption('select[name="model"]', 'paid-m');
  await page.click('button.preview');
  await page.waitForSelector('.draft-preview .draft-count');
  assert.match(await page.textContent('.draft-preview .draft-count'), /4 cells drafted of 4 eligible/);
  assert.match(await page.textContent('ul.held-back'), /earlier phase "warmup" is not covered yet/);
  await page.click('button.save');
  await page.waitForSelector('.preflight-refusals .reason');
  assert.match(await page.textContent('.preflight-refusals'), /daily cap of 1 batch\(es\) is reached/);
  assert.equal(await page.isDisabled('button.launch'), true, 'Launch is held while the preflight refuses');

  // The fix: the local model on its endpoint. The preflight passes; launch.
  await page.selectOption('select[name="model"]', '');
  await page.selectOption('select[name="endpoint"]', 'gpu-a');
  await page.click('button.save');
  await page.waitForSelector('.preflight-ok');
  await page.click('button.launch');
  await page.waitForURL(/\/live$/);
  await page.waitForSelector('.live-state[data-state="starting"], .live-state[data-state="running"]', { timeout: 20_000 });
  await page.waitForSelector('.live-state[data-state="running"]', { timeout: 20_000 });
  assert.equal(await page.locator('tr.cell').count(), 4);

  // Pause: stopped before completion, resumable.
  await page.click('button.pause');
  await page.waitForSelector('.live-state[data-state="stopped_resumable"]', { timeout: 20_000 });
  assert.match(await page.textContent('.live-state .words'), /can be resumed/);
  // Resume: running again.
  await page.click('button.resume');
  await page.waitForSelector('.live-state[data-state="running"]', { timeout: 20_000 });
  // Stop and abort: aborted, and Resume is gone.
  await page.click('button.stop');
  await page.waitForSelector('.live-state[data-state="aborted"]', { timeout: 20_000 });
  assert.match(await page.textContent('p.said'), /Auto mode was turned off/);
  assert.equal(await page.locator('button.resume').count(), 0, 'no Resume after an abort');

  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
