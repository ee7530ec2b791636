// Lab 08, topology and communication. The engine computes everything (GET /api/topology with the
// per-GPU drawing, /api/comm-plan, /api/comm, /api/presets); this file reads the controls, keeps
// them in the query string and draws what comes back.
import { api, checkField, clear, el, fillFields, fmtBytes, fmtNum, fmtSeconds, latest, markInvalid, readFields, readQuery, renderNav, wireCopyLink, writeQuery } from './common.js';
import { LINKS, linkChip } from './links.js';
import { svg } from './svg.js';

const DEFAULTS = {
  cluster: 'dgx-h100', nodes: '8', tp: '8', pp: '2', dp: '', cp: '1', ep: '1', order: 'tp-cp-ep-dp-pp',
  color_axis: '',
  model: 'llama3-70b', global_batch: '256', micro_batch: '1', zero: '1', sp: '1',
  collective: 'all_reduce', size: '1GiB', group: 'dp', ranks: '8', algorithm: 'auto', bandwidth: '', latency: '',
};
const LAYOUT = ['cluster', 'nodes', 'tp', 'pp', 'dp', 'cp', 'ep', 'order'];
const FIELDS = Object.keys(DEFAULTS);
const CHECKBOXES = ['sp'];
const $ = (id) => document.getElementById(id);

// Okabe-Ito, for groups (with the group number written in each GPU, so colour is never the only
// cue). Link classes have their own colour and dash pattern (links.js).
const GROUP_COLORS = ['#E69F00', '#56B4E9', '#009E73', '#F0E442', '#0072B2', '#D55E00', '#CC79A7', '#000000'];
// Text on each colour at WCAG AA (4.5:1): black on #009E73 (6.0:1) and #D55E00 (5.4:1), where white
// was 3.4:1 and 3.9:1.
const GROUP_TEXT = ['#000', '#000', '#000', '#000', '#fff', '#000', '#000', '#fff'];

let state = readQuery(DEFAULTS);
let presets = null;
let topo = null, plan = null, comm = null;
// The nodes drawn in full per request (the window shows at most 32 of them), the parameters of the
// last topology request, and the request of another chunk the window is waiting for.
const CHUNK = 64;
let lastTopoParams = null, windowJob = null;
let renders = 0;

// Marks a finished drawing and the state it shows (the browser tests wait on these). A form refused
// where it is typed shows the form as typed, not the last state asked for: a test waiting for its
// value must not take an earlier refusal (a blur's change event) for the answer.
function rendered(shown = state) {
  document.body.dataset.state = JSON.stringify(shown);
  document.body.dataset.renders = String(++renders);
}

renderNav('topology');

const fillForm = () => fillFields(FIELDS, state, DEFAULTS, CHECKBOXES);
const readForm = () => readFields(FIELDS, CHECKBOXES);

function pick(s, keys) {
  const p = {};
  for (const k of keys) if (s[k] !== '' && s[k] !== undefined) p[k] = s[k];
  return p;
}

// The error of one request in its box, and the field it names marked.
function showError(boxId, err, fields) {
  const param = err ? err.parameter : '';
  markInvalid(fields, param && fields.includes(param) ? [param] : [], boxId);
  const box = $(boxId);
  if (!err) {
    box.hidden = true;
    clear(box);
    return;
  }
  clear(box).append(el('strong', {}, 'The engine refused this: '), err.message,
    param ? el('span', { class: 'param' }, ` (parameter: ${param})`) : '');
  box.hidden = false;
}

let timer = 0;
function later(delay) {
  clearTimeout(timer);
  timer = setTimeout(update, delay);
}

// The typed numbers, checked where they are typed (issue 24): a bad one is said beside itself and
// nothing is asked until it is fixed; no value becomes a default (DP may be empty: the rest of the
// GPUs; the calculator's ranks, bandwidth and latency too: the cluster's own).
const CHECKED = ['nodes', 'tp', 'pp', 'dp', 'cp', 'ep', 'global_batch', 'micro_batch', 'ranks', 'bandwidth', 'latency'];

async function update() {
  if (CHECKED.filter((k) => checkField($(k))).length) { rendered(readForm()); return; }
  state = readForm();
  writeQuery(state, DEFAULTS);
  // A newer request aborts the older; the old numbers stay greyed until the new ones arrive.
  const job = latest('topology', [document.querySelector('section.results'), $('plan-error').closest('section'),
    $('calc-error').closest('section')]);
  const signal = job.signal;
  const layout = pick(state, LAYOUT);
  // Every GPU's colour group (the overview) and the full drawing of the first CHUNK nodes; the
  // window fetches other nodes' drawing when it moves past them.
  const topoParams = { ...layout, coordinates: 1, max_nodes: CHUNK };
  if (state.color_axis) topoParams.color_axis = state.color_axis;
  if (windowJob) windowJob.abort();
  windowJob = null;
  lastTopoParams = topoParams;
  const planParams = { ...layout, ...pick(state, ['model', 'global_batch', 'micro_batch', 'zero']) };
  if (state.sp === '1') planParams.sp = 1;
  const calc = pick(state, ['collective', 'size', 'algorithm', 'bandwidth', 'latency']);
  const commParams = state.group
    ? { ...layout, ...calc, group: state.group }
    : { ...pick(state, ['cluster', 'nodes']), ...calc, ranks: state.ranks || '0' };
  const q = new URLSearchParams(topoParams);
  $('dl-json').href = `api/topology?${q}`;
  q.set('format', 'svg');
  q.delete('coordinates');
  q.delete('max_nodes');
  $('dl-svg').href = `api/topology?${q}`;
  // Saved as files, not opened in the tab (the download attribute; same origin).
  const stem = `topology_${String(layout.cluster || 'cluster').replace(/[^\w.-]+/g, '_')}`;
  $('dl-json').download = `${stem}.json`;
  $('dl-svg').download = `${stem}.svg`;
  const [t, p, c] = await Promise.allSettled([
    api('api/topology', { params: topoParams, signal }),
    api('api/comm-plan', { params: planParams, signal }),
    api('api/comm', { params: commParams, signal }),
  ]);
  if (signal.aborted) return;
  topo = t.status === 'fulfilled' ? t.value : null;
  plan = p.status === 'fulfilled' ? p.value : null;
  comm = c.status === 'fulfilled' ? c.value : null;
  showError('error', t.reason, [...LAYOUT, 'color_axis']);
  showError('plan-error', p.status === 'rejected' && t.status === 'fulfilled' ? p.reason : null,
    ['model', 'global_batch', 'micro_batch', 'zero']);
  showError('calc-error', c.reason, ['collective', 'size', 'group', 'ranks', 'algorithm', 'bandwidth', 'latency']);
  showTopology();
  showPlan();
  showComm();
  showNotes();
  job.done();
  rendered();
}

