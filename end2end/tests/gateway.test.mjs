// The batch gateway seen on the Live page in Chromium (issue 36): the Inspect
// example's evals (`runboard init --example inspect`, the pinned inspect-ai,
// two cells at once) share one endpoint limited to one call at once, whose
// stand-in answers every fourth call 429 (Retry-After: 2) and one question
// slowly (15 s). Live says why each quiet cell is quiet — the call in flight
// and for how long, the calls held by the rate limit, the 429s — and calls
// none of them stalled, though the stall threshold is 10 s.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { binary, postJson, startServer, startBrowser, watchErrors, workspace } from './support.mjs';

let browser;
let standin;
before(async () => { browser = await startBrowser(); });
after(async () => {
  await browser?.close();
  standin?.kill('SIGTERM');
});

/** The stand-in model on a free port (the PID we started, stopped after); resolves to its URL. */
async function startStandIn(args) {
  standin = spawn('python3', [join(workspace, 'examples', 'inspect', 'standin_model.py'), '--port', '0', ...args],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the stand-in model printed no address')), 30_000);
    createInterface({ input: standin.stdout }).once('line', (line) => {
      clearTimeout(timer);
      resolve(line.trim().split(' ').at(-1));
    });
  });
}


test('Live says why a quiet Inspect eval is quiet: a call in flight, calls held by the rate limit, the 429s; none stalled', async () => {
  const url = await startStandIn(['--delay', '0.2', '--overload-every', '4', '--retry-after', '2', '--slow', 'stone=15']);
  const root = join(mkdtempSync(join(tmpdir(), 'runboard-e2e-gateway-')), 'campaign');
  execFileSync(binary, ['init', root, '--example', 'inspect']);
  symlinkSync(join(workspace, '.tools', 'inspect'), join(root, '.venv'));
  const toml = join(root, 'campaign.toml');
  writeFileSync(toml, readFileSync(toml, 'utf8').replace('http://127.0.0.1:8791/v1', url)
    .replace('backend = "openai-compatible"', 'backend = "openai-compatible"\nmax_concurrency = 1'));
  // A stall threshold past an eval's start on a loaded machine, under the slow call.
  appendFileSync(toml, '\n[stall]\nafter_s = 10.0\n');
  const server = await startServer(['--root', root]);
  try {
    const page = await browser.context.newPage();
    const errors = watchErrors(page);
    // The two tasks on one model: "Reverse the word: stone" is the slow question.
    const draft = await postJson(server.url, '/api/drafts',
      { label: 'quiet', max_cells: 2, endpoint: 'standin',
        filters: { model: ['standin-careful'], task: ['arithmetic', 'reverse'] } });
    assert.equal(draft.status, 200, JSON.stringify(draft.body));
    const launched = await postJson(server.url, '/api/control/start', { path: draft.body.path });
    assert.equal(launched.status, 200, JSON.stringify(launched.body));
    await page.goto(`${server.url}/live`);
    await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });

    // What the page says, read every 200 ms until the batch ends.
    const seen = { inFlight: null, waiting: null, limits: null, stalled: [] };
    const end = Date.now() + 180_000;
    for (;;) {
      const now = await page.evaluate(() => ({
        quiet: [...document.querySelectorAll('table.cells .quiet')].map((e) => e.textContent),
        limits: document.querySelector('.rate-limits')?.textContent ?? null,
        stalls: [...document.querySelectorAll('.stalls li, table.cells .badge.stalled')].map((e) => e.textContent),
        idle: document.querySelector('.live-state[data-state="idle"]') !== null,
        done: document.querySelectorAll('table.cells tr[data-status="done"]').length,
      }));
      seen.stalled.push(...now.stalls);
      for (const q of now.quiet) {
        const secs = /^one call in flight for (\d+) s/.exec(q);
        if (secs && Number(secs[1]) >= 11) seen.inFlight = q;
        if (q.startsWith('waiting on standin: ')) seen.waiting = q;
      }
      if (now.limits?.includes('× 429/503 in the last minute')) seen.limits = now.limits;
      if (now.idle && now.done === 2) break;
      assert.ok(Date.now() < end, `the batch did not end: ${JSON.stringify(seen)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.match(seen.inFlight ?? '', /^one call in flight for \d+ s$/, JSON.stringify(seen));
    assert.match(seen.waiting ?? '', /^waiting on standin: (one call|\d+ calls) held by the rate limit/, JSON.stringify(seen));
    assert.match(seen.limits ?? '', /standin: 1 call at once/, JSON.stringify(seen));
    assert.deepEqual(seen.stalled, [], 'no eval calling through its gateway is called stalled');
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
    rmSync(join(root, '..'), { recursive: true, force: true });
  }
});
