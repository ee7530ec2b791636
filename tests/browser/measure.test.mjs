// Browser tests of the measurement page: generate a pipeline trace set, analyse it, and check the
// drawn ranks and the numbers against values derived by hand (1F1B with F = B: every rank idles
// (P - 1)(F + B) of the (m + P - 1)(F + B) makespan, so the bubble is (P - 1)/(m + P - 1)); upload
// files through the file input, one of them broken; the options in the URL; the keyboard.
// Screenshots go to the build folder.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertOnlyRefused, openPage, serverAndBrowserForFile, shot, startBrowser } from './harness.mjs';

const { server, browser } = serverAndBrowserForFile();

// Waits until the page has finished `n` analyses (body[data-analyses]).
async function analysed(page, n) {
  await page.waitForFunction((k) => Number(document.body.dataset.analyses || 0) >= k, n, { timeout: 20000 });
}
const text = (page, sel) => page.locator(sel).innerText();
const fillDrainBubble = (P, m) => `${((100 * (P - 1)) / (m + P - 1)).toFixed(2)}%`;

test('measurement page: generate 1F1B, P = 4, m = 8 and read the measured bubble', async () => {
  const { page, log } = await openPage(browser.context);
  await page.goto(`${server.url}measure.html`);
  await page.waitForSelector('#generate');
  assert.equal(await page.locator('#result').isHidden(), true);
  // The defaults are 1F1B, P = 4, m = 8, F = B = 1 ms; set them anyway, as a user would.
  await page.selectOption('#schedule', '1f1b');
  await page.fill('#pp', '4');
  await page.fill('#microbatches', '8');
  await page.fill('#f', '1');
  await page.fill('#b', '1');
  await page.click('#generate');
  await analysed(page, 1);

  const want = fillDrainBubble(4, 8);  // 3/11 = 27.27%
  assert.equal(await text(page, '#m-bubble'), want);
  assert.equal(await text(page, '#m-ranks'), '4');
  assert.equal(await text(page, '#m-step'), `${(8 + 4 - 1) * 2} ms`);  // (m + P - 1)(F + B)
  // The simulator's own bubble for the same schedule, side by side.
  assert.equal(await text(page, '#m-simulated'), want);
  // Four ranks drawn in each chart, each rank's bubble the same 3/11 of the window.
  assert.equal(await page.locator('#breakdown .rank-row').count(), 4);
  assert.equal(await page.locator('#bubbles .rank-row').count(), 4);
  assert.deepEqual(await page.locator('#bubbles .rank-row .bar-value').allTextContents(), Array(4).fill(`bubble ${want}`));
  // The recovered schedule: 4 pipeline ranks, 2m actions each, named 1f1b, with a link to the lab.
  assert.equal(await page.locator('#schedule-grid tr').count(), 4);
  assert.equal(await page.locator('#schedule-grid tr[data-pp-rank="3"] td').count(), 16);
  assert.deepEqual(await page.locator('#schedule-grid tr[data-pp-rank="3"] td').evaluateAll((n) => n.slice(0, 4).map((c) => c.textContent)),
    ['3F0', '3B0', '3F1', '3B1']);
  assert.match(await text(page, '#schedule-note'), /matches 1f1b/);
  // The link carries the measured costs: F = B = 1 ms, sends of 0 ms (p2p = 0).
  assert.equal(await page.getAttribute('#schedule-note a', 'href'), 'pipeline.html?schedule=1f1b&pp=4&microbatches=8&f=1&b=1&p2p=0');
  // Send and receive on every rank in the collectives table; four files, no errors.
  assert.equal(await page.locator('#collectives tr[data-kind="recv"]').count(), 4);
  assert.equal(await page.locator('#files-table tbody tr').count(), 4);
  assert.equal(await page.locator('#file-errors').isHidden(), true);
  assert.match(await text(page, '#notice'), new RegExp(`Measured bubble ${want}`));
  assert.match(await text(page, '#notice'), /exactly 1f1b/);
  assert.match(await text(page, '#myths'), /receives "achieve"/);
  assert.match(page.url(), /source=synth/);
  await page.screenshot({ path: shot('measure.png'), fullPage: true });
  await page.locator('#breakdown').screenshot({ path: shot('measure-breakdown.png') });
  await page.locator('#controls').screenshot({ path: shot('measure-controls.png') });

  // The view is in the URL: a reload generates and measures the same set again.
  await page.reload();
  await analysed(page, 1);
  assert.equal(await text(page, '#m-bubble'), want);

  // Options: the last step kept gives three windows instead of two (3 profiled steps), and the
  // bubble over the three steps' windows is the same 3/11.
  await page.check('#include_last_step');
  await analysed(page, 2);
  assert.match(page.url(), /include_last_step=1/);
  assert.match(await text(page, '#mode'), /last ProfilerStep kept; 3 step windows/);
  assert.equal(await text(page, '#m-bubble'), want);

  // GPipe, P = 2, m = 3: bubble 1/4, from the keyboard alone.
  await page.focus('#schedule');
  await page.selectOption('#schedule', 'gpipe');
  await page.fill('#pp', '2');
  await page.fill('#microbatches', '3');
  await page.focus('#generate');
  await page.keyboard.press('Enter');
  await analysed(page, 3);
  assert.equal(await text(page, '#m-bubble'), fillDrainBubble(2, 3));
  assert.equal(await page.locator('#bubbles .rank-row').count(), 2);

  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});

