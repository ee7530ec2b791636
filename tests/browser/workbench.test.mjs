// Browser tests of the workbench: every page opened in headless Chromium, controls changed, and
// the drawn result and the numbers checked against values derived by hand from the closed forms
// in docs/schedules.md (not copied from the program's output). Screenshots go to the build folder.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertOnlyRefused, centre, openPage, serverAndBrowserForFile, shot, timelineBlocks, timelineData } from './harness.mjs';

const { server, browser } = serverAndBrowserForFile();

// Waits until the pipeline page has rendered `n` times (body[data-renders]).
async function rendered(page, n) {
  await page.waitForFunction((k) => Number(document.body.dataset.renders || 0) >= k, n, { timeout: 15000 });
}
// Types `value` into a field and commits it in one task (as a paste and Enter would), then waits
// for the drawing after it. With fill() and a separate change event, a loaded machine can let the
// page's 250 ms input debounce draw in between, and a later count of drawings comes too early.
async function commit(page, sel, value) {
  const n = Number(await page.evaluate(() => document.body.dataset.renders || 0));
  await page.locator(sel).evaluate((e, v) => {
    e.value = v;
    e.dispatchEvent(new Event('input', { bubbles: true }));
    e.dispatchEvent(new Event('change', { bubbles: true }));
  }, value);
  await rendered(page, n + 1);
}
const text = (page, sel) => page.locator(sel).innerText();
// The closed forms for GPipe and 1F1B (docs/schedules.md): makespan (m+P-1)(F+B), bubble
// (P-1)/(m+P-1), 2Pm blocks.
const fillDrain = (P, m, F, B) => ({ makespan: (m + P - 1) * (F + B), bubble: `${((100 * (P - 1)) / (m + P - 1)).toFixed(2)}%` });

test('home page lists every lab and marks the ones to come', async () => {
  const { page, log } = await openPage(browser.context);
  await page.goto(server.url);
  await page.waitForSelector('#labs li');
  assert.equal(await page.locator('#labs li').count(), 5);
  // Every lab has landed (lab 09, interview scenarios, was the last): none is marked as coming.
  assert.equal(await page.locator('#labs li.lab-coming').count(), 0);
  assert.match(await text(page, '[data-lab="pipeline"]'), /Lab 04 · Pipeline schedules/);
  assert.match(await text(page, '[data-lab="topology"]'), /Lab 08 · Topology and communication/);
  assert.match(await text(page, '[data-lab="design"]'), /Lab 12 · Parallelism design/);
  assert.match(await text(page, '[data-lab="measurement"]'), /Open the lab/);
  assert.match(await text(page, '[data-lab="scenarios"]'), /Lab 09 · Interview scenarios/);
  for (const lab of ['pipeline', 'topology', 'design', 'scenarios', 'measurement']) {
    assert.equal(await page.locator(`[data-lab="${lab}"] a.button`).count(), 1);
    assert.doesNotMatch(await text(page, `[data-lab="${lab}"]`), /Coming/);
  }
  // The navigation links the live labs and marks the others.
  assert.equal(await page.locator('#site-nav a[href="topology.html"]').count(), 1);
  assert.equal(await page.locator('#site-nav a[href="design.html"]').count(), 1);
  assert.equal(await page.locator('#site-nav a[href="measure.html"]').count(), 1);
  assert.equal(await page.locator('#site-nav a[href="scenarios.html"]').count(), 1);
  assert.equal(await page.locator('#site-nav .coming').count(), 0);
  await page.screenshot({ path: shot('home.png'), fullPage: true });
  await page.click('[data-lab="pipeline"] a.button');
  await page.waitForURL(/pipeline\.html/);
  await rendered(page, 1);
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});

