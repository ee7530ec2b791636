// Browser tests of the pipeline page's timelines (issue 11, items 3 and 4): zoom and pan by wheel,
// keys and drag; labels that appear when zoomed; the tooltip and the pinned details; a tap on a
// phone selects the tapped block; Escape then the arrows; schedules compared as pictures on one time
// axis, their makespans checked against the CLI's; the bubble chart's legend toggles; text contrast
// on every block colour by the WCAG formula. Expected values come from the closed forms
// (docs/schedules.md), the CLI's JSON and the WCAG definition, not from the page.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { BIN, assertOnlyRefused, centre, openPage, shot, startBrowser, startServer, timelineBlocks, timelineData } from './harness.mjs';

let server, desktop, phone;
before(async () => {
  server = await startServer();
  desktop = await startBrowser({ width: 1440, height: 900 });
  phone = await startBrowser({ width: 390, height: 844 }, { hasTouch: true, isMobile: true, deviceScaleFactor: 2 });
});
after(async () => {
  if (desktop) await desktop.close();
  if (phone) await phone.close();
  if (server) server.stop();
});

const T = 20000;  // generous: the machine is shared
async function rendered(page, n = 1) {
  await page.waitForFunction((k) => Number(document.body.dataset.renders || 0) >= k, n, { timeout: T });
}
async function pictures(page, n = 1) {
  await page.waitForFunction((k) => Number(document.body.dataset.pictures || 0) >= k, n, { timeout: T });
}
// The visible time range of a timeline, as the drawing states it (data-t0, data-t1).
async function view(page, sel = '#timeline canvas.timeline') {
  return page.locator(sel).evaluate((s) => ({ t0: Number(s.dataset.t0), t1: Number(s.dataset.t1) }));
}
// Polls the view until `pred(view, arg)` holds (the page's CSP forbids evaluating strings).
async function waitView(page, pred, arg, sel = '#timeline canvas.timeline') {
  const f = typeof pred === 'function' ? pred : new Function('v', 'a', pred);  // eslint-disable-line no-new-func
  const until = Date.now() + T;
  for (;;) {
    const v = await view(page, sel);
    if (f(v, arg)) return v;
    if (Date.now() > until) throw new Error(`view ${JSON.stringify(v)} never met: ${pred}`);
    await page.waitForTimeout(40);
  }
}
const close = (a, b, tol = 1e-6) => Math.abs(a - b) <= tol * Math.max(1, Math.abs(b));

