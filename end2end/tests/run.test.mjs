// A run's page in a real browser: follow a live run, open a call's reasoning and
// a memory diff, and see an unreadable part with its reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { demoSession, watchErrors } from './support.mjs';
import { join } from 'node:path';

const session = demoSession();
const open = (page, path) => session.open(page, path);

test('a live run page follows the writer without a reload', async () => {
  const page = await session.browser.context.newPage();
  const errors = watchErrors(page);
  await open(page, '/runs/explore-qwen?tab=summary');
  await page.evaluate(() => { window.__sameDocument = true; });
  const written = async () => Number((await page.textContent('.rounds-written')).split(' ')[0]);
  const first = await written();
  // The demo writer finishes a round about every 10 s.
  await page.waitForFunction((n) => Number(document.querySelector('.rounds-written').textContent.split(' ')[0]) > n,
    first, { timeout: 30_000 });
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload happened');
  assert.match(await page.textContent('.process'), /alive/);

  // The rounds tab gains the next round as the writer writes it, without a reload.
  await page.click('a[data-tab="rounds"]');
  await page.waitForSelector('table.rounds tr.round-count');
  const latest = async () => Math.max(...await page.$$eval('tr.round-count', (rs) => rs.map((r) => Number(r.dataset.round))));
  const shown = await latest();
  await page.waitForSelector(`tr.round-count[data-round="${shown + 1}"]`, { timeout: 30_000 });
  await page.waitForSelector(`table.trials tr[data-round="${shown + 1}"]`);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'still no reload');
  await page.click('a[data-tab="progress"]');
  await page.waitForSelector('.in-progress .pending-slot');

  // A call opened on a live run stays open while the run writes on.
  await open(page, '/runs/explore-qwen?tab=calls&call=1');
  await page.waitForSelector('.call-detail[data-call="1"] .reasoning');
  const before = await page.getAttribute('.tab-body', 'data-version');
  await page.waitForFunction((v) => document.querySelector('.tab-body')?.dataset.version !== v, before, { timeout: 30_000 });
  await page.waitForSelector('.call-detail[data-call="1"] .reasoning');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('a live run\'s page keeps the reader\'s scroll and typed text across pushes', async () => {
  const page = await session.browser.context.newPage();
  await page.setViewportSize({ width: 1280, height: 480 });
  const errors = watchErrors(page);
  await open(page, '/runs/explore-qwen?tab=rounds');
  await page.waitForSelector('table.trials tr.trial');
  // Type into the trial filter without submitting, and scroll down.
  await page.fill('form.trial-filters input[name="q"]', 'half-typ');
  await page.evaluate(() => window.scrollTo(0, 300));
  const y = await page.evaluate(() => window.scrollY);
  assert.ok(y > 100, `the page scrolls (at ${y})`);
  // Two pushes of the run's version while the reader waits.
  for (let i = 0; i < 2; i++) {
    const v = await page.getAttribute('.tab-body', 'data-version');
    await page.waitForFunction((old) => document.querySelector('.tab-body')?.dataset.version !== old, v, { timeout: 30_000 });
    await page.waitForTimeout(500);
  }
  assert.equal(await page.inputValue('form.trial-filters input[name="q"]'), 'half-typ', 'typed text kept');
  const after = await page.evaluate(() => window.scrollY);
  assert.ok(Math.abs(after - y) < 40, `scroll kept: ${y} then ${after}`);

  // The lineage box keeps what is typed, too.
  await page.click('a[data-tab="lineage"]');
  await page.waitForSelector('form.lineage-form input[name="trial"]');
  await page.fill('form.lineage-form input[name="trial"]', 'r1-s');
  const v = await page.getAttribute('.tab-body', 'data-version');
  await page.waitForFunction((old) => document.querySelector('.tab-body')?.dataset.version !== old, v, { timeout: 30_000 });
  await page.waitForTimeout(500);
  assert.equal(await page.inputValue('form.lineage-form input[name="trial"]'), 'r1-s', 'lineage text kept');

  // A call's reasoning opens right under the row clicked, in view.
  await page.click('a[data-tab="calls"]');
  await page.waitForSelector('table.calls tr[data-call]');
  const last = await page.$$eval('table.calls tr[data-call]', (rs) => rs[rs.length - 1].dataset.call);
  await page.click(`table.calls tr[data-call="${last}"] a.open-call`);
  await page.waitForSelector(`.call-detail[data-call="${last}"] .reasoning`);
  const placed = await page.evaluate((n) => {
    const row = document.querySelector(`table.calls tr[data-call="${n}"]`);
    const next = row.nextElementSibling;
    const box = document.querySelector('.call-detail').getBoundingClientRect();
    return { under: next?.classList.contains('call-detail-row') && next.contains(document.querySelector('.call-detail')),
             visible: box.top < window.innerHeight && box.bottom > 0 };
  }, last);
  assert.deepEqual(placed, { under: true, visible: true });
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('a call\'s reasoning, a memory diff, and an unreadable part', async () => {
  const page = await session.browser.context.newPage();
  const errors = watchErrors(page);
  await open(page, '/runs/momentum-qwen?tab=calls');
  // The events say which slot call 2 concerned; the reasoning is the call file's own.
  const slot = (await page.textContent('tr[data-call="2"] td:nth-child(3)')).trim();
  assert.match(slot, /^\d+$/);
  await page.click('tr[data-call="2"] a.open-call');
  await page.waitForSelector('.call-detail[data-call="2"] .reasoning');
  assert.match(await page.textContent('.call-detail .reasoning'), new RegExp(`^Round 1, slot ${slot}:`));

  await page.waitForURL(/call=2/);

  // Memory: the latest version, compared line by line with the one before.
  await page.click('a[data-tab="memory"]');
  await page.waitForSelector('.memory-version .diff .added');
  assert.equal(await page.getAttribute('.memory-version', 'data-round'), '6');
  const added = await page.$$eval('.memory-version .diff .added', (els) => els.map((e) => e.textContent));
  const removed = await page.$$eval('.memory-version .diff .removed', (els) => els.map((e) => e.textContent));
  assert.ok(added.includes('+ # Memory before round 6\n'), JSON.stringify(added));
  assert.ok(removed.includes('- # Memory before round 5\n'), JSON.stringify(removed));
  await page.click('nav.memory-versions a[data-round="3"]');
  await page.waitForSelector('.memory-version[data-round="3"] .diff');

  await open(page, '/runs/momentum-qwen?tab=map');
  // The map is drawn by the server (plotters); its table holds one row per dot.
  await page.waitForSelector('figure.admission-map .chart-svg svg circle');
  const dots = (await page.$$('figure.admission-map .chart-svg svg circle')).length;
  const rows = (await page.$$('figure.admission-map .chart-table tbody tr')).length;
  assert.ok(rows > 0, 'scored trials on the map');
  // Every trial's dot, plus one legend mark per group.
  assert.ok(dots >= rows && dots <= rows + 2, `${dots} dots for ${rows} trials`);
  // RUNBOARD_SCREENSHOTS=<folder>: the picture docs/ shows of a run's page.
  if (process.env.RUNBOARD_SCREENSHOTS) {
    await page.screenshot({ path: join(process.env.RUNBOARD_SCREENSHOTS, 'run-page.png'), fullPage: true });
  }
  await page.click('a[data-tab="refusals"]');
  await page.waitForSelector('table.refusals tr.refusal-group');

  await open(page, '/runs/volume-gpt');
  const problem = await page.textContent('.problems .problem');
  assert.match(problem, /ledger\.jsonl: line \d+: line 1 column \d+: expected value/);
  assert.ok(await page.$('.tokens-total'), 'the rest of the summary still shows');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('a followed run whose folder is deleted says it is gone', async () => {
  const { cpSync, rmSync } = await import('node:fs');
  const { join } = await import('node:path');
  const root = join(session.server.data, 'demo');
  const copy = join(root, 'runs', 'doomed', 'doomed-copy');
  cpSync(join(root, 'runs', 'batch-a', 'reversal-llama'), copy, { recursive: true });
  const page = await session.browser.context.newPage();
  const errors = watchErrors(page);
  await open(page, '/runs/doomed-copy?tab=summary');
  await page.waitForSelector('.rounds-written');
  assert.equal(await page.$('.gone'), null, 'not gone while its folder is there');
  rmSync(copy, { recursive: true, force: true });
  // The server looks at a followed run every 250 ms and pushes `gone` once.
  await page.waitForSelector('p.gone', { timeout: 15_000 });
  assert.match(await page.textContent('p.gone'), /no longer on disk/);
  // The only errors allowed are the browser's notes on the 404s of the re-read.
  const unexpected = errors.filter((e) => !/status of 404|Failed to load resource/.test(e));
  assert.deepEqual(unexpected, [], 'no other console errors');
  await page.close();
});