test('pipeline page: numbers, drawing, hover, keyboard, controls, URL state', async () => {
  const { page, log } = await openPage(browser.context);
  await page.goto(`${server.url}pipeline.html?schedule=1f1b&pp=4&microbatches=8&f=1&b=1`);
  await rendered(page, 1);
  let want = fillDrain(4, 8, 1, 1);  // 22 ms, 27.27%
  assert.equal(await text(page, '#m-makespan'), `${want.makespan} ms`);
  assert.equal(await text(page, '#m-bubble'), want.bubble);
  assert.equal(await timelineData(page, '#timeline', 'drawn'), String(2 * 4 * 8));
  // 1F1B holds min(P - r, m) microbatches on rank r.
  const bars = await page.locator('#peaks .bar-value').allTextContents();
  assert.deepEqual(bars, ['4 chunks', '3 chunks', '2 chunks', '1 chunk']);
  // Every schedule side by side, and the sweep plot with a line per schedule.
  assert.equal(await page.locator('#compare tbody tr').count(), 8);
  assert.equal(await page.locator('#compare tr.current').getAttribute('data-schedule'), '1f1b');
  assert.ok((await page.locator('#sweep svg.plot polyline').count()) >= 6);
  assert.match(await text(page, '#notice'), /1F1B bounds memory, it does not shrink the bubble/);
  await page.screenshot({ path: shot('pipeline.png'), fullPage: true });

  // Hover the forward of microbatch 3 on rank 2: its microbatch lights up on every rank (F and B
  // on each of the 4 stages) and the dependency it waited on, 1F3 on rank 1, is drawn.
  const [block] = await timelineBlocks(page, '#timeline', { type: 'F', mb: 3, rank: 2 });
  await page.mouse.move(centre(block).x, centre(block).y);
  await page.waitForFunction(() => document.querySelector('#timeline')._timeline.active() !== null, null, { timeout: 15000 });
  const active = await page.locator('#timeline').evaluate((h) => h._timeline.active());
  assert.equal(active.index, block.index);
  assert.equal(active.sameMb, 8);
  assert.equal(active.waitedName, '1F3');
  assert.match(await text(page, '#timeline-info'), /Rank 2: forward \(F\) of microbatch 3 on stage 2/);
  assert.match(await text(page, '#timeline-info'), /1F3 on rank 1/);
  await page.locator('#timeline').screenshot({ path: shot('pipeline-hover.png') });

  // Keyboard: focus the timeline, move right along rank 0.
  await page.mouse.move(0, 0);
  await page.focus('#timeline canvas.timeline');
  assert.match(await text(page, '#timeline-info'), /Rank 0: forward \(F\) of microbatch 0/);
  await page.keyboard.press('ArrowRight');
  assert.match(await text(page, '#timeline-info'), /Rank 0: forward \(F\) of microbatch 1/);
  await page.keyboard.press('ArrowDown');
  assert.match(await text(page, '#timeline-info'), /^Rank 1:/);

  // Change a control: B = 2 gives (m+P-1)(F+B) = 33 ms, the same bubble.
  await commit(page, '#b', '2');
  want = fillDrain(4, 8, 1, 2);
  assert.equal(await text(page, '#m-makespan'), `${want.makespan} ms`);
  assert.equal(await text(page, '#m-bubble'), want.bubble);
  // More microbatches shrink the bubble: m = 16 gives 57 ms and 3/19.
  await commit(page, '#microbatches', '16');
  want = fillDrain(4, 16, 1, 2);
  await page.waitForFunction((t) => document.getElementById('m-makespan').textContent === t, `${want.makespan} ms`,
    { timeout: 15000 });
  assert.equal(await text(page, '#m-makespan'), `${want.makespan} ms`);
  assert.equal(await text(page, '#m-bubble'), want.bubble);
  assert.equal(await timelineData(page, '#timeline', 'drawn'), String(2 * 4 * 16));
  assert.match(page.url(), /microbatches=16/);

  // The view is in the URL: reloading gives the same numbers.
  await page.reload();
  await rendered(page, 1);
  assert.equal(await text(page, '#m-makespan'), `${want.makespan} ms`);
  assert.equal(await page.inputValue('#microbatches'), '16');

  // GPipe holds all m microbatches on every rank.
  await page.selectOption('#schedule', 'gpipe');
  await rendered(page, 2);
  assert.deepEqual(await page.locator('#peaks .bar-value').allTextContents(), Array(4).fill('16 chunks'));
  assert.equal(await text(page, '#m-makespan'), `${want.makespan} ms`);
  assert.match(page.url(), /schedule=gpipe/);

  // Picking a schedule in the comparison shows it above. ZBV: two chunks per rank in a V.
  await page.click('#compare button[data-schedule="zbv"]');
  await rendered(page, 3);
  assert.equal(await page.inputValue('#schedule'), 'zbv');
  assert.match(await text(page, '#timeline-title'), /zbv: P = 4 ranks, v = 2 chunks per rank, m = 16/);
  // F, I and W for each of 2 stages per rank and 16 microbatches: 3 x 8 x 16 actions.
  assert.equal(await timelineData(page, '#timeline', 'drawn'), String(3 * 8 * 16));
  await page.screenshot({ path: shot('pipeline-zbv.png'), fullPage: false });

  // Downloads carry the engine's files.
  const csv = await page.request.get(new URL(await page.getAttribute('#dl-csv', 'href'), page.url()).href);
  assert.equal(csv.status(), 200);
  assert.match(csv.headers()['content-disposition'], /attachment; filename="zbv_pp4_m16.csv"/);
  assert.equal((await csv.text()).trim().split('\n').length, 4);
  const svgFile = await page.request.get(new URL(await page.getAttribute('#dl-svg', 'href'), page.url()).href);
  assert.equal(svgFile.headers()['content-type'], 'image/svg+xml');
  const trace = await page.request.get(new URL(await page.getAttribute('#dl-chrome', 'href'), page.url()).href);
  assert.ok(Array.isArray((await trace.json()).traceEvents));

  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});