// --- The cluster drawing ----------------------------------------------------------------------

function showTopology() {
  const host = clear($('drawing'));
  clear($('drawing-legend'));
  $('drawing-info').textContent = '';
  if (!topo) {
    for (const id of ['m-gpus', 'm-placement', 'm-sus']) $(id).textContent = '–';
    clear($('axes'));
    $('drawing-caption').textContent = '';
    refreshGroupChoices();
    return;
  }
  const c = topo.cluster, pl = topo.placement, d = topo.drawing;
  $('m-gpus').textContent = `${c.gpus} = ${c.nodes} × ${c.gpus_per_node}`;
  const degrees = Object.entries(pl.degrees).filter(([, v]) => v > 1).map(([k, v]) => `${k}=${v}`).join(' ') || '1 GPU';
  $('m-placement').textContent = degrees;
  $('m-sus').textContent = `${c.sus} × ${c.nodes_per_su}`;
  $('drawing-title').textContent = `The cluster: ${c.name}, GPUs coloured by ${d.color_axis.toUpperCase()} group`;
  $('drawing-caption').textContent =
    `${c.description}. Rows are nodes, columns a node's GPUs: GPU k of every node uses rail k (NIC ${c.nics_per_node < c.gpus_per_node ? 'shared' : 'k'}), ` +
    `so a vertical line is one rail. Order ${pl.order} (leftmost varies fastest). ` +
    (d.nodes > 8 ? `All ${d.nodes} nodes are in the overview (a node is a column of its GPUs' colours, a grey line ` +
      'starts each scalable unit); a window of them is drawn in full under it.' : '');
  drawClusterWindowed(host, $('drawing-info'), topo);
  legendFor($('drawing-legend'), topo);
  showAxes();
  refreshGroupChoices();
}

function legendFor(host, t) {
  const d = t.drawing;
  const items = [el('li', {}, `Colour and number: the GPU's ${d.color_axis.toUpperCase()} group (${d.color_groups} groups; the eight colours repeat, the numbers do not).`)];
  for (const link of ['scale-up', 'nvlink-bridge', 'pcie', 'rail', 'spine']) {
    if (link === 'nvlink-bridge' && t.cluster.scale_up_fabric !== 'nvlink-bridge') continue;
    if (link === 'pcie' && !['nvlink-bridge', 'pcie'].includes(t.cluster.scale_up_fabric)) continue;
    items.push(el('li', {}, linkChip(link), ` ${LINKS[link].title}`));
  }
  host.append(el('ul', { class: 'legend', 'aria-label': 'legend' }, items));
}

const FABRIC_SHORT = { nvswitch: 'NVSwitch', 'nvlink-bridge': 'NVLink pairs', 'full-mesh': 'full mesh', pcie: 'PCIe' };

function fabricLabel(c) {
  const names = { nvswitch: 'NVSwitch', 'nvlink-bridge': 'NVLink bridges in pairs, PCIe between pairs', 'full-mesh': 'full mesh', pcie: 'PCIe only' };
  return `${names[c.scale_up_fabric] || c.scale_up_fabric}: ${fmtNum(c.scale_up_GBps)} GB/s per GPU per direction`;
}

