// The pipeline timeline: one lane per rank, one block per action at the engine's start and end,
// labelled with its microbatch, idle time hatched. Several schedules can be stacked on one time
// axis (the comparison "as pictures"); one zoom (web/js/zoom.js) drives them all.
//
// Navigation: the wheel zooms around the pointer (once the timeline has focus; Ctrl+wheel or a
// pinch always), a drag pans, W/S zoom and A/D pan, 0 or a double click resets. Only the visible
// window is drawn; a block's label appears once the block is wide enough. Pointing at a block shows
// a tooltip at the pointer and follows its microbatch across the ranks, with the dependency it
// waited on; a click or a tap pins those details (a click elsewhere or Escape unpins); the arrow
// keys move the pinned block, and after Escape they resume from the last one.
import { clear, el, fmtNum, pct } from './common.js';
import { COLORS, NAMES, TEXT_ON, idlePattern, niceStep, svg } from './svg.js';
import { createZoom } from './zoom.js';

const NO_DEPS = Object.freeze([]);
const MAX_DRAWN = 20000;    // blocks drawn at once; a larger view asks to zoom in
const MAX_LABELLED = 3000;  // labels drawn at once
const DENSE = 4000;         // more blocks than this in the window: the narrow ones merge into runs
const DENSE_PX = 3;         // ... narrower than this many pixels
let uid = 0;

// The label the engine's renderers use: type letter and microbatch, lowercase on a rank's later
// chunks, "F3+b1" for an overlapped pair.
export function blockLabel(a) {
  const lower = a.chunk > 0;
  if (a.type === 'FB') return `F${a.microbatch}+b${a.b_microbatch}`;
  const letter = lower ? a.type.toLowerCase() : a.type;
  return `${letter}${a.microbatch}`;
}

function describe(a) {
  if (a.type === 'FB') {
    return `${NAMES.FB}: F of microbatch ${a.microbatch} on stage ${a.stage} with B of microbatch ${a.b_microbatch} on stage ${a.b_stage}`;
  }
  return `${NAMES[a.type]} (${a.type}) of microbatch ${a.microbatch} on stage ${a.stage}, chunk ${a.chunk}`;
}

function short(a) {
  return a.type === 'FB' ? `(${a.stage}F${a.microbatch};${a.b_stage}B${a.b_microbatch})` : `${a.stage}${a.type}${a.microbatch}`;
}

function touches(a, mb) {
  return a.microbatch === mb || (a.type === 'FB' && a.b_microbatch === mb);
}

// Draws `data` (the JSON of /api/schedule or /api/import, with dependencies=1 for the arrows) into
// `host`; `info` is a live region that describes the pointed or pinned block.
export function drawTimeline(host, info, data, { title = '' } = {}) {
  return drawTimelines(host, info, [{ data, title }], { ariaTitle: title });
}

