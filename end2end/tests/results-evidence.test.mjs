// The results views in a real browser on a campaign with a real batch whose
// treat cells fail: Overview, Evidence, Timing and Reports show what the API
// says (each chart drawn, its table equal to the API's numbers), the factor
// and the scope live in the URL, and one scope changes every view — with no
// console errors. With RUNBOARD_SCREENSHOTS=<folder>, each view is also
// saved there as a PNG (how docs/ gets its pictures).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, rmSync } from 'node:fs';
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
    command: `["sh", "-c", "test {condition} = base || exit 1; sleep 0.2; printf '{{\\"tokens\\": 100, \\"score\\": 0.5}}' > {out}/result.json"]`,
    parallel: 2,
  });
  // The passing cells take a moment: 100 tokens in under 5 ms would be an
  // implausible rate (more than 20,000 tokens/s), and its timing would not
  // count — a fast machine made that happen.
  // A publish command that says what it pushes.
  appendFileSync(`${root}/campaign.toml`, '[publish]\ncommand = ["sh", "-c", "echo pushing $RUNBOARD_CONTENT_HASH; wc -l < \\"$RUNBOARD_EXPORT_CSV\\""]\ntimeout_s = 30\n');
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
  assert.match(await page.textContent('table.not-passed-reasons tr[data-reason="exit 1"]'), /exit 1\s*2\s*2/);
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
  // What needs attention is what the API says, each item linked; idle with
  // gaps left, the next step (draft the next batch) is among them.
  const items = await page.$$eval('li.attention-item', (lis) => lis.map((li) => [li.dataset.kind, li.textContent, li.querySelector('a').getAttribute('href')]));
  assert.deepEqual(items, api.attention.map((a) => [a.kind, a.words, a.href]));
  if (api.totals.planned > api.totals.covered + api.totals.failed + api.totals.running) {
    assert.ok(items.some(([k, w, h]) => k === 'next_step' && /draft the next batch/.test(w) && h === '/next'), JSON.stringify(items));
  }
  await shot(page, 'overview');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('catalogue: each model and endpoint, usable or not and why, as the API says; probed again on asking', async () => {
  const api = await get('/api/catalogue');
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/catalogue`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  await page.waitForSelector('table.models tbody tr');
  for (const m of api.models) {
    const row = `table.models tr[data-name="${m.name}"]`;
    assert.equal(await page.getAttribute(row, 'data-available'), String(m.available));
    assert.equal(await page.textContent(`${row} td.status`), m.words);
    assert.equal(await page.textContent(`${row} td.tokens`), String(m.use.tokens));
  }
  const gpu = api.endpoints.find((e) => e.name === 'gpu-a');
  assert.equal(gpu.available, false, 'nothing answers at 127.0.0.1:9');
  assert.equal(gpu.use.run_sets, 1, 'the batch ran on it');
  const row = 'table.endpoints tr[data-name="gpu-a"]';
  assert.equal(await page.textContent(`${row} td.status`), gpu.words);
  assert.match(await page.textContent(`${row} td.probe`), /^no answer: /);
  assert.match(await page.textContent('p.note.operational'), /operational signals, not results/);
  // Probe again: a new probe time is shown.
  const before = await page.textContent('p.note.operational');
  await new Promise((r) => setTimeout(r, 1100));
  await page.click('button.probe');
  await page.waitForFunction((was) => document.querySelector('p.note.operational')?.textContent !== was, before, { timeout: 15_000 });
  await shot(page, 'catalogue');
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

test('cohorts: presets saved, compared side by side as the API says, renamed and deleted', async () => {
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/cohorts`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  // A bad preset: every reason shown, nothing saved.
  await page.fill('form.cohort-save input[name="name"]', 'bad,name');
  await page.fill('form.cohort-save input[name="scope"]', 'colour=red');
  await page.click('form.cohort-save button[type="submit"]');
  await page.waitForSelector('.cohort-refused li.reason');
  assert.equal(await page.locator('.cohort-refused li.reason').count(), 2);
  for (const [name, scope] of [['base', 'condition=base'], ['treat', 'condition=treat']]) {
    await page.fill('form.cohort-save input[name="name"]', name);
    await page.fill('form.cohort-save input[name="scope"]', scope);
    await page.click('form.cohort-save button[type="submit"]');
    await page.waitForSelector(`table.presets tr[data-name="${name}"]`);
  }
  await page.check('table.presets tr[data-name="base"] input.compare');
  await page.waitForURL(/compare=base/);
  await page.check('table.presets tr[data-name="treat"] input.compare');
  await page.waitForURL(/compare=base%2Ctreat|compare=base,treat/);
  await page.waitForSelector('table.cohort-comparison tr[data-name="treat"]');
  const api = await get('/api/cohorts/compare?names=base,treat');
  for (const c of api.cohorts) {
    assert.equal(await page.textContent(`table.cohort-comparison tr[data-name="${c.name}"] td.n`), String(c.passes.n));
    assert.equal(await page.textContent(`table.cohort-comparison tr[data-name="${c.name}"] td.passes`), String(c.passes.successes));
  }
  assert.match(await page.textContent('table.cohort-comparison tr[data-name="treat"] td.difference'), /-100 points/);
  // Every evidence figure side by side: per task, one column per cohort.
  assert.match(await page.textContent('table.side-by-side.by-task tr[data-level="t1"] td[data-cohort="treat"]'), /^0\/2 = 0 %/);
  assert.match(await page.textContent('table.side-by-side.not-passed-reasons tr[data-reason="exit 1"]'), /exit 1\s*0\s*2/);
  await page.waitForSelector('figure.cohort-rates-chart .chart-svg svg');
  await shot(page, 'cohorts');
  await page.fill('table.presets tr[data-name="treat"] input.rename-to', 'treated');
  await page.click('table.presets tr[data-name="treat"] button.rename');
  await page.waitForSelector('table.presets tr[data-name="treated"]');
  await page.click('table.presets tr[data-name="treated"] button.delete');
  await page.waitForFunction(() => !document.querySelector('table.presets tr[data-name="treated"]'));
  assert.deepEqual((await get('/api/cohorts')).presets.map((p) => p.name), ['base']);
  assert.deepEqual(errors.filter((e) => !/422/.test(e)), [], 'no console errors but the refused preset');
  await page.close();
});

