// The Live page follows a running cell as the API does: its duration moves
// while it runs, pushed, without a reload and without a change of state.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { closeConsole, consoleCampaign, postJson, startServer, startBrowser, watchErrors } from './support.mjs';

let server;
let browser;
let root;

before(async () => {
  root = consoleCampaign('runboard-e2e-live-', { name: 'e2e live', command: '["sleep", "60"]' });
  server = await startServer(['--root', root]);
  browser = await startBrowser();
});

// The batch this test launched is the one on screen: a default stop ends it.
after(() => closeConsole({ server, browser, root }));

const post = (path, body) => postJson(server.url, path, body);

test('a running cell\'s duration moves on the Live page as it runs', async () => {
  const saved = await post('/api/drafts', { label: 'slow', max_cells: 1, endpoint: 'gpu-a' });
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  const launched = await post('/api/control/start', { path: saved.body.path });
  assert.equal(launched.status, 200, JSON.stringify(launched.body));

  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/live`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  await page.evaluate(() => { window.__sameDocument = true; });
  const running = 'tr.cell[data-status="running"] td:nth-child(7)';
  await page.waitForSelector(running, { timeout: 30_000 });
  const first = (await page.textContent(running)).trim();
  // The state does not change (one long cell): only the pushed version moves it.
  await page.waitForFunction(([sel, was]) => {
    const td = document.querySelector(sel);
    return td && td.textContent.trim() !== was;
  }, [running, first], { timeout: 20_000 });
  const later = (await page.textContent(running)).trim();
  assert.notEqual(later, first, 'the duration moved');
  assert.equal(await page.getAttribute('.live-state', 'data-state'), 'running');
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