// Draws nodes [range.n0, range.n1) of the drawing (all of them without a range).
function drawCluster(host, info, t, range = null) {
  const c = t.cluster, d = t.drawing;
  const kind = d.color_axis;  // the group kind the colours show (tp, cp, ep, dp, edp, pp)
  const gpn = c.gpus_per_node;
  const perRow = gpn <= 16 ? gpn : Math.ceil(gpn / Math.ceil(gpn / 16));
  const subRows = Math.ceil(gpn / perRow);
  // Laid out for the host's width: a phone gets smaller cells and margins, not scaled-down text.
  // On a phone the node's name goes on a line above its GPUs, and the cells share the width.
  const hostW = host.clientWidth || 1000;
  const narrow = hostW < 600;
  const gap = narrow ? 4 : 8, left = narrow ? 12 : 130, right = narrow ? 26 : 150, top = 44, fabricH = 16;
  const cell = narrow ? Math.max(30, Math.min(40, Math.floor((hostW - left - right) / perRow) - gap)) : 48;
  const boxPad = narrow ? 8 : 120;
  const labelH = narrow ? 24 : 0;
  const nodeH = subRows * (cell + gap) + fabricH + 16 + labelH;
  const nodeGap = 14;
  const n0 = range ? range.n0 : d.first_node;
  const nodes = (range ? range.n1 : d.first_node + d.nodes_drawn) - n0;
  // The drawing holds nodes [first_node, first_node + nodes_drawn): a rank's entry is offset.
  const gpuOf = (rank) => d.gpus[rank - d.first_node * gpn];
  const drawn = (node) => node >= n0 && node < n0 + nodes;
  // A gap before each new scalable unit, labelled. Indexes below are from n0.
  const suBreak = 26;
  const sus = [];
  for (let n = 0; n < nodes; n++) sus.push(gpuOf((n0 + n) * gpn).su);
  const nodeY = [];
  let y = top;
  for (let n = 0; n < nodes; n++) {
    if (n > 0 && sus[n] !== sus[n - 1]) y += suBreak;
    nodeY.push(y);
    y += nodeH + nodeGap;
  }
  const width = left + perRow * (cell + gap) + right;
  const height = y + 10;
  const gx = (local) => left + (local % perRow) * (cell + gap);
  const gy = (node, local) => nodeY[node - n0] + 8 + labelH + Math.floor(local / perRow) * (cell + gap);
  const spineX = width - right + (narrow ? 14 : 60);

  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, class: 'cluster', role: 'group', tabindex: 0,
    'aria-label': `${c.name}: ${range ? `nodes ${n0} to ${n0 + nodes - 1}` : `${nodes} nodes`} drawn of ${c.nodes}, ` +
      `GPUs coloured by ${kind} group. Arrow keys move between GPUs.` });
  // Column headers: GPU index and its rail (when a node's GPUs fit on one row).
  for (let local = 0; subRows === 1 && local < gpn; local++) {
    const rail = d.gpus[local].rail;
    root.append(svg('text', { x: gx(local) + cell / 2, y: 16, 'text-anchor': 'middle', class: 'col-head' }, narrow ? `${local}` : `GPU ${local}`));
    root.append(svg('text', { x: gx(local) + cell / 2, y: 34, 'text-anchor': 'middle', class: 'col-sub' }, narrow ? `r${rail}` : `rail ${rail}`));
  }
  // Rails: one leaf switch per rail per scalable unit joins that column's GPUs (when the columns
  // are the GPUs, i.e. no wrapping).
  const rails = svg('g', { class: 'rails' });
  if (subRows === 1) {
    let start = 0;
    for (let n = 1; n <= nodes; n++) {
      if (n === nodes || sus[n] !== sus[start]) {
        for (let local = 0; local < gpn; local++) {
          rails.append(svg('line', { x1: gx(local) + cell / 2, x2: gx(local) + cell / 2, y1: nodeY[start] - 6,
            y2: nodeY[n - 1] + nodeH + 4, class: 'rail-line' }));
        }
        start = n;
      }
    }
  }
  root.append(rails);
  // The spine: every leaf reaches it.
  root.append(svg('rect', { x: spineX - 6, y: top - 6, width: 12, height: height - top - 4, class: 'spine-bar' }));
  root.append(svg('text', { x: spineX + 12, y: top + 10, class: 'col-sub' }, 'spine'));


  const boxes = svg('g', { class: 'nodes' });
  const gpus = svg('g', { class: 'gpus' });
  const nodesEl = [];
  for (let n = 0; n < nodes; n++) {
    const g = svg('g', { class: 'node', 'data-node': n0 + n });
    g.append(svg('rect', { x: left - boxPad, y: nodeY[n], width: perRow * (cell + gap) + boxPad + 4, height: nodeH, rx: 8, class: 'node-box' }));
    if (narrow) {
      g.append(svg('text', { x: left, y: nodeY[n] + 20, class: 'node-label' }, `node ${n0 + n}`,
        svg('tspan', { class: 'col-sub', dx: 8 }, `SU ${sus[n]} · ${FABRIC_SHORT[c.scale_up_fabric] || c.scale_up_fabric}`)));
    } else {
      g.append(svg('text', { x: left - boxPad + 6, y: nodeY[n] + 24, class: 'node-label' }, `node ${n0 + n}`));
      g.append(svg('text', { x: left - boxPad + 6, y: nodeY[n] + 44, class: 'col-sub' }, `SU ${sus[n]}`));
      if (nodeH >= 74) g.append(svg('text', { x: left - boxPad + 8, y: nodeY[n] + 62, class: 'col-sub' }, FABRIC_SHORT[c.scale_up_fabric] || c.scale_up_fabric));
    }
    const fy = nodeY[n] + 8 + labelH + subRows * (cell + gap);
    g.append(svg('rect', { x: left - 4, y: fy, width: perRow * (cell + gap), height: fabricH - 4, rx: 3, class: 'fabric',
      'data-node': n0 + n }, svg('title', {}, fabricLabel(c))));
    nodesEl.push({ fabricY: fy });
    boxes.append(g);
  }
  if (nodes > 1) {
    for (let n = 1; n < nodes; n++) {
      if (sus[n] !== sus[n - 1]) {
        root.append(svg('text', { x: 8, y: nodeY[n] - 10, class: 'su-break' }, narrow
          ? `SU ${sus[n]}: reaches SU ${sus[n - 1]} via the spine`
          : `SU ${sus[n]}: other leaf switches; its nodes reach SU ${sus[n - 1]} only through the spine`));
      }
    }
  }
  const cells = new Map();  // rank -> its drawn cell
  for (const gpu of d.gpus) {
    if (!drawn(gpu.node)) continue;
    const x = gx(gpu.local), yy = gy(gpu.node, gpu.local);
    const k = gpu.color_group % GROUP_COLORS.length;
    const g = svg('g', { class: 'gpu', 'data-rank': gpu.rank, 'data-group': gpu.color_group, 'data-node': gpu.node });
    g.append(svg('rect', { x, y: yy, width: cell, height: cell, rx: 5, fill: GROUP_COLORS[k], class: 'gpu-box' }));
    g.append(svg('text', { x: x + cell / 2, y: yy + (narrow ? 13 : 17), 'text-anchor': 'middle', fill: GROUP_TEXT[k], class: 'gpu-rank' }, `r${gpu.rank}`));
    g.append(svg('text', { x: x + cell / 2, y: yy + (narrow ? 29 : 39), 'text-anchor': 'middle', fill: GROUP_TEXT[k], class: narrow ? 'gpu-group gpu-group-small' : 'gpu-group' }, gpu.color_group));
    cells.set(gpu.rank, g);
    gpus.append(g);
  }
  // The group's links go under the GPUs, over the node boxes.
  const overlay = svg('g', { class: 'overlay', 'pointer-events': 'none' });
  root.append(boxes, overlay, gpus);
  host.append(root);

  // The links one group uses: its members outlined, its fabric segment inside each node, its rail
  // (a column) or its way to the spine between nodes.
  function drawGroup(members, link) {
    clear(overlay);
    for (const cellEl of cells.values()) cellEl.classList.remove('member');
    members = members.filter((m) => drawn(m.node));  // the rest are outside the window
    if (!members.length) return;
    for (const m of members) cells.get(m.rank).classList.add('member');
    const byNode = new Map();
    for (const m of members) {
      if (!byNode.has(m.node)) byNode.set(m.node, []);
      byNode.get(m.node).push(m);
    }
    const multiNode = byNode.size > 1;
    const intraLink = multiNode ? 'scale-up' : link;
    for (const [node, ms] of byNode) {
      if (ms.length < 2) continue;
      const L = LINKS[multiNode ? (c.scale_up_fabric === 'nvswitch' || c.scale_up_fabric === 'full-mesh' ? 'scale-up' : 'pcie') : intraLink] || LINKS.none;
      const fy = nodesEl[node - n0].fabricY + (fabricH - 4) / 2;
      const xs = ms.map((m) => gx(m.local) + cell / 2);
      for (const m of ms) {
        overlay.append(svg('line', { x1: gx(m.local) + cell / 2, x2: gx(m.local) + cell / 2, y1: gy(m.node, m.local) + cell, y2: fy,
          stroke: L.color, 'stroke-width': 4, class: 'group-link' }));
      }
      overlay.append(svg('line', { x1: Math.min(...xs), x2: Math.max(...xs), y1: fy, y2: fy, stroke: L.color, 'stroke-width': 8,
        'stroke-linecap': 'round', 'stroke-dasharray': L.dash || null, class: 'group-link', 'data-link': multiNode ? 'intra' : link }));
    }
    if (!multiNode) return;
    const L = LINKS[link] || LINKS.none;
    if (link === 'rail' && subRows === 1) {
      const byCol = new Map();
      for (const m of members) {
        if (!byCol.has(m.local)) byCol.set(m.local, []);
        byCol.get(m.local).push(m);
      }
      for (const [local, ms] of byCol) {
        const ys = ms.map((m) => gy(m.node, m.local) + cell / 2);
        overlay.append(svg('line', { x1: gx(local) + cell / 2, x2: gx(local) + cell / 2, y1: Math.min(...ys), y2: Math.max(...ys),
          stroke: L.color, 'stroke-width': 7, 'stroke-dasharray': L.dash, 'stroke-linecap': 'round', class: 'group-link', 'data-link': 'rail' }));
      }
    } else {
      // Through the spine, or (nodes drawn over several rows) to the network at the right.
      const toX = link === 'spine' ? spineX : spineX - 24;
      for (const m of members) {
        const cy = gy(m.node, m.local) + cell / 2;
        overlay.append(svg('line', { x1: gx(m.local) + cell, x2: toX, y1: cy, y2: cy, stroke: L.color, 'stroke-width': 4,
          'stroke-dasharray': L.dash || null, class: 'group-link', 'data-link': link }));
      }
      const ys = members.map((m) => gy(m.node, m.local) + cell / 2);
      overlay.append(svg('line', { x1: toX, x2: toX, y1: Math.min(...ys), y2: Math.max(...ys), stroke: L.color, 'stroke-width': 10,
        'stroke-linecap': 'round', class: 'group-link', 'data-link': link }));
    }
  }

  const axisOf = new Map(t.axes.map((a) => [a.axis, a]));
  function membersOf(k, g) {
    return d.gpus.filter((x) => x.groups[k] === g);
  }
  let current = -1;
  function select(rank) {
    current = rank;
    for (const cellEl of cells.values()) cellEl.classList.remove('current');
    if (rank < 0) {
      // The example (slowest) group of the colour axis, as far as it is drawn.
      const a = axisOf.get(kind);
      if (!a) {
        drawGroup([], 'none');
        info.textContent = `Every ${kind.toUpperCase()} group is one GPU: nothing to communicate on this axis.`;
        return;
      }
      const ex = new Set(a.example_ranks);
      const members = d.gpus.filter((x) => ex.has(x.rank));
      drawGroup(members, a.link);
      info.textContent = `Outlined: ${kind.toUpperCase()} group ${a.example_group}, the first of the outermost ones ` +
        `(${a.link}; ranks ${a.example_ranks.slice(0, 12).join(' ')}${a.example_ranks.length > 12 ? ' …' : ''}). ` +
        'Point at a GPU, or focus the drawing and use the arrow keys, to see its groups.';
      return;
    }
    const gpu = gpuOf(rank);
    cells.get(rank).classList.add('current');
    const kinds = t.axes.map((a) => a.axis);
    const parts = kinds.map((k) => `${k.toUpperCase()} group ${gpu.groups[k]} (${gpu.links[k]})`);
    const coords = Object.entries(gpu.coords).filter(([k]) => (topo.placement.degrees[k] || 0) > 1 || k === 'edp')
      .map(([k, v]) => `${k} ${v}`).join(', ');
    if (gpu.groups[kind] !== undefined) {
      const members = membersOf(kind, gpu.groups[kind]);
      drawGroup(members, gpu.links[kind]);
      info.textContent = `Rank ${gpu.rank}: node ${gpu.node}, GPU ${gpu.local}, rail ${gpu.rail}, SU ${gpu.su}` +
        `${coords ? `; coordinates ${coords}` : ''}. ${parts.join('; ')}. Outlined: its ${kind.toUpperCase()} group, ` +
        `ranks ${members.map((m) => m.rank).join(' ')}${members.length < topo.axes.find((a) => a.axis === kind).degree ? ' (and more beyond the drawn nodes)' : ''}.`;
    } else {
      drawGroup([], 'none');
      info.textContent = `Rank ${gpu.rank}: node ${gpu.node}, GPU ${gpu.local}, rail ${gpu.rail}, SU ${gpu.su}. ${parts.join('; ')}.`;
    }
  }
  select(-1);
  gpus.addEventListener('pointerover', (ev) => {
    const g = ev.target.closest('.gpu');
    if (g) select(Number(g.dataset.rank));
  });
  root.addEventListener('pointerleave', () => { if (document.activeElement !== root) select(-1); });
  const firstRank = n0 * gpn, lastRank = (n0 + nodes) * gpn - 1;
  root.addEventListener('focus', () => { if (current < 0 && cells.size) select(firstRank); });
  root.addEventListener('blur', () => select(-1));
  root.addEventListener('keydown', (ev) => {
    if (current < 0) return;
    let next = current;
    if (ev.key === 'ArrowRight') next = Math.min(current + 1, lastRank);
    else if (ev.key === 'ArrowLeft') next = Math.max(current - 1, firstRank);
    else if (ev.key === 'ArrowDown') next = current + gpn <= lastRank ? current + gpn : current;
    else if (ev.key === 'ArrowUp') next = current - gpn >= firstRank ? current - gpn : current;
    else if (ev.key === 'Escape') next = -1;
    else return;
    ev.preventDefault();
    select(next);
  });
}

