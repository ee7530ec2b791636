// The measurement page's trace view: what each rank's CPU threads and GPU streams ran, drawn from
// the analysis answer's `timeline` (src/trace/kernel_timeline.h, docs/measurement.md) by the same
// canvas component as the pipeline schedules (web/js/timeline.js, drawLanes): zoom and pan that
// keep the point under the pointer, the overview strip, search by kernel name, Shift+drag (or a
// drag along the axis) for a range's busy, idle and per-class kernel time, send -> recv arrows
// between ranks, a pinned block with its details.
//
// Per rank, top to bottom: one lane per CPU thread (the ProfilerStep and "PP:" annotations), one
// per GPU stream (kernels coloured by class: computation, communication, memory), and one for the
// time without computation that the pipeline view counts (pure idle hatched, waiting inside
// send/recv orange); the step windows as bands. Times on the axis are ms from the first window.
import { clear, el, pct } from './common.js';
import { drawLanes, makeLanes } from './timeline.js';

const CLASSES = ['computation', 'communication', 'memory'];
const GAP_KINDS = ['idle', 'p2p_wait'];
// Palette indexes: the three kernel classes, pure idle (hatched), p2p wait, CPU annotation.
const FILL_IDLE = 3, FILL_WAIT = 4, FILL_CPU = 5;
const PALETTE = ['#0072b2', '#d55e00', '#f0e442', 'idle', '#e69f00', '#cc79a7'];
// Label text at WCAG AA on each fill (white on #0072b2 5.1:1; black on the others); none on gaps.
const TEXT_ON = ['#ffffff', '#000000', '#000000', null, null, '#000000'];
const KIND_KERNEL = 0, KIND_GAP = 1, KIND_CPU = 2;

// Milliseconds with a precision that suits the visible span.
function msText(us, spanUs = us) {
  const ms = us / 1000;
  const digits = spanUs >= 1e5 ? 1 : spanUs >= 1e4 ? 2 : spanUs >= 1e3 ? 3 : spanUs >= 100 ? 4 : 5;
  return `${Number(ms.toFixed(digits))} ms`;
}

