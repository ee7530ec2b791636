// Browser tests of what every page shares (issue 11): the head, header with its navigation and the
// footer written once (web/partials/) and identical on every page, in the HTML itself (no script
// needed); an unknown page answers an HTML 404 page while the API keeps its JSON errors; errors name
// the page's fields, not CLI flags; the pending state on the pipeline and topology pages (the old
// numbers greyed and marked, the older request aborted by a newer one); screenshots of every page
// at 1440 x 900 and 390 x 844.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LABS } from '../../web/js/labs.js';
import { shot, startServer, withPage } from './harness.mjs';

const PAGES = ['index.html', ...LABS.map((l) => l.page)];
let server;
before(async () => { server = await startServer(); });
after(() => { if (server) server.stop(); });

// The page as served, before any script runs.
async function served(path) {
  const res = await fetch(`${server.url}${path}`);
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
}
const between = (s, open, close) => {
  const a = s.indexOf(open);
  const b = s.indexOf(close, a);
  return a < 0 || b < 0 ? null : s.slice(a, b + close.length);
};

test('chrome: every page carries the same header, navigation and footer in its HTML', async () => {
  const headers = new Map(), footers = new Map();
  for (const p of PAGES) {
    const { status, body } = await served(p);
    assert.equal(status, 200, p);
    assert.ok(!body.includes('<!--#chrome'), `${p}: a marker left`);
    const header = between(body, '<header class="site">', '</header>');
    const footer = between(body, '<footer class="site">', '</footer>');
    assert.ok(header && footer, p);
    // The page's own link is the current one; otherwise the header is the same everywhere.
    const own = p === 'index.html' ? './' : p;
    assert.ok(header.includes(`<a href="${own}" aria-current="page">`), `${p} marks itself`);
    assert.equal((header.match(/aria-current/g) || []).length, 1, p);
    headers.set(p, header.replace(' aria-current="page"', ''));
    footers.set(p, footer);
    assert.match(body, /<meta name="viewport" content="width=device-width, initial-scale=1">/);
    assert.match(body, /<link rel="stylesheet" href="css\/workbench.css">/);
  }
  assert.equal(new Set(headers.values()).size, 1, 'one header');
  assert.equal(new Set(footers.values()).size, 1, 'one footer');
  // The navigation lists the labs in web/js/labs.js's order, as the home page's cards do.
  const links = [...headers.get('index.html').matchAll(/<li><a href="([^"]+)">/g)].map((m) => m[1]);
  assert.deepEqual(links, ['./', ...LABS.map((l) => l.page)]);
});

test('chrome: an unknown page answers an HTML 404 page; the API keeps JSON errors', async () => {
  const page404 = await served('no-such-page.html');
  assert.equal(page404.status, 404);
  assert.equal(page404.type, 'text/html; charset=utf-8');
  assert.match(page404.body, /<h1>No such page<\/h1>/);
  assert.ok(page404.body.includes('<nav id="site-nav"'));
  const api404 = await served('api/no-such-endpoint');
  assert.equal(api404.status, 404);
  assert.equal(api404.type, 'application/json');
  assert.match(JSON.parse(api404.body).error, /no API endpoint/);
  await withPage(async ({ page }) => {
    const res = await page.goto(`${server.url}js/missing.js`);
    assert.equal(res.status(), 404);
    assert.equal(await page.locator('h1').innerText(), 'No such page');
    await page.screenshot({ path: shot('404-desktop.png') });
    // Three folders deep: the page's <base> (allowed by its CSP) takes the stylesheet and the links
    // back to the root.
    const csp = [];
    page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) csp.push(m.text()); });
    const deep = await page.goto(`${server.url}a/b/c/missing.html`);
    assert.equal(deep.status(), 404);
    assert.equal(await page.locator('main a', { hasText: 'home page' }).evaluate((a) => a.href), server.url);
    assert.equal(await page.evaluate(() => [...document.styleSheets].some((s) => s.href && s.href.endsWith('/css/workbench.css') && s.cssRules.length > 0)), true);
    assert.deepEqual(csp, []);
  });
});

