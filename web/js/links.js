// The link classes of the engine (cluster::LinkClass), each with an Okabe-Ito colour and a dash
// pattern so that they differ in more than hue, and the chip that names one in a table.
import { el } from './common.js';
import { svg } from './svg.js';

export const LINKS = {
  'nvlink-bridge': { color: '#56B4E9', dash: '', title: 'NVLink bridge (a GPU pair)' },
  'scale-up': { color: '#0072B2', dash: '', title: 'scale-up fabric inside a node (NVSwitch, mesh)' },
  pcie: { color: '#CC79A7', dash: '3 3', title: 'PCIe inside a node' },
  rail: { color: '#009E73', dash: '10 5', title: 'a network rail: NIC, one leaf switch, NIC' },
  spine: { color: '#D55E00', dash: '2 4', title: 'the spine: leaf, spine, leaf (another rail or SU)' },
  none: { color: '#888', dash: '', title: 'no communication' },
};

export function linkChip(link) {
  const L = LINKS[link] || LINKS.none;
  return el('span', { class: 'link-chip', 'data-link': link, title: L.title },
    svg('svg', { class: 'link-sample', viewBox: '0 0 28 10', 'aria-hidden': 'true' },
      svg('line', { x1: 1, x2: 27, y1: 5, y2: 5, stroke: L.color, 'stroke-width': 4, 'stroke-dasharray': L.dash || null })),
    link);
}

