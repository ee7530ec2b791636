// The pipeline timeline: one lane per rank, one block per action at the engine's start and end,
// labelled with its microbatch, idle time hatched. Hovering (or moving with the arrow keys to) a
// block follows that microbatch across the ranks and draws the dependency it waited on.
import { clear, el, fmtNum } from './common.js';
import { COLORS, NAMES, TEXT_ON, idlePattern, niceStep, svg } from './svg.js';

const MAX_DRAWN = 20000;
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

// Draws `data` (the JSON of /api/schedule or /api/import with dependencies=1) into `host`;
// `info` is a live region that describes the block under the pointer or the keyboard cursor.
export function drawTimeline(host, info, data, { title = '' } = {}) {
  clear(host);
  const actions = data.actions || [];
  if (actions.length > MAX_DRAWN) {
    host.append(
      el('p', { class: 'note' }, `${actions.length} actions are more than this page draws (${MAX_DRAWN}); ` +
        'the metrics above are complete, and the SVG and Chrome trace downloads hold the whole picture.'),
    );
    return null;
  }
  const P = data.pp;
  const makespan = Math.max(data.makespan, 1e-9);
  const left = 74, right = 16, top = 8, lane = 40, gap = 8, axis = 50;
  const width = 1000;
  const plotW = width - left - right;
  const height = top + P * (lane + gap) + axis;
  const x = (t) => left + (t / makespan) * plotW;
  const laneY = (r) => top + r * (lane + gap);
  const patternId = `idle-${++uid}`;

  const root = svg('svg', {
    viewBox: `0 0 ${width} ${height}`,
    class: 'timeline',
    role: 'group',
    tabindex: 0,
    'aria-label': `${title} timeline, ${P} ranks, makespan ${fmtNum(data.makespan)} ms. Arrow keys move between blocks.`,
  });
  root.append(svg('defs', {}, idlePattern(patternId)));
  const lanes = svg('g', { class: 'lanes' });
  for (let r = 0; r < P; r++) {
    const y = laneY(r);
    lanes.append(svg('text', { x: left - 10, y: y + lane / 2 + 6, 'text-anchor': 'end', class: 'lane-label' }, `rank ${r}`));
    // The whole lane is hatched; blocks cover it, so what shows through is idle time.
    lanes.append(svg('rect', { x: left, y, width: plotW, height: lane, fill: `url(#${patternId})`, class: 'idle' }));
  }
  root.append(lanes);

  // Axis.
  const ticks = svg('g', { class: 'axis' });
  const step = niceStep(makespan / 10);
  const axisY = top + P * (lane + gap) + 4;
  for (let t = 0; t <= makespan + 1e-9; t += step) {
    ticks.append(svg('line', { x1: x(t), x2: x(t), y1: axisY, y2: axisY + 6, stroke: '#333' }));
    ticks.append(svg('text', { x: x(t), y: axisY + 22, 'text-anchor': 'middle' }, fmtNum(Number(t.toPrecision(10)))));
  }
  ticks.append(svg('text', { x: left + plotW, y: axisY + 38, 'text-anchor': 'end', class: 'axis-title' }, 'time (ms)'));
  root.append(ticks);

  // Blocks.
  const blocks = svg('g', { class: 'blocks' });
  const nodes = new Array(actions.length);
  const perRank = Array.from({ length: P }, () => []);
  const labelled = actions.length <= 3000;
  actions.forEach((a, k) => {
    perRank[a.rank].push(k);
    const bx = x(a.start), bw = Math.max(x(a.end) - x(a.start), 0.5);
    const g = svg('g', { class: 'block', 'data-index': k, 'data-mb': a.microbatch, 'data-type': a.type });
    g.append(svg('rect', { x: bx, y: laneY(a.rank), width: bw, height: lane, fill: COLORS[a.type] || '#999',
      'fill-opacity': a.chunk > 0 ? 0.7 : 1, stroke: '#fff', 'stroke-width': 1 }));
    const label = blockLabel(a);
    if (labelled && bw >= label.length * 8 + 4) {
      g.append(svg('text', { x: bx + bw / 2, y: laneY(a.rank) + lane / 2 + 6, 'text-anchor': 'middle',
        fill: TEXT_ON[a.type] || '#000', class: 'block-label' }, label));
    }
    nodes[k] = g;
    blocks.append(g);
  });
  root.append(blocks);
  const overlay = svg('g', { class: 'overlay', 'pointer-events': 'none' });
  root.append(overlay);
  host.append(root);

  // Hover and keyboard: follow one microbatch, show what the block waited for.
  let current = -1;
  const p2p = (data.costs && data.costs.p2p) || 0;
  function previousOnRank(k) {
    const list = perRank[actions[k].rank];
    const pos = list.indexOf(k);
    return pos > 0 ? list[pos - 1] : -1;
  }
  function select(k) {
    current = k;
    clear(overlay);
    root.classList.toggle('following', k >= 0);
    for (const n of nodes) n.classList.remove('same-mb', 'dep', 'current');
    if (k < 0) {
      info.textContent = 'Point at a block (or focus the timeline and use the arrow keys) to follow its microbatch.';
      return;
    }
    const a = actions[k];
    actions.forEach((b, j) => {
      if (touches(b, a.microbatch) || (a.type === 'FB' && touches(b, a.b_microbatch))) nodes[j].classList.add('same-mb');
    });
    nodes[k].classList.add('current');
    // The dependency it waited on: the input that arrived last (its end, plus the p2p hop when it
    // ran on another rank), as the engine's simulator times it.
    const deps = a.deps || [];
    let waited = -1, readyAt = -Infinity;
    for (const d of deps) {
      const ready = actions[d].end + (actions[d].rank !== a.rank ? p2p : 0);
      if (ready > readyAt) { readyAt = ready; waited = d; }
    }
    for (const d of deps) {
      const b = actions[d];
      nodes[d].classList.add('dep');
      const x1 = x(b.end), y1 = laneY(b.rank) + lane / 2, x2 = x(a.start), y2 = laneY(a.rank) + lane / 2;
      overlay.append(svg('line', { x1, y1, x2, y2, class: d === waited ? 'dep-arrow waited' : 'dep-arrow' }));
      overlay.append(svg('circle', { cx: x2, cy: y2, r: 5, class: 'dep-head' }));
    }
    overlay.append(svg('rect', { x: x(a.start) - 2, y: laneY(a.rank) - 2, width: Math.max(x(a.end) - x(a.start), 0.5) + 4,
      height: lane + 4, class: 'cursor' }));
    const prev = previousOnRank(k);
    const freeAt = prev >= 0 ? actions[prev].end : 0;
    let why;
    if (waited < 0) {
      why = prev >= 0 ? `No input to wait for; it ran once rank ${a.rank} was free (at ${fmtNum(freeAt)} ms).` :
        'No input to wait for; it starts the pipeline.';
    } else {
      const d = actions[waited];
      const hop = d.rank !== a.rank && p2p > 0 ? ` + ${fmtNum(p2p)} ms p2p` : '';
      const src = `${short(d)} on rank ${d.rank}, which ended at ${fmtNum(d.end)} ms${hop}`;
      why = readyAt > freeAt + 1e-9
        ? `It waited ${fmtNum(readyAt - freeAt)} ms for ${src}.`
        : `Its input ${src}, was ready by the time rank ${a.rank} was free (at ${fmtNum(freeAt)} ms).`;
    }
    info.textContent = `Rank ${a.rank}: ${describe(a)}, ${fmtNum(a.start)}–${fmtNum(a.end)} ms. ${why}`;
  }
  select(-1);
  blocks.addEventListener('pointerover', (ev) => {
    const g = ev.target.closest('.block');
    if (g) select(Number(g.dataset.index));
  });
  root.addEventListener('pointerleave', () => select(-1));
  root.addEventListener('focus', () => { if (current < 0 && actions.length) select(0); });
  root.addEventListener('blur', () => select(-1));
  root.addEventListener('keydown', (ev) => {
    if (current < 0) return;
    const a = actions[current];
    const list = perRank[a.rank];
    const pos = list.indexOf(current);
    let next = current;
    if (ev.key === 'ArrowRight') next = list[Math.min(pos + 1, list.length - 1)];
    else if (ev.key === 'ArrowLeft') next = list[Math.max(pos - 1, 0)];
    else if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      const r = a.rank + (ev.key === 'ArrowDown' ? 1 : -1);
      if (r >= 0 && r < P && perRank[r].length) {
        // The block on that rank nearest in time.
        next = perRank[r].reduce((best, j) =>
          Math.abs(actions[j].start - a.start) < Math.abs(actions[best].start - a.start) ? j : best, perRank[r][0]);
      }
    } else if (ev.key === 'Escape') next = -1;
    else return;
    ev.preventDefault();
    select(next);
  });
  return { select, count: actions.length };
}

// The legend shared by every timeline.
export function legend() {
  const items = ['F', 'B', 'I', 'W', 'FB'].map((t) =>
    el('li', {}, el('span', { class: `swatch swatch-${t}`, 'aria-hidden': 'true' }), `${t} ${NAMES[t]}`));
  items.push(el('li', {}, el('span', { class: 'swatch swatch-idle', 'aria-hidden': 'true' }), 'idle (bubble)'));
  items.push(el('li', { class: 'legend-note' }, 'f3, b3: a rank\'s later chunk (lighter)'));
  return el('ul', { class: 'legend', 'aria-label': 'legend' }, items);
}