// Several schedules stacked on one shared time axis: `list` is [{data, title}], each drawn under a
// heading with its makespan and bubble when `headings` is set. Returns a controller
// {select, count, zoom, redraw}, or null when nothing can be drawn.
export function drawTimelines(host, info, list, { headings = false, ariaTitle = '', lane = 40, gap = 8 } = {}) {
  if (host._timeline) host._timeline.destroy();
  clear(host);
  host.classList.add('tl-host');
  const total = list.reduce((n, s) => n + (s.data.actions || []).length, 0);
  if (total > 10 * MAX_DRAWN) {
    host.append(
      el('p', { class: 'note' }, `${total} actions are more than this page draws (${10 * MAX_DRAWN}); ` +
        'the metrics above are complete, and the SVG and Chrome trace downloads hold the whole picture.'),
    );
    return null;
  }

  // Every schedule's actions in one list; `lanes` are the rank rows of all schedules, top to bottom.
  const actions = [];
  const lanes = [];  // {s, rank, list: action indices sorted by start}
  const scheds = list.map((item, s) => {
    const d = item.data;
    const base = actions.length;
    const firstLane = lanes.length;
    for (let r = 0; r < d.pp; r++) lanes.push({ s, rank: r, list: [] });
    // One small object per action, its fields named (not spread: at 200,000 actions the spread
    // and the garbage it leaves cost more than the drawing), the answer's own deps array reused
    // where the indexes need no offset.
    for (const a of d.actions || []) {
      const k = actions.length;
      const deps = !a.deps || !a.deps.length ? NO_DEPS : base === 0 ? a.deps : a.deps.map((j) => j + base);
      actions.push({ rank: a.rank, stage: a.stage, chunk: a.chunk, type: a.type, microbatch: a.microbatch,
        b_stage: a.b_stage, b_microbatch: a.b_microbatch, start: a.start, end: a.end, s, k, deps });
      lanes[firstLane + a.rank].list.push(k);
    }
    return { data: d, title: item.title || d.schedule, base, firstLane, p2p: (d.costs && d.costs.p2p) || 0 };
  });
  for (const ln of lanes) ln.list.sort((i, j) => actions[i].start - actions[j].start);
  const laneOf = (a) => scheds[a.s].firstLane + a.rank;
  const domainEnd = Math.max(1e-9, ...scheds.map((s) => s.data.makespan));

  const top = 8, axis = 50, left = 68, right = 14;
  let laneY = [], height = 0, twoLineHeads = false;
  // Rows top to bottom; a narrow drawing puts a heading's numbers on a second line.
  function layout() {
    twoLineHeads = headings && width < 640;
    const headH = headings ? (twoLineHeads ? 46 : 30) : 0;
    laneY = [];
    let y = top;
    scheds.forEach((sc) => {
      sc.headY = y;
      y += headH;
      for (let r = 0; r < sc.data.pp; r++) { laneY.push(y); y += lane + gap; }
      sc.bottom = y - gap;
      if (headings) y += 6;
    });
    height = y + axis;
  }
  const ids = { idle: `idle-${++uid}`, chunk: `chunk-${uid}`, clip: `clip-${uid}` };

  let width = 0, plotW = 0, root = null, dyn = null, overlay = null;
  let pinned = -1, hovered = -1, lastPinned = -1, pointerFocus = false;
  let drawn = new Map();  // action index -> its <g>
  let tipAt = null;       // {x, y} client position of the pointer for the hover tooltip
  const zoom = createZoom({ domain: [0, domainEnd], onChange: () => schedule() });
  // The window drawn, read from the zoom once per drawing (x runs for every visible block).
  let v0 = 0, v1 = domainEnd;
  const syncView = () => { ({ t0: v0, t1: v1 } = zoom.view); };
  const x = (t) => left + ((t - v0) / (v1 - v0)) * plotW;

  const tip = el('div', { class: 'tl-tip', hidden: true, 'aria-hidden': 'true' });
  const abort = new AbortController();

  // Whole drawing: the static parts (lanes, headings) and then the window.
  function build() {
    width = Math.max(320, Math.round(host.clientWidth || 1000));
    plotW = width - left - right;
    layout();
    const old = root;
    root = svg('svg', {
      viewBox: `0 0 ${width} ${height}`,
      class: 'timeline',
      role: 'group',
      tabindex: 0,
      'aria-roledescription': 'timeline',
      'aria-label': `${ariaTitle || scheds.map((s) => s.title).join(', ')} timeline` +
        scheds.map((s) => `, ${s.title}: ${s.data.pp} ranks, makespan ${fmtNum(s.data.makespan)} ms`).join('') +
        '. Arrow keys move between blocks, Enter pins, Escape unpins; W and S zoom, A and D pan, 0 resets.',
    });
    root.append(svg('defs', {}, idlePattern(ids.idle),
      // Later chunks: the same colour with a striped band along the bottom, so a light F never
      // passes for an I.
      svg('pattern', { id: ids.chunk, width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
        svg('line', { x1: 0, y1: 0, x2: 0, y2: 6, stroke: '#000', 'stroke-width': 2.5, 'stroke-opacity': 0.6 })),
      svg('clipPath', { id: ids.clip }, svg('rect', { x: left, y: 0, width: plotW, height }))));
    const statics = svg('g', { class: 'lanes' });
    scheds.forEach((sc, s) => {
      if (headings) {
        const d = sc.data;
        const numbers = `v = ${d.vpp} · makespan ${fmtNum(d.makespan)} ms · bubble ${pct(d.bubble_fraction)}`;
        statics.append(svg('text', { x: 4, y: sc.headY + 20, class: 'sched-head', 'data-schedule': d.schedule,
          'data-makespan': d.makespan },
        svg('tspan', { class: 'sched-name' }, sc.title),
        twoLineHeads ? svg('tspan', { x: 4, dy: 18, class: 'sched-sub' },
          `makespan ${fmtNum(d.makespan)} ms · bubble ${pct(d.bubble_fraction)} · v = ${d.vpp}`) : ` · ${numbers}`));
      }
      for (let r = 0; r < sc.data.pp; r++) {
        const ly = laneY[sc.firstLane + r];
        statics.append(svg('text', { x: left - 8, y: ly + lane / 2 + 5, 'text-anchor': 'end', class: 'lane-label' }, `rank ${r}`));
      }
      if (headings && s > 0) statics.append(svg('line', { x1: 0, x2: width, y1: sc.headY - 3, y2: sc.headY - 3, class: 'sched-sep' }));
    });
    root.append(statics);
    dyn = svg('g', { class: 'window', 'clip-path': `url(#${ids.clip})` });
    overlay = svg('g', { class: 'overlay', 'pointer-events': 'none', 'clip-path': `url(#${ids.clip})` });
    const axisG = svg('g', { class: 'axis' });
    root.append(dyn, axisG, overlay);
    root._axis = axisG;
    if (old) old.replaceWith(root); else host.append(root, tip);
    wire(root);
    zoom.attach(root, { plotLeft: left, plotWidth: plotW, viewBoxWidth: width, wheelNeedsFocus: true });
    render();
  }

  let frame = 0;
  function schedule() {
    if (frame) return;
    frame = requestAnimationFrame(() => { frame = 0; render(); });
  }

  // The visible window: idle lanes, blocks clipped to it, the axis, the highlight.
  let lastRenderMs = 0;
  function render() {
    const began = performance.now();
    syncView();
    const t0 = v0, t1 = v1;
    root.dataset.t0 = String(t0);
    root.dataset.t1 = String(t1);
    root.dataset.zoomed = String(zoom.zoomed);
    clear(dyn);
    const axisG = clear(root._axis);
    drawn = new Map();
    const clipX = (t) => Math.min(Math.max(x(t), left - 2), left + plotW + 2);
    // Idle: each schedule's lanes hatched up to its makespan; an end marker after it.
    scheds.forEach((sc) => {
      const xe = clipX(sc.data.makespan), xs = clipX(0);
      for (let r = 0; r < sc.data.pp; r++) {
        if (xe > xs) dyn.append(svg('rect', { x: xs, y: laneY[sc.firstLane + r], width: xe - xs, height: lane, fill: `url(#${ids.idle})`, class: 'idle' }));
      }
      if (scheds.length > 1 && sc.data.makespan >= t0 && sc.data.makespan <= t1) {
        dyn.append(svg('line', { x1: x(sc.data.makespan), x2: x(sc.data.makespan), y1: laneY[sc.firstLane] - 4,
          y2: sc.bottom + 4, class: 'end-mark' }));
      }
    });
    // Which blocks are in the window: per lane, the first that ends after t0 (binary search).
    const visible = [];
    for (const ln of lanes) {
      const L = ln.list;
      let lo = 0, hi = L.length;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (actions[L[mid]].end <= t0) lo = mid + 1; else hi = mid; }
      for (let i = lo; i < L.length && actions[L[i]].start <= t1; i++) visible.push(L[i]);
    }
    root.dataset.visible = String(visible.length);
    // A crowded window (a long schedule seen whole) draws the blocks narrower than DENSE_PX as one
    // grey run per lane and stretch of busy time, so the drawing stays light; zooming in brings
    // them back one by one.
    const dense = visible.length > DENSE;
    if (!dense) visible.sort((i, j) => i - j);
    const labelled = visible.length <= MAX_LABELLED;
    const blocks = svg('g', { class: 'blocks' });
    let run = null, runs = 0, tooMany = false;
    const flush = () => {
      if (!run) return;
      blocks.append(svg('rect', { x: run.x0, y: run.y, width: Math.max(run.x1 - run.x0, 0.5), height: lane, class: 'busy-run' }));
      runs += 1;
      run = null;
    };
    let prevLane = -1;
    for (const k of visible) {
      const a = actions[k];
      const ln = laneOf(a);
      if (ln !== prevLane) { flush(); prevLane = ln; }
      const ly = laneY[ln];
      const bx = clipX(a.start), bw = Math.max(clipX(a.end) - bx, 0.5);
      if (dense && bw < DENSE_PX) {
        if (run && bx <= run.x1 + 1) run.x1 = Math.max(run.x1, bx + bw);
        else { flush(); run = { x0: bx, x1: bx + bw, y: ly }; }
        continue;
      }
      flush();
      if (drawn.size >= MAX_DRAWN) { tooMany = true; continue; }
      const g = svg('g', { class: 'block', 'data-index': k, 'data-mb': a.microbatch, 'data-type': a.type,
        'data-rank': a.rank, 'data-chunk': a.chunk, 'data-schedule': scheds[a.s].data.schedule });
      g.append(svg('rect', { x: bx, y: ly, width: bw, height: lane, fill: COLORS[a.type] || '#999' }));
      if (a.chunk > 0) {
        g.append(svg('rect', { x: bx, y: ly + lane - Math.round(lane * 0.28), width: bw, height: Math.round(lane * 0.28),
          fill: `url(#${ids.chunk})`, class: 'chunk-band', 'pointer-events': 'none' }));
      }
      const label = blockLabel(a);
      if (labelled && bw >= label.length * 8.5 + 6) {
        g.append(svg('text', { x: bx + bw / 2, y: ly + (a.chunk > 0 ? lane * 0.36 : lane / 2) + 5, 'text-anchor': 'middle',
          fill: TEXT_ON[a.type] || '#000', class: 'block-label' }, label));
      }
      drawn.set(k, g);
      blocks.append(g);
    }
    flush();
    dyn.append(blocks);
    root.dataset.runs = String(runs);
    if (tooMany) {
      dyn.append(svg('text', { x: left + plotW / 2, y: laneY[0] + lane / 2 + 6, 'text-anchor': 'middle', class: 'too-many' },
        `More than ${MAX_DRAWN} blocks in this window: zoom in (W, the wheel or a pinch) to draw them all.`));
    }
    // Axis: ticks at round steps of the visible span.
    const step = niceStep((t1 - t0) / Math.max(3, Math.round(plotW / 100)));
    const axisY = height - axis + 4;
    for (let t = Math.ceil(t0 / step - 1e-9) * step; t <= t1 + step * 1e-9; t += step) {
      const tx = x(t);
      axisG.append(svg('line', { x1: tx, x2: tx, y1: axisY, y2: axisY + 6, stroke: '#333' }));
      axisG.append(svg('text', { x: tx, y: axisY + 22, 'text-anchor': 'middle', class: 'tick' }, fmtNum(Number(t.toPrecision(10)))));
    }
    axisG.append(svg('text', { x: left + plotW, y: axisY + 40, 'text-anchor': 'end', class: 'axis-title' },
      (runs ? 'grey: blocks too narrow to draw apart, zoom in · ' : '') +
      (zoom.zoomed ? `time (ms), ${fmtNum(Number(t0.toPrecision(6)))}–${fmtNum(Number(t1.toPrecision(6)))} shown; 0 resets` : 'time (ms)')));
    highlight();
    if (!tip.hidden) showTip();
    lastRenderMs = performance.now() - began;
  }

  // The block that waited longest among k's inputs, as the engine's simulator times it.
  function waitedOn(a) {
    const p2p = scheds[a.s].p2p;
    let waited = -1, readyAt = -Infinity;
    for (const d of a.deps) {
      const b = actions[d];
      if (!b) continue;
      const ready = b.end + (b.rank !== a.rank ? p2p : 0);
      if (ready > readyAt) { readyAt = ready; waited = d; }
    }
    return { waited, readyAt };
  }
  function previousOnRank(k) {
    const L = lanes[laneOf(actions[k])].list;
    const pos = L.indexOf(k);
    return pos > 0 ? L[pos - 1] : -1;
  }
  function why(k) {
    const a = actions[k];
    const p2p = scheds[a.s].p2p;
    const { waited, readyAt } = waitedOn(a);
    const prev = previousOnRank(k);
    const freeAt = prev >= 0 ? actions[prev].end : 0;
    if (waited < 0) {
      return prev >= 0 ? `No input to wait for; it ran once rank ${a.rank} was free (at ${fmtNum(freeAt)} ms).` :
        'No input to wait for; it starts the pipeline.';
    }
    const d = actions[waited];
    const hop = d.rank !== a.rank && p2p > 0 ? ` + ${fmtNum(p2p)} ms p2p` : '';
    const src = `${short(d)} on rank ${d.rank}, which ended at ${fmtNum(d.end)} ms${hop}`;
    return readyAt > freeAt + 1e-9
      ? `It waited ${fmtNum(readyAt - freeAt)} ms for ${src}.`
      : `Its input ${src}, was ready by the time rank ${a.rank} was free (at ${fmtNum(freeAt)} ms).`;
  }
  function sentence(k) {
    const a = actions[k];
    const prefix = scheds.length > 1 ? `${scheds[a.s].title}, rank ${a.rank}` : `Rank ${a.rank}`;
    return `${prefix}: ${describe(a)}, ${fmtNum(a.start)}–${fmtNum(a.end)} ms. ${why(k)}`;
  }

  // Highlight of the active block (the pointed one, else the pinned one) in the drawn window.
  function highlight() {
    const k = hovered >= 0 ? hovered : pinned;
    clear(overlay);
    root.classList.toggle('following', k >= 0);
    root.dataset.pinned = String(pinned);
    for (const g of drawn.values()) g.classList.remove('same-mb', 'dep', 'current', 'pinned');
    if (pinned >= 0 && drawn.has(pinned)) drawn.get(pinned).classList.add('pinned');
    if (k < 0) {
      say('Point at a block (or focus the timeline and use the arrow keys) to follow its microbatch; ' +
        'a click or a tap pins it.');
      return;
    }
    const a = actions[k];
    for (const [j, g] of drawn) {
      const b = actions[j];
      if (b.s === a.s && (touches(b, a.microbatch) || (a.type === 'FB' && touches(b, a.b_microbatch)))) g.classList.add('same-mb');
    }
    if (drawn.has(k)) drawn.get(k).classList.add('current');
    const { waited } = waitedOn(a);
    const ay = laneY[laneOf(a)] + lane / 2;
    for (const d of a.deps) {
      const b = actions[d];
      if (!b) continue;
      if (drawn.has(d)) drawn.get(d).classList.add('dep');
      overlay.append(svg('line', { x1: x(b.end), y1: laneY[laneOf(b)] + lane / 2, x2: x(a.start), y2: ay,
        class: d === waited ? 'dep-arrow waited' : 'dep-arrow' }));
      overlay.append(svg('circle', { cx: x(a.start), cy: ay, r: 5, class: 'dep-head' }));
    }
    overlay.append(svg('rect', { x: x(a.start) - 2, y: laneY[laneOf(a)] - 2, width: Math.max(x(a.end) - x(a.start), 0.5) + 4,
      height: lane + 4, class: 'cursor' }));
    say(sentence(k));
  }
  function say(text) {
    if (info && info.textContent !== text) info.textContent = text;
  }

  // The tooltip: at the pointer for the pointed block, at the block for a pinned one.
  function showTip() {
    const k = hovered >= 0 ? hovered : pinned;
    if (k < 0) { tip.hidden = true; return; }
    const a = actions[k];
    const isPinned = hovered < 0 || hovered === pinned;
    clear(tip);
    tip.append(el('strong', {}, `${blockLabel(a)} · ${scheds.length > 1 ? `${scheds[a.s].title}, ` : ''}rank ${a.rank}`),
      el('span', {}, `${describe(a)}`),
      el('span', {}, `${fmtNum(a.start)}–${fmtNum(a.end)} ms (${fmtNum(Number((a.end - a.start).toPrecision(6)))} ms)`));
    // Why it started then is in the live region under the drawing; the tooltip stays short.
    if (isPinned && pinned >= 0) tip.append(el('em', {}, 'Pinned (details below): Escape or a click elsewhere unpins.'));
    tip.classList.toggle('pinned', isPinned && pinned >= 0);
    tip.dataset.index = String(k);
    tip.hidden = false;
    const hb = host.getBoundingClientRect();
    let px, py;
    if (hovered >= 0 && tipAt) {
      px = tipAt.x - hb.left + 14; py = tipAt.y - hb.top + 18;
    } else {
      const g = drawn.get(k);
      const r = g ? g.getBoundingClientRect() : root.getBoundingClientRect();
      px = r.left - hb.left + Math.min(r.width / 2, 40); py = r.bottom - hb.top + 6;
    }
    const tw = tip.offsetWidth, th = tip.offsetHeight;
    if (px + tw > hb.width - 4) px = Math.max(4, (tipAt && hovered >= 0 ? tipAt.x - hb.left - 14 : px) - tw);
    if (py + th > hb.height + 60 && hovered >= 0 && tipAt) py = tipAt.y - hb.top - th - 12;
    tip.style.left = `${Math.max(0, px)}px`;
    tip.style.top = `${Math.max(0, py)}px`;
  }

  function hover(k) {
    if (k === hovered) return;
    hovered = k;
    highlight();
    showTip();
  }
  function pin(k) {
    pinned = k;
    if (k >= 0) lastPinned = k;
    highlight();
    showTip();
  }
  function firstVisible() {
    const { t0 } = zoom.view;
    for (const ln of lanes) for (const j of ln.list) if (actions[j].end > t0) return j;
    return actions.length ? 0 : -1;
  }
  // Keeps the keyboard's block in the window: pans when it leaves the view.
  function reveal(k) {
    const a = actions[k];
    const { t0, t1 } = zoom.view;
    if (a.start < t0 || a.end > t1) {
      const span = t1 - t0;
      const mid = (a.start + a.end) / 2;
      zoom.set(mid - span / 2, mid + span / 2);
      render();
    }
  }

  function wire(svgEl) {
    svgEl.addEventListener('pointerover', (ev) => {
      if (ev.pointerType === 'touch') return;  // a tap pins; there is no hover on a touch screen
      const g = ev.target.closest && ev.target.closest('.block');
      hover(g ? Number(g.dataset.index) : -1);
    });
    svgEl.addEventListener('pointermove', (ev) => {
      if (ev.pointerType === 'touch') return;
      tipAt = { x: ev.clientX, y: ev.clientY };
      if (hovered >= 0) showTip();
    });
    svgEl.addEventListener('pointerleave', () => { tipAt = null; hover(-1); });
    svgEl.addEventListener('pointerdown', () => { pointerFocus = true; });
    svgEl.addEventListener('click', (ev) => {
      // The block under the pointer or the finger: the event's target, else what is at that point.
      let g = ev.target.closest && ev.target.closest('.block');
      if (!g) {
        const at = document.elementFromPoint(ev.clientX, ev.clientY);
        g = at && at.closest && at.closest('.block');
      }
      if (!g || !svgEl.contains(g)) { pin(-1); return; }
      const k = Number(g.dataset.index);
      if (ev.pointerType === 'touch' || ev.pointerType === 'pen') hovered = -1;
      pin(k === pinned && ev.pointerType !== 'touch' ? -1 : k);
    });
    svgEl.addEventListener('blur', () => { pointerFocus = false; });
    svgEl.addEventListener('focus', () => {
      // Keyboard focus starts on a block; focus from a click or a tap leaves that to the click.
      if (!pointerFocus && pinned < 0 && actions.length) pin(lastPinned >= 0 ? lastPinned : firstVisible());
      pointerFocus = false;
    });
    svgEl.addEventListener('keydown', (ev) => {
      if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
      if (ev.key === 'Escape') {
        if (pinned >= 0) { pin(-1); ev.preventDefault(); }
        return;
      }
      const arrows = ['ArrowRight', 'ArrowLeft', 'ArrowDown', 'ArrowUp'];
      if (!arrows.includes(ev.key) && ev.key !== 'Enter') return;
      ev.preventDefault();
      if (pinned < 0) {
        // After Escape (or before anything): resume from the last block, or the first in view.
        const k = lastPinned >= 0 ? lastPinned : firstVisible();
        if (k >= 0) { reveal(k); pin(k); }
        return;
      }
      if (ev.key === 'Enter') return;
      const a = actions[pinned];
      const L = lanes[laneOf(a)].list;
      const pos = L.indexOf(pinned);
      let next = pinned;
      if (ev.key === 'ArrowRight') next = L[Math.min(pos + 1, L.length - 1)];
      else if (ev.key === 'ArrowLeft') next = L[Math.max(pos - 1, 0)];
      else {
        const target = laneOf(a) + (ev.key === 'ArrowDown' ? 1 : -1);
        if (target >= 0 && target < lanes.length && lanes[target].list.length) {
          // The block on that lane nearest in time.
          next = lanes[target].list.reduce((best, j) =>
            Math.abs(actions[j].start - a.start) < Math.abs(actions[best].start - a.start) ? j : best, lanes[target].list[0]);
        }
      }
      reveal(next);
      pin(next);
    });
  }

  // A click outside the timeline unpins; the drawing follows the width of its box.
  document.addEventListener('click', (ev) => {
    if (pinned >= 0 && root && !root.contains(ev.target) && !tip.contains(ev.target)) pin(-1);
  }, { signal: abort.signal });
  let lastWidth = 0;
  const ro = typeof ResizeObserver === 'function' ? new ResizeObserver(() => {
    const w = Math.round(host.clientWidth);
    if (w && Math.abs(w - lastWidth) > 1) { lastWidth = w; build(); showTip(); }
  }) : null;

  lastWidth = Math.round(host.clientWidth);
  build();
  if (ro) ro.observe(host);

  // One microbatch flowing through the stages: its actions pinned one after another in time order
  // (schedule `s` of the stack). Returns false when the microbatch has no action.
  let playTimer = 0;
  function stop() {
    clearTimeout(playTimer);
    playTimer = 0;
    if (root) root.dataset.playing = 'false';
  }
  function play(mb, { s = 0, interval = 700, onEnd = () => {} } = {}) {
    stop();
    const steps = actions.filter((a) => a.s === s && touches(a, mb)).sort((a, b) => a.start - b.start || a.rank - b.rank).map((a) => a.k);
    if (!steps.length) return false;
    root.dataset.playing = 'true';
    let i = 0;
    const step = () => {
      hovered = -1;
      reveal(steps[i]);
      pin(steps[i]);
      i += 1;
      if (i < steps.length) playTimer = setTimeout(step, interval);
      else { stop(); onEnd(); }
    };
    step();
    return true;
  }

  const controller = {
    select: pin,
    play,
    stop,
    get playing() { return playTimer !== 0; },
    get lastRenderMs() { return lastRenderMs; },
    count: actions.length,
    zoom,
    redraw: render,
    get svg() { return root; },
    destroy() {
      stop();
      abort.abort();
      if (ro) ro.disconnect();
      zoom.detach();
      if (frame) cancelAnimationFrame(frame);
      host._timeline = null;
    },
  };
  host._timeline = controller;
  return controller;
}

// Removes a drawing made by drawTimeline(s) and its listeners.
export function clearTimeline(host) {
  if (host._timeline) host._timeline.destroy();
  clear(host);
}

// The legend shared by every timeline.
export function legend() {
  const items = ['F', 'B', 'I', 'W', 'FB'].map((t) =>
    el('li', {}, el('span', { class: `swatch swatch-${t}`, 'aria-hidden': 'true' }), `${t} ${NAMES[t]}`));
  items.push(el('li', {}, el('span', { class: 'swatch swatch-idle', 'aria-hidden': 'true' }), 'idle (bubble)'));
  items.push(el('li', {}, el('span', { class: 'swatch swatch-F swatch-chunk', 'aria-hidden': 'true' }),
    'f3, b3: a rank\'s later chunk (same colour, striped bottom band)'));
  return el('ul', { class: 'legend', 'aria-label': 'legend' }, items);
}
