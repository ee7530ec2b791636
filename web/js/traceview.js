// The measurement page's trace view: a to-scale timeline per rank of what the GPUs ran, drawn from
// the analysis answer's `timeline` (src/trace/kernel_timeline.h, docs/measurement.md). One lane
// per kernel class (computation, communication, memory copies) and one for the time without
// computation that the pipeline view counts (pure idle hatched, waiting inside send/recv orange);
// the step windows as bands. Zoom and pan through zoom.js (wheel, pinch, drag, W/S/A/D, 0); kernel
// names appear once a block is wide enough; the pointer shows a tooltip, a click or a tap pins the
// block under it and its details, Escape unpins.
import { clear, el } from './common.js';
import { idlePattern, niceStep, svg } from './svg.js';
import { createZoom } from './zoom.js';

const CLASSES = ['computation', 'communication', 'memory'];
const GAP_KINDS = ['idle', 'p2p_wait'];
// The drawing's width in user units is the host's width in CSS pixels (at least 320), so text keeps
// its size on a phone; 1000 when the host is not laid out.
function geometry(host) {
  const width = Math.max(Math.round(host.clientWidth || 1000), 320);
  const plotLeft = width < 600 ? 64 : 96;
  return { plotLeft, plotWidth: width - plotLeft - 10, viewBoxWidth: width };
}
const LANE = 18, GAP_LANE = 12, RANK_PAD = 12, TOP = 26, AXIS = 34;
let uid = 0;

// Milliseconds with a precision that suits the visible span.
function msText(us, spanUs = us) {
  const ms = us / 1000;
  const digits = spanUs >= 1e5 ? 1 : spanUs >= 1e4 ? 2 : spanUs >= 1e3 ? 3 : spanUs >= 100 ? 4 : 5;
  return `${Number(ms.toFixed(digits))} ms`;
}