test('chrome: error messages name the page\'s fields, not CLI flags', () => withPage(async ({ page }) => {
  // 12 GPUs on 8-GPU nodes: the engine's refusal names --gpus.
  await page.goto(`${server.url}design.html?model=llama3-8b&gpus=12&global_batch=256`);
  await page.waitForFunction(() => Number(document.body.dataset.renders || 0) >= 1, null, { timeout: 60000 });
  const error = await page.locator('#error').innerText();
  assert.doesNotMatch(error, /--[a-z]/, error);
  assert.match(error, /“GPUs” 12: dgx-h100 nodes hold 8 GPUs each/, error);
  assert.equal(await page.getAttribute('#gpus', 'aria-invalid'), 'true');
}));

// Holds the requests of `pattern` until released, changes `field` twice, and checks that the
// results are greyed and busy meanwhile, that the first request is aborted, and that the pending
// state clears with the second answer.
async function checkPending(page, { url, pattern, field, first, second, region }) {
  await page.goto(url);
  await page.waitForFunction(() => Number(document.body.dataset.renders || 0) >= 1 && !document.body.dataset.pending, null,
    { timeout: 60000 });
  const held = [];
  let firstHeld;
  const heldOne = new Promise((resolve) => { firstHeld = resolve; });
  await page.route(pattern, (route) => { held.push(route); firstHeld(); });
  const key = `${field.slice(1)}=${first}`;
  const aborted = new Promise((resolve) => {
    page.on('requestfailed', (r) => { if (r.url().includes(key)) resolve(r.url()); });
  });
  await page.fill(field, first);
  await page.locator(field).dispatchEvent('change');
  await heldOne;
  await page.waitForFunction((sel) => document.querySelector(sel).classList.contains('pending'), region);
  assert.equal(await page.locator(region).getAttribute('aria-busy'), 'true');
  assert.match(await page.evaluate((sel) => getComputedStyle(document.querySelector(sel), '::before').content, region), /updating/);
  await page.fill(field, second);
  await page.locator(field).dispatchEvent('change');
  // Bounded: a request never cancelled fails the test instead of hanging it.
  const late = new Promise((resolve) => setTimeout(() => resolve('not cancelled within 30 s'), 30000));
  assert.ok((await Promise.race([aborted, late])).includes(key), `the request with ${key} was cancelled`);
  await page.unroute(pattern);
  for (const r of held) await r.continue().catch(() => {});
  await page.waitForFunction(([sel, k, v]) => !document.querySelector(sel).classList.contains('pending') &&
    !document.body.dataset.pending && new URLSearchParams(location.search).get(k) === v, [region, field.slice(1), second],
  { timeout: 60000 });
  assert.equal(await page.locator(region).getAttribute('aria-busy'), null);
}

test('pending: pipeline and topology grey the old numbers and cancel the older request', () => withPage(async ({ page, log }) => {
  await checkPending(page, { url: `${server.url}pipeline.html`, pattern: '**/api/schedule?*', field: '#microbatches',
    first: '12', second: '16', region: 'section.results' });
  assert.equal(await page.locator('#error').isHidden(), true);
  await checkPending(page, { url: `${server.url}topology.html`, pattern: '**/api/topology?*', field: '#pp',
    first: '4', second: '1', region: 'section.results' });
  assert.equal(await page.locator('#error').isHidden(), true);
  assert.deepEqual(log.pageErrors, []);
}));

for (const [name, viewport] of [['desktop', { width: 1440, height: 900 }], ['phone', { width: 390, height: 844 }]]) {
  test(`screenshots: every page at ${viewport.width} x ${viewport.height}`, () => withPage(async ({ page, log }) => {
    for (const p of PAGES) {
      await page.goto(`${server.url}${p}`);
      await page.waitForLoadState('networkidle');
      await page.waitForFunction(() => !document.body.dataset.pending, null, { timeout: 60000 });
      // Nothing is wider than the screen.
      const wide = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(wide <= 1, `${p} scrolls sideways by ${wide} px at ${viewport.width}`);
      await page.screenshot({ path: shot(`page-${p.replace('.html', '')}-${name}.png`), fullPage: false });
    }
    assert.deepEqual(log.pageErrors, []);
  }, viewport, name === 'phone' ? { isMobile: true, hasTouch: true } : {}));
}
