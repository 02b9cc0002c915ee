// The Runs page beside MLflow's experiment page, in Debian's Chromium, both
// over loopback, one browser, one tab at a time. Not a test: figures.
//
//   RB_ROOT=<runboard tree> MLFLOW_URL=http://127.0.0.1:<port> [MLFLOW_EXPERIMENT=1] [RUNS=5] \
//     [FILTER=run-04242] node bench/vs-mlflow.mjs
//
// The two stores hold the same runs (../shared/bench/peer-mlflow: make_runs.py
// and make_runboard_runs.py at the same --n; their README starts MLflow's
// server). runboard is started here (the release build, a fresh data folder,
// so no list cache) on RB_ROOT; each side gets one warm-up visit (its server
// reads its store once), then RUNS cold visits (a new tab, the browser cache
// cleared and disabled), median reported:
// - first rows: navigation start → the first run's row visible (runboard:
//   a row of the run table; MLflow: a run-name link in its runs table);
// - bytes to first rows / bytes in all: what crossed the wire until then, and
//   until the network is idle (headers included, compressed as sent: CDP's
//   encodedDataLength);
// - requests: how many, until the network is idle;
// - filter: the name FILTER typed into the page's filter (runboard: the
//   filter box, answered as you type; MLflow: its search box with
//   `attributes.run_name = 'FILTER'`, its documented form, then Enter)
//   → exactly that run's row shown.
import { startServer, startBrowser } from '../tests/support.mjs';

const RB_ROOT = process.env.RB_ROOT;
const MLFLOW_URL = process.env.MLFLOW_URL;
if (!RB_ROOT || !MLFLOW_URL) {
  console.error('usage: RB_ROOT=<runboard tree> MLFLOW_URL=<MLflow server> node bench/vs-mlflow.mjs');
  process.exit(2);
}
const EXPERIMENT = process.env.MLFLOW_EXPERIMENT ?? '1';
const RUNS = Number(process.env.RUNS ?? 5);
const FILTER = process.env.FILTER ?? 'run-04242';
const NAME = /^run-\d{5}$/;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const SIDES = {
  runboard: {
    path: (base) => `${base}/runs`,
    firstRow: (page) => page.locator('table.run-list tbody tr').first(),
    async filter(page) {
      await page.locator('input.filter').fill(FILTER);
      await page.waitForFunction((name) => {
        const rows = [...document.querySelectorAll('table.run-list tbody tr')];
        return rows.length === 1 && rows[0].textContent.includes(name);
      }, FILTER, { timeout: 60_000 });
    },
  },
  mlflow: {
    path: (base) => `${base}/#/experiments/${EXPERIMENT}/runs`,
    firstRow: (page) => page.getByRole('link', { name: NAME }).first(),
    async filter(page) {
      const box = page.locator('[data-testid=search-box]');
      // Its search box takes a filter expression; a bare name is an error.
      await box.fill(`attributes.run_name = '${FILTER}'`);
      await box.press('Enter');
      await page.waitForFunction(([name, re]) => {
        const links = [...document.querySelectorAll('a')].filter((a) => new RegExp(re).test(a.textContent.trim()));
        return links.length === 1 && links[0].textContent.trim() === name;
      }, [FILTER, NAME.source], { timeout: 60_000 });
    },
  },
};

async function once(browser, side, base) {
  const s = SIDES[side];
  const page = await browser.context.newPage();
  const cdp = await browser.context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.clearBrowserCache');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  let bytes = 0;
  let requests = 0;
  cdp.on('Network.loadingFinished', (e) => { bytes += e.encodedDataLength; requests += 1; });
  const t0 = Date.now();
  await page.goto(s.path(base), { waitUntil: 'commit', timeout: 60_000 });
  await s.firstRow(page).waitFor({ state: 'visible', timeout: 120_000 });
  const firstRows = Date.now() - t0;
  const bytesToRows = bytes;
  await page.waitForLoadState('networkidle').catch(() => {});
  const all = bytes;
  const reqs = requests;
  const f0 = Date.now();
  await s.filter(page);
  const filter = Date.now() - f0;
  await page.close();
  return { firstRows, bytesToRows, all, reqs, filter };
}

const server = await startServer(['--root', RB_ROOT]);
const browser = await startBrowser();
const bases = { runboard: server.url, mlflow: MLFLOW_URL.replace(/\/$/, '') };
const results = {};
try {
  for (const side of Object.keys(SIDES)) {
    await once(browser, side, bases[side]); // warm-up: the server reads its store once
    const runs = [];
    for (let i = 0; i < RUNS; i++) runs.push(await once(browser, side, bases[side]));
    results[side] = Object.fromEntries(Object.keys(runs[0]).map((k) => [k, median(runs.map((r) => r[k]))]));
  }
} finally {
  await browser.close();
  await server.stop();
}
const rb = results.runboard;
const ml = results.mlflow;
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
const ms = (n) => `${n} ms`;
console.log(`the Runs page beside MLflow's experiment page, Chromium, median of ${RUNS} cold visits:`);
console.log(`${''.padEnd(30)} ${'runboard'.padStart(12)} ${'MLflow'.padStart(12)} ${'MLflow ÷ runboard'.padStart(18)}`);
const row = (what, k, fmt) => console.log(`${what.padEnd(30)} ${fmt(rb[k]).padStart(12)} ${fmt(ml[k]).padStart(12)} ${(ml[k] / rb[k]).toFixed(1).padStart(18)}`);
row('navigation → first rows', 'firstRows', ms);
row('bytes until first rows', 'bytesToRows', kb);
row('bytes until network idle', 'all', kb);
row('requests until network idle', 'reqs', String);
row(`filter to ${FILTER}`, 'filter', ms);
console.log(JSON.stringify({ runs: RUNS, filter: FILTER, runboard: rb, mlflow: ml }));