// The WCAG 2 contrast ratio of two #rrggbb colours.
function luminance(hex) {
  const c = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255)
    .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
  return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
}
function contrast(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

function cli(args) {
  return JSON.parse(execFileSync(BIN, ['schedule', ...args, '--json'], { encoding: 'utf8' }));
}

test('desktop: wheel, W/S/A/D, drag pan, labels when zoomed, tooltip, pin, Escape then arrows', async () => {
  const { page, log } = await openPage(desktop.context);
  // 1F1B, P = 4, m = 64, F = B = 1: makespan (m + P - 1)(F + B) = 134 ms, 2Pm = 512 blocks.
  await page.goto(`${server.url}pipeline.html?schedule=1f1b&pp=4&microbatches=64&f=1&b=1`);
  await rendered(page);
  const svgSel = '#timeline canvas.timeline';
  const full = await view(page);
  assert.equal(full.t0, 0);
  assert.equal(full.t1, (64 + 4 - 1) * 2);
  assert.equal(await timelineData(page, '#timeline', 'drawn'), '512');
  // At 134 ms across the plot a 1 ms block is too narrow for its label.
  assert.equal(await timelineData(page, '#timeline', 'labels'), '0');

  // Keyboard: focus pins the first block, ArrowRight moves; Escape unpins; ArrowRight resumes.
  await page.locator(svgSel).focus();
  assert.match(await page.locator('#timeline-info').innerText(), /^Rank 0: forward \(F\) of microbatch 0/);
  await page.keyboard.press('ArrowRight');
  assert.match(await page.locator('#timeline-info').innerText(), /^Rank 0: forward \(F\) of microbatch 1/);
  await page.keyboard.press('Escape');
  assert.equal(await page.locator(svgSel).getAttribute('data-pinned'), '-1');
  await page.keyboard.press('ArrowRight');
  assert.notEqual(await page.locator(svgSel).getAttribute('data-pinned'), '-1');
  assert.match(await page.locator('#timeline-info').innerText(), /^Rank 0: forward \(F\) of microbatch 1/);
  await page.keyboard.press('ArrowRight');
  assert.match(await page.locator('#timeline-info').innerText(), /^Rank 0: forward \(F\) of microbatch 2/);
  // A click elsewhere unpins and takes the focus away.
  await page.click('h1');
  assert.equal(await page.locator(svgSel).getAttribute('data-pinned'), '-1');

  // A plain wheel over the timeline without focus scrolls the page, and leaves the view alone.
  const box = await page.locator(svgSel).boundingBox();
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.4);
  const scrolled = await page.evaluate(() => window.scrollY);
  await page.mouse.wheel(0, 200);
  await page.waitForFunction((y) => window.scrollY !== y, scrolled, { timeout: T });
  assert.deepEqual(await view(page), full);

  // Focused, the wheel zooms around the pointer: the time under the pointer stays put.
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.locator(svgSel).focus();
  await page.keyboard.press('Escape');
  const b2 = await page.locator(svgSel).boundingBox();
  const px = b2.x + b2.width * 0.3;
  await page.mouse.move(px, b2.y + b2.height * 0.4);
  // The plot's left edge and width in CSS px (timeline.js geometry()); the time under the pointer:
  const timeAt = async (clientX) => page.locator('#timeline').evaluate((h, cx) => {
    const s = h.querySelector('canvas.timeline'), g = h._timeline.geometry();
    const r = s.getBoundingClientRect();
    const f = (((cx - r.left) / r.width) * g.width - g.left) / g.plotWidth;
    return Number(s.dataset.t0) + f * (Number(s.dataset.t1) - Number(s.dataset.t0));
  }, clientX);
  const before = await timeAt(px);
  await page.mouse.wheel(0, -300);
  await waitView(page, 'return v.t1 - v.t0 < a - 1', full.t1);
  const zoomed = await view(page);
  assert.ok(zoomed.t0 > 0 && zoomed.t1 < full.t1, JSON.stringify(zoomed));
  assert.ok(Math.abs((await timeAt(px)) - before) < 0.01 * (zoomed.t1 - zoomed.t0), 'the time under the pointer moved');
  // The axis follows: its first and last ticks lie inside the visible range.
  const ticks = await page.locator('#timeline').evaluate((h) => h._timeline.ticks());
  assert.ok(ticks.length >= 3 && ticks[0] >= zoomed.t0 - 1e-9 && ticks[ticks.length - 1] <= zoomed.t1 + 1e-9, ticks.join(' '));

  // Keys, as in Perfetto: 0 resets, W zooms 1.25x, S back out, D pans right 10%, A left.
  await page.keyboard.press('0');
  await waitView(page, 'return v.t0 === 0 && v.t1 === a', full.t1);
  await page.mouse.move(0, 0);  // W zooms around the centre when the pointer is away
  await page.keyboard.press('w');
  await waitView(page, 'return Math.abs((v.t1 - v.t0) - a / 1.25) < 1e-6', full.t1);
  let v = await view(page);
  assert.ok(close((v.t0 + v.t1) / 2, full.t1 / 2), 'W zooms around the centre');
  for (let k = 0; k < 9; k++) await page.keyboard.press('w');
  const span = full.t1 / 1.25 ** 10;
  await waitView(page, 'return Math.abs((v.t1 - v.t0) - a) < 1e-6', span);
  // Zoomed in ~9x: 1 ms blocks are wide enough for their labels now.
  await page.waitForFunction(() => Number(document.querySelector('#timeline canvas.timeline').dataset.labels) > 0, null, { timeout: T });
  const labels = (await timelineBlocks(page, '#timeline')).filter((b) => b.label).map((b) => b.label);
  assert.ok(labels.length > 0);
  for (const l of labels) assert.match(l, /^[FB]\d+$/);
  // Only the visible window is drawn: fewer blocks than the 512.
  assert.ok(Number(await timelineData(page, '#timeline', 'drawn')) < 512);
  v = await view(page);
  await page.keyboard.press('d');
  await waitView(page, 'return Math.abs(v.t0 - a) < 1e-6', v.t0 + 0.1 * span);
  await page.keyboard.press('a');
  await page.keyboard.press('a');
  await waitView(page, 'return Math.abs(v.t0 - a) < 1e-6', v.t0 - 0.1 * span);
  await page.keyboard.press('s');
  await waitView(page, 'return Math.abs((v.t1 - v.t0) - a) < 1e-6', span * 1.25);
  await page.locator('#timeline').screenshot({ path: shot('timeline-zoomed.png') });

  // Drag pan: a press moved 300 px to the left shows later times, and pins nothing.
  v = await view(page);
  const b3 = await page.locator(svgSel).boundingBox();
  await page.mouse.move(b3.x + b3.width * 0.6, b3.y + 20);
  await page.mouse.down();
  await page.mouse.move(b3.x + b3.width * 0.6 - 150, b3.y + 20, { steps: 5 });
  await page.mouse.move(b3.x + b3.width * 0.6 - 300, b3.y + 20, { steps: 5 });
  await page.mouse.up();
  await waitView(page, 'return v.t0 > a + 1e-6', v.t0);
  const dragged = await view(page);
  assert.ok(close(dragged.t1 - dragged.t0, v.t1 - v.t0), 'a drag keeps the span');
  assert.equal(await page.locator(svgSel).getAttribute('data-pinned'), '-1');

  // Tooltip at the pointer: hover a drawn block's centre.
  await page.keyboard.press('0');
  await waitView(page, 'return v.t0 === 0 && v.t1 === a', full.t1);
  const [tb] = await timelineBlocks(page, '#timeline', { type: 'F', mb: 3, rank: 2 });
  await page.mouse.move(tb.x + tb.width / 2, tb.y + tb.height / 2);
  const tip = page.locator('#timeline .tl-tip');
  await tip.waitFor({ state: 'visible', timeout: T });
  assert.match(await tip.innerText(), /^F3 · rank 2/);
  const tipBox = await tip.boundingBox();
  assert.ok(Math.abs(tipBox.x - (tb.x + tb.width / 2)) < 40 && Math.abs(tipBox.y - (tb.y + tb.height / 2)) < 60,
    `tooltip at ${tipBox.x},${tipBox.y}, pointer at ${tb.x + tb.width / 2},${tb.y + tb.height / 2}`);
  await page.locator('#timeline').screenshot({ path: shot('timeline-tooltip.png') });

  // A click pins it: the details stay after the pointer leaves; a click elsewhere unpins.
  await page.mouse.click(tb.x + tb.width / 2, tb.y + tb.height / 2);
  assert.equal(await page.locator(svgSel).getAttribute('data-pinned'), String(tb.index));
  await page.mouse.move(5, 5);
  await page.waitForFunction(() => document.querySelector('#timeline .tl-tip.pinned:not([hidden])'), null, { timeout: T });
  assert.match(await tip.innerText(), /^F3 · rank 2/);
  assert.match(await page.locator('#timeline-info').innerText(), /^Rank 2: forward \(F\) of microbatch 3 on stage 2/);
  await page.locator('#timeline').screenshot({ path: shot('timeline-pinned.png') });
  await page.click('h1');
  assert.equal(await page.locator(svgSel).getAttribute('data-pinned'), '-1');
  assert.equal(await tip.isHidden(), true);

  // One microbatch played through the stages: its forwards go down the ranks, its backwards come
  // back up: the last step is its backward on rank 0 (stage 0).
  await page.fill('#follow-mb', '0');
  await page.click('#follow-play');
  assert.equal(await page.getAttribute('#follow-play', 'aria-pressed'), 'true');
  await page.waitForFunction(() => document.querySelector('#timeline canvas.timeline').dataset.playing === 'false', null, { timeout: T });
  assert.equal(await page.getAttribute('#follow-play', 'aria-pressed'), 'false');
  assert.match(await page.locator('#timeline-info').innerText(), /^Rank 0: full backward \(B\) of microbatch 0 on stage 0/);

  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});

