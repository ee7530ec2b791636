// The pipeline timeline, drawn on a canvas: one lane per rank, one block per action at the
// engine's start and end, labelled with its microbatch, idle time hatched. Several schedules can be
// stacked on one time axis (the comparison "as pictures"); one zoom (web/js/zoom.js) drives them.
//
// It stays smooth at a million actions because a frame never walks every action: each lane keeps
// its actions sorted by start, a frame binary-searches the first visible one, and where blocks are
// narrower than DENSE_PX it jumps (binary search again) to the first action past the next pixel,
// merging what it skipped into one grey "busy run". A frame is O(lanes x pixels x log n).
//
// Navigation: the wheel zooms around the pointer (once the timeline has focus; Ctrl+wheel or a
// pinch always), a drag pans, W/S zoom and A/D pan, 0 or a double click resets; the overview
// strip above shows the whole schedule and the window, a press or drag on it moves there. Shift+drag
// (or a drag along the time axis) selects a time range and states its busy and idle time per action
// type. The search box finds blocks by name (F3, b12, W, or a microbatch number), Enter or the
// arrows next to it go to the next or previous. Pointing at a block shows a tooltip and follows
// its microbatch across the ranks, with the dependency it waited on; a click or a tap pins it (a
// click elsewhere or Escape unpins); the arrow keys move the pinned block. "Arrows" draws every
// send/recv between ranks in the window.
//
// Tests and benchmarks read the drawing through the canvas's data attributes (data-t0, data-t1,
// data-pinned, data-visible, data-runs, data-drawn, data-labels, data-zoomed, data-playing) and the
// controller at host._timeline (blocks(), ticks(), selection(), hitAt()).
import { clear, el, fmtNum, pct } from './common.js';
import { COLORS, NAMES, TEXT_ON, niceStep } from './svg.js';
import { createZoom } from './zoom.js';

const TYPES = ['F', 'B', 'I', 'W', 'FB'];
const DENSE = 4000;      // more actions than this in the window: the narrow ones merge into runs
const DENSE_PX = 3;      // ... narrower than this many pixels
const KEEP_DRAWN = 20000;  // blocks whose boxes a frame keeps for hit tests and the test hook
const FLOWS_MAX = 4000;  // send/recv arrows drawn at most (more: zoom in)
const RUN_FILL = '#6b6b6b';
const IDLE_BG = '#f1f1f1', IDLE_LINE = '#c4c4c4';
const INK = '#1a1a1a';
const OVERVIEW_H = 34;
let uid = 0;