test('pipeline page: bad input names the parameter; CSV import draws or shows the broken dependency', async () => {
  const { page, log } = await openPage(browser.context);
  await page.goto(`${server.url}pipeline.html?f=1&b=1`);
  await rendered(page, 1);

  // P = 0 is refused where it is typed: one message at the field (from its own min), none in the
  // page's error box, no old numbers left standing.
  await commit(page, '#pp', '0');
  assert.equal(await page.locator('#error').isVisible(), false);
  assert.equal(await text(page, '#pp-problem'), 'Ranks P: 0 is out of range; enter a whole number from 1 to 1024.');
  assert.equal(await page.getAttribute('#pp', 'aria-invalid'), 'true');
  assert.equal(await page.getAttribute('#pp', 'aria-describedby'), 'pp-problem');
  assert.equal(await text(page, '#m-makespan'), '–');
  // Empty is not a silent default (P = 1 once): it is said at the field too.
  await commit(page, '#pp', '');
  assert.equal(await text(page, '#pp-problem'), 'Ranks P is empty; enter a whole number from 1 to 1024.');
  assert.equal(await page.locator('.field-error').count(), 1, 'each error shown once');
  // An empty B is allowed (the engine derives it from I + W); a non-numeric F is not.
  // Typed key by key: a number field holds no value for "1-2", only its validity says so.
  await page.fill('#f', '');
  await page.locator('#f').pressSequentially('1-2');
  await page.locator('#f').dispatchEvent('change');
  await page.waitForFunction(() => (document.getElementById('f-problem')?.textContent || '') !== '', null, { timeout: 15000 });
  assert.match(await text(page, '#f-problem'), /^F forward: what is typed is not a number; enter a number from 0 to 1000000000\.$/);
  await commit(page, '#f', '1');
  await commit(page, '#pp', '4');
  await page.waitForFunction(() => document.getElementById('m-makespan').textContent !== '–', null, { timeout: 15000 });
  assert.equal(await page.locator('#error').isVisible(), false);
  assert.equal(await page.locator('.field-error').count(), 0);
  assert.equal(await page.getAttribute('#pp', 'aria-invalid'), null);

  // Start from the schedule above: the imported copy simulates to the same numbers.
  await page.click('#csv-current');
  // Either the box fills or the page says why not: a failure names the page's own message.
  await page.waitForFunction(() => document.getElementById('csv').value.length > 0 ||
    !document.getElementById('import-error').hidden);
  assert.equal(await page.locator('#import-error').isVisible(), false, await text(page, '#import-error'));
  await page.click('#csv-run');
  await page.waitForSelector('#import-result:not([hidden])');
  assert.equal(await text(page, '#i-makespan'), '22 ms');
  assert.equal(await text(page, '#i-bubble'), '27.27%');
  assert.equal(await timelineData(page, '#import-timeline', 'drawn'), '64');

  // A schedule whose rank 1 runs a backward before its forward: the first broken dependency is
  // rank 0's 0B0, waiting for 1B0, which rank 1 cannot start before 1F0.
  await page.fill('#csv', '0F0,0B0\n1B0,1F0\n');
  await page.click('#csv-run');
  await page.waitForSelector('#import-error:not([hidden])');
  assert.match(await text(page, '#import-error'), /deadlock/);
  assert.equal(await text(page, '.order-grid td.first-broken'), '0B0');
  assert.deepEqual(await page.locator('.order-grid td.awaited').allInnerTexts(), ['1B0', '1F0']);
  await page.locator('section[aria-labelledby="import-title"]').screenshot({ path: shot('pipeline-import-deadlock.png') });

  // A cell that is not an action: the line and the cell are shown.
  await page.fill('#csv', '0F0,0B0\n1F0,1Q0\n');
  await page.click('#csv-run');
  await page.waitForSelector('mark.bad-cell');
  assert.equal(await text(page, 'mark.bad-cell'), '1Q0');
  assert.match(await text(page, '#import-where'), /Line 2, column 2/);

  // The only console errors are the browser's notes on the two refused requests above (the two
  // bad CSVs): P = 0 and the empty P were stopped at their field and never sent.
  assertOnlyRefused(log, 2);
});

test('pipeline page reads on a small projector screen', async () => {
  const { page, log } = await openPage(browser.context);
  await page.setViewportSize({ width: 1024, height: 768 });
  await page.goto(`${server.url}pipeline.html?schedule=interleaved-1f1b&pp=4&microbatches=8`);
  await rendered(page, 1);
  // Interleaved 1F1B, v = 2, F = 1, B = 2 per rank (a chunk takes f = F/v, b = B/v):
  // m(F+B) + (P-1)(f+b) = 8 x 3 + 3 x 1.5, the same as the comparison table's row.
  assert.equal(await text(page, '#m-makespan'), `${8 * (1 + 2) + 3 * (0.5 + 1)} ms`);
  await page.screenshot({ path: shot('pipeline-1024.png'), fullPage: false });
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});