// A cluster of more than 8 nodes (up to 65,536 GPUs, the API's bound): an overview of every node
// on a canvas (a node is a column of its GPUs' colours, from the answer's `overview`, nodes left to
// right in rows, a grey line before each scalable unit) and, under it, the drawing of a window of
// `span` nodes at the normal size, instead of a drawing tens of thousands of pixels long. The
// answer draws CHUNK nodes in full; a window past them asks the server for the CHUNK nodes around
// it. The window is framed on the overview; a press or a drag there moves it, and the buttons (or
// the keys on the focused overview: the arrows move, + and - zoom) move it and zoom in (fewer
// nodes) or out (more).
const SPANS = [2, 4, 8, 16, 32];
function drawClusterWindowed(host, info, t0) {
  let t = t0;
  const ov = t.drawing.overview, total = ov.nodes, gpn = ov.gpus_per_node;
  if (total <= 8) { drawCluster(host, info, t); return; }
  let span = 8, first = 0;
  const canvas = el('canvas', { class: 'cluster-overview', tabindex: 0, role: 'img',
    'aria-label': `Overview of all ${total} nodes, the window framed: press a node to show it; ` +
      'the arrow keys move the window, + and - zoom' });
  const button = (cls, text) => el('button', { type: 'button', class: cls }, text);
  const range = el('span', { class: 'cluster-range', 'aria-live': 'polite' });
  const bar = el('div', { class: 'cluster-bar' }, button('cl-prev', '◀ Previous'), button('cl-next', 'Next ▶'),
    button('cl-zoom-in', 'Zoom in'), button('cl-zoom-out', 'Zoom out'), range);
  const detail = el('div', { class: 'cluster-detail' });
  host.append(canvas, bar, detail);

  // Thousands of nodes: narrower columns, so that the overview stays a few screens at most.
  const cellW = total > 2048 ? 2 : 3, cellH = 2, nodeW = cellW + 1, lineH = gpn * cellH + 4;
  let perLine = 1;
  const at = (n) => ({ x: 4 + (n % perLine) * nodeW, y: 2 + Math.floor(n / perLine) * lineH });
  function paint() {
    const dpr = Math.max(1, Math.min(3, window.devicePixelRatio || 1));
    const width = Math.max(280, Math.round(host.clientWidth || 600));
    perLine = Math.max(1, Math.floor((width - 8) / nodeW));
    const h = Math.ceil(total / perLine) * lineH + 4;
    canvas.width = Math.round(width * dpr); canvas.height = Math.round(h * dpr);
    canvas.style.width = `${width}px`; canvas.style.height = `${h}px`;
    const g = canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = '#fff'; g.fillRect(0, 0, width, h);
    const groups = ov.color_group;
    let painted = 0;
    for (let n = 0; n < total; n++) {
      const p = at(n);
      for (let local = 0; local < gpn; local++) {
        g.fillStyle = GROUP_COLORS[groups[n * gpn + local] % GROUP_COLORS.length];
        g.fillRect(p.x, p.y + local * cellH, cellW, cellH);
      }
      if (n > 0 && n % ov.nodes_per_su === 0) {
        g.fillStyle = '#767676';
        g.fillRect(p.x - 1, p.y - 1, 1, gpn * cellH + 2);
      }
      painted++;
    }
    g.strokeStyle = '#000'; g.lineWidth = 1.5;
    for (let n = first; n < Math.min(total, first + span); n++) {
      const p = at(n);
      g.strokeRect(p.x - 0.5, p.y - 1, nodeW, gpn * cellH + 2);
    }
    // The layout, for tests and scripts: where node n is drawn.
    Object.assign(canvas.dataset, { nodes: String(painted), perLine: String(perLine), nodeW: String(nodeW),
      lineH: String(lineH), cellH: String(cellH) });
  }
  const have = (a, b) => a >= t.drawing.first_node && b <= t.drawing.first_node + t.drawing.nodes_drawn;
  function drawWindow() {
    const last = Math.min(total, first + span) - 1;
    clear(detail);
    drawCluster(detail, info, t, { n0: first, n1: last + 1 });
    range.textContent = `nodes ${first}–${last} of ${total}`;
    canvas.dataset.first = String(first);
    canvas.dataset.span = String(span);
    delete canvas.dataset.loading;
  }
  function show(from) {
    first = Math.max(0, Math.min(total - span, Math.round(from)));
    const last = Math.min(total, first + span) - 1;
    bar.querySelector('.cl-prev').disabled = first === 0;
    bar.querySelector('.cl-next').disabled = last === total - 1;
    bar.querySelector('.cl-zoom-in').disabled = span === SPANS[0];
    bar.querySelector('.cl-zoom-out').disabled = span >= Math.min(SPANS.at(-1), total);
    paint();
    if (have(first, last + 1)) { if (windowJob) windowJob.abort(); windowJob = null; drawWindow(); return; }
    // Ask for the CHUNK nodes around the window (the newest request wins).
    if (windowJob) windowJob.abort();
    const job = windowJob = new AbortController();
    const from0 = Math.max(0, Math.min(total - CHUNK, first + Math.floor(span / 2) - CHUNK / 2));
    range.textContent = `nodes ${first}–${last} of ${total}: loading…`;
    canvas.dataset.loading = '1';
    api('api/topology', { params: { ...lastTopoParams, first_node: from0, max_nodes: CHUNK }, signal: job.signal })
      .then((next) => {
        if (job.signal.aborted) return;
        windowJob = null;
        t = next;
        topo = next;
        drawWindow();
      }, (err) => {
        if (job.signal.aborted) return;
        windowJob = null;
        showError('error', err, [...LAYOUT, 'color_axis']);
      });
  }
  const zoom = (dir) => {
    const i = SPANS.indexOf(span) + dir;
    if (i < 0 || i >= SPANS.length) return;
    const mid = first + span / 2;
    span = Math.min(SPANS[i], total);
    show(mid - span / 2);
  };
  const nodeAt = (ev) => {
    const b = canvas.getBoundingClientRect();
    const x = ev.clientX - b.left - 4, y = ev.clientY - b.top - 2;
    if (x < 0 || y < 0 || x >= perLine * nodeW) return -1;
    const n = Math.floor(y / lineH) * perLine + Math.floor(x / nodeW);
    return n >= total ? -1 : n;
  };
  let down = false;
  const go = (ev) => {
    const n = nodeAt(ev);
    if (n < 0) return;
    canvas.dataset.node = String(n);
    if (n < first || n >= first + span) show(n - Math.floor(span / 2));
  };
  canvas.addEventListener('pointerdown', (ev) => { down = true; canvas.setPointerCapture?.(ev.pointerId); go(ev); });
  canvas.addEventListener('pointermove', (ev) => { if (down) go(ev); });
  canvas.addEventListener('pointerup', () => { down = false; });
  canvas.addEventListener('keydown', (ev) => {
    if (ev.key === 'ArrowRight' || ev.key === 'ArrowDown') show(first + span);
    else if (ev.key === 'ArrowLeft' || ev.key === 'ArrowUp') show(first - span);
    else if (ev.key === 'Home') show(0);
    else if (ev.key === 'End') show(total - span);
    else if (ev.key === '+' || ev.key === '=') zoom(-1);
    else if (ev.key === '-') zoom(1);
    else return;
    ev.preventDefault();
  });
  bar.querySelector('.cl-prev').addEventListener('click', () => show(first - span));
  bar.querySelector('.cl-next').addEventListener('click', () => show(first + span));
  bar.querySelector('.cl-zoom-in').addEventListener('click', () => zoom(-1));
  bar.querySelector('.cl-zoom-out').addEventListener('click', () => zoom(1));
  show(0);
}