test('measurement page: uploaded files, one of them cut off, are analysed and the bad one named', async () => {
  const { page, log } = await openPage(browser.context);
  // The generated set fetched as JSON, as a script would; one file is truncated.
  const res = await page.request.get(`${server.url}api/trace/synth?schedule=1f1b&pp=4&microbatches=8&f=1&b=1&format=json`);
  const set = await res.json();
  const uploads = set.files.map((f) => ({ name: f.name, mimeType: 'application/json', buffer: Buffer.from(f.content) }));
  uploads[2].buffer = uploads[2].buffer.subarray(0, uploads[2].buffer.length >> 1);
  await page.goto(`${server.url}measure.html?hta_compat=1`);
  await page.waitForSelector('#files');
  assert.equal(await page.isChecked('#hta_compat'), true);
  await page.setInputFiles('#files', uploads);
  await analysed(page, 1);
  assert.equal(await text(page, '#m-ranks'), '3');
  assert.equal(await page.locator('#breakdown .rank-row').count(), 3);
  assert.deepEqual(await page.locator('#bubbles .rank-row').evaluateAll((n) => n.map((g) => g.dataset.rank)), ['0', '1', '3']);
  assert.equal(await page.locator('#file-errors').isVisible(), true);
  assert.match(await text(page, '#file-errors'), /rank2\.json: truncated: the file ends inside traceEvents/);
  assert.match(await text(page, '#mode'), /HTA-compatible definitions/);
  assert.equal(await page.locator('#m-simulated-box').isHidden(), true);
  await page.screenshot({ path: shot('measure-upload-error.png'), fullPage: false });

  // Every file broken: the engine's error, with each file named.
  await page.setInputFiles('#files', [{ name: 'a.json', mimeType: 'application/json', buffer: Buffer.from('{"traceEvents": [') },
    { name: 'b.json', mimeType: 'application/json', buffer: Buffer.from('nope') }]);
  await analysed(page, 2);
  assert.equal(await page.locator('#error').isVisible(), true);
  assert.match(await text(page, '#error'), /none of the 2 files could be used/);
  assert.equal(await page.locator('#file-errors li').count(), 2);
  assert.equal(await page.locator('#result').isHidden(), true);

  // The only console error is the browser's note on the refused request above.
  assertOnlyRefused(log, 1);
});

