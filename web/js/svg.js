// Small helpers for hand-drawn SVG.
export const SVG_NS = 'http://www.w3.org/2000/svg';

export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    node.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

// Okabe-Ito colours, as the engine's SVG uses them (src/render/timeline.h).
export const COLORS = { F: '#0072B2', B: '#D55E00', I: '#56B4E9', W: '#009E73', FB: '#CC79A7' };
// Text on each colour at WCAG AA (4.5:1 or more): white on #D55E00 is only 3.87:1, black 5.43:1.
export const TEXT_ON = { F: '#ffffff', B: '#000000', I: '#000000', W: '#000000', FB: '#000000' };
export const NAMES = {
  F: 'forward',
  B: 'full backward',
  I: 'input-gradient backward',
  W: 'weight-gradient backward',
  FB: 'overlapped forward + backward pair',
};

// A hatched-grey pattern for idle time, defined once per drawing.
export function idlePattern(id) {
  return svg(
    'pattern',
    { id, width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
    svg('rect', { width: 6, height: 6, fill: '#f1f1f1' }),
    svg('line', { x1: 0, y1: 0, x2: 0, y2: 6, stroke: '#bdbdbd', 'stroke-width': 2 }),
  );
}

// Round tick steps: 1, 2, 5 times a power of ten.
export function niceStep(raw) {
  if (!(raw > 0)) return 1;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const k of [1, 2, 5, 10]) if (raw <= k * mag) return k * mag;
  return 10 * mag;
}
