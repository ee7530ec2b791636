// Bar and line charts drawn as SVG from engine numbers.
import { clear, el, fmtNum } from './common.js';
import { niceStep, svg } from './svg.js';

// Horizontal bars: rows of {label, value}, value text at the end of each bar.
export function drawBars(host, rows, { unit = '', ariaLabel = '', highlight = -1 } = {}) {
  clear(host);
  const left = 90, right = 110, rowH = 30, width = 560;
  const max = Math.max(1e-9, ...rows.map((r) => r.value));
  const plotW = width - left - right;
  const height = rows.length * rowH + 8;
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, class: 'bars', role: 'img', 'aria-label': ariaLabel });
  rows.forEach((r, k) => {
    const y = 4 + k * rowH;
    const w = (r.value / max) * plotW;
    root.append(svg('text', { x: left - 8, y: y + rowH / 2 + 5, 'text-anchor': 'end' }, r.label));
    root.append(svg('rect', { x: left, y: y + 4, width: Math.max(w, 1), height: rowH - 8,
      class: k === highlight ? 'bar bar-highlight' : 'bar' }));
    root.append(svg('text', { x: left + w + 6, y: y + rowH / 2 + 5, class: 'bar-value' }, `${fmtNum(r.value)}${typeof unit === 'function' ? unit(r.value) : unit}`));
  });
  host.append(root);
}

// Okabe-Ito's eight colours with a dash pattern each, so lines differ in more than hue.
const SERIES = [
  ['#000000', ''], ['#E69F00', '8 4'], ['#56B4E9', '2 3'], ['#009E73', '10 3 2 3'],
  ['#F0E442', ''], ['#0072B2', '6 3'], ['#D55E00', '2 2'], ['#CC79A7', '12 4'],
];
const MARKERS = ['circle', 'square', 'diamond', 'triangle', 'circle', 'square', 'diamond', 'triangle'];

function marker(kind, cx, cy, color) {
  const s = 5;
  if (kind === 'square') return svg('rect', { x: cx - s, y: cy - s, width: 2 * s, height: 2 * s, fill: color, stroke: '#000', 'stroke-width': 0.5 });
  if (kind === 'diamond') return svg('polygon', { points: `${cx},${cy - s - 1} ${cx + s + 1},${cy} ${cx},${cy + s + 1} ${cx - s - 1},${cy}`, fill: color, stroke: '#000', 'stroke-width': 0.5 });
  if (kind === 'triangle') return svg('polygon', { points: `${cx},${cy - s - 1} ${cx + s + 1},${cy + s} ${cx - s - 1},${cy + s}`, fill: color, stroke: '#000', 'stroke-width': 0.5 });
  return svg('circle', { cx, cy, r: s, fill: color, stroke: '#000', 'stroke-width': 0.5 });
}

// Bubble fraction against microbatches (log2 x axis): one line per schedule, from the engine's
// sweep (bubble_vs_microbatches of /api/compare). `current` names the schedule drawn bold.
export function drawBubblePlot(host, sweep, names, { current = '', markM = 0 } = {}) {
  clear(host);
  const width = 1000, height = 420, left = 70, right = 220, top = 16, bottom = 56;
  const plotW = width - left - right, plotH = height - top - bottom;
  const ms = sweep.map((p) => p.microbatches);
  const lx = (m) => Math.log2(m);
  const x0 = lx(Math.min(...ms)), x1 = Math.max(lx(Math.max(...ms)), x0 + 1);
  const X = (m) => left + ((lx(m) - x0) / (x1 - x0)) * plotW;
  let ymax = 0;
  for (const p of sweep) for (const n of names) { const v = p.bubble_fraction[n]; if (v !== null && v > ymax) ymax = v; }
  ymax = Math.max(0.05, Math.ceil(ymax * 10) / 10);
  const Y = (f) => top + plotH - (f / ymax) * plotH;
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, class: 'plot', role: 'img',
    'aria-label': 'Bubble fraction against the number of microbatches, one line per schedule' });
  const step = niceStep(ymax / 5);
  for (let f = 0; f <= ymax + 1e-9; f += step) {
    root.append(svg('line', { x1: left, x2: left + plotW, y1: Y(f), y2: Y(f), class: 'grid' }));
    root.append(svg('text', { x: left - 8, y: Y(f) + 5, 'text-anchor': 'end' }, `${Math.round(f * 100)}%`));
  }
  for (const m of ms) {
    root.append(svg('text', { x: X(m), y: top + plotH + 22, 'text-anchor': 'middle' }, m));
  }
  root.append(svg('text', { x: left + plotW / 2, y: height - 8, 'text-anchor': 'middle', class: 'axis-title' }, 'microbatches m (log scale)'));
  root.append(svg('text', { x: 16, y: top + plotH / 2, transform: `rotate(-90 16 ${top + plotH / 2})`, 'text-anchor': 'middle', class: 'axis-title' }, 'bubble (idle / P × makespan)'));
  if (markM) {
    root.append(svg('line', { x1: X(markM), x2: X(markM), y1: top, y2: top + plotH, class: 'mark-m' }));
    root.append(svg('text', { x: X(markM) + 4, y: top + 14, class: 'mark-m-label' }, `m = ${markM}`));
  }
  names.forEach((n, k) => {
    const [color, dash] = SERIES[k % SERIES.length];
    const pts = sweep.filter((p) => p.bubble_fraction[n] !== null).map((p) => [X(p.microbatches), Y(p.bubble_fraction[n])]);
    const bold = n === current;
    if (pts.length > 1) {
      root.append(svg('polyline', { points: pts.map((p) => p.join(',')).join(' '), fill: 'none', stroke: color,
        'stroke-width': bold ? 5 : 2.5, 'stroke-dasharray': dash || null, class: 'series' }));
    }
    for (const [cx, cy] of pts) root.append(marker(MARKERS[k], cx, cy, color));
    const ly = top + 10 + k * 26;
    root.append(svg('line', { x1: left + plotW + 20, x2: left + plotW + 56, y1: ly, y2: ly, stroke: color,
      'stroke-width': bold ? 5 : 2.5, 'stroke-dasharray': dash || null }));
    root.append(marker(MARKERS[k], left + plotW + 38, ly, color));
    root.append(svg('text', { x: left + plotW + 64, y: ly + 5, class: bold ? 'legend-bold' : '' }, n));
  });
  host.append(root);
  host.append(el('p', { class: 'caption' }, 'A schedule missing at some m cannot run there (e.g. 1F1B needs m ≥ P; DualPipeV m ≥ 2P).'));
}
