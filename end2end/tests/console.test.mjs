// The console in a real browser on its own campaign, with real batches: the
// coverage, a draft, a preflight refusal shown in words, the fix, the launch,
// then the live view through starting, running, pause (stopped, resumable),
// resume, and stop and abort (aborted, Resume gone) — with no console errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { consoleCampaign, postJson, startServer, startBrowser, watchErrors } from './support.mjs';

let server;
let browser;
let root;

before(async () => {
  root = consoleCampaign('runboard-e2e-console-', {
    name: 'e2e console',
    command: `["sh", "-c", "sleep 3; printf '{{\\"tokens\\": 100, \\"score\\": 0.5}}' > {out}/result.json"]`,
    models: '[[models]]\nname = "paid-m"\nkind = "paid"\ndaily_cap = 1\nprice_per_1k_tokens = 2.0\n'
      + '[[models]]\nname = "paid-n"\nkind = "paid"\nprice_per_1k_tokens = 2.0\n',
    // The graces a new user gets: a pause must still end at once.
    defaultGraces: true,
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
  // Every control that ends work, and a launch with warnings, asks first:
  // the dialogs are answered by `answer` (accept unless told otherwise).
  const dialogs = [];
  let answer = true;
  page.on('dialog', async (d) => { dialogs.push(d.message()); await (answer ? d.accept() : d.dismiss()); });
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
  // The catalogue says gpu-a does not answer: the preflight warns, and the
  // launch asks to confirm, naming it.
  assert.match(await page.textContent('.preflight-warnings'), /the catalogue says: endpoint gpu-a: Not available/);
  await page.click('button.launch');
  await page.waitForURL(/\/live$/);
  assert.match(dialogs.at(-1), /^Launch specs\/drafts\/.*the catalogue says: endpoint gpu-a/s);
  await page.waitForSelector('.live-state[data-state="starting"], .live-state[data-state="running"]', { timeout: 20_000 });
  await page.waitForSelector('.live-state[data-state="running"]', { timeout: 20_000 });
  assert.equal(await page.locator('tr.cell').count(), 4);
  const runSet = (await page.textContent('dd.run-set')).trim();
  // A running batch is never said to have lost its driver, and has no
  // outcome row yet.
  assert.doesNotMatch(await page.textContent('section.live'), /driver is gone/);
  assert.equal(await page.locator('dd.outcome').count(), 0, 'no outcome while it runs');

  // Pause asks first, naming the batch; declined, nothing happens.
  answer = false;
  await page.click('button.pause');
  assert.match(dialogs.at(-1), new RegExp(`^Pause ${runSet}\\?`));
  await page.waitForTimeout(500);
  assert.equal(await page.getAttribute('.live-state', 'data-state'), 'running', 'a declined pause ends nothing');
  answer = true;
  // Pause, on the default graces: stopped at once (not after the runner's
  // 35 s grace), the running cell ended by SIGTERM (143), resumable.
  const asked = Date.now();
  await page.click('button.pause');
  await page.waitForSelector('.live-state[data-state="stopped_resumable"]', { timeout: 20_000 });
  const took = Date.now() - asked;
  assert.ok(took < 5_000, `the pause took ${took} ms`);
  assert.match(await page.textContent('.live-state .words'), /can be resumed/);
  const cellsDir = join(root, 'runsets', runSet, 'cells');
  const records = readdirSync(cellsDir).map((f) => JSON.parse(readFileSync(join(cellsDir, f), 'utf8')));
  const stopped = records.filter((c) => c.status === 'stopped');
  assert.equal(stopped.length, 1, JSON.stringify(records));
  assert.equal(stopped[0].exit_code, 143);
  assert.equal(JSON.parse(readFileSync(join(root, 'runsets', runSet, 'batch_outcome.json'), 'utf8')).status, 'stopped');
  // Resume (offered for the run set by name): running again.
  await page.click(`button.resume[data-run-set="${runSet}"]`);
  await page.waitForSelector('.live-state[data-state="running"]', { timeout: 20_000 });
  // Stop and abort asks first, naming the batch and what it ends.
  await page.click('button.stop');
  assert.match(dialogs.at(-1), new RegExp(`^Stop and abort ${runSet}\\? .*can never be resumed.*auto mode is turned off`));
  await page.waitForSelector('.live-state[data-state="aborted"]', { timeout: 20_000 });
  assert.match(await page.textContent('p.said'), /Auto mode was turned off/);
  assert.equal(await page.locator('button.resume').count(), 0, 'no Resume after an abort');

  // The Overview names the aborted batch under what needs attention.
  await page.goto(`${server.url}/`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  assert.match(await page.textContent('body'), new RegExp(`Aborted by the operator: ${runSet}`));

  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('at phone width the navigation wraps, nothing scrolls sideways, and a skip link leads to the content', async () => {
  const page = await browser.context.newPage();
  await page.setViewportSize({ width: 390, height: 800 });
  for (const path of ['/', '/live', '/coverage', '/runs', '/evidence', '/auto']) {
    await page.goto(`${server.url}${path}`);
    await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
    const fit = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth,
      offscreen: [...document.querySelectorAll('header.topbar nav a')]
        .filter((a) => { const b = a.getBoundingClientRect(); return b.right > window.innerWidth + 1 || b.left < -1; })
        .map((a) => a.textContent),
    }));
    assert.ok(fit.page <= 391, `${path} scrolls sideways: ${fit.page} px wide`);
    assert.deepEqual(fit.offscreen, [], `${path}: nav links off-screen`);
  }
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.className), 'skip-link');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => location.hash), '#main');
  await page.close();
});

test('a paid launch states its predicted cost with the currency and asks first; declined, nothing launches', async () => {
  // History first: one local cell of the task (100 tokens) to predict from.
  const draft = await postJson(server.url, '/api/drafts', { label: 'history', max_cells: 1, endpoint: 'gpu-a' });
  assert.equal(draft.status, 200, JSON.stringify(draft.body));
  const launched = await postJson(server.url, '/api/control/start', { path: draft.body.path });
  assert.equal(launched.status, 200, JSON.stringify(launched.body));
  for (let i = 0; i < 300; i++) {
    const live = await (await fetch(`${server.url}/api/live`)).json();
    if (live.state.state === 'idle') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  const dialogs = [];
  page.on('dialog', async (d) => { dialogs.push(d.message()); await d.dismiss(); });
  await page.goto(`${server.url}/coverage`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  await page.fill('input[name="label"]', 'paid');
  await page.fill('input[name="max_cells"]', '2');
  await page.selectOption('select[name="model"]', 'paid-n');
  await page.click('button.preview');
  await page.waitForSelector('.draft-preview .draft-count');
  await page.click('button.save');
  await page.waitForSelector('.preflight-ok');
  // 2 cells x 100 tokens x 2.0 per 1,000 tokens.
  assert.match(await page.textContent('.preflight-warnings'), /spends money: about 0\.40 USD predicted on paid-n/);
  await page.click('button.launch');
  assert.equal(dialogs.length, 1, 'the launch asked first');
  assert.match(dialogs.at(-1), /^Launch specs\/drafts\/.*spends money: about 0\.40 USD predicted on paid-n/s);
  // Declined: still here, and nothing was launched.
  await page.waitForTimeout(500);
  assert.match(page.url(), /\/coverage$/);
  const live = await (await fetch(`${server.url}/api/live`)).json();
  assert.equal(live.run_set, launched.body.run_set, 'the last batch is still the local one');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