test('measurement page: the generator\'s numbers are checked where they are typed', async () => {
  const { page, log } = await openPage(browser.context);
  await page.goto(`${server.url}measure.html`);
  await page.waitForSelector('#generate');
  // Empty and out of range: one message at each field (from its own attributes), none in the
  // error box, nothing generated, no default put in its place.
  await page.fill('#pp', '');
  await page.fill('#p2p', '-1');
  await page.click('#generate');
  await analysed(page, 1);
  assert.equal(await text(page, '#pp-problem'), 'Ranks P is empty; enter a whole number from 1 to 64.');
  assert.equal(await text(page, '#p2p-problem'), 'p2p: -1 is out of range; enter a number of 0 or more.');
  assert.equal(await page.locator('.field-error').count(), 2, 'each error shown once');
  assert.equal(await page.locator('#error').isVisible(), false);
  assert.equal(await page.locator('#result').isHidden(), true);
  // Fixed as it is typed.
  await page.fill('#pp', '4');
  assert.equal(await page.locator('#pp-problem').count(), 0);
  await page.fill('#p2p', '0');
  await page.click('#generate');
  await analysed(page, 2);
  assert.equal(await page.locator('.field-error').count(), 0);
  assert.equal(await text(page, '#m-ranks'), '4');
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});

// --- The trace view -------------------------------------------------------------------------------

// The trace view is the canvas timeline (web/js/timeline.js): it answers through the controller on
// its host. The gap-lane blocks of one rank, by start (us), with their client boxes.
const ctl = (page, fn, arg) => page.evaluate(`(${fn})(document.querySelector('#trace-view')._timeline, ${JSON.stringify(arg ?? null)})`);
async function gapBlocks(page, rank) {
  const blocks = await ctl(page, (c, r) => c.blocks({ lane: 'gap', rank: r }), rank);
  return blocks.map((g) => ({ b: g.begin, e: g.end, kind: g.kind, x: g.x, w: g.width })).sort((a, b) => a.b - b.b);
}
// The window in ms and where the plot is, in client pixels.
const view = (page) => page.locator('#trace-view canvas.timeline').evaluate((c) => {
  const g = c.parentElement.parentElement._timeline.geometry();
  const r = c.getBoundingClientRect();
  return { t0: Number(c.dataset.t0), t1: Number(c.dataset.t1), left: r.left + (g.left * r.width) / g.width,
    width: (g.plotWidth * r.width) / g.width };
});
const pinnedOf = (page) => page.locator('#trace-view canvas.timeline').getAttribute('data-pinned');

