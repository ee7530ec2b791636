// Test harness for the browser tests: starts `infralens serve` on a free loopback port and a
// headless Debian Chromium (playwright-core drives it; nothing is downloaded), a fresh browser
// context per caller, and collects console messages and page errors.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';

export const BIN = process.env.INFRALENS_BIN || path.resolve('build/infralens');
export const SHOTS = process.env.INFRALENS_SCREENSHOTS || path.resolve('build/screenshots');
export const CHROMIUM = process.env.INFRALENS_CHROMIUM || '/usr/bin/chromium';

// `args`: more `infralens serve` flags (e.g. ['--max-search-layouts', '40']).
// The tests check what the pages show, not how fast a loaded machine answers: unless `args` set
// their own, the server's time limit (5 s by default) is two minutes here, so that a machine busy
// with other builds (CI, a laptop) does not turn a slow answer into a 503 the test did not ask for.
// A test of the limit itself passes --time-limit-ms.
export async function startServer(args = []) {
  const limit = args.includes('--time-limit-ms') ? [] : ['--time-limit-ms', '120000'];
  const proc = spawn(BIN, ['serve', '--port', '0', ...limit, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const rl = readline.createInterface({ input: proc.stdout });
  const url = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`server did not print its address in 10 s: ${stderr}`)), 10000);
    rl.once('line', (line) => { clearTimeout(t); resolve(line.trim()); });
    proc.once('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
  });
  return { url, stop: () => proc.kill('SIGTERM') };
}

// One headless Chromium per test file (a launch costs 5-7 s on the busy 2-core build machine, a
// context a fraction of that): startBrowser() gives a fresh context of it, as isolated as a new
// profile (its own cookies, storage, permissions). Under `node --test` the browser closes after
// the file's last test; a script (bench/) calls closeBrowsers().
let shared = null;
function sharedBrowser() {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium (make deps-test)`);
  if (!shared) {
    shared = chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  }
  return shared;
}
export async function closeBrowsers() {
  if (!shared) return;
  const b = await shared;
  shared = null;
  await b.close();
}
if (process.env.NODE_TEST_CONTEXT) after(closeBrowsers);

// `options` go to the browser context as they are (e.g. { hasTouch: true, isMobile: true } for a phone).
export async function startBrowser(viewport = { width: 1440, height: 900 }, options = {}) {
  const context = await (await sharedBrowser()).newContext({ viewport, ...options });
  return {
    context,
    async close() {
      await context.close().catch(() => {});  // already gone with the browser
    },
  };
}

// A page that records console errors and uncaught exceptions.
export async function openPage(context) {
  const page = context.pages()[0] || (await context.newPage());
  // The page a previous test left may still be loading from a server that test has stopped (its
  // own short-lived one): leave it before listening, so its late "connection refused" is not
  // counted against this test.
  await page.goto('about:blank');
  const log = { errors: [], pageErrors: [] };
  page.on('console', (m) => { if (m.type() === 'error') log.errors.push(m.text()); });
  page.on('pageerror', (e) => log.pageErrors.push(e.message));
  return { page, log };
}

// Runs `fn({ page, log })` on a page of a fresh browser context (startBrowser's `viewport` and
// `options`), and closes the context however `fn` ends.
export async function withPage(fn, viewport, options) {
  const browser = await startBrowser(viewport, options);
  try {
    return await fn(await openPage(browser.context));
  } finally {
    await browser.close();
  }
}

// One `infralens serve` (with `args`) and one browser context for a whole test file: started before
// its first test, stopped after its last. The two objects are filled in by then (server.url,
// browser.context).
export function serverAndBrowserForFile(args = []) {
  const server = {};
  const browser = {};
  before(async () => {
    Object.assign(server, await startServer(args));
    Object.assign(browser, await startBrowser());
  });
  after(async () => {
    if (browser.close) await browser.close();
    if (server.stop) server.stop();
  });
  return { server, browser };
}

// No uncaught exception, and no console error but the browser's notes on `refused` requests the
// server answered with 400.
export function assertOnlyRefused(log, refused) {
  assert.deepEqual(log.pageErrors, []);
  assert.equal(log.errors.length, refused, log.errors.join('\n'));
  for (const e of log.errors) assert.match(e, /status of 400/);
}

export function shot(name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  return path.join(SHOTS, name);
}

// The canvas timelines (web/js/timeline.js) answer through their host's controller: the blocks
// drawn one by one in the last frame, with client boxes ({index, type, mb, rank, chunk, schedule,
// x, y, width, height, fill, label, textFill}), filtered by equal fields.
export async function timelineBlocks(page, host, filter = {}) {
  return page.locator(host).evaluate((h, f) => h._timeline.blocks(f), filter);
}
// A field of the canvas's data attributes (t0, t1, pinned, visible, runs, drawn, labels, ...).
export async function timelineData(page, host, key) {
  return page.locator(`${host} canvas.timeline`).evaluate((c, k) => c.dataset[k], key);
}
// The centre of a block, for the mouse or a tap.
export const centre = (b) => ({ x: b.x + b.width / 2, y: b.y + b.height / 2 });