// The placement axis a group kind is coloured by (dp with ep > 1 spans two axes: none).
function colorAxisOf(kind) {
  if (kind === 'edp') return 'dp';
  if (kind === 'dp') return (topo.placement.degrees.ep || 1) > 1 ? null : 'dp';
  return kind;
}

function showAxes() {
  const table = clear($('axes'));
  table.append(el('thead', {}, el('tr', {}, ['Axis', 'Degree', 'Groups', 'Link (slowest group)', 'Groups per link',
    'Nodes per group', 'SUs per group', 'Example group (ranks)'].map((h) => el('th', { scope: 'col' }, h)))));
  const body = el('tbody');
  if (!topo.axes.length) {
    body.append(el('tr', {}, el('td', { colspan: 8, class: 'row-error' }, 'Every degree is 1: no group communicates.')));
  }
  for (const a of topo.axes) {
    const target = colorAxisOf(a.axis);
    const current = topo.drawing.color_axis === a.axis;
    const perLink = Object.entries(a.groups_per_link).map(([k, v]) => `${k} ${v}`).join(', ');
    const ex = a.example_ranks.length > 10 ? `${a.example_ranks.slice(0, 8).join(' ')} … ${a.example_ranks[a.example_ranks.length - 1]}` : a.example_ranks.join(' ');
    // The axis name colours the drawing by it (not for Megatron's dp when ep > 1: it spans two axes).
    const name = target && !current
      ? el('button', { type: 'button', class: 'link', 'data-color': target, 'aria-label': `Colour the GPUs by ${a.axis} group`,
        onclick: () => { $('color_axis').value = target; update(); } }, a.axis.toUpperCase())
      : a.axis.toUpperCase();
    body.append(el('tr', { class: current ? 'current' : null, 'data-axis': a.axis },
      el('th', { scope: 'row' }, name), el('td', {}, a.degree), el('td', {}, a.groups),
      el('td', { class: 'left' }, linkChip(a.link)), el('td', { class: 'left' }, perLink),
      el('td', {}, a.nodes_per_group), el('td', {}, a.sus_per_group), el('td', { class: 'left' }, ex)));
  }
  table.append(body);
}