test('trace view: 1F1B, P = 4, m = 8: each rank\'s bubble drawn where the schedule puts it; lanes, zoom, pin, search, arrows', async () => {
  const { page, log } = await openPage(browser.context);
  await page.setViewportSize({ width: 1440, height: 900 });
  // F = 1 ms, B = 2 ms, p2p = 0.25 ms. The first microbatch reaches rank r after r forwards and r
  // transfers: rank r starts computing at r (F + p2p) = 1.25 r ms after the window opens, and until
  // then it waits inside the receive it posted at 0. So its first gap is [0, 1250 r) us, a wait
  // inside send/recv; rank 0 computes from the start.
  await page.goto(`${server.url}measure.html?source=synth&f=1&b=2&p2p=0.25`);
  await analysed(page, 1);
  assert.equal(await page.evaluate(() => document.body.dataset.pipeline), '1');
  const v0 = await view(page);
  assert.equal(v0.t0, 0);
  const xOf = (tUs, v) => v.left + ((tUs / 1000 - v.t0) / (v.t1 - v.t0)) * v.width;
  assert.ok(v0.width > 500, JSON.stringify(v0));
  for (let r = 0; r < 4; r++) {
    const gaps = await gapBlocks(page, r);
    assert.ok(gaps.length > 0, `rank ${r} has gaps`);
    if (r === 0) {
      assert.ok(gaps[0].b > 0, 'rank 0 starts with a forward');
      continue;
    }
    assert.ok(Math.abs(gaps[0].b) < 1e-6);
    assert.ok(Math.abs(gaps[0].e - 1250 * r) < 1e-6, `rank ${r}: first gap ends at ${gaps[0].e}`);
    assert.equal(gaps[0].kind, 'p2p_wait');
    // Drawn to scale: at the plot's left edge, 1250 r us wide.
    assert.ok(Math.abs(gaps[0].x - xOf(0, v0)) < 0.5);
    assert.ok(Math.abs(gaps[0].w - (xOf(1250 * r, v0) - xOf(0, v0))) < 0.5, `rank ${r}: width ${gaps[0].w}`);
  }
  // Lanes per rank: the CPU thread (its steps, and under them the PP: actions they hold), each GPU
  // stream the synthesiser uses, the bubble.
  const lanes = await ctl(page, (c) => c.lanes());
  const kinds = (r) => lanes.filter((l) => l.label.startsWith(`r${r} `)).map((l) => l.kind);
  for (let r = 0; r < 4; r++) {
    assert.deepEqual(kinds(r).slice(0, 2), ['cpu', 'cpu']);
    assert.deepEqual(lanes.filter((l) => l.label.startsWith(`r${r} CPU`)).map((l) => l.label), [`r${r} CPU`, `r${r} CPU +1`]);
    assert.ok(kinds(r).filter((k) => k === 'stream').length >= 2, `rank ${r}: ${kinds(r)}`);
    assert.equal(kinds(r).at(-1), 'gap');
  }
  assert.equal((await ctl(page, (c) => c.blocks({ lane: 'cpu', rank: 0 }))).some((b) => /^PP:0F0$/.test(b.name)), true);
  assert.match(await text(page, '#trace-legend'), /bubble: pure idle/);
  // Send -> recv arrows: each forward's activation from rank r to r + 1 and each gradient back,
  // 2m per neighbour pair per step (P - 1 pairs, 2 steps analysed): 2 x 8 x 3 x 2 = 96.
  assert.equal(await ctl(page, (c) => c.showFlows(true)), 96);
  // The top kernel: the backward, 2 ms x 8 microbatches x 4 ranks x 2 analysed steps.
  const top = await page.locator('#top-kernels tbody tr').first().locator('td').allTextContents();
  assert.deepEqual(top.slice(0, 3), ['computation', '64', '128 ms']);
  // The link to the pipeline lab carries the measured costs.
  assert.equal(await page.getAttribute('#pipeline-link', 'href'),
    'pipeline.html?schedule=1f1b&pp=4&microbatches=8&f=1&b=2&p2p=0.25');
  assert.match(await text(page, '#schedule-note'), /F 1 ms, B 2 ms, p2p 0\.25 ms per rank and microbatch/);
  await page.locator('#trace-view').scrollIntoViewIfNeeded();
  await page.screenshot({ path: shot('measure-trace-1440.png') });

  // Zoom: W on the focused timeline narrows the view, and the 1 ms forwards get their kernel
  // names once they are wide enough.
  const forwardLabels = () => ctl(page, (c) => c.blocks({ lane: 'computation' }).filter((b) => b.end - b.begin === 1000 && b.label).length);
  assert.equal(await forwardLabels(), 0);
  await page.focus('#trace-view canvas.timeline');
  await page.keyboard.press('Escape');
  for (let k = 0; k < 14; k++) await page.keyboard.press('w');
  // The view follows on the next animation frame.
  await page.waitForFunction((span) => {
    const d = document.querySelector('#trace-view canvas.timeline').dataset;
    return Number(d.t1) - Number(d.t0) < span / 10 && Number(d.labels) > 0;
  }, v0.t1 - v0.t0);
  const v1 = await view(page);
  assert.ok(await forwardLabels() > 0);
  await page.keyboard.press('d');
  await page.waitForFunction((t) => Number(document.querySelector('#trace-view canvas.timeline').dataset.t0) > t, v1.t0);
  await page.screenshot({ path: shot('measure-trace-zoomed-1440.png') });

  // A click pins the block under it, with its details; ArrowRight pins the next block of the same
  // lane; Escape unpins.
  await page.keyboard.press('0');
  await page.waitForFunction(() => document.querySelector('#trace-view canvas.timeline').dataset.zoomed === 'false');
  await page.locator('#trace-view canvas.timeline').scrollIntoViewIfNeeded();
  const [block] = await ctl(page, (c) => c.blocks({ lane: 'computation', rank: 2 }).filter((b) => b.width > 8));
  await page.mouse.click(block.x + block.width / 2, block.y + block.height / 2);
  assert.equal(await pinnedOf(page), String(block.index));
  assert.match(await text(page, '#trace-details'), /rank 2\. computation on stream/);
  assert.equal(await page.locator('#trace-view .tl-tip.pinned').isVisible(), true);
  await page.keyboard.press('ArrowRight');
  const next = Number(await pinnedOf(page));
  const after = await ctl(page, (c, k) => c.blocks().find((b) => b.index === k), next);
  assert.equal(after.rank, 2);
  assert.ok(after.begin > block.begin);
  await page.keyboard.press('Escape');
  assert.equal(await pinnedOf(page), '-1');
  await page.keyboard.press('0');
  await page.waitForFunction(() => document.querySelector('#trace-view canvas.timeline').dataset.zoomed === 'false');

  // Search: the backward kernels by name (every rank, 8 per step, 2 steps); Enter pins the first.
  await page.fill('#trace-view .tl-search', '64x3_nt');
  await page.press('#trace-view .tl-search', 'Enter');
  assert.match(await text(page, '#trace-view .tl-found'), /^1 of 64$/);
  assert.match(await text(page, '#trace-details'), /64x3_nt/);
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});