test('phone: a tap selects the tapped block; a swipe pans; labels readable', async () => {
  const { page, log } = await openPage(phone.context);
  await page.goto(`${server.url}pipeline.html?schedule=1f1b&pp=4&microbatches=8&f=1&b=1`);
  await rendered(page);
  const svgSel = '#timeline canvas.timeline';
  // Tap rank 2's forward of microbatch 5 (not the first block): it is the one pinned.
  await page.locator(svgSel).scrollIntoViewIfNeeded();
  const [tb] = await timelineBlocks(page, '#timeline', { type: 'F', mb: 5, rank: 2 });
  await page.touchscreen.tap(tb.x + tb.width / 2, tb.y + tb.height / 2);
  await page.waitForFunction((s) => document.querySelector(s).dataset.pinned !== '-1', svgSel, { timeout: T });
  assert.equal(await page.locator(svgSel).getAttribute('data-pinned'), String(tb.index));
  assert.match(await page.locator('#timeline-info').innerText(), /^Rank 2: forward \(F\) of microbatch 5 on stage 2/);
  const tip = page.locator('#timeline .tl-tip.pinned');
  await tip.waitFor({ state: 'visible', timeout: T });
  assert.match(await tip.innerText(), /^F5 · rank 2/);
  await page.screenshot({ path: shot('timeline-phone-tap.png'), fullPage: false });

  // Another tap on another block moves the pin there.
  const [ob] = await timelineBlocks(page, '#timeline', { type: 'B', mb: 0, rank: 3 });
  await page.touchscreen.tap(ob.x + ob.width / 2, ob.y + ob.height / 2);
  await page.waitForFunction(([s, k]) => document.querySelector(s).dataset.pinned === k,
    [svgSel, String(ob.index)], { timeout: T });
  assert.match(await page.locator('#timeline-info').innerText(), /^Rank 3: full backward \(B\) of microbatch 0/);

  // A horizontal swipe pans a zoomed view (touch events through the DevTools protocol).
  await page.locator(svgSel).focus();
  for (let k = 0; k < 4; k++) await page.keyboard.press('w');
  // The zoom is drawn on the page's next frame, which a busy machine delays: poll, as elsewhere.
  // The whole schedule is (m + p - 1)(f + b) = 22 ms; four W make it 22 / 1.25^4 = 9 ms.
  const v = await waitView(page, 'return v.t1 - v.t0 < 22');
  await page.waitForFunction(() => Number(document.querySelector('#timeline canvas.timeline').dataset.labels) > 0, null, { timeout: T });
  // Labels are drawn at their real size on a narrow screen: the canvas is laid out one CSS px per
  // drawing px (its 14 px font stays 14 px), and its backing store follows the screen's density.
  const scale = await page.locator('#timeline').evaluate((h) => {
    const c = h.querySelector('canvas.timeline');
    return { css: c.getBoundingClientRect().width, drawn: h._timeline.geometry().width, backing: c.width, dpr: window.devicePixelRatio };
  });
  assert.ok(Math.abs(scale.css - scale.drawn) < 1, JSON.stringify(scale));
  assert.equal(scale.backing, Math.round(scale.drawn * scale.dpr));
  const sb = await page.locator(svgSel).boundingBox();
  const cdp = await page.context().newCDPSession(page);
  const y = sb.y + sb.height * 0.3;
  const x0 = sb.x + sb.width * 0.8;
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [{ x: x0, y }] });
  for (let k = 1; k <= 6; k++) await cdp.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: [{ x: x0 - 25 * k, y }] });
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
  await waitView(page, 'return v.t0 > a + 1e-6', v.t0);
  await page.locator('#timeline').scrollIntoViewIfNeeded();
  await page.screenshot({ path: shot('timeline-phone-zoomed.png') });
  // The comparison fits the phone: the page does not scroll sideways.
  await pictures(page);
  await page.locator('#pictures').scrollIntoViewIfNeeded();
  await page.screenshot({ path: shot('pictures-phone.png') });
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1),
    `page ${await page.evaluate(() => document.documentElement.scrollWidth)} px wide`);
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});

