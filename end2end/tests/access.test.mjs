// Secure by default, in Chromium: a console started with no token makes its
// own and prints the address that carries it; opening that address signs the
// browser in and drops the token from the address bar, a reload stays signed
// in, a browser without it gets nothing; a viewer's token reads the pages
// with every control disabled, while an operator's are enabled.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { binary, closeConsole, consoleCampaign, draftAndLaunch, startServer, startBrowser, watchErrors } from './support.mjs';

let server;
let browser;
let root;

before(async () => {
  root = consoleCampaign('runboard-e2e-access-', { name: 'e2e access', command: '["sleep", "120"]' });
  server = await startServer(['--root', root], { ownToken: true });
  browser = await startBrowser({ signedIn: false });
  // A batch running, so the Live page offers its controls.
  await draftAndLaunch(server.url, { label: 'access', max_cells: 1, endpoint: 'gpu-a' });
});

after(() => closeConsole({ server, browser, root }));

const hydrated = (page) => page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });

test('the printed address signs the browser in, leaves the address bar, and a reload stays in', async () => {
  assert.match(server.openUrl, /^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{64}$/);
  // `runboard open` prints the same address, from the data folder.
  const opened = execFileSync(binary, ['open', '--data-dir', server.data], { encoding: 'utf8' }).trim();
  assert.equal(opened, server.openUrl);

  // Without the token: a page that says how to get in, and nothing else.
  const outside = await browser.context.newPage();
  const stranger = await outside.goto(`${server.url}/live`);
  assert.equal(stranger.status(), 401, 'no token, no page');
  assert.match(await outside.textContent('h1'), /needs its token/);
  assert.match(await outside.textContent('body'), /runboard open/);
  await outside.close();

  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(server.openUrl);
  await hydrated(page);
  assert.equal(page.url(), `${server.url}/`, 'the token left the address bar');
  await page.goto(`${server.url}/live`);
  await hydrated(page);
  await page.reload();
  await hydrated(page);
  assert.equal(await page.isEnabled('button.stop'), true, 'the console token operates');
  assert.equal(await page.locator('.badge.viewer').count(), 0);
  assert.deepEqual(errors, []);
  await page.close();
});

test("a viewer's token reads every page and sees no enabled control", async () => {
  const viewer = execFileSync(binary, ['token', 'add', 'colleague', '--view', '--data-dir', server.data], { encoding: 'utf8' }).trim();
  const watcher = await startBrowser({ signedIn: false });
  try {
    const page = await watcher.context.newPage();
    const errors = watchErrors(page);
    await page.goto(`${server.url}/live?token=${viewer}`);
    await hydrated(page);
    assert.equal(new URL(page.url()).search, '', 'the token left the address bar');
    assert.match(await page.textContent('.badge.viewer'), /viewing only/);
    await page.waitForSelector('button.stop');
    // Every page with controls: each of them present and disabled.
    const controls = {
      '/live': 'button.pause, button.stop, button.end-cell',
      '/auto': 'button.auto-on, button.auto-finishing, button.auto-off, button.save-settings',
      '/coverage': 'button.preview, button.save',
      '/upkeep': 'button.act',
      '/next': 'button.draft-it',
      '/research': 'form button[type="submit"]',
    };
    let seen = 0;
    for (const [path, selector] of Object.entries(controls)) {
      await page.goto(`${server.url}${path}`);
      await hydrated(page);
      for (const button of await page.locator(selector).all()) {
        assert.equal(await button.isDisabled(), true, `${path}: ${await button.evaluate((b) => b.outerHTML)}`);
        seen += 1;
      }
    }
    assert.ok(seen >= 10, `controls checked: ${seen}`);
    assert.deepEqual(errors, []);
    // What the page would send is refused in words all the same.
    const refused = await page.evaluate(async () => {
      const r = await fetch('/api/auto/on', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      return { status: r.status, body: await r.json() };
    });
    assert.equal(refused.status, 403);
    assert.match(refused.body.error, /colleague is a viewer's token/);
  } finally {
    await watcher.close();
  }
});
