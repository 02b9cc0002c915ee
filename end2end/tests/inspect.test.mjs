// Real Inspect AI evals as cells, seen in a real browser: a campaign made by
// `runboard init --example inspect` (as a new user would), its cells run by
// the pinned inspect-ai that scripts/setup.sh installs, against the example's
// stand-in model. The Live page shows the cells running, then done, and the
// failed eval with Inspect's reason; the Evidence page counts samples and
// shows what the evidence read answers — each rate Inspect's own accuracy
// (server/tests/inspect.rs checks that against `inspect log dump`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { binary, postJson, startServer, startBrowser, watchErrors, workspace } from './support.mjs';

let server;
let browser;
let root;
let standin;

before(async () => {
  root = join(mkdtempSync(join(tmpdir(), 'runboard-e2e-inspect-')), 'campaign');
  execFileSync(binary, ['init', root, '--example', 'inspect']);
  symlinkSync(join(workspace, '.tools', 'inspect'), join(root, '.venv'));
  // The stand-in model on a free port (the PID we started, stopped after).
  standin = spawn('python3', [join(root, 'standin_model.py'), '--port', '0', '--delay', '0.3'],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the stand-in model printed no address')), 30_000);
    createInterface({ input: standin.stdout }).once('line', (line) => {
      clearTimeout(timer);
      resolve(line.trim().split(' ').at(-1));
    });
  });
  const toml = join(root, 'campaign.toml');
  writeFileSync(toml, readFileSync(toml, 'utf8').replace('http://127.0.0.1:8791/v1', url));
  server = await startServer(['--root', root]);
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  standin?.kill('SIGTERM');
  rmSync(join(root, '..'), { recursive: true, force: true });
});

test('Inspect evals run as cells: Live shows them run and fail with Inspect\'s reason; Evidence counts samples', async () => {
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  const draft = await postJson(server.url, '/api/drafts', { label: 'inspect', max_cells: 10, endpoint: 'standin' });
  assert.equal(draft.status, 200, JSON.stringify(draft.body));
  const launched = await postJson(server.url, '/api/control/start', { path: draft.body.path });
  assert.equal(launched.status, 200, JSON.stringify(launched.body));

  await page.goto(`${server.url}/live`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  // Cells running while Inspect works, then every cell ended.
  await page.waitForSelector('table.cells tr[data-status="running"]', { timeout: 60_000 });
  // Its samples as they finish, from Inspect's own hook, before the cell ends.
  await page.waitForFunction(() => [...document.querySelectorAll('table.cells tr[data-status="running"] .so-far')]
    .some((e) => /^\d+ of 6 samples, \d+ % so far$/.test(e.textContent)), null, { timeout: 60_000 });
  await page.waitForSelector('.live-state[data-state="idle"]', { timeout: 180_000 });
  await page.waitForSelector('table.cells tr[data-status="failed"]');
  assert.equal(await page.locator('table.cells tr[data-status="done"]').count(), 4);
  const failed = await page.textContent('table.cells tr[data-status="failed"]');
  assert.match(failed, /inspect: ValueError\('the grader cannot read this answer'\)/);
  assert.match(await page.textContent('table.cells tr[data-status="done"] >> nth=0'), /of 6 samples/);

  // Evidence: samples counted, each level's passes and n as the read says.
  const evidence = await (await fetch(`${server.url}/api/evidence?by=model&scope=task%3Darithmetic`)).json();
  assert.equal(evidence.count, 'samples');
  await page.goto(`${server.url}/evidence?by=model&scope=task%3Darithmetic`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  await page.waitForSelector('table.rates tr[data-level]');
  assert.match(await page.textContent('p.overall'), /^2 ended cells, 12 samples/);
  for (const g of evidence.groups) {
    const row = page.locator(`table.rates.by-factor tr[data-level="${g.level}"]`);
    assert.equal(await row.locator('td.passes').textContent(), String(g.passes.successes));
    assert.equal(await row.locator('td.n').textContent(), '6');
  }
  const rates = evidence.groups.map((g) => g.passes.rate);
  assert.ok(rates.some((r) => r < 1), `the hasty model misses some: ${rates}`);
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