test('compare as pictures: stacked on one axis, makespans equal the CLI\'s, zoom shared, in the URL', async () => {
  const { page, log } = await openPage(desktop.context);
  const names = ['gpipe', 'interleaved-1f1b', 'zbv'];
  await page.goto(`${server.url}pipeline.html?pp=4&microbatches=8&f=1&b=2&cmp=${names.join(',')}`);
  await rendered(page);
  await pictures(page);
  const sel = '#pictures canvas.timeline';
  const heads = page.locator('#pictures .sched-head');
  assert.equal(await heads.count(), 3);
  const ends = [];
  for (let k = 0; k < 3; k++) {
    const want = cli(['--schedule', names[k], '--pp', '4', '-m', '8', '--f', '1', '--b', '2']);
    const head = heads.nth(k);
    assert.equal(await head.getAttribute('data-schedule'), names[k]);
    const m = /makespan ([\d.]+) ms · bubble ([\d.]+)%/.exec(await head.textContent());
    assert.ok(m, await head.textContent());
    assert.ok(close(Number(m[1]), want.makespan, 1e-5), `${names[k]}: page ${m[1]}, CLI ${want.makespan}`);
    assert.ok(Math.abs(Number(m[2]) - 100 * want.bubble_fraction) < 0.006, `${names[k]} bubble`);
    // The comparison table's row says the same (the same work per rank everywhere).
    const cell = await page.locator(`#compare tr[data-schedule="${names[k]}"] td`).nth(1).textContent();
    assert.ok(close(Number(cell), want.makespan, 1e-5), `table ${cell}, CLI ${want.makespan}`);
    ends.push(want.makespan);
  }
  // One time axis: the domain is the longest makespan, and each schedule's end marker stands at
  // its makespan on that scale.
  const full = await view(page, sel);
  assert.equal(full.t0, 0);
  assert.ok(close(full.t1, Math.max(...ends)));
  const marks = await page.locator('#pictures').evaluate((h) => h._timeline.endMarks());
  assert.equal(marks.length, 3);
  marks.forEach((m, k) => {
    assert.equal(m.schedule, names[k]);
    assert.ok(Math.abs(m.x - (m.plotLeft + (ends[k] / full.t1) * m.plotWidth)) < 0.01, `end of ${names[k]}`);
  });
  await page.locator('section[aria-labelledby="pictures-title"]').screenshot({ path: shot('pictures.png') });

  // Zoom is shared: after W every schedule's blocks are clipped to the same narrower window.
  await page.locator(sel).focus();
  await page.keyboard.press('Escape');
  for (let k = 0; k < 3; k++) await page.keyboard.press('w');
  await waitView(page, 'return v.t1 - v.t0 < a / 1.9', full.t1, sel);
  for (const n of names) assert.ok((await timelineBlocks(page, '#pictures', { schedule: n })).length > 0, n);
  await page.locator('section[aria-labelledby="pictures-title"]').screenshot({ path: shot('pictures-zoomed.png') });

  // The choice lives in the URL; a fourth schedule cannot be ticked until one is unticked.
  assert.match(page.url(), /cmp=gpipe%2Cinterleaved-1f1b%2Czbv|cmp=gpipe,interleaved-1f1b,zbv/);
  assert.equal(await page.locator('#pick-1f1b').isDisabled(), true);
  await page.locator('#pick-gpipe').uncheck();
  await pictures(page, 2);
  assert.equal(await heads.count(), 2);
  assert.equal(await page.locator('#pick-1f1b').isDisabled(), false);
  await page.locator('#pick-1f1b').check();
  await pictures(page, 3);
  assert.deepEqual(await heads.evaluateAll((h) => h.map((e) => e.dataset.schedule)), ['1f1b', 'interleaved-1f1b', 'zbv']);
  await page.reload();
  await pictures(page);
  assert.deepEqual(await heads.evaluateAll((h) => h.map((e) => e.dataset.schedule)), ['1f1b', 'interleaved-1f1b', 'zbv']);
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});

