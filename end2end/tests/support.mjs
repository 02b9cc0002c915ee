// Shared helpers: start a real `runboard serve` (release build) and Debian's Chromium.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { before, after } from 'node:test';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
export const workspace = join(here, '..', '..');
export const binary = process.env.RUNBOARD_BIN ?? join(workspace, 'target', 'release', 'runboard');

/**
 * The console token of this test process's servers. Every console asks one;
 * the servers started here are given this one (`RUNBOARD_TOKEN`), so this
 * process's `fetch` sends it to them (`Authorization: Bearer`; to them alone)
 * and its browsers carry it as the console's cookie. access.test.mjs
 * starts servers that make their own (`{ ownToken: true }`).
 */
export const TOKEN = randomBytes(32).toString('hex');
/** The token of each server started here, by origin: sent to it alone. */
const tokens = new Map();
const plainFetch = globalThis.fetch;
globalThis.fetch = (url, init = {}) => {
  const token = tokens.get(new URL(url).origin);
  const headers = new Headers(init.headers ?? {});
  if (token && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
  return plainFetch(url, { ...init, headers });
};

/**
 * Starts `runboard serve` on a free loopback port; resolves once it prints
 * its address (and, with `ownToken`, the address with the token it made:
 * `openUrl`, `token`).
 */
export async function startServer(args = [], { ownToken = false } = {}) {
  const data = mkdtempSync(join(tmpdir(), 'runboard-e2e-'));
  const child = spawn(binary, ['serve', '--port', '0', '--data-dir', data, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, RUNBOARD_TOKEN: ownToken ? '' : TOKEN },
  });
  const lines = createInterface({ input: child.stdout });
  const printed = { url: null, openUrl: null };
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('runboard serve printed no address within 60 s')), 60_000);
    child.once('exit', (code) => reject(new Error(`runboard serve exited early with ${code}`)));
    lines.on('line', (line) => {
      const m = line.match(/at (http:\/\/127\.0\.0\.1:\d+)\//);
      if (m) printed.url = m[1];
      const open = ownToken && line.match(/^runboard: open (http:\S+)/);
      if (open) printed.openUrl = open[1];
      if (printed.url && (printed.openUrl || !ownToken)) { clearTimeout(timer); resolve(printed.url); }
    });
  });
  const token = ownToken ? new URL(printed.openUrl).searchParams.get('token') : TOKEN;
  tokens.set(url, token);
  return {
    url,
    openUrl: printed.openUrl,
    token,
    data,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM'); // the PID we started, nothing else
        await exited;
      }
      rmSync(data, { recursive: true, force: true });
    },
  };
}

/**
 * Debian's Chromium, headless, in a fresh profile, without background
 * networking; signed in to this process's servers unless `signedIn` is false.
 */
export async function startBrowser({ signedIn = true } = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'runboard-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 800 },
  });
  // Signed in to this process's servers, as opening the printed address does.
  if (signedIn) {
    await context.addCookies([{ name: 'runboard_token', value: TOKEN, domain: '127.0.0.1', path: '/', httpOnly: true, sameSite: 'Strict' }]);
  }
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Collects console errors and uncaught page errors. */
export function watchErrors(page) {
  const errors = [];
  page.on('console', (msg) => { if (msg.type() === 'error') errors.push(msg.text()); });
  page.on('pageerror', (err) => errors.push(String(err)));
  return errors;
}

/**
 * One demo server and one browser for a test file: started before its tests,
 * stopped after them. Returns `{ server, browser, open }`, filled in once started;
 * `open(page, path)` loads a page and waits until it has hydrated.
 */
export function demoSession() {
  const session = {
    server: null,
    browser: null,
    async open(page, path) {
      await page.goto(`${session.server.url}${path}`);
      await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
    },
  };
  before(async () => {
    session.server = await startServer();
    session.browser = await startBrowser();
  });
  after(async () => {
    await session.browser?.close();
    await session.server?.stop();
  });
  return session;
}

/**
 * A console campaign in a new temporary folder, written by the binary itself
 * (`runboard __console-fixture`, the same fixture the Rust suites use): a task
 * `t1` with phases warmup → main, a matrix of 2 conditions × 2 phases × 2 seeds,
 * a local model `local-m` on endpoint `gpu-a`, and cells that run `command` (a
 * JSON array of strings). `models` adds `[[models]]` tables. Returns the folder.
 */
export function consoleCampaign(prefix, { name, command, parallel = 1, models = '', defaultGraces = false }) {
  const root = mkdtempSync(join(tmpdir(), prefix));
  execFileSync(binary, [
    '__console-fixture', root, '--name', name, '--command', command, '--parallel', String(parallel),
    '--models', models, ...(defaultGraces ? ['--default-graces'] : []),
  ]);
  return root;
}

/** POSTs `body` as JSON to the server at `url`; resolves to `{status, body}`. */
export async function postJson(url, path, body) {
  const r = await fetch(`${url}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

/** Saves a draft (`body` as POST /api/drafts takes it) and launches it; resolves to its run set. */
export async function draftAndLaunch(url, body) {
  const saved = await postJson(url, '/api/drafts', body);
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  const launched = await postJson(url, '/api/control/start', { path: saved.body.path });
  assert.equal(launched.status, 200, JSON.stringify(launched.body));
  return launched.body.run_set;
}

/**
 * Drafts one cell labelled `label` on endpoint gpu-a, launches it, and opens
 * the Live page, hydrated and marked (`window.__sameDocument`, so a reload
 * would show); resolves to `{runSet, page, errors}`.
 */
export async function launchOneAndOpenLive(server, browser, label) {
  const saved = await postJson(server.url, '/api/drafts', { label, max_cells: 1, endpoint: 'gpu-a' });
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  const launched = await postJson(server.url, '/api/control/start', { path: saved.body.path });
  assert.equal(launched.status, 200, JSON.stringify(launched.body));
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${server.url}/live`);
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
  await page.evaluate(() => { window.__sameDocument = true; });
  return { runSet: launched.body.run_set, page, errors };
}

/**
 * Shuts down what a console test file started: the batch on its Live page
 * (a default stop: that batch only), the browser, the server, its campaign.
 */
export async function closeConsole({ server, browser, root }) {
  if (server) await postJson(server.url, '/api/control/stop', {}).catch(() => {});
  await browser?.close();
  await server?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
}