// The calculator's group choices: the kinds of this layout, and the first N ranks.
function refreshGroupChoices() {
  const sel = $('group');
  const want = state.group;
  clear(sel);
  const kinds = topo ? topo.axes.map((a) => a.axis) : [];
  for (const k of kinds) sel.append(el('option', { value: k }, `${k.toUpperCase()} groups (slowest)`));
  if (want && !kinds.includes(want)) sel.append(el('option', { value: want }, `${want.toUpperCase()} groups`));
  sel.append(el('option', { value: '' }, 'first N ranks'));
  sel.value = want;
  $('ranks').disabled = want !== '';
}

// --- Per-step communication (comm-plan) -------------------------------------------------------

function showPlan() {
  const table = clear($('plan'));
  $('plan-caption').textContent = '';
  $('plan-total').textContent = '';
  if (!plan) return;
  const par = plan.parallel;
  $('plan-caption').textContent =
    `${plan.model} on ${plan.gpus} GPUs (tp ${par.tp}, pp ${par.pp}, dp ${par.dp}${par.cp > 1 ? `, cp ${par.cp}` : ''}` +
    `${par.ep > 1 ? `, ep ${par.ep}` : ''}; ZeRO ${par.zero}${par.sequence_parallel ? ', SP' : ''}): calls per step on one GPU of ` +
    `pipeline rank ${plan.pipeline_rank} (${plan.layers} layers), ${plan.microbatches} microbatches per step. Message = ` +
    "nccl-tests' S; time on the slowest group of each kind.";
  table.append(el('thead', {}, el('tr', {}, ['Communication', 'Group', 'Collective', 'Message', 'Calls / step', 'Link',
    'Per call', 'Per step', 'Overlaps compute'].map((h) => el('th', { scope: 'col' }, h)))));
  const body = el('tbody');
  for (const it of plan.items) {
    body.append(el('tr', { 'data-group': it.group },
      el('th', { scope: 'row', class: 'wrap' }, it.communication, el('div', { class: 'row-note' }, it.frequency)),
      el('td', {}, `${it.group} (${it.group_size})`), el('td', { class: 'left' }, it.collective),
      el('td', {}, fmtBytes(it.message_bytes)), el('td', {}, it.count_per_step.toLocaleString('en-US')),
      el('td', { class: 'left' }, linkChip(it.link)), el('td', {}, fmtSeconds(it.time_per_call_s)),
      el('td', {}, fmtSeconds(it.time_per_step_s)),
      el('td', { class: 'left wrap' }, el('strong', {}, it.overlap), el('div', { class: 'row-note' }, it.overlap_note))));
  }
  table.append(body);
  $('plan-total').textContent = `Total ${fmtSeconds(plan.total_time_per_step_s)} of communication per step before any overlap.`;
}