test('a long schedule (49,152 actions) draws whole as busy runs, and block by block when zoomed in', async () => {
  const { page, log } = await openPage(desktop.context);
  // ZBV, P = 16, v = 2, m = 512: F, I and W for 32 stages and 512 microbatches = 3 x 32 x 512 actions.
  await page.goto(`${server.url}pipeline.html?schedule=zbv&pp=16&microbatches=512`);
  await rendered(page);
  const sel = '#timeline canvas.timeline';
  const state = () => page.locator(sel).evaluate((s) => ({ visible: Number(s.dataset.visible), runs: Number(s.dataset.runs),
    blocks: Number(s.dataset.drawn) }));
  let st = await state();
  assert.equal(st.visible, 3 * 32 * 512);
  assert.ok(st.runs >= 16 && st.blocks < 20000, JSON.stringify(st));
  assert.match(await page.locator('#timeline').evaluate((h) => h._timeline.axisTitle()), /too narrow to draw apart/);
  await page.locator(sel).focus();
  await page.keyboard.press('Escape');
  for (let k = 0; k < 13; k++) await page.keyboard.press('w');
  await page.waitForFunction((s) => document.querySelector(s).dataset.runs === '0', sel, { timeout: T });
  st = await state();
  assert.ok(st.blocks > 0 && st.blocks === st.visible, JSON.stringify(st));
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});

