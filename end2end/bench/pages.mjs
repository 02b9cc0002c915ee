// Per page, cold, in Debian's Chromium over loopback: what crosses the wire
// and how long until the page is interactive. Not a test: figures.
//
//   cd end2end && node bench/pages.mjs            # the release build (scripts/build-site.sh)
//   RUNS=5 node bench/pages.mjs                   # more runs per page (median; default 3)
//
// For each page: a new tab with the browser's cache cleared and disabled,
// the bytes received for the document and everything it loads (headers
// included, as compressed on the wire: CDP's encodedDataLength), the same for
// the WebAssembly module alone, and the time from navigation start to
// interactive — the app hydrated (its `data-hydrated` mark, set by an effect
// once the WASM has taken the page over) and a click handled (a listener
// added at that moment answers a dispatched click; the delay is included).
// The server serves the demo campaign from a fresh data folder.
import { startServer, startBrowser } from '../tests/support.mjs';

const PAGES = [
  '/', '/live', '/coverage', '/next', '/auto', '/catalogue', '/evidence', '/timing', '/reports',
  '/cohorts', '/research', '/publish', '/upkeep', '/runs',
  '/runs/explore-qwen?tab=summary', '/runs/long-search?tab=rounds', '/runs/momentum-qwen?tab=graph',
];
const RUNS = Number(process.env.RUNS ?? 3);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;

async function once(browser, url) {
  const page = await browser.context.newPage();
  const cdp = await browser.context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.clearBrowserCache');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  const urls = new Map();
  let total = 0;
  let wasm = 0;
  let html = 0;
  cdp.on('Network.responseReceived', (e) => urls.set(e.requestId, e.response.url));
  cdp.on('Network.loadingFinished', (e) => {
    total += e.encodedDataLength;
    const u = urls.get(e.requestId) ?? '';
    if (u.endsWith('.wasm')) wasm += e.encodedDataLength;
    if (u === url) html += e.encodedDataLength;
  });
  await page.addInitScript(() => {
    new MutationObserver((_, obs) => {
      if (document.body?.dataset.hydrated === 'true' && window.__interactive === undefined) {
        window.__interactive = null;
        obs.disconnect();
        document.body.addEventListener('click', () => { window.__interactive = performance.now(); }, { once: true });
        document.body.dispatchEvent(new MouseEvent('click', { bubbles: true }));
      }
    }).observe(document, { attributes: true, subtree: true, attributeFilter: ['data-hydrated'] });
  });
  await page.goto(url, { waitUntil: 'load', timeout: 60_000 });
  await page.waitForFunction(() => typeof window.__interactive === 'number', null, { timeout: 60_000 });
  const interactive = await page.evaluate(() => window.__interactive);
  await page.waitForLoadState('networkidle').catch(() => {});
  await page.close();
  return { total, wasm, html, interactive };
}

const server = await startServer([]);
const browser = await startBrowser();
try {
  // One warm-up visit: the demo is made and its runs listed once.
  await once(browser, `${server.url}/runs`);
  console.log(`per page, cold cache, median of ${RUNS} (${server.url}):`);
  console.log(`${'page'.padEnd(36)} ${'transfer'.padStart(10)} ${'of it wasm'.padStart(11)} ${'html'.padStart(9)} ${'interactive'.padStart(12)}`);
  for (const path of PAGES) {
    const runs = [];
    for (let i = 0; i < RUNS; i++) runs.push(await once(browser, `${server.url}${path}`));
    const m = (k) => median(runs.map((r) => r[k]));
    console.log(`${path.padEnd(36)} ${kb(m('total')).padStart(10)} ${kb(m('wasm')).padStart(11)} ${kb(m('html')).padStart(9)} ${`${m('interactive').toFixed(0)} ms`.padStart(12)}`);
  }
} finally {
  await browser.close();
  await server.stop();
}