// --- The collective calculator ----------------------------------------------------------------

function showComm() {
  for (const id of ['c-time', 'c-algbw', 'c-busbw', 'c-bottleneck']) clear($(id)).append('–');
  clear($('calc-links'));
  clear($('calc-candidates'));
  $('calc-caption').textContent = '';
  if (!comm) return;
  const us = (x) => `${x.toFixed(1)} µs`;
  $('c-time').textContent = us(comm.time_us);
  $('c-algbw').textContent = `${comm.algbw_GBps.toFixed(2)} GB/s`;
  $('c-busbw').textContent = `${comm.busbw_GBps.toFixed(2)} GB/s`;
  clear($('c-bottleneck')).append(linkChip(comm.bottleneck_link));
  const who = comm.group === 'ranks'
    ? `ranks ${comm.first_rank}–${comm.last_rank} (${comm.ranks} ranks on ${comm.group_nodes} node${comm.group_nodes === 1 ? '' : 's'})`
    : `${comm.group.toUpperCase()} group ${comm.group_index} of ${comm.groups} (${comm.ranks} ranks on ${comm.group_nodes} node${comm.group_nodes === 1 ? '' : 's'}; the slowest)`;
  const ov = comm.overrides;
  $('calc-caption').textContent =
    `${comm.collective} of ${fmtBytes(comm.size_bytes)} (${comm.size_bytes.toLocaleString('en-US')} bytes) on ${who}: ` +
    `${comm.algorithm}, protocol ${comm.protocol}; ${us(comm.time_us)} = latency ${us(comm.latency_us)} + bandwidth ` +
    `${us(comm.bandwidth_us)}; busbw = algbw × ${fmtNum(comm.busbw_factor)}.` +
    (ov.bandwidth_GBps !== null || ov.latency_us !== null
      ? ` Textbook alpha-beta: ${ov.bandwidth_GBps !== null ? `${fmtNum(ov.bandwidth_GBps)} GB/s on every link` : "the cluster's bandwidths"}, ` +
        `${ov.latency_us !== null ? `${fmtNum(ov.latency_us)} µs per step, no base latency` : "NCCL's latencies"}.`
      : '');
  const links = $('calc-links');
  links.append(el('thead', {}, el('tr', {}, ['Link', 'Bytes per GPU', 'Achieved GB/s', 'Steps', 'Latency', 'Bandwidth time']
    .map((h) => el('th', { scope: 'col' }, h)))));
  const lb = el('tbody');
  for (const u of comm.links) {
    lb.append(el('tr', { 'data-link': u.link }, el('th', { scope: 'row' }, linkChip(u.link)), el('td', {}, fmtBytes(u.bytes_per_gpu)),
      el('td', {}, u.achieved_GBps.toFixed(2)), el('td', {}, u.steps), el('td', {}, us(u.latency_us)), el('td', {}, us(u.bandwidth_us))));
  }
  links.append(lb);
  const cand = $('calc-candidates');
  cand.append(el('thead', {}, el('tr', {}, ['Algorithm', 'Protocol', 'Time', 'algbw GB/s', 'busbw GB/s', 'Bottleneck']
    .map((h) => el('th', { scope: 'col' }, h)))));
  const cb = el('tbody');
  comm.candidates.forEach((a, k) => {
    cb.append(el('tr', { class: k === 0 ? 'current' : null, 'data-algorithm': a.algorithm }, el('th', { scope: 'row' }, a.algorithm),
      el('td', { class: 'left' }, a.protocol), el('td', {}, us(a.time_us)), el('td', {}, a.algbw_GBps.toFixed(2)),
      el('td', {}, a.busbw_GBps.toFixed(2)), el('td', { class: 'left' }, linkChip(a.bottleneck_link))));
  });
  cand.append(cb);
}

// --- What to notice, common misunderstandings ---------------------------------------------------

