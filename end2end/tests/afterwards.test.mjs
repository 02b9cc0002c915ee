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

/**
 * Every word and number in the page's tables that was broken across lines
 * (a break is allowed only at spaces, slashes and dashes, as in a path or an
 * id): `["13,224 in <TD> num", …]`.
 */
function brokenInTables(page) {
  return page.evaluate(() => {
    const broken = [];
    for (const cell of document.querySelectorAll('main td, main th')) {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const re = /[^\s/\-–—]{2,}/g;
        for (let m = re.exec(node.data); m; m = re.exec(node.data)) {
          const r = document.createRange();
          r.setStart(node, m.index);
          r.setEnd(node, m.index + m[0].length);
          const lines = new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top)));
          if (lines.size > 1) broken.push(`${m[0]} in <${cell.tagName}> ${cell.className}`);
        }
      }
    }
    return broken;
  });
}

test('at 390 and 1,400 px no table cell wraps inside a word or a number; the demo\'s first visits and its catalogue', async () => {
  const server = await startServer();
  try {
    await until('the demo batch', 30_000, async () => (await (await fetch(`${server.url}/api/live`)).json()).run_set);
    const runs = await (await fetch(`${server.url}/api/runs`)).json();
    const long = runs.runs.find((r) => r.path.endsWith('long-search'));
    const sets = await (await fetch(`${server.url}/api/runsets`)).json();
    const pages = ['/catalogue', '/live', '/runs', `/runs/${long.path}?tab=rounds`, '/evidence', '/timing', '/upkeep',
      `/reports/${encodeURIComponent(sets[sets.length - 1].name)}`];
    for (const width of [390, 1400]) {
      const page = await browser.context.newPage();
      await page.setViewportSize({ width, height: 900 });
      const errors = watchErrors(page);
      for (const path of pages) {
        await page.goto(`${server.url}${path}`);
        await hydrated(page);
        await page.waitForSelector('main table', { state: 'attached', timeout: 15_000 });
        assert.deepEqual(await brokenInTables(page), [], `${path} at ${width} px`);
        // The page itself never scrolls sideways: a wide table scrolls in its box.
        assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1), `${path} at ${width} px`);
      }
      assert.deepEqual(errors, []);
      await page.close();
    }

    // A first visit to a page no step is about only offers the guide; one
    // to Live starts at Live's own step, never the Overview's over it.
    const fresh = await startBrowser();
    try {
      const page = await fresh.context.newPage();
      await page.goto(`${server.url}/runs`);
      await hydrated(page);
      await page.waitForSelector('aside.guide-offer');
      assert.equal(await page.$$eval('aside.guide[data-step]', (a) => a.length), 0);
      await page.goto(`${server.url}/live`);
      await hydrated(page);
      // Still a first visit: nothing was stored by the offer.
      await page.waitForSelector('aside.guide[data-step="4"]');
      assert.match(await page.textContent('aside.guide .guide-step'), /step 5 of 8: Live/);
    } finally {
      await fresh.close();
    }

    // The demo's local model is available (its stand-in endpoint answers).
    const page = await browser.context.newPage();
    await page.goto(`${server.url}/catalogue`);
    await hydrated(page);
    await page.waitForSelector('tr.model[data-name="qwen3-32b"]');
    assert.equal(await page.getAttribute('tr.model[data-name="qwen3-32b"]', 'data-available'), 'true');
    const qwen = await page.textContent('tr.model[data-name="qwen3-32b"]');
    assert.match(qwen, /Available/);
    assert.doesNotMatch(qwen, /Not available/);
    // Launch, disabled with no spec yet, says why.
    await page.goto(`${server.url}/coverage`);
    await hydrated(page);
    assert.match(await page.textContent('p.launch-why'), /Launch needs a spec/);
    // A draft's prediction never claims "0 s": a time from timings Timing counts, or "time not known".
    await page.fill('input[name="label"]', 'after');
    await page.fill('input[name="max_cells"]', '6');
    await page.selectOption('select[name="endpoint"]', 'gpu-local');
    await page.click('button.preview');
    await page.waitForSelector('.draft-preview .draft-count');
    const predicted = await page.textContent('.draft-preview .draft-count');
    assert.doesNotMatch(predicted, /[^\d,.]0 s\b/, predicted);
    assert.match(predicted, /time not known|\d+ (s|min|h)/, predicted);
  } finally {
    await server.stop();
  }
});

test('a stalled cell can be ended alone, the stall names [stall] action, an empty log says so, and time left moves while cells run', async () => {
  // The first cell (base, warmup, seed 1): one progress line, then silence
  // (stalled after 2 s), writing nothing to its log. The others: 6 s each,
  // one at a time.
  const line = '{{"model":"local-m","tokens":10}}';
  const script = `if [ "{condition}" = base ] && [ "{seed}" = 1 ] && [ "{phase}" = warmup ]; then printf '%s\\n' '${line}' >> {out}/progress.jsonl; sleep 60; else sleep 6; fi`;
  const root = consoleCampaign('runboard-e2e-stall-', { name: 'e2e stall', command: JSON.stringify(['sh', '-c', script]) });
  appendFileSync(join(root, 'campaign.toml'), '\n[budget]\npoll_s = 0.5\n[stall]\nafter_s = 2.0\n');
  const server = await startServer(['--root', root]);
  try {
    const rs = await draftAndLaunch(server.url, { label: 'stall', max_cells: 4, endpoint: 'gpu-a' });
    const page = await browser.context.newPage();
    const errors = watchErrors(page);
    page.on('dialog', (d) => d.accept());
    await page.goto(`${server.url}/live`);
    await hydrated(page);
    await page.waitForSelector('dd.stalls li.stall button.end-cell', { timeout: 30_000 });
    assert.match(await page.textContent('dd.stalls'), /\[stall\] action = "stop"/);
    // The batch's rate says its unit and window, apart from an endpoint's.
    assert.match(await page.textContent('.live-facts dd.rate'), /tokens\/s — this batch's average since its first call$/);
    const cell = await page.getAttribute('dd.stalls li.stall', 'data-cell');
    // Its log is empty, and says so.
    await page.click(`tr[data-cell="${cell}"] button.log`);
    await page.waitForFunction(() => /Nothing written yet/.test(document.querySelector('.log-panel .log-note')?.textContent ?? ''), null, { timeout: 15_000 });
    await page.click('.log-panel button.close');
    // Ended alone: the rest of the batch runs on.
    await page.click('dd.stalls li.stall button.end-cell');
    await page.waitForSelector('p.said.ok');
    assert.match(await page.textContent('p.said.ok'), new RegExp(`Sent SIGTERM to \\d+ process(es)? of cell ${cell}; the rest of ${rs} runs on`));
    await until('the cell recorded failed while its batch runs', 30_000, async () => {
      const v = await (await fetch(`${server.url}/api/live`)).json();
      return v.state.state === 'running' && v.cells.some((c) => c.cell === cell && c.status === 'failed');
    });
    // Time left, once a cell ended, falls while the next cells run (pushed,
    // no reload): two different values, the later smaller.
    const seen = [];
    await until('time left to fall', 30_000, async () => {
      const t = await page.textContent('dd.eta');
      const m = t.match(/about (\d+) s/);
      if (m && (seen.length === 0 || seen[seen.length - 1] !== Number(m[1]))) seen.push(Number(m[1]));
      return seen.length >= 2 && seen[seen.length - 1] < seen[0];
    });
    assert.deepEqual(errors, []);
    await postJson(server.url, '/api/control/stop', { run_sets: [rs] });
  } finally {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
});
