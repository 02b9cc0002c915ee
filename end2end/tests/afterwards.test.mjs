// What the console says after the fact, in Chromium (issue 40): a second
// server of the same demo leaves the first one's page as it was (item 1);
// what a cell's calls counted stays in the report once its batch ended,
// priced by kind, with the cells that ran and did not pass listed apart
// from failures (items 2, 3, 7); an aborted batch is never called resumable
// on the Live page (item 12).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { binary, consoleCampaign, draftAndLaunch, postJson, startServer, startBrowser, watchErrors } from './support.mjs';

let browser;
before(async () => { browser = await startBrowser(); });
after(async () => { await browser?.close(); });

const hydrated = (page) => page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });

/** Polls `fn` until it returns a truthy value (at most `ms`). */
async function until(what, ms, fn) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('a second server of the same demo is refused and the first one\'s page goes on as it was', async () => {
  const server = await startServer();
  try {
    const page = await browser.context.newPage();
    const errors = watchErrors(page);
    const live = async () => (await fetch(`${server.url}/api/live`)).json();
    const first = await until('the demo batch on Live', 30_000, async () => (await live()).run_set);
    await page.goto(`${server.url}/live`);
    await hydrated(page);
    const config = join(server.data, 'demo', 'campaign.toml');
    const before = statSync(config);

    // The same data folder, a port of its own: refused, exit 2, nothing written.
    const second = spawnSync(binary, ['serve', '--port', '0', '--data-dir', server.data],
      { env: { ...process.env, RUNBOARD_TOKEN: '' }, encoding: 'utf8', timeout: 30_000 });
    assert.equal(second.status, 2, second.stderr);
    assert.match(second.stderr, /is served by another runboard \(PID \d+\)/);
    const now = statSync(config);
    assert.equal(now.ino, before.ino, 'the demo was not made afresh');
    assert.equal(now.mtimeMs, before.mtimeMs);

    // The first server's page still shows its own batch, and no other was launched.
    await page.reload();
    await hydrated(page);
    assert.equal((await live()).run_set, first);
    const runSets = await (await fetch(`${server.url}/api/runsets`)).json();
    const launched = (Array.isArray(runSets) ? runSets : runSets.run_sets ?? []).map((r) => r.name);
    assert.equal(launched.filter((n) => n.startsWith('demo-next')).length, 1, JSON.stringify(launched));
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test('spend counted while a batch ran is its report afterwards, priced by kind; cells that did not pass are listed apart', async () => {
  // Three calls a cell (1,000 in + 500 out, 2.00 USD each at 1.00 / 2.00 per
  // 1,000), then a result.json with a score and no tokens; cells of seed 2 score low.
  const line = '{{"model":"paid-m","input_tokens":1000,"output_tokens":500}}';
  const script = `for i in 1 2 3; do printf '%s\\n' '${line}' >> {out}/progress.jsonl; done; `
    + `if [ "{seed}" = 2 ]; then s=0.1; else s=0.9; fi; printf '{{"score": %s}}' $s > {out}/result.json`;
  const root = consoleCampaign('runboard-e2e-after-', {
    name: 'e2e afterwards',
    command: JSON.stringify(['sh', '-c', script]),
    parallel: 2,
    models: '[[models]]\nname = "paid-m"\nkind = "paid"\nprice_input_per_1k = 1.0\nprice_output_per_1k = 2.0\n',
  });
  // A pass score, so a low score does not pass (Evidence's `[results]` rule).
  appendFileSync(join(root, 'campaign.toml'), '\n[results]\npass_score = 0.5\n');
  const server = await startServer(['--root', root]);
  try {
    const rs = await draftAndLaunch(server.url, { label: 'after', max_cells: 2, model: 'paid-m' });
    await until('the batch to end', 30_000, async () => {
      const v = await (await fetch(`${server.url}/api/live`)).json();
      return v.state.state === 'idle' && v.run_set === rs;
    });
    const page = await browser.context.newPage();
    const errors = watchErrors(page);
    await page.goto(`${server.url}/reports/${encodeURIComponent(rs)}`);
    await hydrated(page);
    assert.match(await page.textContent('.report-facts .tokens'), /^9,000 \(from 2 cells/);
    assert.match(await page.textContent('.report-facts .cost'), /^12\.00 USD \(per 1,000 tokens: 1\.00 USD input, 2\.00 USD output/);
    const passed = await page.$$eval('table.report-cells td.passed', (tds) => tds.map((t) => t.textContent));
    assert.equal(passed.length, 2);
    const notPassed = await page.$$eval('table.report-not-passed tbody tr', (trs) => trs.map((t) => t.textContent));
    const failures = await page.textContent('table.report-failures, p.empty');
    // Seed 2 drafted or not, what the page says agrees with Evidence's rule.
    const low = passed.filter((p) => p === 'no').length;
    assert.equal(notPassed.length > 0, low > 0, `${passed} / ${notPassed}`);
    assert.match(failures, /No cell failed/);
    assert.match(await page.textContent('.report-facts .pass-counts'), new RegExp(`^${2 - low} of the 2 that ended passed; ${low} did not pass`));
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

test('an aborted batch is called aborted on Live, never resumable, and offers no Resume', async () => {
  const root = consoleCampaign('runboard-e2e-abort-', {
    name: 'e2e abort',
    command: JSON.stringify(['sh', '-c', 'sleep 60']),
  });
  const server = await startServer(['--root', root]);
  try {
    const rs = await draftAndLaunch(server.url, { label: 'abort', max_cells: 1, endpoint: 'gpu-a' });
    await until('running', 30_000, async () => (await (await fetch(`${server.url}/api/live`)).json()).state.state === 'running');
    const stopped = await postJson(server.url, '/api/control/stop', { run_sets: [rs] });
    assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
    await until('aborted', 30_000, async () => {
      const v = await (await fetch(`${server.url}/api/live`)).json();
      return v.state.state === 'aborted' && v.outcome && v.outcome.status !== 'running';
    });
    const page = await browser.context.newPage();
    const errors = watchErrors(page);
    await page.goto(`${server.url}/live`);
    await hydrated(page);
    assert.equal(await page.getAttribute('.live-state', 'data-state'), 'aborted');
    const text = await page.textContent('section.live');
    assert.doesNotMatch(text, /resumable/i, text);
    assert.match(await page.textContent('dd.outcome'), /aborted by the operator: it will not be resumed/);
    assert.equal(await page.$$eval('button.resume', (b) => b.length), 0);
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
});
