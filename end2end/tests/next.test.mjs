// Deciding what to run next, in a real browser on the demo: the first visit's
// guide (pointing at the real controls, remembered when dismissed), the
// proposal guide reached from Evidence with its paired view (Draft it, then
// the usual check), and tags edited on Reports and Live.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { demoSession, postJson, watchErrors } from './support.mjs';

const session = demoSession();
const open = (page, path) => session.open(page, path);

// First in this file: the profile is fresh, so the guide starts at step 1.
test('a first visit is walked through the console, and a dismissal is remembered', async () => {
  const page = await session.browser.context.newPage();
  const errors = watchErrors(page);
  await open(page, '/');
  await page.waitForSelector('aside.guide[data-step="0"]');
  assert.match(await page.textContent('aside.guide .guide-step'), /step 1 of 8: The Overview/);
  // The step outlines the real control (a style rule of the guide's own, so
  // it holds while the page redraws the control).
  const outlined = (target) => page.waitForFunction(
    (t) => { const el = document.querySelector(t); return el && getComputedStyle(el).outlineStyle === 'solid'; },
    target, { timeout: 15_000 });
  await outlined('section.overview dl.totals');
  const walk = [
    ['/coverage', 'table.coverage-grid'],
    ['/coverage', 'form.draft-form'],
    ['/coverage', 'div.launching'],
    ['/live', 'div.live-state'],
    ['/evidence', 'table.comparisons'],
    ['/next', 'ol.proposals'],
  ];
  for (const [i, [path, target]] of walk.entries()) {
    await page.click('aside.guide button.guide-next');
    await page.waitForSelector(`aside.guide[data-step="${i + 1}"]`);
    await page.waitForFunction((p) => location.pathname === p, path);
    await outlined(target);
    assert.equal((await page.$$('aside.guide style')).length, 1, `one control pointed at on step ${i + 2}`);
  }
  // Remembered across a reload, then dismissed for good.
  await page.reload();
  await page.waitForSelector('body[data-hydrated="true"]');
  await page.waitForSelector('aside.guide[data-step="6"]');
  await page.click('aside.guide button.guide-back');
  await page.waitForSelector('aside.guide[data-step="5"]');
  await page.click('aside.guide button.guide-dismiss');
  await page.waitForSelector('aside.guide', { state: 'detached' });
  assert.equal(await page.$('aside.guide style'), null, 'the outline goes with it');
  assert.notEqual(await page.$eval('table.comparisons', (el) => getComputedStyle(el).outlineStyle), 'solid');
  await open(page, '/');
  await page.waitForTimeout(500);
  assert.equal(await page.$('aside.guide'), null, 'a dismissed guide stays dismissed');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

// Second: the demo's batch is still running (it runs for a minute or two).
test("the Live page edits the batch's tags and a live re-read keeps a half-typed one", async () => {
  const page = await session.browser.context.newPage();
  const errors = watchErrors(page);
  await open(page, '/live');
  await page.waitForSelector('.live-tags span.tag[data-tag="demo"]');
  const runSet = (await page.textContent('dl.live-facts dd.run-set')).trim();
  await page.fill('.live-tags input.add-tag', 'watched');
  await page.click('.live-tags button.tag-add');
  await page.waitForSelector('.live-tags span.tag[data-tag="watched"]');
  // Half-typed, then the batch changes state (paused here): the page reads
  // the live view again, and the field keeps what was typed.
  await page.fill('.live-tags input.add-tag', 'half-typ');
  const state = await page.getAttribute('div.live-state', 'data-state');
  assert.equal(state, 'running', 'the demo batch still runs');
  const paused = await postJson(session.server.url, '/api/control/pause', { run_set: runSet });
  assert.equal(paused.status, 200, JSON.stringify(paused.body));
  await page.waitForSelector('div.live-state[data-state="stopped_resumable"]', { timeout: 30_000 });
  assert.equal(await page.inputValue('.live-tags input.add-tag'), 'half-typ', 'the live update kept the typed text');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('Evidence says its verdicts and family; the proposal guide ranks what would narrow most and drafts it for the usual check', async () => {
  const page = await session.browser.context.newPage();
  const errors = watchErrors(page);
  await open(page, '/evidence');
  // The demo's conditions were run on the same cells: the paired view.
  await page.waitForSelector('div.paired[data-level="memory"] p.paired-words');
  assert.match(await page.textContent('div.paired p.paired-words'), /memory − baseline over \d+ pairs: \+\d+ pp \[/);
  assert.equal(await page.textContent('table.paired-tasks tbody tr >> nth=0 >> td >> nth=0'), 'reversal');
  // The verdicts: the family said (one per level), memory's by the paired
  // test and open (eight pairs settle nothing under repeated looks), the
  // fixed-look interval beside, labelled.
  assert.match(await page.textContent('p.family'), /^1 comparison: the chance that it is called clear where nothing differs is at most 5 %, however often this page is read/);
  assert.match(await page.textContent('table.comparisons tr[data-level="memory"] td.verdict'), /^open by the paired test \(p = /);
  assert.match(await page.textContent('table.comparisons thead'), /Fixed-look 95 % interval/);
  assert.match(await page.textContent('div.paired p.paired-words'), /\(always-valid, [\d.]+ %\).* — open$/);
  assert.match(await page.textContent('div.paired p.fixed-look'), /^Fixed-look 95 % interval/);
  await page.click('a.to-next');
  await page.waitForURL(/\/next\?by=condition/);
  await page.waitForSelector('ol.proposals li.proposal');
  const first = page.locator('ol.proposals li.proposal').first();
  assert.equal(await first.getAttribute('data-task'), 'momentum', 'the difference its cells would narrow most first');
  assert.equal(await first.evaluate((li) => li.classList.contains('settled')), false);
  assert.match(await first.locator('p.words').textContent(), /more cells? on task momentum, condition \w+.*would narrow to about ±\d+ pp/);
  // What the ranking weighs: the always-valid margin, wider than the one look's, narrowing.
  assert.match(await first.locator('p.words').textContent(), /at one look, would narrow to about ±\d+ pp; always-valid ±\d+ → ±\d+ pp/);
  const [before, after] = (await first.locator('dd.margin').textContent()).match(/\d+/g).map(Number);
  assert.ok(after < before, `the margin narrows: ${before} → ${after}`);
  assert.match(await first.locator('p.predicted').textContent(), /^Predicted about [\d,]+ tokens.*Range: [\d,]+–[\d,]+ tokens/);
  assert.match(await first.locator('p.needed').textContent(), /about \d+ cells per condition/);
  // Reversal's fixed-look interval excludes 0 (4 of 4 against 1 of 4), but
  // its verdict is open: nothing is marked settled.
  const settled = await page.$$eval('ol.proposals li.proposal', (lis) => lis.map((li) => [li.dataset.task, li.classList.contains('settled')]));
  assert.ok(settled.length > 1 && settled.every(([, s]) => !s), JSON.stringify(settled));
  // Draft it: saved, then checked below by the usual preflight.
  await first.locator('button.draft-it').click();
  await page.waitForSelector('ol.proposals li.proposal >> nth=0 >> p.saved');
  assert.match(await first.locator('p.saved').textContent(), /^Saved specs\/drafts\/next-momentum-\w+-.*\.json \(\d+ cells\)/);
  await page.waitForSelector('.next-launch:not(.hidden) .preflight p.preflight-ok, .next-launch:not(.hidden) .preflight-refusals');
  assert.ok(await page.isVisible('.next-launch button.launch'), 'Launch is offered, nothing launched by itself');
  // Coverage points at it too.
  await open(page, '/coverage');
  assert.equal(await page.getAttribute('section.drafting a.to-next', 'href'), '/next');
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('a discordant pair on Evidence opens the samples that flipped between its two cells', async () => {
  const page = await session.browser.context.newPage();
  const errors = watchErrors(page);
  await open(page, '/evidence');
  await page.waitForSelector('div.paired[data-level="memory"] details.discordant');
  await page.click('div.paired[data-level="memory"] details.discordant summary');
  const link = page.locator('div.paired[data-level="memory"] details.discordant a.to-samples').first();
  assert.match(await link.getAttribute('href'), /^\/samples\/[^/]+\/c-[0-9a-f]+\?against=[^&]+&flipped=1$/);
  await link.click();
  await page.waitForURL(/\/samples\//);
  await page.waitForSelector('table.sample-rows tbody tr');
  // Only the flips: each row's verdict differs from the baseline cell's.
  assert.match(await page.textContent('p.summary'), /\d+ flipped against /);
  const rows = await page.$$eval('table.sample-rows tbody tr', (trs) => trs.map((tr) => [tr.querySelector('td.verdict').textContent, tr.querySelector('td.there').textContent, tr.querySelector('td.input').textContent]));
  assert.ok(rows.length > 0, 'a flip to show');
  for (const [mine, there, input] of rows) {
    assert.ok(['passed', 'not passed'].includes(mine) && ['passed', 'not passed'].includes(there) && mine !== there, JSON.stringify(rows));
    assert.match(input, /^Check \d+ of \w+ \(seed \d+\)/);
  }
  // All samples: the box off, the table grows to the cell's every check.
  await page.uncheck('p.against input[name="flipped"]');
  await page.waitForURL((u) => !u.search.includes('flipped=1'));
  await page.waitForFunction((n) => document.querySelectorAll('table.sample-rows tbody tr').length >= n, rows.length);
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});

test('tags are added, refused, noted, scoped and removed on Reports', async () => {
  const page = await session.browser.context.newPage();
  const errors = watchErrors(page);
  await open(page, '/reports');
  const row = page.locator('table.report-list tr[data-run-set^="demo-a"]');
  await row.locator('input.add-tag').fill('paper');
  await row.locator('button.tag-add').click();
  await row.locator('span.tag[data-tag="paper"]').waitFor();
  // A bad name is refused with the launch's rule, beside the field.
  await row.locator('input.add-tag').fill('no spaces');
  await row.locator('button.tag-add').click();
  await row.locator('.tag-refused').waitFor();
  assert.match(await row.locator('.tag-refused').textContent(), /must be 1-40 letters, digits/);
  // Its note, on the list of tags.
  await open(page, '/reports');
  await page.click('details.tag-notes summary');
  const note = page.locator('li.tag-note[data-tag="paper"]');
  await note.locator('textarea.note-text').fill('the baseline for §4');
  await note.locator('button.save-note').click();
  await page.waitForFunction(() => document.querySelector('li.tag-note[data-tag="paper"] p.note')?.textContent === 'the baseline for §4');
  // A tag is a scope at once.
  await open(page, '/evidence?scope=tag%3Dpaper');
  await page.waitForSelector('p.overall');
  assert.match(await page.textContent('p.overall'), /^8 ended cells in tag=paper/);
  // Untagged with ×.
  await open(page, '/reports');
  await page.locator('table.report-list tr[data-run-set^="demo-a"] span.tag[data-tag="paper"] button.untag').click();
  await page.locator('table.report-list tr[data-run-set^="demo-a"] span.tag[data-tag="paper"]').waitFor({ state: 'detached' });
  // The refused name's 422 is the only error the browser logs.
  assert.deepEqual(errors.filter((e) => !/status of 422/.test(e)), [], 'no other console errors');
  assert.equal(errors.length, 1);
  await page.close();
});
