// A cell's output in the browser: the Live page's Log button opens the
// running cell's log, its lines arrive as the cell writes them (pushed, no
// reload), the live view's own updates leave the open log and the reader's
// scroll alone, and the panel closes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { closeConsole, consoleCampaign, launchOneAndOpenLive, postJson, startServer, startBrowser } from './support.mjs';

let server;
let browser;
let root;

// A numbered line every 0.1 s, 200 of them, each with a call of 100 tokens
// taking 0.1 s in its progress file, then the report.
const SCRIPT = 'i=0; while [ $i -lt 200 ]; do echo "line $i of the cell"; '
  + `printf '{{"tokens":100,"latency_s":0.1}}\\n' >> {out}/progress.jsonl; i=$((i+1)); sleep 0.1; done; `
  + `printf '{{"score": 1}}' > {out}/result.json`;

// A stand-in for the endpoint's vLLM metrics (no GPU here).
let engine;
const METRICS = 'vllm:num_requests_running{model_name="local-m"} 7\n'
  + 'vllm:num_requests_waiting{model_name="local-m"} 2\n'
  + 'vllm:kv_cache_usage_perc{model_name="local-m"} 0.5\n';

before(async () => {
  engine = createServer((req, res) => res.end(req.url === '/metrics' ? METRICS : '{"data":[{"id":"local-m"}]}'));
  await new Promise((ok) => engine.listen(0, '127.0.0.1', ok));
  root = consoleCampaign('runboard-e2e-logs-', { name: 'e2e logs', command: JSON.stringify(['sh', '-c', SCRIPT]) });
  const toml = join(root, 'campaign.toml');
  writeFileSync(toml, readFileSync(toml, 'utf8').replace('http://127.0.0.1:9/v1', `http://127.0.0.1:${engine.address().port}/v1`));
  server = await startServer(['--root', root]);
  browser = await startBrowser();
});

after(async () => {
  await closeConsole({ server, browser, root });
  engine?.close();
});

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

test('the Live page shows the endpoint the batch uses, its calls and its engine, and opens the unit log', async () => {
  const { runSet, page, errors } = await launchOneAndOpenLive(server, browser, 'endpoint');
  const row = '.endpoints tr.endpoint[data-endpoint="gpu-a"]';
  // Its calls (counted from the progress file) and its engine (read from /metrics).
  await page.waitForFunction((sel) => {
    const r = document.querySelector(sel);
    return r && Number(r.querySelector('td.calls').textContent.replace(/,/g, '')) > 0
      && r.querySelector('td.engine-queue').textContent === '7 / 2';
  }, row, { timeout: 30_000, polling: 200 });
  assert.equal(await page.textContent(`${row} td.kv`), '50%');
  assert.equal(await page.textContent(`${row} td.latency`), '0.1 s / 0.1 s');
  assert.match(await page.getAttribute(row, 'title'), /calls in the last 60 s/);
  // The batch's other logs: its unit's, opened in the same panel.
  await page.click('.process-logs button.open-log[data-log^="unit:"]', { timeout: 30_000 });
  await page.waitForSelector('aside.log-panel[data-log^="unit:"]');
  await page.waitForFunction(() => document.querySelector('aside.log-panel .log-note')?.textContent !== 'Reading the log…', null, { timeout: 20_000 });
  assert.doesNotMatch(await page.textContent('aside.log-panel .log-note'), /cannot be read/);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
  await post('/api/control/stop', { run_sets: [runSet] });
});