// Two data-parallel ranks: compute, an all-reduce, compute; no PP: annotations, no send/recv.
function ddpRank(rank) {
  const k = (name, ts, dur) => ({ ph: 'X', cat: 'kernel', name, pid: 0, tid: 7, ts, dur, args: { device: rank, stream: name.startsWith('nccl') ? 20 : 7 } });
  return JSON.stringify({ schemaVersion: 1, distributedInfo: { backend: 'nccl', rank, world_size: 2 },
    traceEvents: [k('gemm_fwd', 1000, 400), k('ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)', 1400 + 50 * rank, 300),
      k('gemm_bwd', 1900, 500)] });
}

test('trace view: a data-parallel trace says idle, not bubble', async () => {
  const { page, log } = await openPage(browser.context);
  await page.goto(`${server.url}measure.html`);
  await page.waitForSelector('#files');
  await page.setInputFiles('#files', [0, 1].map((r) => ({ name: `rank${r}.json`, mimeType: 'application/json', buffer: Buffer.from(ddpRank(r)) })));
  await analysed(page, 1);
  assert.equal(await page.evaluate(() => document.body.dataset.pipeline), '0');
  assert.equal(await text(page, '#m-bubble-word'), 'Idle, no computation');
  assert.doesNotMatch(await text(page, '#bubble-title'), /bubble/i);
  assert.doesNotMatch(await text(page, '#trace-legend'), /bubble/i);
  assert.match(await text(page, '#trace-legend'), /idle \(no GPU event\)/);
  assert.doesNotMatch(await text(page, '#notice'), /Measured bubble/);
  // Rank 1's window [1000, 2400): busy [1000,1400) [1450,1750) [1900,2400): idle [400,450) and
  // [750,900) from the origin; rank 0: [1700,1900) -> [700,900).
  const idle1 = await gapBlocks(page, 1);
  assert.deepEqual(idle1.map((g) => [g.b, g.e, g.kind]), [[400, 450, 'idle'], [750, 900, 'idle']]);
  const idle0 = await gapBlocks(page, 0);
  assert.deepEqual(idle0.map((g) => [g.b, g.e, g.kind]), [[700, 900, 'idle']]);
  assert.deepEqual(await page.locator('#bubbles .rank-row .bar-value').allTextContents(),
    [`idle ${(100 * 200 / 1400).toFixed(2)}%`, `idle ${(100 * 200 / 1400).toFixed(2)}%`]);
  assert.equal((await ctl(page, (c) => c.lanes())).filter((l) => /bubble/.test(l.label)).length, 0);
  // The whole window selected: 2 ranks x 1.4 ms analysed, idle 0.2 ms on each, busy the rest;
  // computation 0.4 + 0.5 ms and communication 0.3 ms per rank.
  const sel = await ctl(page, (c) => { c.selectRange(0, 1.4); return c.selection().totals[0]; });
  assert.ok(Math.abs(sel.analysed - 2.8) < 1e-9 && Math.abs(sel.idle - 0.4) < 1e-9 && Math.abs(sel.busy - 2.4) < 1e-9, JSON.stringify(sel));
  assert.ok(Math.abs(sel.byClass[0] - 1.8) < 1e-9 && Math.abs(sel.byClass[1] - 0.6) < 1e-9 && sel.byClass[2] === 0, JSON.stringify(sel));
  assert.match(await text(page, '#trace-view .tl-selection'), /busy 2\.4 ms of 2\.8 ms .*computation 1\.8 ms, communication 0\.6 ms/);
  // Shift+drag selects too: the note follows the new range.
  await page.locator('#trace-view canvas.timeline').scrollIntoViewIfNeeded();
  const v = await view(page);
  const y = (await ctl(page, (c) => c.lanes()))[0].y;
  const cy = (await page.locator('#trace-view canvas.timeline').boundingBox()).y + y + 5;
  await page.keyboard.down('Shift');
  await page.mouse.move(v.left + 2, cy);
  await page.mouse.down();
  await page.mouse.move(v.left + v.width / 2, cy, { steps: 4 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  const dragged = await ctl(page, (c) => c.selection());
  assert.ok(dragged.t1 > dragged.t0 && dragged.t1 < 1.4, JSON.stringify(dragged));
  assert.equal(await page.locator('#pipeline-link').count(), 0);
  await page.locator('#trace-view').scrollIntoViewIfNeeded();
  await page.screenshot({ path: shot('measure-trace-ddp-1440.png') });
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});

test('trace view on a phone: the sample is one tap away, and a tap pins the tapped kernel', async () => {
  const phone = await startBrowser({ width: 390, height: 844 }, { hasTouch: true });
  const { context } = phone;
  try {
    const { page, log } = await openPage(context);
    await page.goto(`${server.url}measure.html`);
    await page.waitForSelector('#sample');
    await page.tap('#sample');
    await analysed(page, 1);
    assert.equal(await text(page, '#m-bubble'), fillDrainBubble(4, 8));
    await page.locator('#trace-view canvas.timeline').scrollIntoViewIfNeeded();
    const block = (await ctl(page, (c) => c.blocks({ lane: 'computation', rank: 1 }))).filter((b) => b.width >= 4)[3];
    await page.touchscreen.tap(block.x + block.width / 2, block.y + block.height / 2);
    assert.equal(await pinnedOf(page), String(block.index));
    assert.match(await text(page, '#trace-details'), /rank 1\./);
    await page.screenshot({ path: shot('measure-trace-390.png') });
    assert.deepEqual(log.pageErrors, []);
    assert.deepEqual(log.errors, []);
  } finally {
    await phone.close();
  }
});

test('trace view: an interleaved schedule\'s link gives the costs per rank, not per model chunk', async () => {
  const { page, log } = await openPage(browser.context);
  // Interleaved 1F1B, P = 4, v = 2: F = 1 ms and B = 2 ms per rank and microbatch are 0.5 and 1 ms
  // per chunk; the traces measure the chunks, and the link multiplies back by v.
  await page.goto(`${server.url}measure.html?source=synth&schedule=interleaved-1f1b&f=1&b=2&p2p=0.1`);
  await analysed(page, 1);
  const href = await page.getAttribute('#pipeline-link', 'href');
  const q = new URLSearchParams(href.split('?')[1]);
  assert.equal(q.get('vpp'), '2');
  assert.equal(q.get('f'), '1');
  assert.equal(q.get('b'), '2');
  assert.equal(q.get('p2p'), '0.1');
  assert.deepEqual(log.pageErrors, []);
});