// `t`: the answer's timeline; `pipeline`: whether the traces are a pipeline (the wording of the
// gap lane: "bubble" or "idle"); `info`: an aria-live element for the pinned block's details.
export function drawTraceView(host, t, { pipeline, details }) {
  clear(host);
  host.classList.add('tl-host');
  const word = pipeline ? 'bubble' : 'idle';
  const GEOM = geometry(host);
  // Every interval once, flat: lane 0..2 = class, 3 = gaps.
  const items = [];
  const classes = new Set();
  for (const r of t.ranks) {
    for (const k of r.kernels) {
      classes.add(k[2]);
      items.push({ rank: r.rank, lane: k[2], b: k[0], e: k[1], name: t.names[k[3]] ?? '', count: k[4], busy: k[5] });
    }
    for (const g of r.gaps) items.push({ rank: r.rank, lane: 3, b: g[0], e: g[1], gap: GAP_KINDS[g[2]], us: g[3], count: g[4] });
  }
  const lanes = [0, 1, 2].filter((c) => classes.has(c));
  const rankH = lanes.length * LANE + GAP_LANE + 4 + RANK_PAD;
  const height = TOP + t.ranks.length * rankH + AXIS;
  const laneY = (rankIdx, lane) => TOP + rankIdx * rankH + (lane === 3 ? lanes.length * LANE + 4 : lanes.indexOf(lane) * LANE);
  const rankIndex = new Map(t.ranks.map((r, i) => [r.rank, i]));

  const toolbar = el('div', { class: 'tv-toolbar' },
    el('button', { type: 'button', class: 'tv-zoom-in', 'aria-label': 'Zoom in (W)' }, 'Zoom in'),
    el('button', { type: 'button', class: 'tv-zoom-out', 'aria-label': 'Zoom out (S)' }, 'Zoom out'),
    el('button', { type: 'button', class: 'tv-pan-left', 'aria-label': 'Pan left (A)' }, '←'),
    el('button', { type: 'button', class: 'tv-pan-right', 'aria-label': 'Pan right (D)' }, '→'),
    el('button', { type: 'button', class: 'tv-reset' }, 'Whole trace'),
    el('span', { class: 'tv-range', 'aria-live': 'off' }));
  const patternId = `tv-idle-${++uid}`, clip = `tv-clip-${uid}`;
  const root = svg('svg', {
    viewBox: `0 0 ${GEOM.viewBoxWidth} ${height}`, class: 'timeline trace-view', tabindex: 0,
    'data-plot-left': GEOM.plotLeft, 'data-plot-width': GEOM.plotWidth,
    role: 'group', 'aria-roledescription': 'timeline',
    'aria-label': `Per-rank GPU timeline over ${t.windows.length} step window${t.windows.length === 1 ? '' : 's'}, ` +
      `${msText(t.span_us)}. W and S zoom, A and D pan, 0 resets; the arrow keys pin a block and move along and ` +
      'between lanes; click a block for its details, Escape unpins.',
  });
  root.append(svg('defs', {}, idlePattern(patternId)));
  const layer = svg('g', { class: 'tv-layer' });
  root.append(layer);
  const tip = el('div', { class: 'tl-tip', hidden: true, role: 'tooltip' });
  host.append(toolbar, root, tip);

  let pinned = -1, hovered = -1, tipAt = null;
  const zoom = createZoom({ domain: [0, t.span_us > 0 ? t.span_us : 1], onChange: () => draw() });
  zoom.attach(root, GEOM);

  function x(tUs) {
    const { t0, t1 } = zoom.view;
    return GEOM.plotLeft + ((tUs - t0) / (t1 - t0)) * GEOM.plotWidth;
  }

  function label(it) {
    if (it.lane === 3) {
      return it.gap === 'idle' ? (pipeline ? 'bubble: pure idle' : 'idle') :
        (pipeline ? 'bubble: waiting inside send/recv' : 'waiting inside send/recv');
    }
    return it.name;
  }

  function draw() {
    const { t0, t1 } = zoom.view;
    const span = t1 - t0;
    root.dataset.t0 = String(t0);
    root.dataset.t1 = String(t1);
    toolbar.querySelector('.tv-range').textContent = `${msText(t0, span)} – ${msText(t1, span)} (${msText(span)} shown)`;
    clear(layer);
    const x0 = GEOM.plotLeft, x1 = GEOM.plotLeft + GEOM.plotWidth;
    layer.append(svg('clipPath', { id: clip }, svg('rect', { x: x0, y: 0, width: GEOM.plotWidth, height })));
    const body = svg('g', { 'clip-path': `url(#${clip})` });
    // Step windows: bands, with the step number on top.
    t.windows.forEach((w, k) => {
      if (w.end_us < t0 || w.begin_us > t1) return;
      const a = Math.max(x(w.begin_us), x0), b = Math.min(x(w.end_us), x1);
      body.append(svg('rect', { x: a, y: TOP - 6, width: Math.max(b - a, 0.5), height: height - TOP - AXIS + 6,
        class: `tv-window${k % 2 ? ' odd' : ''}`, 'data-step': w.step }));
      const name = w.step >= 0 ? `step ${w.step}` : 'analysed span';
      if (b - a > name.length * 7) body.append(svg('text', { x: a + 4, y: TOP - 10, class: 'tv-step' }, name));
    });
    // Rank labels and lane names.
    const short = ['', 'comm.', 'memory'];
    t.ranks.forEach((r, i) => {
      lanes.forEach((c, j) => {
        const text = j === 0 ? `rank ${r.rank}` : short[c];
        layer.append(svg('text', { x: 6, y: laneY(i, c) + 13, class: j === 0 ? 'lane-label' : 'tv-lane-name' }, text));
      });
      layer.append(svg('text', { x: 6, y: laneY(i, 3) + 10, class: 'tv-lane-name' }, word));
    });
    // Blocks: the visible ones; neighbours within one pixel of a lane are drawn as one.
    const pxUs = span / GEOM.plotWidth;
    const last = new Map();  // lane key -> the group drawn last
    for (let i = 0; i < items.length; i++) {
      const it = items[i];
      if (it.e < t0 || it.b > t1) continue;
      const key = `${it.rank}/${it.lane}/${it.gap || ''}`;
      const prev = last.get(key);
      if (prev && it.b - prev.e < pxUs && it.e - it.b < pxUs && prev.e - prev.b < 2 * pxUs) {
        prev.e = Math.max(prev.e, it.e);
        prev.n += it.count;
        if (it.e - it.b > items[prev.i].e - items[prev.i].b) prev.i = i;
        prev.rect.setAttribute('width', Math.max(x(prev.e) - x(prev.b), 1));
        prev.g.dataset.count = String(prev.n);
        prev.g.dataset.end = String(prev.e);
        prev.g.dataset.index = String(prev.i);
        continue;
      }
      const ri = rankIndex.get(it.rank);
      const y = laneY(ri, it.lane);
      const h = it.lane === 3 ? GAP_LANE : LANE - 3;
      const bx = x(it.b), w = Math.max(x(it.e) - bx, 1);
      const kind = it.lane === 3 ? it.gap : CLASSES[it.lane];
      const g = svg('g', { class: `block tv-${kind}${i === pinned ? ' pinned' : ''}`, 'data-index': i, 'data-rank': it.rank,
        'data-lane': it.lane === 3 ? 'gap' : CLASSES[it.lane], 'data-kind': kind, 'data-begin': it.b, 'data-end': it.e,
        'data-count': it.count });
      const rect = svg('rect', { x: bx, y, width: w, height: h, fill: it.gap === 'idle' ? `url(#${patternId})` : null });
      g.append(rect);
      const text = label(it);
      if (it.lane !== 3 && w > 40) {
        const chars = Math.floor((w - 6) / 6.6);
        const shown = text.length > chars ? `${text.slice(0, Math.max(chars - 1, 1))}…` : text;
        if (chars >= 4) g.append(svg('text', { x: bx + 3, y: y + h - 4, class: 'tv-label' }, shown));
      }
      body.append(g);
      last.set(key, { i, b: it.b, e: it.e, n: it.count, g, rect });
    }
    layer.append(body);
    // Axis: ms from the first window's start.
    const axisY = height - AXIS + 4;
    layer.append(svg('line', { x1: x0, x2: x1, y1: axisY, y2: axisY, class: 'tv-axis' }));
    const step = niceStep(span / 8);
    for (let v = Math.ceil(t0 / step) * step; v <= t1 + 1e-9; v += step) {
      const px = x(v);
      layer.append(svg('line', { x1: px, x2: px, y1: axisY, y2: axisY + 5, class: 'tv-axis' }));
      const anchor = px > x1 - 24 ? 'end' : px < x0 + 24 ? 'start' : 'middle';
      layer.append(svg('text', { x: px, y: axisY + 20, 'text-anchor': anchor, class: 'axis-tick' }, msText(v, step * 8)));
    }
    showTip();
  }

  function describe(k) {
    const it = items[k];
    const lines = [];
    if (it.lane === 3) {
      lines.push(`${label(it)} · rank ${it.rank}`);
      lines.push(it.gap === 'idle' ? 'No GPU event at all on this rank.' :
        'Inside a send/recv kernel with no computation running: waiting for data.');
      if (it.count > 1) lines.push(`${it.count} gaps merged (the answer's resolution), ${msText(it.us)} of it ${word}`);
    } else {
      lines.push(`${it.name} · rank ${it.rank}`);
      lines.push(`${CLASSES[it.lane]}${it.count > 1 ? `; ${it.count} kernels merged, the longest named, busy ${msText(it.busy)}` : ''}`);
    }
    lines.push(`${msText(it.b, it.e - it.b)} – ${msText(it.e, it.e - it.b)} (${msText(it.e - it.b)})`);
    return lines;
  }

  function showTip() {
    const k = hovered >= 0 ? hovered : pinned;
    for (const g of layer.querySelectorAll('.block.pinned')) g.classList.remove('pinned');
    if (pinned >= 0) layer.querySelector(`.block[data-index="${pinned}"]`)?.classList.add('pinned');
    root.dataset.pinned = String(pinned);
    if (k < 0) { tip.hidden = true; return; }
    const isPinned = k === pinned;
    const lines = describe(k);
    clear(tip).append(el('strong', {}, lines[0]), ...lines.slice(1).map((s) => el('span', {}, s)));
    if (isPinned) tip.append(el('em', {}, 'Pinned: Escape or a click on empty space unpins.'));
    tip.classList.toggle('pinned', isPinned);
    tip.dataset.index = String(k);
    tip.hidden = false;
    const hb = host.getBoundingClientRect();
    let px, py;
    const g = layer.querySelector(`.block[data-index="${k}"]`);
    if (hovered >= 0 && tipAt) {
      px = tipAt.x - hb.left + 14; py = tipAt.y - hb.top + 18;
    } else {
      const r = g ? g.getBoundingClientRect() : root.getBoundingClientRect();
      px = r.left - hb.left + Math.min(r.width / 2, 40); py = r.bottom - hb.top + 6;
    }
    const tw = tip.offsetWidth;
    if (px + tw > hb.width - 4) px = Math.max(4, px - tw - 28);
    tip.style.left = `${Math.max(0, px)}px`;
    tip.style.top = `${Math.max(0, py)}px`;
  }

  function pin(k) {
    pinned = k;
    hovered = -1;
    if (details) {
      clear(details);
      if (k >= 0) details.append(el('strong', {}, 'Pinned: '), describe(k).join('. '), '.');
      else details.append('Nothing pinned: click or tap a block for its details.');
    }
    showTip();
  }

  root.addEventListener('pointermove', (ev) => {
    if (ev.pointerType === 'touch') return;
    const g = ev.target.closest?.('.block');
    tipAt = { x: ev.clientX, y: ev.clientY };
    const k = g ? Number(g.dataset.index) : -1;
    if (k !== hovered || k >= 0) { hovered = k; showTip(); }
  });
  root.addEventListener('pointerleave', () => { hovered = -1; showTip(); });
  // zoom.js swallows the click that ends a drag only when it lands on a block (a capture
  // listener on the svg cannot stop the svg's own listeners), so a drag is recognised here too.
  let downAt = null;
  root.addEventListener('pointerdown', (ev) => { downAt = { x: ev.clientX, y: ev.clientY }; });
  root.addEventListener('click', (ev) => {
    if (downAt && Math.hypot(ev.clientX - downAt.x, ev.clientY - downAt.y) >= 5) return;
    const g = ev.target.closest?.('.block');
    const k = g ? Number(g.dataset.index) : -1;
    pin(k === pinned && k >= 0 ? -1 : k);
  });
  // The keyboard: Escape unpins; the arrows pin the next or previous block drawn in the pinned
  // block's lane (the first one in view when nothing is pinned), and the lane above or below.
  root.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && pinned >= 0) { pin(-1); ev.preventDefault(); return; }
    if (!['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown'].includes(ev.key)) return;
    ev.preventDefault();
    const drawn = [...layer.querySelectorAll('.block')];
    if (!drawn.length) return;
    const cur = drawn.find((g) => Number(g.dataset.index) === pinned);
    if (!cur) { pin(Number(drawn[0].dataset.index)); return; }
    const laneKey = (g) => `${g.dataset.rank}/${g.dataset.lane}`;
    let next = null;
    if (ev.key === 'ArrowLeft' || ev.key === 'ArrowRight') {
      const same = drawn.filter((g) => laneKey(g) === laneKey(cur));
      const at = same.indexOf(cur) + (ev.key === 'ArrowRight' ? 1 : -1);
      next = same[at] || null;
    } else {
      const keys = [...new Set(drawn.map(laneKey))];
      const want = keys[keys.indexOf(laneKey(cur)) + (ev.key === 'ArrowDown' ? 1 : -1)];
      const mid = (Number(cur.dataset.begin) + Number(cur.dataset.end)) / 2;
      let best = Infinity;
      for (const g of drawn) {
        if (laneKey(g) !== want) continue;
        const d = Math.abs((Number(g.dataset.begin) + Number(g.dataset.end)) / 2 - mid);
        if (d < best) { best = d; next = g; }
      }
    }
    if (next) pin(Number(next.dataset.index));
  });
  toolbar.querySelector('.tv-zoom-in').addEventListener('click', () => zoom.zoomBy(2));
  toolbar.querySelector('.tv-zoom-out').addEventListener('click', () => zoom.zoomBy(0.5));
  toolbar.querySelector('.tv-pan-left').addEventListener('click', () => zoom.panBy(-0.25));
  toolbar.querySelector('.tv-pan-right').addEventListener('click', () => zoom.panBy(0.25));
  toolbar.querySelector('.tv-reset').addEventListener('click', () => zoom.reset());
  draw();
  pin(-1);
  // For bench/web_timeline.mjs: the controller on the host, as the pipeline timeline has it.
  const controller = { zoom, pin, draw };
  host._traceview = controller;
  return controller;
}

// The legend of the trace view, worded for a pipeline ("bubble") or not ("idle").
export function traceLegend(host, pipeline, classesPresent) {
  clear(host);
  const item = (cls, text) => host.append(el('li', {}, el('span', { class: `swatch ${cls}`, 'aria-hidden': 'true' }), text));
  if (classesPresent.has(0)) item('seg-compute', 'computation kernel');
  if (classesPresent.has(1)) item('seg-comm', 'communication kernel');
  if (classesPresent.has(2)) item('seg-memory', 'memory copy or set');
  item('swatch-idle', pipeline ? 'bubble: pure idle (no GPU event)' : 'idle (no GPU event)');
  item('seg-wait', pipeline ? 'bubble: waiting inside send/recv' : 'waiting inside send/recv');
  host.append(el('li', { class: 'legend-note' }, 'bands: the step windows measured'));
}

export { msText };