function showNotes() {
  const notes = [];
  const axis = (k) => (topo ? topo.axes.find((a) => a.axis === k) : undefined);
  if (topo) {
    const c = topo.cluster;
    if (topo.axes.length) {
      notes.push(`On ${c.nodes} × ${c.gpus_per_node} ${c.gpu_model}s with order ${topo.placement.order}: ` +
        topo.axes.map((a) => `${a.axis.toUpperCase()} (${a.degree} GPUs a group, ${a.nodes_per_group} node${a.nodes_per_group === 1 ? '' : 's'}) crosses ${a.link}`).join('; ') +
        '. The axis written first varies fastest, so it gets the closest GPUs.');
    }
    const mixed = topo.axes.find((a) => Object.keys(a.groups_per_link).length > 1);
    if (mixed) {
      notes.push(`Not every ${mixed.axis.toUpperCase()} group sits alike: ${Object.entries(mixed.groups_per_link).map(([k, v]) => `${v} on ${k}`).join(', ')}. ` +
        `They all communicate at once, so each ${mixed.axis.toUpperCase()} collective runs at the pace of the ${mixed.link} ones.`);
    }
    const spine = topo.axes.find((a) => a.link === 'spine');
    if (spine) {
      notes.push(`${spine.axis.toUpperCase()} groups reach the spine: ${spine.sus_per_group > 1 ? `they span ${spine.sus_per_group} scalable units of ${c.nodes_per_su} nodes` : 'their members sit on different rails'}. ` +
        'A rail keeps a collective one leaf switch away; the spine adds hops and shares bandwidth with the other units.');
    }
  }
  if (plan) {
    const tp = plan.items.filter((i) => i.group === 'tp');
    const dp = plan.items.find((i) => i.group.startsWith('dp') || i.group.startsWith('edp'));
    if (tp.length) {
      notes.push(`Tensor parallelism talks the most: ${tp[0].communication.toLowerCase()} alone is ${tp[0].count_per_step.toLocaleString('en-US')} calls of ` +
        `${fmtBytes(tp[0].message_bytes)} per step, ${fmtSeconds(tp[0].time_per_step_s)} on ${tp[0].link}, and it does not overlap compute. ` +
        'That is why TP stays inside a node.');
    }
    if (dp) {
      notes.push(`Data parallelism talks rarely and late: ${dp.count_per_step} call${dp.count_per_step === 1 ? '' : 's'} of ${fmtBytes(dp.message_bytes)} per step ` +
        `(${fmtSeconds(dp.time_per_step_s)} on ${dp.link}), overlap ${dp.overlap}: ${dp.overlap_note}. It can afford the network.`);
    }
  }
  if (comm) {
    const bottle = comm.links.find((u) => u.link === comm.bottleneck_link);
    notes.push(`The calculator's ${comm.collective} takes ${comm.time_us.toFixed(1)} µs: ${comm.latency_us.toFixed(1)} µs of latency and ` +
      `${comm.bandwidth_us.toFixed(1)} µs moving bytes. Its busbw (${comm.busbw_GBps.toFixed(2)} GB/s) is the number to compare with the ` +
      `${comm.bottleneck_link} link${bottle ? ` (${bottle.achieved_GBps.toFixed(2)} GB/s achieved per GPU per direction)` : ''}; ` +
      `its algbw (${comm.algbw_GBps.toFixed(2)} GB/s) is what the job sees.`);
  }
  const list = clear($('notice'));
  for (const n of notes) list.append(el('li', {}, n));

  const myths = clear($('myths'));
  const myth = (claim, answer) => myths.append(el('dt', {}, `“${claim}”`), el('dd', {}, answer));
  const c = topo ? topo.cluster : null;
  myth('NVLink on an H100 is 900 GB/s per GPU.', c
    ? `That is both directions added. A collective step sends one way while it receives the other: this cluster's scale-up is ` +
      `${fmtNum(c.scale_up_GBps)} GB/s per GPU per direction on the datasheet, of which NCCL achieves a fraction ` +
      `${fmtNum(c.scale_up_efficiency)} (the engine's efficiency for it).`
    : 'That is both directions added; the engine uses the per-direction figure (450 GB/s on H100).');
  const dpAxis = axis('dp');
  myth('Data parallel across nodes goes through the spine.', dpAxis
    ? `Not on a rail-optimised fabric: GPU k of every node is on rail k, one leaf switch from the same GPU of every node in its ` +
      `scalable unit. Here each DP group spans ${dpAxis.nodes_per_group} nodes and crosses ${dpAxis.link}.`
    : 'Not on a rail-optimised fabric: the same GPU index of every node in a scalable unit shares one leaf switch (a rail).');
  myth('busbw is the bandwidth my collective gets.', comm
    ? `algbw = S / time is what the job gets (${comm.algbw_GBps.toFixed(2)} GB/s here). busbw multiplies it by ` +
      `${fmtNum(comm.busbw_factor)} (2(n−1)/n for an all-reduce) so that it compares with a link's speed, whatever n is.`
    : 'algbw = S / time is what the job gets; busbw rescales it by 2(n−1)/n for an all-reduce so that it compares with a link.');
  myth('The rank order is bookkeeping.', 'It decides which link each group crosses. Put dp first (dp-tp-cp-ep-pp) and ' +
    'the eight GPUs of a TP group land on eight different nodes: every layer\'s collectives then cross the network.');
  myth('A bigger ring is slower.', 'Per GPU, a ring all-reduce sends 2(n−1)/n of S whatever n is, so the bandwidth time ' +
    'hardly grows; what grows is the latency, 2(n−1) steps. Large messages do not care, small ones do: try 8KiB.');
}

// --- Controls ----------------------------------------------------------------------------------

async function start() {
  try {
    presets = await api('api/presets');
  } catch (err) {
    showError('error', err, []);
    return;
  }
  for (const c of presets.clusters) $('cluster').append(el('option', { value: c.name }, `${c.name}: ${c.gpus_per_node} × ${c.gpu}`));
  for (const m of presets.models) $('model').append(el('option', { value: m.name }, m.name));
  refreshGroupChoices();
  fillForm();
  for (const id of ['controls', 'plan-controls', 'calc-controls']) {
    $(id).addEventListener('input', (ev) => { if (ev.target.tagName === 'INPUT' && ev.target.type !== 'checkbox') later(300); });
    $(id).addEventListener('change', () => later(0));
    $(id).addEventListener('submit', (ev) => { ev.preventDefault(); later(0); });
  }
  $('group').addEventListener('change', () => { $('ranks').disabled = $('group').value !== ''; });
  $('reset').addEventListener('click', () => {
    state = { ...DEFAULTS };
    refreshGroupChoices();
    fillForm();
    update();
  });
  wireCopyLink($('copy-link'));
  update();
}

start();
