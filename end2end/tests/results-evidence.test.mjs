// The Evidence page in a real browser on a campaign with a real batch whose
// treat cells fail: the rates and intervals match the API, the factor is in
// the URL, and changing it changes the tables — with no console errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { consoleCampaign, startServer, startBrowser, watchErrors } from './support.mjs';

let server;
let browser;
let root;

const post = (path, body) => fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json());
const get = (path) => fetch(`${server.url}${path}`).then((r) => r.json());

before(async () => {
  root = consoleCampaign('runboard-e2e-evidence-', {
    name: 'e2e evidence',
    command: `["sh", "-c", "test {condition} = base || exit 1; printf '{{\\"tokens\\": 100, \\"score\\": 0.5}}' > {out}/result.json"]`,
    parallel: 2,
  });
  server = await startServer(['--root', root]);
  browser = await startBrowser();
  const saved = await post('/api/drafts', { label: 'ev', max_cells: 4, endpoint: 'gpu-a' });
  await post('/api/control/start', { path: saved.path });
  for (let i = 0; i < 300; i++) {
    const live = await get('/api/live');
    if (live.state.state === 'idle') break;
    await new Promise((r) => setTimeout(r, 100));
  }
});

after(async () => {
  await browser?.close();
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

test('evidence: rates with intervals as the API says, the factor in the URL', async () => {
  const api = await get('/api/evidence');
  assert.equal(api.n, 4);
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/evidence`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  await page.waitForSelector('table.rates.by-factor');
  for (const g of api.groups) {
    const row = `table.by-factor tr[data-level="${g.level}"]`;
    assert.equal(await page.textContent(`${row} td.passes`), String(g.passes.successes));
    assert.equal(await page.textContent(`${row} td.n`), String(g.passes.n));
  }
  assert.match(await page.textContent('table.by-factor tr[data-level="base"] td.rate'), /2\/2 = 100 % \[34 %–100 %\]/);
  assert.equal(await page.locator('table.by-factor .ci-bar').count(), 2, 'an interval bar per level');
  assert.match(await page.textContent('table.comparisons tr[data-level="treat"]'), /-100 points/);
  assert.match(await page.textContent('table.failure-reasons'), /exit 1/);
  // Another factor: in the URL, and the tables follow.
  await page.selectOption('select[name="by"]', 'seed');
  await page.waitForURL(/by=seed/);
  await page.waitForSelector('table.by-factor tr[data-level="1"]');
  const bySeed = await get('/api/evidence?by=seed');
  assert.equal(await page.textContent('table.by-factor tr[data-level="1"] td.n'), String(bySeed.groups[0].passes.n));
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
