// The results views in a real browser on a campaign with a real batch whose
// treat cells fail: Overview, Evidence, Timing and Reports show what the API
// says (each chart drawn, its table equal to the API's numbers), the factor
// and the scope live in the URL, and one scope changes every view — with no
// console errors. With RUNBOARD_SCREENSHOTS=<folder>, each view is also
// saved there as a PNG (how docs/ gets its pictures).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { consoleCampaign, startServer, startBrowser, watchErrors } from './support.mjs';
import { join } from 'node:path';

const shots = process.env.RUNBOARD_SCREENSHOTS;
const shot = async (page, name) => {
  if (shots) await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
};

let server;
let browser;
let root;

const post = (path, body) => fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json());
const get = (path) => fetch(`${server.url}${path}`).then((r) => r.json());

before(async () => {
  root = consoleCampaign('runboard-e2e-evidence-', {
    name: 'e2e evidence',
    command: `["sh", "-c", "test {condition} = base || exit 1; printf '{{\\"tokens\\": 100, \\"score\\": 0.5}}' > {out}/result.json"]`,
    parallel: 2,
  });
  server = await startServer(['--root', root]);
  browser = await startBrowser();
  const saved = await post('/api/drafts', { label: 'ev', max_cells: 4, endpoint: 'gpu-a' });
  await post('/api/control/start', { path: saved.path });
  for (let i = 0; i < 300; i++) {
    const live = await get('/api/live');
    if (live.state.state === 'idle') break;
    await new Promise((r) => setTimeout(r, 100));
  }
});

after(async () => {
  await browser?.close();
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

test('evidence: rates with intervals as the API says, the factor in the URL', async () => {
  const api = await get('/api/evidence');
  assert.equal(api.n, 4);
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/evidence`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  await page.waitForSelector('table.rates.by-factor');
  for (const g of api.groups) {
    const row = `table.by-factor tr[data-level="${g.level}"]`;
    assert.equal(await page.textContent(`${row} td.passes`), String(g.passes.successes));
    assert.equal(await page.textContent(`${row} td.n`), String(g.passes.n));
  }
  assert.match(await page.textContent('table.by-factor tr[data-level="base"] td.rate'), /2\/2 = 100 % \[34 %–100 %\]/);
  // The rates drawn by the server; the chart's table is the API's numbers.
  await page.waitForSelector('figure.rates-chart .chart-svg svg');
  const chartRows = await page.$$eval('figure.rates-chart .chart-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.deepEqual(chartRows, api.charts.rates.table.rows);
  await shot(page, 'evidence');
  assert.match(await page.textContent('table.comparisons tr[data-level="treat"]'), /-100 points/);
  assert.match(await page.textContent('table.failure-reasons'), /exit 1/);
  // Another factor: in the URL, and the tables follow.
  await page.selectOption('select[name="by"]', 'seed');
  await page.waitForURL(/by=seed/);
  await page.waitForSelector('table.by-factor tr[data-level="1"]');
  const bySeed = await get('/api/evidence?by=seed');
  assert.equal(await page.textContent('table.by-factor tr[data-level="1"] td.n'), String(bySeed.groups[0].passes.n));
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('overview: the landing page draws the progress and lists the batch', async () => {
  const api = await get('/api/overview');
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  await page.waitForSelector('figure.progress-chart .chart-svg svg');
  const rows = await page.$$eval('figure.progress-chart .chart-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.deepEqual(rows, api.progress.table.rows);
  assert.equal(await page.textContent('dd.covered'), String(api.totals.covered));
  assert.equal(await page.textContent('dd.failed'), '2');
  assert.equal(await page.getAttribute('table.latest tbody tr', 'data-run-set'), api.latest[0].name);
  assert.match(await page.textContent('.attention-none'), /Nothing needs attention/);
  await shot(page, 'overview');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('timing: the timeline, which timings count and why, as the API says', async () => {
  const api = await get('/api/timing');
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/timing`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  await page.waitForSelector('figure.timeline-chart .chart-svg svg');
  const svg = await page.innerHTML('figure.timeline-chart .chart-svg');
  for (const c of api.cells) assert.ok(svg.includes(c.cell), `a row for ${c.cell}`);
  const rows = await page.$$eval('figure.timeline-chart .chart-table tbody tr', (trs) => trs.length);
  assert.equal(rows, api.timeline.table.rows.length);
  assert.match(await page.textContent('.validity-words'), /2 cells' timings count, 2 do not/);
  assert.equal(await page.textContent('table.validity-reasons tr[data-reason="not complete"] td:last-child'), '2');
  assert.equal(await page.locator('table.timeline-cells tr.counts').count(), 2);
  await shot(page, 'timing');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('scope: one filter, in the URL, changes evidence, timing and reports', async () => {
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/evidence`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  await page.fill('form.scope-bar input[name="scope"]', 'condition=base');
  await page.click('form.scope-bar button[type="submit"]');
  await page.waitForURL(/scope=condition%3Dbase/);
  await page.waitForFunction(() => document.querySelector('p.overall')?.textContent.includes('2 ended cells in condition=base'));
  // The navigation carries the scope to the other results views.
  await page.click('nav a[href^="/timing"]');
  await page.waitForURL(/\/timing\?scope=condition%3Dbase/);
  await page.waitForFunction(() => document.querySelector('.validity-words')?.textContent.startsWith("2 cells' timings count, 0 do not"));
  await page.click('nav a[href^="/reports"]');
  await page.waitForURL(/\/reports\?scope=condition%3Dbase/);
  await page.waitForSelector('table.report-list tbody tr');
  await page.click('table.report-list tbody tr a');
  await page.waitForURL(/\/reports\/ev-.*scope=condition%3Dbase/);
  await page.waitForSelector('table.report-cells tbody tr');
  assert.equal(await page.locator('table.report-cells tbody tr').count(), 2, 'only the cells in scope');
  assert.match(await page.textContent('p.scope-note'), /condition=base/);
  // A scope that cannot be read says why, in the view.
  await page.goto(`${server.url}/timing?scope=colour%3Dred`);
  await page.waitForSelector('p.error');
  assert.match(await page.textContent('p.error'), /colour is not a factor/);
  assert.deepEqual(errors.filter((e) => !/422/.test(e)), [], 'no console errors but the refused scope');
  await page.close();
});

test('report: a printable page of the batch with its failures', async () => {
  const [rs] = await get('/api/reports');
  const api = await get(`/api/reports/${encodeURIComponent(rs.name)}`);
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/reports/${encodeURIComponent(rs.name)}`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  await page.waitForSelector('table.report-cells tbody tr');
  assert.equal(await page.locator('table.report-cells tbody tr').count(), api.cells.length);
  assert.match(await page.textContent('table.report-failures'), /exit 1/);
  assert.match(await page.textContent('dd.outcome'), /failures/);
  // On paper, the console's navigation is left off.
  await page.emulateMedia({ media: 'print' });
  assert.equal(await page.isVisible('header.topbar'), false);
  await page.emulateMedia({ media: 'screen' });
  await shot(page, 'report');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