test('colours: text at WCAG AA on every block, later chunks marked, legend toggles series', async () => {
  const { page, log } = await openPage(desktop.context);
  await page.goto(`${server.url}pipeline.html?schedule=zbv&pp=4&microbatches=8&f=1&b=2`);
  await rendered(page);
  const { COLORS, TEXT_ON } = await page.evaluate(async () => {
    const m = await import('./js/svg.js');
    return { COLORS: m.COLORS, TEXT_ON: m.TEXT_ON };
  });
  for (const t of Object.keys(COLORS)) {
    const r = contrast(COLORS[t], TEXT_ON[t]);
    assert.ok(r >= 4.5, `${TEXT_ON[t]} on ${COLORS[t]} (${t}) is ${r.toFixed(2)}:1`);
  }
  // ZBV's later chunk: its forwards have F's own colour (not a lighter one near I's) and a band.
  const later = await timelineBlocks(page, '#timeline', { type: 'F', chunk: 1 });
  assert.equal(later.length, 4 * 8);
  assert.equal(later[0].fill.toLowerCase(), COLORS.F.toLowerCase());
  // The band: along a later chunk's bottom the pixels alternate (stripes); along an earlier chunk's
  // bottom they are one colour. Read from the canvas's own pixels.
  const [earlier] = await timelineBlocks(page, '#timeline', { type: 'F', chunk: 0 });
  const colours = (b) => page.locator('#timeline canvas.timeline').evaluate((c, bb) => {
    const r = c.getBoundingClientRect(), k = c.width / r.width;
    const y = Math.round((bb.y - r.top + bb.height - 3) * k);
    const x0 = Math.round((bb.x - r.left + 2) * k), w = Math.max(1, Math.round((bb.width - 5) * k));
    const d = c.getContext('2d').getImageData(x0, y, w, 1).data;
    const set = new Set();
    for (let i = 0; i < d.length; i += 4) set.add(`${d[i]},${d[i + 1]},${d[i + 2]}`);
    return set.size;
  }, b);
  assert.ok((await colours(later[0])) > 1, 'a later chunk has a striped band');
  assert.equal(await colours(earlier), 1, 'an earlier chunk is one colour');
  assert.match(await page.locator('#legend').innerText(), /later chunk \(same colour, striped bottom band\)/);
  // What is drawn: every label against its block's fill (zoomed in, so that ZBV's half-ms
  // chunk actions are labelled; then 1F1B for B).
  const drawnPairs = async () => (await timelineBlocks(page, '#timeline')).filter((b) => b.label)
    .map((b) => [b.fill, b.textFill, b.type]);
  await page.locator('#timeline canvas.timeline').focus();
  for (let k = 0; k < 6; k++) await page.keyboard.press('w');
  await page.waitForFunction(() => Number(document.querySelector('#timeline canvas.timeline').dataset.labels) > 0, null, { timeout: T });
  const pairs = await drawnPairs();
  assert.deepEqual([...new Set(pairs.map((p) => p[2]))].sort(), ['F', 'I', 'W']);
  for (const [bg, fg] of pairs) assert.ok(contrast(bg, fg) >= 4.5, `${fg} on ${bg}`);
  await page.keyboard.press('Escape');  // nothing followed: every block at full strength
  await page.mouse.move(0, 0);
  await page.waitForFunction(() => !document.querySelector('#timeline canvas.timeline.following'), null, { timeout: T });
  await page.locator('#timeline').screenshot({ path: shot('timeline-zbv-chunks.png') });

  await page.goto(`${server.url}pipeline.html?schedule=1f1b&pp=4&microbatches=4&f=1&b=2`);
  await rendered(page);
  await page.waitForFunction(() => Number(document.querySelector('#timeline canvas.timeline').dataset.labels) > 0, null, { timeout: T });
  const pairs2 = await drawnPairs();
  assert.deepEqual([...new Set(pairs2.map((p) => p[2]))].sort(), ['B', 'F']);
  for (const [bg, fg] of pairs2) assert.ok(contrast(bg, fg) >= 4.5, `${fg} on ${bg}`);

  // The bubble-against-m chart: a button per series toggles it.
  const btn = page.locator('#sweep .series-toggle button[data-series="gpipe"]');
  const series = page.locator('#sweep g.series-g[data-series="gpipe"]');
  assert.equal(await btn.getAttribute('aria-pressed'), 'true');
  assert.equal(await series.isVisible(), true);
  await btn.click();
  assert.equal(await btn.getAttribute('aria-pressed'), 'false');
  assert.equal(await series.isVisible(), false);
  assert.equal(await page.locator('#sweep g.series-g[data-series="1f1b"]').isVisible(), true);
  await page.locator('#sweep').screenshot({ path: shot('sweep-toggled.png') });
  await btn.click();
  assert.equal(await series.isVisible(), true);
  // GPipe and 1F1B coincide; the one drawn first is the wider line, so both show.
  const widths = await page.locator('#sweep g.series-g polyline').evaluateAll((ps) => ps.map((p) => Number(p.getAttribute('stroke-width'))));
  assert.equal(new Set(widths).size, widths.length, `widths ${widths}`);
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});

