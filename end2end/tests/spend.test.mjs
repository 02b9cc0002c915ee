// Live spend in the browser: a batch's cost climbs on the Live page as its
// cell writes calls, the budget pauses it with its reason, Resume is refused
// until the cap is raised and then runs it again, and a cell that goes
// silent is shown stalled and cleared when it writes again — all pushed,
// without a reload.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { closeConsole, consoleCampaign, postJson, startServer, startBrowser, watchErrors } from './support.mjs';

let server;
let browser;
let root;

// A call (1,000 input + 500 output tokens at 1.00 / 2.00 USD per 1,000:
// 2.00 USD) every 0.5 s, eight times; 4 s of silence; then on.
const LINE = '{{"model":"paid-m","input_tokens":1000,"output_tokens":500}}';
const SCRIPT = `i=0; while [ $i -lt 8 ]; do printf '%s\\n' '${LINE}' >> {out}/progress.jsonl; i=$((i+1)); sleep 0.5; done; `
  + `sleep 4; while true; do printf '%s\\n' '${LINE}' >> {out}/progress.jsonl; sleep 0.5; done`;

before(async () => {
  root = consoleCampaign('runboard-e2e-spend-', {
    name: 'e2e spend',
    command: JSON.stringify(['sh', '-c', SCRIPT]),
    models: '[[models]]\nname = "paid-m"\nkind = "paid"\nprice_input_per_1k = 1.0\nprice_output_per_1k = 2.0\n',
  });
  appendFileSync(join(root, 'campaign.toml'), '[budget]\nmax_cost = 7.0\npoll_s = 0.5\n[stall]\nafter_s = 2.0\n');
  server = await startServer(['--root', root]);
  browser = await startBrowser();
});

after(() => closeConsole({ server, browser, root }));

const post = (path, body) => postJson(server.url, path, body);
const money = (text) => Number(text.replace(/[^0-9.]/g, ''));

test('the cost climbs live, the budget pauses the batch, Resume after raising the cap, a stall shown and cleared', async () => {
  const saved = await post('/api/drafts', { label: 'spend', max_cells: 1, model: 'paid-m' });
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  page.on('dialog', (d) => d.accept());
  await page.goto(`${server.url}/live`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  await page.evaluate(() => { window.__sameDocument = true; });
  const launched = await post('/api/control/start', { path: saved.body.path });
  assert.equal(launched.status, 200, JSON.stringify(launched.body));
  const runSet = launched.body.run_set;

  // The cost climbs: two different amounts above zero, pushed.
  const seen = new Set();
  await page.waitForFunction(() => {
    const dd = document.querySelector('.live-facts .cost');
    const v = dd ? Number(dd.textContent.replace(/[^0-9.]/g, '')) : 0;
    window.__costs = window.__costs || new Set();
    if (v > 0) window.__costs.add(v);
    return window.__costs.size >= 2;
  }, null, { timeout: 30_000, polling: 100 });
  for (const c of await page.evaluate(() => [...window.__costs])) seen.add(c);
  assert.ok([...seen].every((c) => c > 0 && c % 2 === 0), `whole calls of 2.00 USD: ${[...seen]}`);
  assert.match(await page.textContent('.live-facts .tokens'), /in, .* out/);

  // The budget pauses it, and the page says why.
  await page.waitForSelector('.live-state[data-state="stopped_resumable"]', { timeout: 30_000 });
  const words = await page.textContent('.live-state');
  assert.match(words, /paused by the budget: the cap of 7\.00 USD per batch: \d+\.\d\d USD spent/);
  assert.ok(money(await page.textContent('.live-facts .cost')) >= 7, 'paused at the cap, not before');
  assert.match(await page.textContent('.live-facts .cap.reached'), /7\.00 USD per batch/);

  // Resume is refused while the cap holds…
  await page.click(`button.resume[data-run-set="${runSet}"]`);
  await page.waitForSelector('.refusal', { timeout: 15_000 });
  assert.match(await page.textContent('.refusal'), /raise \[budget\] max_cost in campaign\.toml/);
  // …and runs once it is raised.
  const toml = join(root, 'campaign.toml');
  writeFileSync(toml, readFileSync(toml, 'utf8').replace('max_cost = 7.0', 'max_cost = 100000.0'));
  await page.click(`button.resume[data-run-set="${runSet}"]`);
  await page.waitForSelector('.live-state[data-state="running"]', { timeout: 30_000 });

  // Its cell goes silent for 4 s (past the 2 s threshold): stalled, then cleared.
  await page.waitForSelector('.live-facts .stall', { timeout: 30_000 });
  assert.match(await page.textContent('.live-facts .stall'), /has written nothing for \d+ s \(more than 2 s\); last: a progress line/);
  assert.match(await page.textContent('tr.cell.stalled'), /running \(stalled\)/);
  await page.waitForFunction(() => !document.querySelector('.live-facts .stall'), null, { timeout: 20_000 });
  assert.equal(await page.$('tr.cell.stalled'), null, 'the cell is no longer marked');

  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload');
  // The refused Resume is the one 422 the browser logs; nothing else.
  assert.deepEqual(errors, ['Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)'], 'no other console errors');
  await page.close();
});