// The model drawLanes draws (see its contract in timeline.js). Item times are ms on the axis.
function traceModel(t, pipeline) {
  const word = pipeline ? 'bubble' : 'idle';
  let N = 0;
  for (const r of t.ranks) N += r.kernels.length + r.gaps.length + (r.cpu ? r.cpu.length : 0);
  const start = new Float64Array(N), end = new Float64Array(N), fill = new Uint8Array(N), kind = new Uint8Array(N);
  const rankOf = new Int32Array(N), name = new Int32Array(N), count = new Int32Array(N), weight = new Float64Array(N);
  const laneOf = new Int32Array(N), where = new Float64Array(N);  // stream or CPU thread id
  const per = [], laneMeta = [], groups = [];
  const streamLane = new Map();  // `${rank}/${stream}` -> lane
  let k = 0;
  const push = (li, kd, f, b, e, nm, cnt, w, at, ri) => {
    start[k] = b / 1000; end[k] = e / 1000; kind[k] = kd; fill[k] = f; name[k] = nm; count[k] = cnt;
    weight[k] = w; where[k] = at; rankOf[k] = ri; laneOf[k] = li; per[li].push(k); k++;
  };
  const newLane = (meta) => { per.push([]); laneMeta.push(meta); return per.length - 1; };
  t.ranks.forEach((r, ri) => {
    const firstLane = per.length;
    // CPU lanes: per thread, one per nesting depth (a PP: action inside its ProfilerStep goes on
    // the lane under the step's), as Perfetto stacks slices.
    const cpu = [...(r.cpu || [])].sort((a, b) => a[2] - b[2] || a[0] - b[0] || b[1] - a[1]);
    const tids = [...new Set(cpu.map((c) => c[2]))];
    const depthOf = new Map();
    for (let i = 0, open = [], tid = null; i < cpu.length; i++) {
      if (cpu[i][2] !== tid) { tid = cpu[i][2]; open = []; }
      while (open.length && open[open.length - 1] <= cpu[i][0]) open.pop();
      depthOf.set(cpu[i], open.length);
      open.push(cpu[i][1]);
    }
    const cpuLane = new Map();
    for (const [i, tid] of tids.entries()) {
      const depths = Math.max(...cpu.filter((c) => c[2] === tid).map((c) => depthOf.get(c))) + 1;
      for (let dpt = 0; dpt < depths; dpt++) {
        cpuLane.set(`${tid}/${dpt}`, newLane({ label: `r${r.rank} CPU${tids.length > 1 ? ` ${i + 1}` : ''}${dpt ? ` +${dpt}` : ''}`,
          scale: 0.8, kind: 'cpu', tid }));
      }
    }
    // A stream per lane; an answer without streams (an older server) gets one lane per class.
    const keyOf = (kn) => (kn.length > 6 ? kn[6] : `c${kn[2]}`);
    const keys = [...new Set(r.kernels.map(keyOf))].sort((a, b) => String(a).localeCompare(String(b), 'en', { numeric: true }));
    for (const key of keys) {
      const label = typeof key === 'number' ? `r${r.rank} s${key}` : `r${r.rank} ${['comp.', 'comm.', 'memory'][Number(key.slice(1))]}`;
      streamLane.set(`${r.rank}/${key}`, newLane({ label, kind: 'stream', stream: key }));
    }
    const gapLane = newLane({ label: `r${r.rank} ${word}`, scale: 0.6, kind: 'gap' });
    for (const c of cpu) push(cpuLane.get(`${c[2]}/${depthOf.get(c)}`), KIND_CPU, FILL_CPU, c[0], c[1], c[3], 1, c[1] - c[0], c[2], ri);
    for (const kn of r.kernels) push(streamLane.get(`${r.rank}/${keyOf(kn)}`), KIND_KERNEL, kn[2], kn[0], kn[1], kn[3], kn[4], kn[5], kn.length > 6 ? kn[6] : -1, ri);
    for (const g of r.gaps) push(gapLane, KIND_GAP, g[2] === 0 ? FILL_IDLE : FILL_WAIT, g[0], g[1], g[2], g[4], g[3], -1, ri);
    groups.push({ firstLane, nLanes: per.length - firstLane, idleTo: null, end: t.span_us / 1000, busyLanes: Math.max(1, keys.length) });
  });
  const lanes = makeLanes(per, start, end, (i) => laneMeta[i]);

  const links = { n: 0, fromLane: [], fromT: [], toLane: [], toT: [] };
  for (const f of t.flows || []) {
    const a = streamLane.get(`${f[0]}/${f[1]}`), b = streamLane.get(`${f[4]}/${f[5]}`);
    if (a === undefined || b === undefined) continue;
    links.fromLane.push(a); links.fromT.push(f[2] / 1000); links.toLane.push(b); links.toT.push(f[7] / 1000); links.n++;
  }

  const rank = (q) => t.ranks[rankOf[q]].rank;
  const gapText = (q) => (name[q] === 0 ? (pipeline ? 'bubble: pure idle' : 'idle') :
    (pipeline ? 'bubble: waiting inside send/recv' : 'waiting inside send/recv'));
  const label = (q) => (kind[q] === KIND_GAP ? gapText(q) : t.names[name[q]] ?? '');
  const us = (q) => [start[q] * 1000, end[q] * 1000];
  function tip(q) {
    const [b, e] = us(q);
    const lines = [`${label(q)} · rank ${rank(q)}`];
    if (kind[q] === KIND_GAP) {
      lines.push(name[q] === 0 ? 'No GPU event at all on this rank.' : 'Inside a send/recv kernel with no computation running: waiting for data.');
      if (count[q] > 1) lines.push(`${count[q]} gaps merged (the answer's resolution), ${msText(weight[q])} of it ${word}`);
    } else if (kind[q] === KIND_CPU) {
      lines.push(`CPU annotation on thread ${where[q]}`);
    } else {
      lines.push(`${CLASSES[fill[q]]}${where[q] >= 0 ? ` on stream ${where[q]}` : ''}` +
        `${count[q] > 1 ? `; ${count[q]} kernels merged, the longest named, busy ${msText(weight[q])}` : ''}`);
    }
    lines.push(`${msText(b, e - b)} – ${msText(e, e - b)} (${msText(e - b)})`);
    return lines;
  }
  // A range's totals over every rank: analysed time (inside the step windows), pure idle, waiting
  // inside send/recv, and kernel time per class (merged intervals count their busy time pro rata).
  function totals(t0, t1, busyIn) {
    const a = Math.max(t0, 0), b = Math.min(t1, t.span_us / 1000);
    let analysed = 0;
    for (const w of t.windows) analysed += Math.max(0, Math.min(b, w.end_us / 1000) - Math.max(a, w.begin_us / 1000));
    analysed *= t.ranks.length;
    const byClass = [0, 0, 0];
    let idle = 0, wait = 0;
    busyIn(0, lanes.length, a, b, (q, d) => {
      const share = end[q] > start[q] ? (weight[q] / 1000) / (end[q] - start[q]) : 1;
      if (kind[q] === KIND_KERNEL) byClass[fill[q]] += d * share;
      else if (kind[q] === KIND_GAP) { if (name[q] === 0) idle += d * share; else wait += d * share; }
    });
    return [{ analysed, busy: Math.max(0, analysed - idle), idle, wait, byClass }];
  }
  return {
    N, start, end, fill, laneOf, lanes, groups, palette: PALETTE, textOn: TEXT_ON,
    domainEnd: Math.max(t.span_us / 1000, 1e-6), headings: null, endMarks: false, groupGap: 6, smallLabels: true,
    left: (width) => (width < 480 ? 70 : 84),
    bands: t.windows.map((w) => ({ t0: w.begin_us / 1000, t1: w.end_us / 1000, label: w.step >= 0 ? `step ${w.step}` : 'analysed span' })),
    ariaLabel: `Per-rank timeline of CPU threads and GPU streams over ${t.windows.length} step window` +
      `${t.windows.length === 1 ? '' : 's'}, ${msText(t.span_us)}. W and S zoom, A and D pan, 0 resets; the arrow keys ` +
      'pin a block and move along and between lanes; Escape unpins. The pinned block is described below the drawing.',
    search: { placeholder: 'kernel name', aria: 'Find kernels and CPU annotations whose name contains this text' },
    flowsLabel: links.n ? ' send → recv arrows' : null,
    links: links.n ? links : null,
    idleHint: 'Nothing pinned: click or tap a block for its details.',
    label, labelFont: '12px system-ui, sans-serif', labelCharPx: 6.8, cutLabels: true,
    related: (q, active) => kind[q] === kind[active] && name[q] === name[active],
    match(text) {
      const needle = text.toLowerCase();
      const hit = new Uint8Array(t.names.length);
      t.names.forEach((nm, i) => { if (nm.toLowerCase().includes(needle)) hit[i] = 1; });
      const out = [];
      for (let q = 0; q < N; q++) if (kind[q] === KIND_GAP ? gapText(q).includes(needle) : hit[name[q]]) out.push(q);
      return out;
    },
    totals,
    totalsText([s], n) {
      const ms = (v) => `${n(v)} ms`;
      return `busy ${ms(s.busy)} of ${ms(s.analysed)} rank-time analysed (${pct(s.analysed ? s.busy / s.analysed : 0)}), ` +
        `pure idle ${ms(s.idle)}, waiting inside send/recv ${ms(s.wait)}; kernel time: ` +
        CLASSES.map((c, i) => `${c} ${ms(s.byClass[i])}`).join(', ');
    },
    tip,
    sentence: (q) => `${tip(q).join('. ')}.`,
    blockInfo: (q) => ({ rank: rank(q), lane: kind[q] === KIND_KERNEL ? CLASSES[fill[q]] : kind[q] === KIND_GAP ? 'gap' : 'cpu',
      kind: kind[q] === KIND_GAP ? GAP_KINDS[name[q]] : kind[q] === KIND_CPU ? 'cpu' : CLASSES[fill[q]],
      name: label(q), begin: start[q] * 1000, end: end[q] * 1000, count: count[q] }),
    overviewSkip: (q) => kind[q] !== KIND_KERNEL,
    axisUnit: 'ms',
  };
}

