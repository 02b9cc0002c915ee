// A cell's output in the browser: the Live page's Log button opens the
// running cell's log, its lines arrive as the cell writes them (pushed, no
// reload), the live view's own updates leave the open log and the reader's
// scroll alone, and the panel closes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { closeConsole, consoleCampaign, launchOneAndOpenLive, postJson, startServer, startBrowser } from './support.mjs';

let server;
let browser;
let root;

// A numbered line every 0.1 s, 200 of them, then the report.
const SCRIPT = 'i=0; while [ $i -lt 200 ]; do echo "line $i of the cell"; i=$((i+1)); sleep 0.1; done; '
  + `printf '{{"score": 1}}' > {out}/result.json`;

before(async () => {
  root = consoleCampaign('runboard-e2e-logs-', { name: 'e2e logs', command: JSON.stringify(['sh', '-c', SCRIPT]) });
  server = await startServer(['--root', root]);
  browser = await startBrowser();
});

after(() => closeConsole({ server, browser, root }));

const post = (path, body) => postJson(server.url, path, body);
const numbers = (text) => [...text.matchAll(/^line (\d+) of the cell$/gm)].map((m) => Number(m[1]));

test("a running cell's log tails live on the Live page, its lines in order, kept across the view's updates", async () => {
  const { runSet, page, errors } = await launchOneAndOpenLive(server, browser, 'logs');
  await page.click('table.cells tr.cell button.log', { timeout: 30_000 });
  await page.waitForSelector('aside.log-panel pre.log-tail');
  // Lines arrive as they are written: a later line than any seen at first.
  await page.waitForFunction(() => /line \d+ of the cell/.test(document.querySelector('pre.log-tail')?.textContent || ''), null, { timeout: 20_000 });
  const first = numbers(await page.textContent('pre.log-tail'));
  const last = first[first.length - 1];
  await page.waitForFunction((n) => {
    const t = document.querySelector('pre.log-tail')?.textContent || '';
    return [...t.matchAll(/^line (\d+) of the cell$/gm)].some((m) => Number(m[1]) >= n);
  }, last + 15, { timeout: 20_000, polling: 100 });
  const text = await page.textContent('pre.log-tail');
  const seen = numbers(text);
  for (let i = 1; i < seen.length; i++) assert.equal(seen[i], seen[i - 1] + 1, `line ${seen[i - 1]} then ${seen[i]}`);
  assert.equal(seen[0], 0, 'a short log is shown from its start');
  // The reader scrolled up keeps their place while lines arrive and the
  // live view updates around the panel.
  // (Once the text overflows its box: before that, the top is the end.)
  await page.waitForFunction(() => {
    const pre = document.querySelector('pre.log-tail');
    return pre.scrollHeight > pre.clientHeight + 100;
  }, null, { timeout: 30_000 });
  await page.evaluate(() => { document.querySelector('pre.log-tail').scrollTop = 0; });
  const before = await page.evaluate(() => document.querySelector('pre.log-tail').textContent.length);
  await page.waitForFunction((n) => document.querySelector('pre.log-tail').textContent.length > n + 100, before, { timeout: 20_000 });
  assert.equal(await page.evaluate(() => document.querySelector('pre.log-tail').scrollTop), 0, 'the scroll is kept');
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload');
  assert.match(await page.getAttribute('aside.log-panel', 'data-log'), /^cell-c-[0-9a-f]{12}$/);
  await page.click('aside.log-panel button.close');
  await page.waitForSelector('aside.log-panel', { state: 'detached' });
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
  await post('/api/control/stop', { run_sets: [runSet] });
});