test('search with next and previous, a range selected with its totals, double click and the overview', async () => {
  const { page, log } = await openPage(desktop.context);
  // 1F1B, P = 4, m = 8, F = B = 1: makespan (m + P - 1)(F + B) = 22 ms; every rank busy 2m = 16 ms.
  await page.goto(`${server.url}pipeline.html?schedule=1f1b&pp=4&microbatches=8&f=1&b=1&cmp=`);
  await rendered(page);
  const sel = '#timeline canvas.timeline';
  // Search: F3 runs once on each of the 4 ranks; Enter goes to the first, the arrows move on.
  await page.fill('#timeline .tl-search', 'F3');
  await page.locator('#timeline .tl-search').press('Enter');
  await page.waitForFunction(() => /^1 of 4$/.test(document.querySelector('#timeline .tl-found').textContent), null, { timeout: T });
  assert.match(await page.locator('#timeline-info').innerText(), /^Rank 0: forward \(F\) of microbatch 3/);
  await page.click('#timeline .tl-next');
  assert.match(await page.locator('#timeline-info').innerText(), /^Rank 1: forward \(F\) of microbatch 3/);
  assert.equal(await page.locator('#timeline .tl-found').textContent(), '2 of 4');
  await page.click('#timeline .tl-prev');
  await page.click('#timeline .tl-prev');  // wraps to the last
  assert.match(await page.locator('#timeline-info').innerText(), /^Rank 3: forward \(F\) of microbatch 3/);
  await page.fill('#timeline .tl-search', 'X9');
  await page.locator('#timeline .tl-search').press('Enter');
  await page.waitForFunction(() => document.querySelector('#timeline .tl-found').textContent === 'none found', null, { timeout: T });
  assert.equal(await page.getAttribute('#timeline .tl-search', 'aria-invalid'), 'true');
  await page.fill('#timeline .tl-search', '');
  await page.click('h1');

  // A drag along the time axis from before the plot to past its end selects the whole window:
  // busy 4 x 16 = 64 rank-ms, idle 4 x 22 - 64 = 24, F and B 32 each.
  const box = await page.locator(sel).boundingBox();
  const ay = box.y + box.height - 20;
  await page.mouse.move(box.x + 2, ay);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width / 2, ay, { steps: 4 });
  await page.mouse.move(box.x + box.width - 1, ay, { steps: 4 });
  await page.mouse.up();
  await page.waitForFunction(() => document.querySelector('#timeline')._timeline.selection() !== null, null, { timeout: T });
  const s = await page.locator('#timeline').evaluate((h) => h._timeline.selection());
  assert.ok(close(s.t0, 0) && close(s.t1, 22), JSON.stringify(s));
  const [tot] = s.totals;
  assert.ok(close(tot.busy, 64) && close(tot.idle, 24), JSON.stringify(tot));
  assert.ok(close(tot.byType.F, 32) && close(tot.byType.B, 32), JSON.stringify(tot));
  assert.match(await page.locator('#timeline .tl-selection').innerText(), /busy 64 ms \(72\.73%\), idle 24 ms/);
  assert.equal(await page.locator(sel).getAttribute('data-pinned'), '-1', 'a selection pins nothing');
  await page.locator('#timeline').screenshot({ path: shot('timeline-selection.png') });

  // A double click resets the zoom, on a block or not.
  await page.locator(sel).focus();
  for (let k = 0; k < 4; k++) await page.keyboard.press('w');
  await waitView(page, 'return v.t1 - v.t0 < 21');
  const [b] = await timelineBlocks(page, '#timeline');
  await page.mouse.dblclick(centre(b).x, centre(b).y);
  await waitView(page, 'return v.t0 === 0 && v.t1 === 22');
  // The overview: zoomed in, a press at its right end shows the schedule's end.
  for (let k = 0; k < 4; k++) await page.keyboard.press('w');
  await waitView(page, 'return v.t1 - v.t0 < 21');
  const ob = await page.locator('#timeline canvas.tl-overview').boundingBox();
  await page.mouse.click(ob.x + ob.width - 2, ob.y + ob.height / 2);
  await waitView(page, 'return v.t1 === 22 && v.t0 > 0');
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});

