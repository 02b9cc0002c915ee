// The Live page follows a running cell as the API does: its duration moves
// while it runs, pushed, without a reload and without a change of state.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { closeConsole, consoleCampaign, launchOneAndOpenLive, startServer, startBrowser } from './support.mjs';

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


test('a running cell\'s duration moves on the Live page as it runs', async () => {
  const { page, errors } = await launchOneAndOpenLive(server, browser, 'slow');
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