test('research: the summary links cohort rates; a decision, questions and hypotheses are recorded from the page, refusals in words', async () => {
  await post('/api/research', { schema_version: 1, questions: [{ id: 'q1', text: 'Does the base pass?',
    hypotheses: [{ id: 'h1', text: 'base passes', status: 'supported', cohorts: ['base'] }] }], decisions: [], settings: {} });
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/research`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  await page.waitForSelector('li.question[data-id="q1"] li.hypothesis[data-id="h1"]');
  assert.match(await page.textContent('li.hypothesis[data-id="h1"]'), /base: 100 % of 2/);
  await page.fill('form.decide input[name="decision"]', 'keep the base condition');
  await page.fill('form.decide input[name="question"]', 'q1');
  await page.click('form.decide button[type="submit"]');
  await page.waitForSelector('ul.decisions li.decision');
  assert.match(await page.textContent('ul.decisions li.decision'), /keep the base condition \(q1\)/);
  const api = await get('/api/research');
  assert.equal(api.state.decisions.length, 1);

  // Questions and hypotheses by form, never JSON; refusals in words, beside them.
  const said = async () => (await page.textContent('.said')).trim();
  const saidNext = async (act) => {
    const before = await page.locator('.said').count() ? await said() : '';
    await act();
    await page.waitForFunction((b) => { const e = document.querySelector('.said'); return e && e.textContent.trim() !== b; }, before);
    return said();
  };
  await page.fill('form.add-question input[name="id"]', 'q 2');
  await page.fill('form.add-question input[name="text"]', 'Is the treatment worse?');
  await page.fill('form.add-question input[name="cohorts"]', 'base, ghost');
  let words = await saidNext(() => page.click('form.add-question button[type="submit"]'));
  assert.match(words, /question id "q 2": 1–40 of A-Za-z0-9-_\./);
  assert.match(words, /no cohort preset named "ghost"/);
  assert.doesNotMatch(words, /serde|invalid type|expected/);
  // Fixed: added, and the form starts empty again.
  await page.fill('form.add-question input[name="id"]', 'q2');
  await page.fill('form.add-question input[name="cohorts"]', 'base');
  await page.click('form.add-question button[type="submit"]');
  await page.waitForSelector('li.question[data-id="q2"]');
  assert.equal(await page.inputValue('form.add-question input[name="id"]'), '');
  // A hypothesis under it; its status set from its own select.
  await page.selectOption('form.add-hypothesis select[name="question"]', 'q2');
  await page.fill('form.add-hypothesis input[name="id"]', 'h2');
  await page.fill('form.add-hypothesis input[name="text"]', 'treat fails more often');
  await page.click('form.add-hypothesis button[type="submit"]');
  await page.waitForSelector('li.hypothesis[data-id="h2"]');
  await page.selectOption('li.hypothesis[data-id="h2"] select', 'supported');
  await page.waitForFunction(() => /\[supported\] treat fails/.test(document.querySelector('li.hypothesis[data-id="h2"]')?.textContent ?? ''));
  // Answered needs an answer.
  await page.selectOption('li.question[data-id="q2"] form.set-question select', 'answered');
  words = await saidNext(() => page.click('li.question[data-id="q2"] form.set-question button'));
  assert.match(words, /question "q2": it is answered but its answer is empty/);
  await page.fill('li.question[data-id="q2"] form.set-question input[name="answer"]', 'yes: every treat cell failed');
  await page.click('li.question[data-id="q2"] form.set-question button');
  await page.waitForSelector('li.question.answered[data-id="q2"] p.answer');
  // A save made elsewhere meanwhile: the page's change is refused, not
  // written over it, and the form keeps what was typed to redo it.
  await post('/api/research/decisions', { text: 'decided elsewhere' });
  await page.fill('form.add-question input[name="id"]', 'q3');
  await page.fill('form.add-question input[name="text"]', 'Does seed matter?');
  words = await saidNext(() => page.click('form.add-question button[type="submit"]'));
  assert.match(words, /changed since this copy was read/);
  assert.equal(await page.inputValue('form.add-question input[name="id"]'), 'q3');
  await page.waitForSelector('ul.decisions li.decision:has-text("decided elsewhere")');
  await page.click('form.add-question button[type="submit"]');
  await page.waitForSelector('li.question[data-id="q3"]');
  const after = await get('/api/research');
  assert.deepEqual(after.state.questions.map((q) => [q.id, q.status]), [['q1', 'open'], ['q2', 'answered'], ['q3', 'open']]);
  assert.deepEqual(after.state.questions[1].hypotheses, [{ id: 'h2', text: 'treat fails more often', status: 'supported', cohorts: [] }]);
  assert.equal(after.state.decisions.length, 2, 'no decision lost');
  await shot(page, 'research');
  // The browser logs each refused save (two 422s, one 409); nothing else.
  const refused = (status) => `Failed to load resource: the server responded with a status of ${status}`;
  assert.deepEqual(errors, [`${refused(422)} (Unprocessable Entity)`, `${refused(422)} (Unprocessable Entity)`,
    `${refused(409)} (Conflict)`], 'no other console errors');
  await page.close();
});

test('publish: a push runs the campaign\'s command and its output is shown', async () => {
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/publish`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  await page.waitForSelector('p.publish-words');
  assert.equal(await page.textContent('p.publish-words'), 'Nothing has been published yet.');
  await page.click('button.push');
  // The page looks again 1.5 s after the push started.
  await page.waitForSelector('.push-record.last pre.push-output', { timeout: 15_000 });
  await page.waitForFunction(() => document.querySelector('p.publish-words')?.textContent.startsWith('Published'), null, { timeout: 15_000 });
  const st = await get('/api/publish/status');
  assert.equal(st.last.exit_code, 0);
  assert.equal(await page.textContent('.push-record.last pre.push-output'), st.last.output);
  assert.match(st.last.output, new RegExp(`^pushing ${st.current_hash}\n`));
  assert.equal(await page.textContent('.push-record.last dd.push-words'), 'published');
  await shot(page, 'publish');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