// m = 1,024: interleaved schedules run microbatches in rounds of P and need m to be a multiple of
// the round count (1,000 is refused for that, as by the CLI and PyTorch). Its bound, 3 x P x v x m =
// 393,216 actions, was over the server's 200,000 before format=columns.
test('interleaved 1F1B at P = 64, m = 1,024 (262,144 actions) is drawn and navigable', async () => {
  const { page, log } = await openPage(desktop.context);
  await page.goto(`${server.url}pipeline.html?schedule=interleaved-1f1b&pp=64&microbatches=1024&cmp=`);
  await rendered(page);
  assert.equal(await page.locator('#error').isVisible(), false);
  const sel = '#timeline canvas.timeline';
  // F and B for each of 64 x 2 stages and 1,024 microbatches.
  assert.equal(await timelineData(page, '#timeline', 'visible'), String(2 * 128 * 1024));
  assert.ok(Number(await timelineData(page, '#timeline', 'runs')) >= 64);
  // Zoomed in 1.25^30 (~800x): a few hundred blocks, each drawn apart, the wide ones labelled.
  await page.locator(sel).focus();
  await page.keyboard.press('Escape');
  for (let k = 0; k < 30; k++) await page.keyboard.press('w');
  await page.waitForFunction((s) => document.querySelector(s).dataset.runs === '0', sel, { timeout: T });
  // The blocks and the visible count of one frame, read together: the frames of the last key
  // presses may still be coming (a loaded machine), and two reads could straddle one.
  const frame = await page.locator('#timeline').evaluate((h) =>
    ({ blocks: h._timeline.blocks({}), visible: Number(h.querySelector('canvas.timeline').dataset.visible) }));
  const drawn = frame.blocks;
  assert.ok(drawn.length > 0 && drawn.length === frame.visible, `${drawn.length} drawn, ${frame.visible} visible`);
  assert.ok(drawn.some((b) => b.label));
  // Search, smart case: F999 is microbatch 999's forward on chunk 0, one per rank; f999 either chunk.
  assert.equal(await page.locator('#timeline').evaluate((h) => h._timeline.search('F999')), 64);
  assert.equal(await page.locator('#timeline').evaluate((h) => h._timeline.search('f999')), 128);
  await page.locator('#timeline').screenshot({ path: shot('timeline-p64-m1024.png') });
  // Comparing every schedule at this size is more than /api/compare does: it says so, once, and
  // that refusal (a 400 the console reports) is the only error.
  assert.match(await page.locator('#compare-error').innerText(), /at most/);
  assertOnlyRefused(log, 1);
});