// `t`: the answer's timeline; `pipeline`: whether the traces are a pipeline (the gap lane says
// "bubble", else "idle"); `details`: a live region for the pointed or pinned block.
export function drawTraceView(host, t, { pipeline, details }) {
  if (host._timeline) host._timeline.destroy();
  clear(host);
  const toolbar = el('div', { class: 'tv-toolbar' },
    el('button', { type: 'button', class: 'tv-zoom-in', 'aria-label': 'Zoom in (W)' }, 'Zoom in'),
    el('button', { type: 'button', class: 'tv-zoom-out', 'aria-label': 'Zoom out (S)' }, 'Zoom out'),
    el('button', { type: 'button', class: 'tv-pan-left', 'aria-label': 'Pan left (A)' }, '←'),
    el('button', { type: 'button', class: 'tv-pan-right', 'aria-label': 'Pan right (D)' }, '→'),
    el('button', { type: 'button', class: 'tv-reset' }, 'Whole trace'));
  const inner = el('div', { class: 'tv-lanes' });
  host.append(toolbar, inner);
  const c = drawLanes(inner, details, traceModel(t, pipeline), { lane: 22, gap: 2 });
  toolbar.querySelector('.tv-zoom-in').addEventListener('click', () => c.zoom.zoomBy(2));
  toolbar.querySelector('.tv-zoom-out').addEventListener('click', () => c.zoom.zoomBy(0.5));
  toolbar.querySelector('.tv-pan-left').addEventListener('click', () => c.zoom.panBy(-0.25));
  toolbar.querySelector('.tv-pan-right').addEventListener('click', () => c.zoom.panBy(0.25));
  toolbar.querySelector('.tv-reset').addEventListener('click', () => c.zoom.reset());
  // The host answers as the pipeline view's does (tests, bench/web_timeline.mjs).
  host._timeline = c;
  return c;
}

// The legend of the trace view, worded for a pipeline ("bubble") or not ("idle").
export function traceLegend(host, pipeline, classesPresent, hasCpu = false) {
  clear(host);
  const item = (cls, text) => host.append(el('li', {}, el('span', { class: `swatch ${cls}`, 'aria-hidden': 'true' }), text));
  if (hasCpu) item('seg-cpu', 'CPU annotation (step, pipeline action)');
  if (classesPresent.has(0)) item('seg-compute', 'computation kernel');
  if (classesPresent.has(1)) item('seg-comm', 'communication kernel');
  if (classesPresent.has(2)) item('seg-memory', 'memory copy or set');
  item('swatch-idle', pipeline ? 'bubble: pure idle (no GPU event)' : 'idle (no GPU event)');
  item('seg-wait', pipeline ? 'bubble: waiting inside send/recv' : 'waiting inside send/recv');
  host.append(el('li', { class: 'legend-note' }, 'bands: the step windows measured; grey: kernels too narrow to draw apart (zoom in)'));
}

export { msText };
