// Bar and line charts drawn as SVG from engine numbers. Each is laid out at its host's width in
// CSS pixels (one user unit = one CSS pixel), so its text keeps the stylesheet's size (13-15 px) on
// a 390 px phone instead of being scaled down with a fixed viewBox; a narrow host gets narrower
// margins and fewer tick labels, not smaller type.
import { clear, el, fmtNum } from './common.js';

// The width to lay a chart out at: the host's, within [min, max]; `max` when not laid out yet.
export function hostWidth(host, min, max) {
  const w = Math.round(host.clientWidth || 0);
  return w > 0 ? Math.min(Math.max(w, min), max) : max;
}
import { idlePattern, niceStep, svg } from './svg.js';

// Horizontal bars: rows of {label, value}, value text at the end of each bar.
export function drawBars(host, rows, { unit = '', ariaLabel = '', highlight = -1 } = {}) {
  clear(host);
  const width = hostWidth(host, 280, 560);
  const left = width < 420 ? 70 : 90, right = width < 420 ? 80 : 110, rowH = 30;
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

// Okabe-Ito's eight colours with a dash pattern and a marker shape each, so lines differ in more
// than hue. Lines that coincide (GPipe and 1F1B have the same bubble) stay visible: the earlier a
// series is drawn, the wider its line and the larger its marker, so later ones nest inside it.
const SERIES = [
  ['#000000', ''], ['#E69F00', '8 4'], ['#56B4E9', '2 3'], ['#009E73', '10 3 2 3'],
  ['#F0E442', ''], ['#0072B2', '6 3'], ['#D55E00', '2 2'], ['#CC79A7', '12 4'],
];
const MARKERS = ['circle', 'square', 'diamond', 'triangle', 'down', 'plus', 'cross', 'star'];

function marker(kind, cx, cy, color, s = 5) {
  const line = { fill: color, stroke: '#000', 'stroke-width': 0.8 };
  const poly = (pts) => svg('polygon', { points: pts.map((p) => p.join(',')).join(' '), ...line });
  if (kind === 'square') return svg('rect', { x: cx - s, y: cy - s, width: 2 * s, height: 2 * s, ...line });
  if (kind === 'diamond') return poly([[cx, cy - s - 1], [cx + s + 1, cy], [cx, cy + s + 1], [cx - s - 1, cy]]);
  if (kind === 'triangle') return poly([[cx, cy - s - 1], [cx + s + 1, cy + s], [cx - s - 1, cy + s]]);
  if (kind === 'down') return poly([[cx, cy + s + 1], [cx + s + 1, cy - s], [cx - s - 1, cy - s]]);
  if (kind === 'plus' || kind === 'cross') {
    const t = s / 2.5;
    let pts = [[-t, -s], [t, -s], [t, -t], [s, -t], [s, t], [t, t], [t, s], [-t, s], [-t, t], [-s, t], [-s, -t], [-t, -t]];
    if (kind === 'cross') pts = pts.map(([a, b]) => [(a - b) * 0.7071, (a + b) * 0.7071]);
    return poly(pts.map(([a, b]) => [cx + a, cy + b]));
  }
  if (kind === 'star') {
    const pts = [];
    for (let i = 0; i < 10; i++) {
      const r = i % 2 ? s * 0.5 : s * 1.3, ang = -Math.PI / 2 + (i * Math.PI) / 5;
      pts.push([cx + r * Math.cos(ang), cy + r * Math.sin(ang)]);
    }
    return poly(pts);
  }
  return svg('circle', { cx, cy, r: s, ...line });
}

// Bubble fraction against microbatches (log2 x axis): one line per schedule, from the engine's
// sweep (bubble_vs_microbatches of /api/compare). `current` names the schedule drawn bold (and on
// top). The legend's buttons show or hide each series; what is hidden survives a redraw.
export function drawBubblePlot(host, sweep, names, { current = '', markM = 0 } = {}) {
  clear(host);
  const hidden = host._hidden || (host._hidden = new Set());
  const width = hostWidth(host, 300, 1000);
  const narrow = width < 600;
  const height = narrow ? 320 : 420, left = narrow ? 54 : 70, right = narrow ? 12 : 24, top = 16, bottom = 56;
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
  // Tick labels that would overlap (about 9 px a digit plus a gap) are left out, the last kept.
  let lastX = -Infinity;
  ms.forEach((m, k) => {
    const need = String(m).length * 9 + 10;
    const isLast = k === ms.length - 1;
    if (X(m) - lastX < need || (!isLast && X(ms[ms.length - 1]) - X(m) < need)) return;
    root.append(svg('text', { x: X(m), y: top + plotH + 22, 'text-anchor': 'middle', class: 'tick' }, m));
    lastX = X(m);
  });
  root.append(svg('text', { x: left + plotW / 2, y: height - 8, 'text-anchor': 'middle', class: 'axis-title' }, 'microbatches m (log scale)'));
  root.append(svg('text', { x: 16, y: top + plotH / 2, transform: `rotate(-90 16 ${top + plotH / 2})`, 'text-anchor': 'middle', class: 'axis-title' }, 'bubble (idle / P × makespan)'));
  if (markM) {
    root.append(svg('line', { x1: X(markM), x2: X(markM), y1: top, y2: top + plotH, class: 'mark-m' }));
    root.append(svg('text', { x: X(markM) + 4, y: top + 14, class: 'mark-m-label' }, `m = ${markM}`));
  }
  // Draw order: the current schedule last (on top); widths shrink along the order.
  const order = names.map((n, k) => k).sort((a, b) => (names[a] === current) - (names[b] === current));
  const style = (k, rank) => {
    const [color, dash] = SERIES[k % SERIES.length];
    return { color, dash, width: 2.5 + 0.7 * (names.length - 1 - rank), size: 4 + 0.6 * (names.length - 1 - rank) };
  };
  const groups = new Map();
  order.forEach((k, rank) => {
    const n = names[k];
    const st = style(k, rank);
    const g = svg('g', { class: 'series-g', 'data-series': n, display: hidden.has(n) ? 'none' : null });
    const pts = sweep.filter((p) => p.bubble_fraction[n] !== null).map((p) => [X(p.microbatches), Y(p.bubble_fraction[n])]);
    if (pts.length > 1) {
      g.append(svg('polyline', { points: pts.map((p) => p.join(',')).join(' '), fill: 'none', stroke: st.color,
        'stroke-width': n === current ? st.width + 2 : st.width, 'stroke-dasharray': st.dash || null, class: 'series' }));
    }
    for (const [cx, cy] of pts) g.append(marker(MARKERS[k % MARKERS.length], cx, cy, st.color, st.size));
    g.append(svg('title', {}, n));
    groups.set(n, g);
    root.append(g);
  });
  // The legend: a toggle button per series, with its line and marker.
  const items = names.map((n, k) => {
    const st = style(k, order.indexOf(k));
    const sample = svg('svg', { viewBox: '0 0 40 16', 'aria-hidden': 'true' },
      svg('line', { x1: 0, x2: 40, y1: 8, y2: 8, stroke: st.color, 'stroke-width': 3, 'stroke-dasharray': st.dash || null }),
      marker(MARKERS[k % MARKERS.length], 20, 8, st.color, 4.5));
    const b = el('button', { type: 'button', 'aria-pressed': String(!hidden.has(n)), 'data-series': n,
      class: n === current ? 'legend-bold' : null, title: `Show or hide ${n}` }, sample, n);
    b.addEventListener('click', () => {
      const show = hidden.has(n);
      if (show) hidden.delete(n); else hidden.add(n);
      b.setAttribute('aria-pressed', String(show));
      const g = groups.get(n);
      if (show) g.removeAttribute('display'); else g.setAttribute('display', 'none');
    });
    return el('li', {}, b);
  });
  host.append(el('ul', { class: 'series-toggle', 'aria-label': 'Series: press to show or hide' }, items));
  host.append(root);
  host.append(el('p', { class: 'caption' }, 'A schedule missing at some m cannot run there (e.g. 1F1B needs m ≥ P; DualPipeV m ≥ 2P). ' +
    'Where lines coincide (GPipe and 1F1B have the same bubble), the wider line and the larger marker lie beneath. ' +
    'The buttons above show or hide a series.'));
}

let stackUid = 0;

// Horizontal stacked bars from engine numbers: rows [{label, values: {key: number}, total, note}],
// parts [{key, label, color, hatched}]; `total` (the engine's) is written at the end of each bar.
// `marker` {value, label} draws a dashed limit line (usable memory). With `onSelect`, each bar is a
// button (click, Enter or Space) and `selected` is outlined.
export function drawStacked(host, rows, parts, { format = fmtNum, ariaLabel = '', marker = null, selected = -1,
  onSelect = null, labelWidth = 170, width: widthMax = 900, rowH = 40 } = {}) {
  clear(host);
  const width = hostWidth(host, 300, widthMax);
  const narrow = width < 600;
  const left = narrow ? Math.min(labelWidth, 96) : labelWidth, right = narrow ? 96 : 150, top = marker ? 26 : 6;
  const plotW = width - left - right;
  const max = Math.max(1e-12, ...rows.map((r) => r.total), marker ? marker.value : 0);
  const X = (v) => left + (v / max) * plotW;
  const height = top + rows.length * rowH + 6;
  const hatch = `hatch-${++stackUid}`;
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, class: 'stacked', role: onSelect ? 'group' : 'img', 'aria-label': ariaLabel });
  root.append(svg('defs', {}, idlePattern(hatch)));
  rows.forEach((r, k) => {
    const y = top + k * rowH;
    const g = svg('g', { class: k === selected ? 'stack-row selected' : 'stack-row', 'data-index': k });
    if (onSelect) {
      g.setAttribute('tabindex', '0');
      g.setAttribute('role', 'button');
      g.setAttribute('aria-label', `${r.label}: ${format(r.total)}${k === selected ? ' (selected)' : ''}`);
      g.addEventListener('click', () => onSelect(k));
      g.addEventListener('keydown', (ev) => {
        if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); onSelect(k); }
      });
    }
    g.append(svg('text', { x: left - 8, y: y + rowH / 2 + 5, 'text-anchor': 'end', class: 'stack-label' }, r.label));
    let acc = 0;
    for (const p of parts) {
      const v = r.values[p.key] || 0;
      if (v <= 0) continue;
      const x0 = X(acc), x1 = X(acc + v);
      g.append(svg('rect', { x: x0, y: y + 5, width: Math.max(x1 - x0, 0.5), height: rowH - 10,
        fill: p.hatched ? `url(#${hatch})` : p.color, stroke: p.hatched ? '#777' : '#fff', 'stroke-width': 1, 'data-part': p.key },
      svg('title', {}, `${p.label}: ${format(v)}`)));
      acc += v;
    }
    g.append(svg('text', { x: X(r.total) + 6, y: y + rowH / 2 + 5, class: 'bar-value' }, r.note || format(r.total)));
    if (k === selected) {
      g.append(svg('rect', { x: left - 3, y: y + 2, width: X(r.total) - left + 6, height: rowH - 4, class: 'stack-outline' }));
    }
    root.append(g);
  });
  if (marker) {
    root.append(svg('line', { x1: X(marker.value), x2: X(marker.value), y1: top - 6, y2: height, class: 'limit-line' }));
    root.append(svg('text', { x: X(marker.value), y: 14, 'text-anchor': 'middle', class: 'limit-label' }, marker.label));
  }
  host.append(root);
}

// A legend for stacked bars: each part with its value in the selected row.
export function stackedLegend(host, parts, values, format = fmtNum) {
  clear(host);
  const items = parts.map((p) => el('li', { 'data-part': p.key },
    el('span', { class: p.hatched ? 'swatch swatch-idle' : 'swatch', style: null, 'data-color': p.color, 'aria-hidden': 'true' }),
    `${p.label}: `, el('strong', {}, format(values[p.key] || 0))));
  const list = el('ul', { class: 'legend legend-columns', 'aria-label': 'legend' }, items);
  host.append(list);
  // Colours set as properties: the CSP forbids inline style attributes, not CSSOM.
  for (const sw of list.querySelectorAll('.swatch[data-color]')) {
    if (!sw.classList.contains('swatch-idle')) sw.style.background = sw.dataset.color;
  }
}
