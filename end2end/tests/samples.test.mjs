// The sample view over real Inspect AI logs of both formats, in a real
// browser: a run set whose two cells keep the logs real Inspect wrote
// (server/tests/fixtures/inspect-logs: the hasty stand-in as a JSON log, the
// careful one as a zstd `.eval`), opened as a user would — each cell's
// samples, then the hasty cell against the careful one, only the flips.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { consoleCampaign, startServer, startBrowser, watchErrors, workspace } from './support.mjs';

const fixtures = join(workspace, 'server', 'tests', 'fixtures', 'inspect-logs');
const JSON_LOG = '2026-12-06T18-01-57-00-00_arithmetic_hasty.json';
const EVAL_LOG = '2026-12-06T18-07-19-00-00_arithmetic_careful.eval';

let server;
let browser;
let root;

before(async () => {
  root = consoleCampaign('runboard-e2e-samples-', { name: 'samples', command: '["true"]' });
  // A run set as `runboard drive` leaves one (docs/formats.md, "Run sets"):
  // two ended cells, twins but for their condition.
  const rs = join(root, 'runsets', 'rs-s');
  mkdirSync(join(rs, 'cells'), { recursive: true });
  const cells = { 'c-hasty': 'base', 'c-careful': 'memory' };
  for (const [cell, condition] of Object.entries(cells)) {
    const factors = { condition, task: 't1', phase: 'main', seed: 1 };
    writeFileSync(join(rs, 'cells', `${cell}.json`), JSON.stringify({
      schema_version: 1, cell, factors, status: 'done', attempts: 1,
      started_at: '2026-12-06T18:00:00.000Z', ended_at: '2026-12-06T18:10:00.000Z', exit_code: 0,
    }));
  }
  writeFileSync(join(rs, 'batch_outcome.json'), JSON.stringify({
    schema_version: 1, label: 'rs-s', status: 'completed', reason: '', planned: 2, attempted: 2,
    completed: 2, failed: 0, started_at: '2026-12-06T18:00:00.000Z', driver: null,
  }));
  writeFileSync(join(rs, 'spec.json'), JSON.stringify({ schema_version: 1, label: 'rs-s', cells: [] }));
  for (const [cell, log] of [['c-hasty', JSON_LOG], ['c-careful', EVAL_LOG]]) {
    const dir = join(rs, 'out', cell, 'inspect');
    mkdirSync(dir, { recursive: true });
    copyFileSync(join(fixtures, log), join(dir, log));
  }
  server = await startServer(['--root', root]);
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
});

/** Each row's id, verdict and (when compared) the other cell's verdict. */
async function rows(page) {
  await page.waitForSelector('table.sample-rows tbody tr');
  return page.$$eval('table.sample-rows tbody tr', (trs) => trs.map((tr) => [
    tr.dataset.sample, tr.querySelector('td.verdict').textContent, tr.querySelector('td.there')?.textContent ?? null,
  ]));
}

test('the sample view reads a real JSON log and a real .eval log, and shows the flips between them', async () => {
  const page = await browser.context.newPage();
  const errors = watchErrors(page);

  await page.goto(`${server.url}/samples/rs-s/c-hasty`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  assert.deepEqual((await rows(page)).map((r) => r[1]), ['not passed', 'not passed', 'passed', 'passed', 'not passed', 'not passed']);
  assert.match(await page.textContent('p.summary'), /^6 samples in runsets\/rs-s\/out\/c-hasty\/inspect\/.*\.json \(json\); 2 of 6 scored passed\.$/);
  const first = page.locator('table.sample-rows tbody tr').first();
  assert.match(await first.locator('td.input').textContent(), /^What is 2 \+ 3\? Reply as ANSWER: <n>$/);
  assert.equal(await first.locator('td.target').textContent(), '5');
  assert.equal(await first.locator('td.output').textContent(), 'ANSWER: 6');
  assert.equal(await first.locator('td.score').textContent(), 'match: I');

  await page.goto(`${server.url}/samples/rs-s/c-careful`);
  assert.deepEqual((await rows(page)).map((r) => r[1]), Array(6).fill('passed'));
  assert.match(await page.textContent('p.summary'), /\.eval \(eval\); 6 of 6 scored passed\.$/);

  // Against the careful cell, only the flips: the four the hasty one missed.
  await page.goto(`${server.url}/samples/rs-s/c-hasty?against=rs-s%2Fc-careful&flipped=1`);
  assert.deepEqual(await rows(page), [['1', 'not passed', 'passed'], ['2', 'not passed', 'passed'], ['5', 'not passed', 'passed'], ['6', 'not passed', 'passed']]);
  assert.match(await page.textContent('p.summary'), /; 4 flipped against rs-s\/c-careful\.$/);
  assert.ok(await page.isChecked('p.against input[name="flipped"]'));
  assert.deepEqual(errors, [], 'no console errors');
  await page.close();
});
