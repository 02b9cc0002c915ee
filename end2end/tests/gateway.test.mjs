// The batch gateway seen on the Live page in Chromium (issue 36): three
// cells of plain openai-SDK calls share one endpoint limited to two calls at
// once, whose stand-in answers every fourth call 429 (Retry-After: 2) and one
// question slowly (12 s). Live says why each quiet cell is quiet — the call in
// flight and for how long, the calls held by the rate limit, the 429s — and
// calls none of them stalled, though the stall threshold is 6 s.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { consoleCampaign, draftAndLaunch, startServer, startBrowser, watchErrors, workspace } from './support.mjs';

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


test('Live says why a quiet cell is quiet: a call in flight, calls held by the rate limit, the 429s; none stalled', async () => {
  const url = await startStandIn(['--models', 'paid-m', '--delay', '0.2', '--overload-every', '4',
    '--retry-after', '2', '--slow', 'slowly=12']);
  // Eight calls a cell through {endpoint_url}; the SDK retries a 429 as it does.
  const script = join(workspace, 'server', 'tests', 'fixtures', 'gateway_caller.py');
  const python = join(workspace, '.tools', 'inspect', 'bin', 'python');
  const root = consoleCampaign('runboard-e2e-gateway-campaign-', {
    name: 'e2e gateway',
    command: JSON.stringify([python, script, '{endpoint_url}', '{out}', '{seed}-{phase}-{condition}']),
    parallel: 3,
    models: '[[models]]\nname = "paid-m"\nkind = "paid"\nprice_per_1k_tokens = 1.0\n'
      + `[[endpoints]]\nname = "paid-api"\nurl = "${url}"\nbackend = "openai"\nmodels = ["paid-m"]\n`
      + 'request_preset = "default"\nmax_concurrency = 2\n',
  });
  appendFileSync(join(root, 'campaign.toml'), '\n[stall]\nafter_s = 6.0\n[budget]\npoll_s = 0.5\n');
  const server = await startServer(['--root', root]);
  try {
    const page = await browser.context.newPage();
    const errors = watchErrors(page);
    await draftAndLaunch(server.url, { label: 'quiet', max_cells: 3, model: 'paid-m', endpoint: 'paid-api' });
    await page.goto(`${server.url}/live`);
    await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });

    // What the page says, read every 200 ms until every cell is done.
    const seen = { inFlight: null, waiting: null, limits: null, stalled: [] };
    const end = Date.now() + 120_000;
    for (;;) {
      const now = await page.evaluate(() => ({
        quiet: [...document.querySelectorAll('table.cells .quiet')].map((e) => e.textContent),
        limits: document.querySelector('.rate-limits')?.textContent ?? null,
        stalls: [...document.querySelectorAll('.stalls li, table.cells .badge.stalled')].map((e) => e.textContent),
        done: document.querySelectorAll('table.cells tr[data-status="done"]').length,
      }));
      seen.stalled.push(...now.stalls);
      for (const q of now.quiet) {
        const secs = /^one call in flight for (\d+) s/.exec(q);
        if (secs && Number(secs[1]) >= 4) seen.inFlight = q;
        if (q.startsWith('waiting on paid-api: ')) seen.waiting = q;
      }
      if (now.limits?.includes('× 429/503 in the last minute')) seen.limits = now.limits;
      if (now.done === 3) break;
      assert.ok(Date.now() < end, `the batch did not end: ${JSON.stringify(seen)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.match(seen.inFlight ?? '', /^one call in flight for \d+ s$/, JSON.stringify(seen));
    assert.match(seen.waiting ?? '', /^waiting on paid-api: (one call|\d+ calls) held by the rate limit/, JSON.stringify(seen));
    assert.match(seen.limits ?? '', /paid-api: (1|2) calls? at once/, JSON.stringify(seen));
    assert.deepEqual(seen.stalled, [], 'no cell calling through its gateway is called stalled');
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
});