// The label the engine's renderers use: type letter and microbatch, lowercase on a rank's later
// chunks, "F3+b1" for an overlapped pair. `a` has {type, chunk, microbatch, b_microbatch}.
export function blockLabel(a) {
  if (a.type === 'FB') return `F${a.microbatch}+b${a.b_microbatch}`;
  return `${a.chunk > 0 ? a.type.toLowerCase() : a.type}${a.microbatch}`;
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

// One schedule answer as columns: format=columns (the server's compact JSON) or format=json's
// "actions" (the import endpoint).
function columnsOf(d) {
  if (d.columns) {
    const c = d.columns;
    const code = (d.types || TYPES).map((t) => TYPES.indexOf(t));
    const n = c.start.length;
    const type = new Uint8Array(n);
    for (let k = 0; k < n; k++) type[k] = code[c.type[k]];
    return { n, rank: Int32Array.from(c.rank), stage: Int32Array.from(c.stage), chunk: Int32Array.from(c.chunk), type,
      mb: Int32Array.from(c.microbatch), bStage: Int32Array.from(c.b_stage), bMb: Int32Array.from(c.b_microbatch),
      start: Float64Array.from(c.start), end: Float64Array.from(c.end),
      depOff: d.dep_offsets ? Int32Array.from(d.dep_offsets) : null, deps: d.deps ? Int32Array.from(d.deps) : null };
  }
  const acts = d.actions || [];
  const n = acts.length;
  const o = { n, rank: new Int32Array(n), stage: new Int32Array(n), chunk: new Int32Array(n), type: new Uint8Array(n),
    mb: new Int32Array(n), bStage: new Int32Array(n), bMb: new Int32Array(n), start: new Float64Array(n), end: new Float64Array(n),
    depOff: null, deps: null };
  const withDeps = n > 0 && Array.isArray(acts[0].deps);
  const deps = [];
  if (withDeps) o.depOff = new Int32Array(n + 1);
  acts.forEach((a, k) => {
    o.rank[k] = a.rank; o.stage[k] = a.stage; o.chunk[k] = a.chunk; o.type[k] = Math.max(0, TYPES.indexOf(a.type));
    o.mb[k] = a.microbatch; o.bStage[k] = a.b_stage ?? -1; o.bMb[k] = a.b_microbatch ?? -1;
    o.start[k] = a.start; o.end[k] = a.end;
    if (withDeps) { for (const j of a.deps || []) deps.push(j); o.depOff[k + 1] = deps.length; }
  });
  if (withDeps) o.deps = Int32Array.from(deps);
  return o;
}

// Draws `data` (the JSON of /api/schedule with format=columns, or /api/import, with dependencies=1
// for the arrows) into `host`; `info` is a live region that describes the pointed or pinned block.
export function drawTimeline(host, info, data, { title = '' } = {}) {
  return drawTimelines(host, info, [{ data, title }], { ariaTitle: title });
}

// Several schedules stacked on one shared time axis: `list` is [{data, title}], each drawn under a
// heading with its makespan and bubble when `headings` is set. Returns the controller.
export function drawTimelines(host, info, list, { headings = false, ariaTitle = '', lane = 40, gap = 8 } = {}) {
  return drawLanes(host, info, scheduleModel(list, { headings, ariaTitle }), { lane, gap });
}

// Per lane: the item indexes sorted by start, their starts, and the running maximum of their ends
// (what the frame's binary searches need). `per` is an array of item-index arrays.
export function makeLanes(per, start, end, extra = () => ({})) {
  return per.map((list, i) => {
    const idx = Int32Array.from(list).sort();
    idx.sort((a, b) => start[a] - start[b]);
    const st = new Float64Array(idx.length), me = new Float64Array(idx.length);
    let m = -Infinity;
    for (let q = 0; q < idx.length; q++) { st[q] = start[idx[q]]; m = Math.max(m, end[idx[q]]); me[q] = m; }
    return { idx, st, me, ...extra(i) };
  });
}

// The model of one or more pipeline schedules: what drawLanes needs to know about the items (see
// drawLanes for the contract).
function scheduleModel(list, { headings, ariaTitle }) {
  const parts = list.map((item) => columnsOf(item.data));
  const N = parts.reduce((n, p) => n + p.n, 0);
  const A = { rank: new Int32Array(N), stage: new Int32Array(N), chunk: new Int32Array(N), type: new Uint8Array(N),
    mb: new Int32Array(N), bStage: new Int32Array(N), bMb: new Int32Array(N), start: new Float64Array(N),
    end: new Float64Array(N), s: new Uint8Array(N) };
  const depOff = new Int32Array(N + 1);
  let depCount = 0;
  for (const p of parts) depCount += p.deps ? p.deps.length : 0;
  const deps = new Int32Array(depCount);
  const per = [];
  const scheds = [];
  {
    let base = 0, dAt = 0;
    parts.forEach((p, s) => {
      for (const f of ['rank', 'stage', 'chunk', 'type', 'mb', 'bStage', 'bMb', 'start', 'end']) A[f].set(p[f], base);
      A.s.fill(s, base, base + p.n);
      for (let k = 0; k < p.n; k++) {
        if (p.depOff) for (let i = p.depOff[k]; i < p.depOff[k + 1]; i++) deps[dAt++] = p.deps[i] + base;
        depOff[base + k + 1] = dAt;
      }
      const d = list[s].data;
      const firstLane = per.length;
      for (let r = 0; r < d.pp; r++) per.push([]);
      for (let k = 0; k < p.n; k++) per[firstLane + p.rank[k]].push(base + k);
      scheds.push({ data: d, title: list[s].title || d.schedule, base, n: p.n, firstLane, nLanes: d.pp,
        idleTo: d.makespan, end: d.makespan, p2p: (d.costs && d.costs.p2p) || 0, busyLanes: d.pp });
      base += p.n;
    });
  }
  const lanes = makeLanes(per, A.start, A.end, (i) => {
    const s = scheds.findLastIndex((sc) => sc.firstLane <= i);
    return { rank: i - scheds[s].firstLane, label: `rank ${i - scheds[s].firstLane}` };
  });
  const laneOf = new Int32Array(N);
  for (let k = 0; k < N; k++) laneOf[k] = scheds[A.s[k]].firstLane + A.rank[k];
  const act = (k) => ({ k, s: A.s[k], rank: A.rank[k], stage: A.stage[k], chunk: A.chunk[k], type: TYPES[A.type[k]],
    microbatch: A.mb[k], b_stage: A.bStage[k], b_microbatch: A.bMb[k], start: A.start[k], end: A.end[k] });
  const labelOf = (k) => blockLabel({ type: TYPES[A.type[k]], chunk: A.chunk[k], microbatch: A.mb[k], b_microbatch: A.bMb[k] });
  const touches = (k, s, mb) => A.s[k] === s && (A.mb[k] === mb || (A.type[k] === 4 && A.bMb[k] === mb));
  const band = new Uint8Array(N);
  for (let k = 0; k < N; k++) band[k] = A.chunk[k] > 0 ? 1 : 0;

  function waitedOn(k) {
    const p2p = scheds[A.s[k]].p2p;
    let waited = -1, readyAt = -Infinity;
    for (let q = depOff[k]; q < depOff[k + 1]; q++) {
      const d = deps[q];
      const ready = A.end[d] + (A.rank[d] !== A.rank[k] ? p2p : 0);
      if (ready > readyAt) { readyAt = ready; waited = d; }
    }
    return { waited, readyAt };
  }
  function previousOnRank(k, posInLane) {
    const p = posInLane[k];
    return p > 0 ? lanes[laneOf[k]].idx[p - 1] : -1;
  }
  function why(k, posInLane) {
    const a = act(k);
    const p2p = scheds[a.s].p2p;
    const { waited, readyAt } = waitedOn(k);
    const prev = previousOnRank(k, posInLane);
    const freeAt = prev >= 0 ? A.end[prev] : 0;
    if (waited < 0) {
      return prev >= 0 ? `No input to wait for; it ran once rank ${a.rank} was free (at ${fmtNum(freeAt)} ms).` :
        'No input to wait for; it starts the pipeline.';
    }
    const d = act(waited);
    const hop = d.rank !== a.rank && p2p > 0 ? ` + ${fmtNum(p2p)} ms p2p` : '';
    const src = `${short(d)} on rank ${d.rank}, which ended at ${fmtNum(d.end)} ms${hop}`;
    return readyAt > freeAt + 1e-9
      ? `It waited ${fmtNum(readyAt - freeAt)} ms for ${src}.`
      : `Its input ${src}, was ready by the time rank ${a.rank} was free (at ${fmtNum(freeAt)} ms).`;
  }
  const heads = () => scheds.map((sc) => {
    const d = sc.data;
    return { title: sc.title, sub: `v = ${d.vpp} · makespan ${fmtNum(d.makespan)} ms · bubble ${pct(d.bubble_fraction)}`,
      attrs: { 'data-schedule': d.schedule, 'data-makespan': d.makespan } };
  });
  return {
    N, start: A.start, end: A.end, fill: A.type, band, laneOf, lanes, groups: scheds,
    palette: TYPES.map((t) => COLORS[t]), textOn: TYPES.map((t) => TEXT_ON[t]),
    domainEnd: Math.max(1e-9, ...scheds.map((s) => s.data.makespan)),
    headings: headings ? heads : null, endMarks: scheds.length > 1,
    ariaLabel: `${ariaTitle || scheds.map((s) => s.title).join(', ')} timeline` +
      scheds.map((s) => `, ${s.title}: ${s.data.pp} ranks, makespan ${fmtNum(s.data.makespan)} ms`).join('') +
      '. Arrow keys move between blocks, Enter pins, Escape unpins; W and S zoom, A and D pan, 0 resets. ' +
      'The pinned block is described below the drawing.',
    search: { placeholder: 'F3, b12, W, 7', aria: 'Find blocks by name: F3, b12, W, or a microbatch number' },
    flowsLabel: ' send/recv arrows',
    idleHint: 'Point at a block (or focus the timeline and use the arrow keys) to follow its microbatch; a click or a tap pins it.',
    label: labelOf,
    labelFont: 'bold 14px system-ui, sans-serif', labelCharPx: 8.5,
    related: (k, active) => touches(k, A.s[active], A.mb[active]) || (A.type[active] === 4 && touches(k, A.s[active], A.bMb[active])),
    depOff, deps, waitedOn,
    // Smart case, as ripgrep has it: a query with a capital matches case-sensitively (F3 is chunk
    // 0's forward, f3 a later chunk's), an all-lowercase one matches either.
    match(q) {
      const out = [];
      const exact = q !== q.toLowerCase();
      const same = (a) => (exact ? a === q : a.toLowerCase() === q.toLowerCase());
      const typeWord = TYPES.findIndex((t) => same(t) || same(NAMES[t]));
      const num = /^\d+$/.test(q) ? Number(q) : -1;
      for (let k = 0; k < N; k++) {
        if (typeWord >= 0 ? A.type[k] === typeWord : num >= 0 ? (A.mb[k] === num || A.bMb[k] === num) : same(labelOf(k))) out.push(k);
      }
      return out;
    },
    totals(t0, t1, busyIn) {
      return scheds.map((sc) => {
        const byType = {};
        let busy = 0;
        const a = Math.max(t0, 0), b = Math.min(t1, sc.data.makespan);
        busyIn(sc.firstLane, sc.firstLane + sc.data.pp, a, b, (k, d) => {
          busy += d;
          const ty = TYPES[A.type[k]];
          byType[ty] = (byType[ty] || 0) + d;
        });
        const span = Math.max(0, b - a) * sc.data.pp;
        return { schedule: sc.title, busy, idle: Math.max(0, span - busy), span, byType };
      });
    },
    totalsText(totals, n) {
      return totals.map((s) => `${scheds.length > 1 ? `${s.schedule}: ` : ''}busy ${n(s.busy)} ms (${pct(s.span ? s.busy / s.span : 0)}), ` +
        `idle ${n(s.idle)} ms (rank-ms); ` +
        Object.entries(s.byType).map(([ty, v]) => `${ty} ${n(v)} ms`).join(', ')).join(' · ');
    },
    tip(k) {
      const a = act(k);
      return [`${labelOf(k)} · ${scheds.length > 1 ? `${scheds[a.s].title}, ` : ''}rank ${a.rank}`, describe(a),
        `${fmtNum(a.start)}–${fmtNum(a.end)} ms (${fmtNum(Number((a.end - a.start).toPrecision(6)))} ms)`];
    },
    sentence(k, posInLane) {
      const a = act(k);
      const prefix = scheds.length > 1 ? `${scheds[a.s].title}, rank ${a.rank}` : `Rank ${a.rank}`;
      return `${prefix}: ${describe(a)}, ${fmtNum(a.start)}–${fmtNum(a.end)} ms. ${why(k, posInLane)}`;
    },
    short: (k) => short(act(k)),
    blockInfo: (k) => ({ type: TYPES[A.type[k]], mb: A.mb[k], rank: A.rank[k], chunk: A.chunk[k], schedule: scheds[A.s[k]].data.schedule }),
    // One microbatch flowing through the stages (schedule `s` of the stack), in time order.
    flow(mb, s) {
      const steps = [];
      for (let k = scheds[s].base; k < scheds[s].base + scheds[s].n; k++) if (touches(k, s, mb)) steps.push(k);
      steps.sort((i, j) => A.start[i] - A.start[j] || A.rank[i] - A.rank[j]);
      return steps;
    },
    axisUnit: 'ms',
  };
}

// The canvas lanes every timeline of the workbench draws: pipeline schedules (drawTimelines) and
// measured traces (web/js/traceview.js). `M`, the model, holds the items as columns: N, start and
// end (in axis units), fill (a palette index), band (1: a dark band at the bottom), laneOf, lanes
// (makeLanes, each with a label and an optional height scale `scale`), groups ({firstLane, nLanes,
// idleTo: where hatched idle is drawn up to or null, end, busyLanes}), palette ('idle' = hatched)
// and textOn; label(k), tip(k) -> lines, sentence(k), match(q) -> indexes, totals / totalsText for a
// selected range, related(k, active) for what the active block lights up, depOff/deps/waitedOn for
// dependencies, links ({n, fromLane, fromT, toLane, toT}) for arrows between lanes, bands ({t0, t1,
// label}) drawn behind the lanes, blockInfo(k) for the test hook.
export function drawLanes(host, info, M, { lane: laneWanted = 40, gap: gapWanted = 8 } = {}) {
  if (host._timeline) host._timeline.destroy();
  clear(host);
  host.classList.add('tl-host');
  const { N, lanes } = M;
  const A = { start: M.start, end: M.end };
  const scheds = M.groups;
  const laneOf = (k) => M.laneOf[k];
  const posInLane = new Int32Array(N);
  for (const ln of lanes) for (let i = 0; i < ln.idx.length; i++) posInLane[ln.idx[i]] = i;
  const labelOf = M.label;
  const depOff = M.depOff || new Int32Array(N + 1);
  const deps = M.deps || new Int32Array(0);
  const waitedOn = M.waitedOn || (() => ({ waited: -1, readyAt: -Infinity }));
  const domainEnd = M.domainEnd;
  const P = M.palette.length;

  // --- Layout (CSS pixels) -------------------------------------------------------------------------
  // Many ranks get thinner lanes, so 64 ranks fit a screen instead of a 3,000 px column.
  const lane = lanes.length > 16 ? Math.max(18, Math.min(laneWanted, Math.floor(900 / lanes.length))) : laneWanted;
  const gap = lanes.length > 16 ? 2 : gapWanted;
  const laneH = lanes.map((ln) => Math.round(lane * (ln.scale || 1)));
  const headings = Boolean(M.headings);
  const top = M.bands ? 24 : 8, axis = 50, right = 14;
  let left = 68;
  let width = 0, plotW = 0, height = 0, laneY = [], twoLineHeads = false;
  function layout() {
    left = M.left ? M.left(width) : width < 480 ? 56 : 68;
    plotW = width - left - right;
    twoLineHeads = headings && width < 640;
    const headH = headings ? (twoLineHeads ? 46 : 30) : 0;
    laneY = [];
    let y = top;
    for (const sc of scheds) {
      sc.headY = y;
      y += headH;
      for (let r = 0; r < sc.nLanes; r++) { laneY.push(y); y += laneH[sc.firstLane + r] + gap; }
      sc.bottom = y - gap;
      if (headings || M.groupGap) y += M.groupGap || 6;
    }
    height = y + axis;
  }

  // --- Elements ------------------------------------------------------------------------------------
  const id = ++uid;
  const searchBox = el('input', { type: 'search', class: 'tl-search', id: `tl-search-${id}`, placeholder: M.search.placeholder,
    'aria-label': M.search.aria, autocomplete: 'off', spellcheck: 'false' });
  const prevBtn = el('button', { type: 'button', class: 'tl-prev', 'aria-label': 'Previous match' }, '◀');
  const nextBtn = el('button', { type: 'button', class: 'tl-next', 'aria-label': 'Next match' }, '▶');
  const found = el('span', { class: 'tl-found', 'aria-live': 'polite' });
  const flowsBox = el('input', { type: 'checkbox', id: `tl-flows-${id}`, class: 'tl-flows' });
  const bar = el('div', { class: 'tl-bar' },
    el('label', { for: `tl-search-${id}` }, 'Find'), searchBox, prevBtn, nextBtn, found,
    el('label', { class: 'tl-flows-label', for: `tl-flows-${id}` }, flowsBox, M.flowsLabel));
  if (!M.flowsLabel) bar.querySelector('.tl-flows-label').remove();  // CSS display beats [hidden]
  const overview = el('canvas', { class: 'tl-overview', 'aria-hidden': 'true' });
  const canvas = el('canvas', { class: 'timeline', tabindex: 0, role: 'img', 'aria-roledescription': 'timeline' });
  const headBox = el('div', { class: 'tl-heads' });
  const stage = el('div', { class: 'tl-stage' }, canvas, headBox);
  const tip = el('div', { class: 'tl-tip', hidden: true, 'aria-hidden': 'true' });
  const selNote = el('p', { class: 'tl-selection', 'aria-live': 'polite', hidden: true });
  host.append(bar, overview, stage, tip, selNote);
  const ctx = canvas.getContext('2d');
  const octx = overview.getContext('2d');

  let pinned = -1, hovered = -1, lastPinned = -1, pointerFocus = false;
  let tipAt = null;
  let matches = [], matchAt = -1, matchSet = null;
  let sel = null;  // {t0, t1} selected range
  // The blocks of the last frame drawn one by one (up to KEEP_DRAWN): index, x, y, width, labelled.
  const drawnK = new Int32Array(KEEP_DRAWN), drawnX = new Float32Array(KEEP_DRAWN), drawnY = new Float32Array(KEEP_DRAWN);
  const drawnW = new Float32Array(KEEP_DRAWN), drawnL = new Uint8Array(KEEP_DRAWN);
  let drawnN = 0;
  const buckets = Array.from({ length: 2 * P + 6 }, () => []);
  let ticks = [];
  let lastRenderMs = 0;
  const zoom = createZoom({ domain: [0, domainEnd], onChange: () => schedule() });
  let v0 = 0, v1 = domainEnd;
  const x = (t) => left + ((t - v0) / (v1 - v0)) * plotW;
  const tOf = (px) => v0 + ((px - left) / plotW) * (v1 - v0);
  const abort = new AbortController();
  const dpr = () => Math.max(1, Math.min(3, window.devicePixelRatio || 1));

  // Patterns: hatched idle, and the striped band of a later chunk.
  function pattern(draw) {
    const c = document.createElement('canvas');
    c.width = c.height = 6;
    draw(c.getContext('2d'));
    return ctx.createPattern(c, 'repeat');
  }
  const idleFill = pattern((g) => {
    g.fillStyle = IDLE_BG; g.fillRect(0, 0, 6, 6);
    g.strokeStyle = IDLE_LINE; g.lineWidth = 1.5; g.beginPath();
    g.moveTo(0, 6); g.lineTo(6, 0); g.moveTo(-1, 1); g.lineTo(1, -1); g.moveTo(5, 7); g.lineTo(7, 5); g.stroke();
  });
  const chunkFill = pattern((g) => {
    g.strokeStyle = 'rgba(0,0,0,0.6)'; g.lineWidth = 2; g.beginPath();
    g.moveTo(0, 6); g.lineTo(6, 0); g.moveTo(-1, 1); g.lineTo(1, -1); g.moveTo(5, 7); g.lineTo(7, 5); g.stroke();
  });

  function build() {
    width = Math.max(300, Math.round(host.clientWidth || 1000));
    layout();
    const r = dpr();
    canvas.width = Math.round(width * r);
    canvas.height = Math.round(height * r);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
    overview.width = Math.round(width * r);
    overview.height = Math.round(OVERVIEW_H * r);
    overview.style.width = `${width}px`;
    overview.style.height = `${OVERVIEW_H}px`;
    canvas.setAttribute('aria-label', M.ariaLabel);
    // Headings: text in the page (readable, selectable, found by the tests), placed over the canvas.
    clear(headBox);
    if (headings) {
      M.headings().forEach((h, s) => {
        const head = el('div', { class: `sched-head${twoLineHeads ? ' two-line' : ''}`, ...h.attrs },
          el('strong', { class: 'sched-name' }, h.title), twoLineHeads ? el('br') : ' · ',
          el('span', { class: 'sched-sub' }, h.sub));
        head.style.top = `${scheds[s].headY}px`;  // a property: the CSP forbids style attributes
        headBox.append(head);
      });
    }
    buildOverview();
    zoom.attach(canvas, { plotLeft: left, plotWidth: plotW, viewBoxWidth: width, wheelNeedsFocus: true,
      shouldPan: (ev) => !ev.shiftKey && !inAxis(ev) });
    render();
  }

  let frame = 0;
  function schedule() {
    if (frame) return;
    frame = requestAnimationFrame(() => { frame = 0; render(); });
  }

  // --- The overview strip: busy share per pixel column over the whole domain, once per layout -----
  let overviewImage = null;
  function buildOverview() {
    const r = dpr();
    const bins = Math.max(1, Math.round(plotW));
    const rowH = (OVERVIEW_H - 4) / scheds.length;
    const c = document.createElement('canvas');
    c.width = overview.width; c.height = overview.height;
    const g = c.getContext('2d');
    g.scale(r, r);
    g.fillStyle = '#fafafa'; g.fillRect(0, 0, width, OVERVIEW_H);
    const dt = domainEnd / bins;
    scheds.forEach((sc, s) => {
      const busy = new Float64Array(bins);
      for (let li = sc.firstLane; li < sc.firstLane + sc.nLanes; li++) for (const k of lanes[li].idx) {
        if (M.overviewSkip && M.overviewSkip(k)) continue;
        const a = A.start[k], b = A.end[k];
        let i = Math.min(bins - 1, Math.floor(a / dt));
        const j = Math.min(bins - 1, Math.floor(b / dt));
        if (i === j) { busy[i] += b - a; continue; }
        busy[i] += (i + 1) * dt - a;
        for (i += 1; i < j; i++) busy[i] += dt;
        busy[j] += b - j * dt;
      }
      const y = 2 + s * rowH;
      for (let i = 0; i < bins; i++) {
        const f = Math.min(1, busy[i] / (dt * sc.busyLanes));
        if (f <= 0) continue;
        // Darker is busier: from the idle grey to the ink.
        const v = Math.round(225 - 180 * f);
        g.fillStyle = `rgb(${v},${v},${Math.min(255, v + 20)})`;
        g.fillRect(left + i, y, 1, rowH - 1);
      }
    });
    overviewImage = c;
  }
  function drawOverview() {
    const r = dpr();
    octx.setTransform(1, 0, 0, 1, 0, 0);
    octx.clearRect(0, 0, overview.width, overview.height);
    if (overviewImage) octx.drawImage(overviewImage, 0, 0);
    octx.setTransform(r, 0, 0, r, 0, 0);
    const a = left + (v0 / domainEnd) * plotW, b = left + (v1 / domainEnd) * plotW;
    octx.fillStyle = 'rgba(255,255,255,0.55)';
    octx.fillRect(left, 0, Math.max(0, a - left), OVERVIEW_H);
    octx.fillRect(b, 0, Math.max(0, left + plotW - b), OVERVIEW_H);
    octx.strokeStyle = INK; octx.lineWidth = 2;
    octx.strokeRect(a, 1, Math.max(2, b - a), OVERVIEW_H - 2);
    if (matches.length && matches.length <= 5000) {
      octx.fillStyle = '#b3001b';
      for (const k of matches) octx.fillRect(left + (A.start[k] / domainEnd) * plotW, 0, 1, 5);
    }
    octx.fillStyle = '#444';
    octx.font = '11px system-ui, sans-serif';
    octx.textBaseline = 'middle';
    octx.fillText('overview', 2, OVERVIEW_H / 2);
  }

  // --- A frame -------------------------------------------------------------------------------------
  function lowerBoundEnd(ln, t) {  // first position whose running end max is > t
    let lo = 0, hi = ln.idx.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (ln.me[mid] <= t) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function upperBoundStart(ln, t, from = 0) {  // first position whose start is > t
    let lo = from, hi = ln.idx.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (ln.st[mid] <= t) lo = mid + 1; else hi = mid; }
    return lo;
  }

  function render() {
    const began = performance.now();
    ({ t0: v0, t1: v1 } = zoom.view);
    const r = dpr();
    ctx.setTransform(r, 0, 0, r, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const active = hovered >= 0 ? hovered : pinned;
    const following = active >= 0;
    const clipX = (t) => Math.min(Math.max(x(t), left - 2), left + plotW + 2);

    // Lane labels, then the plot clipped to its box.
    ctx.fillStyle = INK;
    ctx.font = `${lane >= 20 && !M.smallLabels ? 14 : 12}px system-ui, sans-serif`;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    const labelEvery = Math.max(1, Math.ceil(14 / (Math.min(...laneH) + gap)));
    for (const sc of scheds) {
      for (let i = sc.firstLane; i < sc.firstLane + sc.nLanes; i++) {
        if ((i - sc.firstLane) % labelEvery === 0) ctx.fillText(lanes[i].label, left - 6, laneY[i] + laneH[i] / 2);
      }
    }
    // Bands behind the lanes (a trace's step windows), named above the first lane.
    if (M.bands) {
      ctx.textAlign = 'left';
      M.bands.forEach((bd, q) => {
        if (bd.t1 < v0 || bd.t0 > v1) return;
        const a = clipX(bd.t0), b = clipX(bd.t1);
        ctx.fillStyle = q % 2 ? '#f5f0e6' : '#eef4f8';
        ctx.fillRect(a, top - 4, Math.max(b - a, 0.5), height - axis - top + 4);
        ctx.fillStyle = '#333';
        if (b - a > bd.label.length * 7 + 6) ctx.fillText(bd.label, Math.max(a, left) + 4, top - 12);
      });
    }
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, 0, plotW, height - axis + 2);
    ctx.clip();
    ctx.fillStyle = idleFill;
    for (const sc of scheds) {
      if (sc.idleTo == null) continue;
      const xs = clipX(0), xe = clipX(sc.idleTo);
      if (xe > xs) for (let q = 0; q < sc.nLanes; q++) ctx.fillRect(xs, laneY[sc.firstLane + q], xe - xs, laneH[sc.firstLane + q]);
    }

    // Visible actions: per lane, from the first that ends after v0 to the last that starts before v1.
    let visible = 0;
    const firsts = lanes.map((ln) => {
      const i0 = lowerBoundEnd(ln, v0);
      const i1 = upperBoundStart(ln, v1, i0);
      visible += Math.max(0, i1 - i0);
      return [i0, i1];
    });
    const dense = visible > DENSE;
    drawnN = 0;
    let runs = 0, drawnCount = 0, labels = 0;
    const labelled = [];
    // Rectangles gathered per fill (type x faded, the later-chunk band, the grey runs) and drawn
    // as one path each: one fillStyle change per fill instead of one per block.
    for (const b of buckets) b.length = 0;
    lanes.forEach((ln, li) => {
      const y = laneY[li];
      const lh = laneH[li];
      const bandH = Math.round(lh * 0.28);
      const canLabel = lh >= 18;
      let [i, i1] = firsts[li];
      while (i < i1) {
        const k = ln.idx[i];
        const bx = clipX(A.start[k]);
        const bw = Math.max(clipX(A.end[k]) - bx, 0.5);
        if (!dense || bw >= DENSE_PX) {
          const faded = following && M.related && !M.related(k, active) ? 1 : 0;
          // A block 3 px or wider leaves its last pixel white, so neighbours stay apart.
          buckets[M.fill[k] * 2 + faded].push(bx, y, bw >= 3 ? bw - 1 : bw, lh);
          // The later chunk's band: striped (a pattern fill, slower) once the block is wide
          // enough to show stripes, a plain dark band below that.
          if (M.band && M.band[k]) buckets[2 * P + (bw >= 12 ? 0 : 4) + faded].push(bx, y + lh - bandH, bw, bandH);
          let hasLabel = false;
          if (canLabel && bw >= 24 && M.textOn[M.fill[k]]) {
            let label = labelOf(k);
            if (bw < label.length * M.labelCharPx + 6 && M.cutLabels) {
              const chars = Math.floor((bw - 6) / M.labelCharPx);
              label = chars >= 4 ? `${label.slice(0, chars - 1)}…` : '';
            }
            if (label && bw >= label.length * M.labelCharPx + 6) {
              labelled.push(k, bx + bw / 2, y + (M.band && M.band[k] ? lh * 0.36 : lh / 2), faded, label);
              hasLabel = true; labels++;
            }
          }
          if (drawnN < KEEP_DRAWN) {
            drawnK[drawnN] = k; drawnX[drawnN] = bx; drawnY[drawnN] = y; drawnW[drawnN] = bw; drawnL[drawnN] = hasLabel ? 1 : 0;
            drawnN++;
          }
          drawnCount++;
          i++;
          continue;
        }
        // A run of narrow blocks: skip pixel by pixel (binary search) to where the run ends.
        const rx0 = bx;
        let rx1 = bx + bw;
        i++;
        while (i < i1) {
          const j = upperBoundStart(ln, tOf(rx1 + 1), i);  // everything starting before the next pixel joins
          if (j > i) {
            rx1 = Math.max(rx1, clipX(ln.me[j - 1]));
            i = j;
            continue;
          }
          // The next block starts more than a pixel later: a gap, or a wide block.
          break;
        }
        buckets[2 * P + 2 + (following ? 1 : 0)].push(rx0, y, Math.max(rx1 - rx0, 0.5), lh);
        runs++;
      }
    });
    buckets.forEach((b, q) => {
      if (!b.length) return;
      ctx.globalAlpha = q % 2 ? 0.22 : 1;
      const e = q - 2 * P;
      ctx.fillStyle = e < 0 ? (M.palette[q >> 1] === 'idle' ? idleFill : M.palette[q >> 1]) : e < 2 ? chunkFill : e < 4 ? RUN_FILL : 'rgba(0,0,0,0.45)';
      ctx.beginPath();
      for (let r = 0; r < b.length; r += 4) ctx.rect(b[r], b[r + 1], b[r + 2], b[r + 3]);
      ctx.fill();
    });
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    ctx.font = M.labelFont;
    ctx.globalAlpha = 1;
    for (let q = 0; q < labelled.length; q += 5) {
      const k = labelled[q];
      ctx.globalAlpha = labelled[q + 3] ? 0.35 : 1;
      ctx.fillStyle = M.textOn[M.fill[k]] || '#000';
      ctx.fillText(labelled[q + 4], labelled[q + 1], labelled[q + 2]);
    }
    ctx.globalAlpha = 1;

    // Search matches that are drawn: an outline.
    if (matchSet) {
      ctx.strokeStyle = '#b3001b'; ctx.lineWidth = 2;
      for (let q = 0; q < drawnN; q++) {
        if (matchSet.has(drawnK[q])) ctx.strokeRect(drawnX[q] + 1, drawnY[q] + 1, Math.max(drawnW[q] - 2, 1), laneH[laneOf(drawnK[q])] - 2);
      }
    }
    // End markers of stacked schedules.
    if (M.endMarks) {
      ctx.strokeStyle = INK; ctx.lineWidth = 2; ctx.setLineDash([6, 4]);
      for (const sc of scheds) {
        const m = sc.end;
        if (m < v0 || m > v1) continue;
        ctx.beginPath(); ctx.moveTo(x(m), laneY[sc.firstLane] - 4); ctx.lineTo(x(m), sc.bottom + 4); ctx.stroke();
      }
      ctx.setLineDash([]);
    }
    // Send/recv arrows between ranks for the drawn blocks.
    if (flowsBox.checked && drawnCount <= FLOWS_MAX) {
      ctx.strokeStyle = 'rgba(0,0,0,0.55)'; ctx.fillStyle = 'rgba(0,0,0,0.55)'; ctx.lineWidth = 1;
      for (let q = 0; q < drawnN; q++) {
        const k = drawnK[q];
        for (let e = depOff[k]; e < depOff[k + 1]; e++) {
          const d = deps[e];
          if (laneOf(d) !== laneOf(k)) arrow(x(A.end[d]), mid(laneOf(d)), x(A.start[k]), mid(laneOf(k)), 4);
        }
      }
    }
    // Arrows the model gives between lanes (a trace's send -> recv): those crossing the window.
    if (flowsBox.checked && M.links) {
      const L = M.links;
      ctx.strokeStyle = 'rgba(0,0,0,0.6)'; ctx.fillStyle = 'rgba(0,0,0,0.6)'; ctx.lineWidth = 1;
      let shown = 0;
      for (let q = 0; q < L.n && shown < FLOWS_MAX; q++) {
        if (Math.max(L.fromT[q], L.toT[q]) < v0 || Math.min(L.fromT[q], L.toT[q]) > v1) continue;
        arrow(x(L.fromT[q]), mid(L.fromLane[q]), x(L.toT[q]), mid(L.toLane[q]), 4);
        shown++;
      }
      canvas.dataset.links = String(shown);
    }
    // The selected range.
    if (sel) {
      const a = x(sel.t0), b = x(sel.t1);
      ctx.fillStyle = 'rgba(0, 90, 181, 0.14)';
      ctx.fillRect(a, 0, b - a, height - axis);
      ctx.strokeStyle = '#005ab5'; ctx.lineWidth = 1.5;
      ctx.beginPath(); ctx.moveTo(a, 0); ctx.lineTo(a, height - axis); ctx.moveTo(b, 0); ctx.lineTo(b, height - axis); ctx.stroke();
    }
    // The active block: its dependencies (the one it waited on thick) and a frame around it.
    if (active >= 0) {
      const { waited } = waitedOn(active);
      const ay = mid(laneOf(active));
      for (let q = depOff[active]; q < depOff[active + 1]; q++) {
        const d = deps[q];
        ctx.strokeStyle = d === waited ? '#000' : '#555';
        ctx.lineWidth = d === waited ? 3.5 : 2;
        ctx.setLineDash(d === waited ? [] : [5, 4]);
        ctx.beginPath(); ctx.moveTo(x(A.end[d]), mid(laneOf(d))); ctx.lineTo(x(A.start[active]), ay); ctx.stroke();
        ctx.setLineDash([]);
        ctx.fillStyle = '#000';
        ctx.beginPath(); ctx.arc(x(A.start[active]), ay, 5, 0, 2 * Math.PI); ctx.fill();
      }
      ctx.strokeStyle = '#000'; ctx.lineWidth = 3;
      ctx.strokeRect(x(A.start[active]) - 2, laneY[laneOf(active)] - 2, Math.max(x(A.end[active]) - x(A.start[active]), 0.5) + 4, laneH[laneOf(active)] + 4);
    }
    if (pinned >= 0 && pinned !== active) {
      ctx.strokeStyle = '#000'; ctx.lineWidth = 3;
      ctx.strokeRect(x(A.start[pinned]), laneY[laneOf(pinned)], Math.max(x(A.end[pinned]) - x(A.start[pinned]), 0.5), laneH[laneOf(pinned)]);
    }
    ctx.restore();

    // Axis: ticks at round steps of the visible span.
    const step = niceStep((v1 - v0) / Math.max(3, Math.round(plotW / 100)));
    const axisY = height - axis + 4;
    ctx.strokeStyle = '#333'; ctx.lineWidth = 1; ctx.fillStyle = INK;
    ctx.font = '13px system-ui, sans-serif';
    ctx.textAlign = 'center'; ctx.textBaseline = 'alphabetic';
    ticks = [];
    for (let t = Math.ceil(v0 / step - 1e-9) * step; t <= v1 + step * 1e-9; t += step) {
      const tx = x(t);
      ctx.beginPath(); ctx.moveTo(tx, axisY); ctx.lineTo(tx, axisY + 6); ctx.stroke();
      const text = M.tickText ? M.tickText(t, step) : fmtNum(Number(t.toPrecision(10)));
      ctx.fillText(text, Math.min(Math.max(tx, left + 10), width - 10), axisY + 22);
      ticks.push(Number(t.toPrecision(10)));
    }
    ctx.textAlign = 'right';
    const title = (runs ? 'grey: blocks too narrow to draw apart, zoom in · ' : '') +
      (zoom.zoomed ? `time (${M.axisUnit}), ${fmtNum(Number(v0.toPrecision(6)))}–${fmtNum(Number(v1.toPrecision(6)))} shown; 0 resets` : `time (${M.axisUnit})`);
    ctx.fillText(title, left + plotW, axisY + 40);
    axisTitle = title;

    drawOverview();
    const ds = canvas.dataset;
    ds.t0 = String(v0); ds.t1 = String(v1); ds.zoomed = String(zoom.zoomed);
    ds.visible = String(visible); ds.runs = String(runs); ds.drawn = String(drawnCount); ds.labels = String(labels);
    ds.pinned = String(pinned);
    canvas.classList.toggle('following', following);
    if (!tip.hidden) showTip();
    lastRenderMs = performance.now() - began;
    ds.frameMs = lastRenderMs.toFixed(2);
  }
  let axisTitle = '';

  const mid = (li) => laneY[li] + laneH[li] / 2;
  function arrow(x0, y0, x1, y1, head) {
    ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
    const a = Math.atan2(y1 - y0, x1 - x0);
    ctx.beginPath();
    ctx.moveTo(x1, y1);
    ctx.lineTo(x1 - head * 2 * Math.cos(a - 0.45), y1 - head * 2 * Math.sin(a - 0.45));
    ctx.lineTo(x1 - head * 2 * Math.cos(a + 0.45), y1 - head * 2 * Math.sin(a + 0.45));
    ctx.closePath(); ctx.fill();
  }

  function say() {
    const k = hovered >= 0 ? hovered : pinned;
    const text = k < 0
      ? M.idleHint
      : M.sentence(k, posInLane);
    if (info && info.textContent !== text) info.textContent = text;
  }

  // The tooltip: at the pointer for the pointed block, under the block for a pinned one.
  function showTip() {
    const k = hovered >= 0 ? hovered : pinned;
    if (k < 0) { tip.hidden = true; return; }
    const isPinned = hovered < 0 || hovered === pinned;
    clear(tip);
    const lines = M.tip(k);
    tip.append(el('strong', {}, lines[0]), ...lines.slice(1).map((t) => el('span', {}, t)));
    if (isPinned && pinned >= 0) tip.append(el('em', {}, 'Pinned (details below): Escape or a click elsewhere unpins.'));
    tip.classList.toggle('pinned', isPinned && pinned >= 0);
    tip.dataset.index = String(k);
    tip.hidden = false;
    const hb = host.getBoundingClientRect();
    const cb = canvas.getBoundingClientRect();
    let px, py;
    if (hovered >= 0 && tipAt) {
      px = tipAt.x - hb.left + 14; py = tipAt.y - hb.top + 18;
    } else {
      const bx = Math.max(x(A.start[k]), left), bw = Math.min(x(A.end[k]), left + plotW) - bx;
      px = cb.left - hb.left + bx + Math.min(Math.max(bw, 0) / 2, 40);
      py = cb.top - hb.top + laneY[laneOf(k)] + laneH[laneOf(k)] + 6;
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
    say(); showTip(); schedule();
  }
  function pin(k) {
    pinned = k;
    if (k >= 0) lastPinned = k;
    canvas.dataset.pinned = String(pinned);
    say(); showTip(); schedule();
  }
  function firstVisible() {
    for (const ln of lanes) { const i = lowerBoundEnd(ln, zoom.view.t0); if (i < ln.idx.length) return ln.idx[i]; }
    return N ? 0 : -1;
  }
  // Keeps a block in the window: pans to it, and zooms in when it would be under two pixels wide.
  function reveal(k) {
    const { t0, t1 } = zoom.view;
    let span = t1 - t0;
    const dur = A.end[k] - A.start[k];
    if (dur > 0 && (dur / span) * plotW < 2) span = Math.min(domainEnd, dur * 40);
    if (A.start[k] < t0 || A.end[k] > t1 || span !== t1 - t0) {
      const mid = (A.start[k] + A.end[k]) / 2;
      zoom.set(mid - span / 2, mid + span / 2);
      render();
    }
  }

  // --- Hit testing ---------------------------------------------------------------------------------
  // The block at a client position: the one under it, else the nearest within 3 px on that lane.
  function hitAt(clientX, clientY) {
    const b = canvas.getBoundingClientRect();
    const lx = ((clientX - b.left) / b.width) * width, ly = ((clientY - b.top) / b.height) * height;
    if (lx < left || lx > left + plotW) return -1;
    let li = -1;
    for (let i = 0; i < laneY.length; i++) if (ly >= laneY[i] && ly < laneY[i] + laneH[i]) { li = i; break; }
    if (li < 0) return -1;
    const ln = lanes[li];
    const t = tOf(lx), tol = 3 * (v1 - v0) / plotW;
    let best = -1, bestD = Infinity;
    for (let i = lowerBoundEnd(ln, t - tol); i < ln.idx.length && ln.st[i] <= t + tol; i++) {
      const k = ln.idx[i];
      const d = t < A.start[k] ? A.start[k] - t : t > A.end[k] ? t - A.end[k] : 0;
      if (d < bestD || (d === 0 && bestD === 0 && A.end[k] - A.start[k] < A.end[best] - A.start[best])) { best = k; bestD = d; }
    }
    return best;
  }
  const inAxis = (ev) => {
    const b = canvas.getBoundingClientRect();
    return ((ev.clientY - b.top) / b.height) * height > height - axis;
  };

  // --- Range selection: busy and idle time inside [t0, t1] -----------------------------------------
  // Calls add(k, overlap) for every item of lanes [l0, l1) overlapping [a, b).
  function busyIn(l0, l1, a, b, add) {
    for (let li = l0; li < l1; li++) {
      const ln = lanes[li];
      for (let i = lowerBoundEnd(ln, a); i < ln.idx.length && ln.st[i] < b; i++) {
        const k = ln.idx[i];
        const d = Math.min(A.end[k], b) - Math.max(A.start[k], a);
        if (d > 0) add(k, d);
      }
    }
  }
  const totals = (t0, t1) => M.totals(t0, t1, busyIn);
  function setSelection(t0, t1) {
    if (t1 < t0) [t0, t1] = [t1, t0];
    if (!(t1 > t0)) { sel = null; selNote.hidden = true; canvas.dataset.selection = ''; schedule(); return; }
    sel = { t0, t1, totals: totals(t0, t1) };
    const n = (v) => fmtNum(Number(v.toPrecision(4)));
    clear(selNote).append(el('strong', {}, `Selected ${n(t0)}–${n(t1)} ${M.axisUnit} (${n(t1 - t0)} ${M.axisUnit}): `),
      M.totalsText(sel.totals, n),
      ' ', el('button', { type: 'button', class: 'link tl-zoom-sel' }, 'zoom to it'),
      ' ', el('button', { type: 'button', class: 'link tl-clear-sel' }, 'clear'));
    selNote.querySelector('.tl-zoom-sel').addEventListener('click', () => { zoom.set(sel.t0, sel.t1); });
    selNote.querySelector('.tl-clear-sel').addEventListener('click', () => setSelection(0, 0));
    selNote.hidden = false;
    canvas.dataset.selection = `${t0},${t1}`;
    schedule();
  }

  // --- Search ------------------------------------------------------------------------------------
  let queried = '';
  function search(q) {
    q = q.trim();
    queried = q;
    matches = q ? M.match(q) : [];
    matchAt = -1;
    matches.sort((i, j) => A.start[i] - A.start[j] || laneOf(i) - laneOf(j));
    matchSet = matches.length && matches.length <= 200000 ? new Set(matches) : null;
    found.textContent = q ? (matches.length ? `${matches.length} found` : 'none found') : '';
    searchBox.setAttribute('aria-invalid', String(Boolean(q) && !matches.length));
    schedule();
  }
  function step(dir) {
    if (!matches.length) return;
    if (matchAt < 0) {
      // From the pinned block (or the window's start) onward.
      const from = pinned >= 0 ? A.start[pinned] : zoom.view.t0;
      matchAt = matches.findIndex((k) => A.start[k] > from || (pinned < 0 && A.start[k] >= from));
      if (dir < 0) matchAt = (matchAt < 0 ? matches.length : matchAt) - 1;
      if (matchAt < 0) matchAt = dir > 0 ? 0 : matches.length - 1;
    } else {
      matchAt = (matchAt + dir + matches.length) % matches.length;
    }
    const k = matches[matchAt];
    hovered = -1;
    reveal(k);
    pin(k);
    found.textContent = `${matchAt + 1} of ${matches.length}`;
  }
  let searchTimer = 0;
  searchBox.addEventListener('input', () => { clearTimeout(searchTimer); searchTimer = setTimeout(() => search(searchBox.value), 150); });
  searchBox.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Enter') return;
    ev.preventDefault();
    clearTimeout(searchTimer);
    if (searchBox.value.trim() !== queried) search(searchBox.value);
    step(ev.shiftKey ? -1 : 1);
  });
  prevBtn.addEventListener('click', () => { if (searchBox.value.trim() !== queried) search(searchBox.value); step(-1); });
  nextBtn.addEventListener('click', () => { if (searchBox.value.trim() !== queried) search(searchBox.value); step(1); });
  flowsBox.addEventListener('change', () => schedule());

  // --- Pointer and keys ----------------------------------------------------------------------------
  canvas.addEventListener('pointermove', (ev) => {
    if (ev.pointerType === 'touch' || selecting) return;
    tipAt = { x: ev.clientX, y: ev.clientY };
    const k = hitAt(ev.clientX, ev.clientY);
    if (k !== hovered) hover(k); else if (k >= 0) showTip();
    canvas.style.cursor = k >= 0 ? 'pointer' : '';
  });
  canvas.addEventListener('pointerleave', () => { tipAt = null; hover(-1); });
  // Selecting: shift+drag anywhere, or a drag along the time axis.
  let selecting = null;
  canvas.addEventListener('pointerdown', (ev) => {
    pointerFocus = true;
    if (!(ev.shiftKey || inAxis(ev)) || (ev.pointerType === 'mouse' && ev.button !== 0)) return;
    const b = canvas.getBoundingClientRect();
    const t = Math.min(Math.max(tOf(((ev.clientX - b.left) / b.width) * width), v0), v1);
    selecting = { t0: t, moved: false };
    canvas.setPointerCapture?.(ev.pointerId);
  });
  canvas.addEventListener('pointermove', (ev) => {
    if (!selecting) return;
    const b = canvas.getBoundingClientRect();
    const t = Math.min(Math.max(tOf(((ev.clientX - b.left) / b.width) * width), v0), v1);
    selecting.moved = true;
    sel = { t0: Math.min(selecting.t0, t), t1: Math.max(selecting.t0, t) };
    schedule();
  });
  const endSelect = (ev) => {
    if (!selecting) return;
    const s = selecting;
    selecting = null;
    if (!s.moved) return;
    const b = canvas.getBoundingClientRect();
    const t = Math.min(Math.max(tOf(((ev.clientX - b.left) / b.width) * width), v0), v1);
    setSelection(s.t0, t);
    const swallow = (c) => { c.stopImmediatePropagation(); c.preventDefault(); };
    canvas.addEventListener('click', swallow, { capture: true, once: true });
    setTimeout(() => canvas.removeEventListener('click', swallow, { capture: true }), 0);
  };
  canvas.addEventListener('pointerup', endSelect);
  canvas.addEventListener('pointercancel', () => { selecting = null; });
  canvas.addEventListener('click', (ev) => {
    const k = hitAt(ev.clientX, ev.clientY);
    if (k < 0) { pin(-1); return; }
    if (ev.pointerType === 'touch' || ev.pointerType === 'pen') hovered = -1;
    pin(k === pinned && ev.pointerType !== 'touch' ? -1 : k);
  });
  canvas.addEventListener('blur', () => { pointerFocus = false; });
  canvas.addEventListener('focus', () => {
    // Keyboard focus starts on a block; focus from a click or a tap leaves that to the click.
    if (!pointerFocus && pinned < 0 && N) pin(lastPinned >= 0 ? lastPinned : firstVisible());
    pointerFocus = false;
  });
  canvas.addEventListener('keydown', (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === 'Escape') {
      if (pinned >= 0) { pin(-1); ev.preventDefault(); } else if (sel) { setSelection(0, 0); ev.preventDefault(); }
      return;
    }
    if (ev.key === '/') { ev.preventDefault(); searchBox.focus(); return; }
    const arrows = ['ArrowRight', 'ArrowLeft', 'ArrowDown', 'ArrowUp'];
    if (!arrows.includes(ev.key) && ev.key !== 'Enter') return;
    ev.preventDefault();
    if (pinned < 0) {
      const k = lastPinned >= 0 ? lastPinned : firstVisible();
      if (k >= 0) { reveal(k); pin(k); }
      return;
    }
    if (ev.key === 'Enter') return;
    const li = laneOf(pinned);
    const L = lanes[li].idx;
    const pos = posInLane[pinned];
    let next = pinned;
    if (ev.key === 'ArrowRight') next = L[Math.min(pos + 1, L.length - 1)];
    else if (ev.key === 'ArrowLeft') next = L[Math.max(pos - 1, 0)];
    else {
      const target = li + (ev.key === 'ArrowDown' ? 1 : -1);
      if (target >= 0 && target < lanes.length && lanes[target].idx.length) {
        // The block on that lane nearest in time.
        const ln = lanes[target];
        const i = Math.min(upperBoundStart(ln, A.start[pinned]), ln.idx.length - 1);
        next = ln.idx[i];
        if (i > 0 && Math.abs(ln.st[i - 1] - A.start[pinned]) <= Math.abs(ln.st[i] - A.start[pinned])) next = ln.idx[i - 1];
      }
    }
    reveal(next);
    pin(next);
  });
  // The overview: a press centres the window there, a drag moves it.
  let ovDown = false;
  const ovMove = (ev) => {
    const b = overview.getBoundingClientRect();
    const f = (((ev.clientX - b.left) / b.width) * width - left) / plotW;
    const { t0, t1 } = zoom.view;
    const span = t1 - t0, mid = Math.min(Math.max(f, 0), 1) * domainEnd;
    zoom.set(mid - span / 2, mid + span / 2);
  };
  overview.addEventListener('pointerdown', (ev) => { ovDown = true; overview.setPointerCapture?.(ev.pointerId); ovMove(ev); });
  overview.addEventListener('pointermove', (ev) => { if (ovDown) ovMove(ev); });
  overview.addEventListener('pointerup', () => { ovDown = false; });
  overview.addEventListener('dblclick', () => zoom.reset());

  // A click outside the timeline unpins; the drawing follows the width of its box.
  document.addEventListener('click', (ev) => {
    if (pinned >= 0 && !canvas.contains(ev.target) && !tip.contains(ev.target) && !bar.contains(ev.target)) pin(-1);
  }, { signal: abort.signal });
  let lastWidth = 0;
  const ro = typeof ResizeObserver === 'function' ? new ResizeObserver(() => {
    const w = Math.round(host.clientWidth);
    if (w && Math.abs(w - lastWidth) > 1) { lastWidth = w; build(); showTip(); }
  }) : null;
  lastWidth = Math.round(host.clientWidth);
  build();
  say();
  if (ro) ro.observe(host);

  // One microbatch flowing through the stages: its actions pinned one after another in time order
  // (schedule `s` of the stack). Returns false when the microbatch has no action.
  let playTimer = 0;
  function stop() {
    clearTimeout(playTimer);
    playTimer = 0;
    canvas.dataset.playing = 'false';
  }
  function play(mb, { s = 0, interval = 700, onEnd = () => {} } = {}) {
    stop();
    const steps = M.flow ? M.flow(mb, s) : [];
    if (!steps.length) return false;
    canvas.dataset.playing = 'true';
    let i = 0;
    const next = () => {
      hovered = -1;
      reveal(steps[i]);
      pin(steps[i]);
      i += 1;
      if (i < steps.length) playTimer = setTimeout(next, interval);
      else { stop(); onEnd(); }
    };
    next();
    return true;
  }

  // Client boxes of the blocks drawn individually in the last frame, with what each shows.
  function blocks(filter = {}) {
    const cb = canvas.getBoundingClientRect();
    const sx = cb.width / width, sy = cb.height / height;
    const out = [];
    for (let q = 0; q < drawnN; q++) {
      const k = drawnK[q], bx = drawnX[q], y = drawnY[q], bw = drawnW[q], labelled = drawnL[q] === 1;
      const b = { index: k, ...M.blockInfo(k), x: cb.left + bx * sx, y: cb.top + y * sy, width: bw * sx, height: laneH[laneOf(k)] * sy,
        fill: M.palette[M.fill[k]], label: labelled ? labelOf(k) : null, textFill: labelled ? M.textOn[M.fill[k]] : null };
      if (Object.entries(filter).every(([f, v]) => b[f] === v)) out.push(b);
    }
    return out;
  }

  const controller = {
    select: pin,
    play,
    stop,
    search(q) { searchBox.value = q; search(q); return matches.length; },
    next: () => step(1),
    previous: () => step(-1),
    selectRange: setSelection,
    selection: () => (sel && sel.totals ? { t0: sel.t0, t1: sel.t1, totals: sel.totals } : null),
    blocks,
    // The pointed (else pinned) block: how many drawn blocks its microbatch lights up, and the
    // dependency it waited on.
    active() {
      const k = hovered >= 0 ? hovered : pinned;
      if (k < 0) return null;
      let sameMb = 0;
      for (let q = 0; q < drawnN; q++) if (M.related && M.related(drawnK[q], k)) sameMb++;
      const { waited } = waitedOn(k);
      return { index: k, sameMb, waited, waitedName: waited >= 0 && M.short ? M.short(waited) : null };
    },
    ticks: () => ticks.slice(),
    axisTitle: () => axisTitle,
    hitAt,
    endMarks: () => scheds.map((sc) => ({ schedule: sc.data && sc.data.schedule, x: x(sc.end), plotLeft: left, plotWidth: plotW })),
    geometry: () => ({ left, plotWidth: plotW, width, height, lane }),
    lanes: () => lanes.map((l, i) => ({ label: l.label, kind: l.kind || 'rank', y: laneY[i], height: laneH[i] })),
    get flowsShown() { return flowsBox.checked; },
    showFlows(on) { flowsBox.checked = on; render(); return Number(canvas.dataset.links || 0); },
    get playing() { return playTimer !== 0; },
    get lastRenderMs() { return lastRenderMs; },
    count: N,
    zoom,
    redraw: render,
    get canvas() { return canvas; },
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
  items.push(el('li', {}, el('span', { class: 'swatch swatch-run', 'aria-hidden': 'true' }),
    'grey: blocks too narrow to draw apart (zoom in)'));
  return el('ul', { class: 'legend', 'aria-label': 'legend' }, items);
}
