// The tabs about what a run found, in a real browser: trials filtered and paged,
// a trial's lineage, a trial graph, accepted factors and acceptance reports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { demoSession, watchErrors } from './support.mjs';

const session = demoSession();
const open = (page, path) => session.open(page, path);

test('trials are filtered and paged, and a trial links to its lineage', async () => {
  const page = await session.browser.context.newPage();
  const errors = watchErrors(page);
  await open(page, '/runs/long-search?tab=rounds');
  await page.waitForSelector('table.trials tr.trial');
  assert.match(await page.textContent('.trial-count'), /^1–50 of \d+ matching/);
  assert.equal((await page.$$('table.trials tr.trial')).length, 50);
  await page.click('nav.pager a.next');
  await page.waitForFunction(() => document.querySelector('.trial-count')?.textContent.startsWith('51–'));

  await open(page, '/runs/long-search?tab=rounds');
  await page.selectOption('form.trial-filters select[name="outcome"]', 'accepted');
  await Promise.all([page.waitForURL(/outcome=accepted/), page.click('form.trial-filters button[type="submit"]')]);
  await page.waitForSelector('body[data-hydrated="true"]');
  await page.waitForSelector('table.trials tr.trial');
  const rows = await page.$$eval('table.trials tr.trial', (rs) => rs.map((r) => r.classList.contains('accepted')));
  assert.ok(rows.length > 0 && rows.every(Boolean), 'only accepted trials');

  // A trial of a late round was derived from earlier ones.
  await open(page, '/runs/long-search?tab=rounds&round=40');
  await page.waitForSelector('table.trials tr.trial a.lineage-link');
  await page.click('table.trials tr.trial a.lineage-link >> nth=0');
  await page.waitForSelector('.lineage-of');
  assert.match(await page.textContent('.lineage-of'), /^Lineage of r40s1 \(round 40\)/);
  assert.match(await page.textContent('.limits'), /as the run was last opened/);
  assert.ok((await page.$$('table.lineage tr.ancestor')).length > 0, 'ancestors listed');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('a trial graph, accepted factors, the diagnosis and acceptance reports', async () => {
  const page = await session.browser.context.newPage();
  const errors = watchErrors(page);
  await open(page, '/runs/momentum-qwen?tab=graph');
  await page.waitForSelector('svg.trial-graph g.node.picked');
  assert.equal(await page.textContent('table.graph-nodes tr.graph-node >> nth=0 >> td.rank'), '1');
  await page.click('nav.graph-rounds a[data-round="2"]');
  await page.waitForSelector('nav.graph-rounds a.current[data-round="2"]');

  await page.click('a[data-tab="accepted"]');
  await page.waitForSelector('table.accepted tr.accepted-factor');

  await page.click('a[data-tab="diagnosis"]');
  await page.waitForSelector('ul.diagnosis li.finding, p.empty');

  await page.click('a[data-tab="reports"]');
  await page.waitForSelector('section.report');
  assert.ok(await page.$('section.report.holdout .badge.holdout'), 'the hold-out report is marked');
  const older = await page.textContent('section.report[data-file="validation.json"] .no-contribution');
  assert.match(older, /predates it/);
  assert.match(await page.textContent('section.report[data-file="validation.json"] td.selected'), /not recorded/);

  // A half-written report shows its reason; the others still read.
  await open(page, '/runs/volume-gpt?tab=reports');
  await page.waitForSelector('.report-problem');
  assert.match(await page.textContent('.report-problem'), /^acceptance\/2024_h2\.json: line 2 column \d+: EOF while parsing/);
  assert.ok((await page.$$('section.report')).length >= 2, 'the readable reports are shown');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
