// The measurement page. The engine computes every number (POST /api/trace/analyze for uploaded
// or generated traces, GET /api/trace/synth for the generated set, GET /api/schedule for the
// simulated bubble it is compared with); this file keeps the options in the query string, sends
// the files and draws what comes back.
import { ApiError, api, checkField, clear, el, fmtNum, latest, pct, readQuery, renderNav, writeQuery } from './common.js';
import { idlePattern, svg } from './svg.js';
import { drawTraceView, msText, traceLegend } from './traceview.js';
import { initCalibration } from './calibrate.js';
import { hostWidth } from './charts.js';

const DEFAULTS = {
  hta_compat: '0', include_last_step: '0', source: '',
  schedule: '1f1b', pp: '4', microbatches: '8', f: '1', b: '1', p2p: '0',
};
const GEN_FIELDS = ['schedule', 'pp', 'microbatches', 'f', 'b', 'p2p'];
const $ = (id) => document.getElementById(id);

let state = readQuery(DEFAULTS);
let files = [];         // the File objects of the current trace set
let simulated = null;   // the schedule engine's answer for a generated set
let maxUpload = 0;      // from GET /api
let analyses = 0;

renderNav('measurement');
fillForm();
initCalibration();
api('api').then((d) => {
  maxUpload = d.limits.max_upload_bytes;
  $('max-upload').textContent = `${fmtNum(maxUpload / 2 ** 20)} MiB`;
}).catch(() => {});

function fillForm() {
  $('hta_compat').checked = state.hta_compat === '1';
  $('include_last_step').checked = state.include_last_step === '1';
  for (const k of GEN_FIELDS) $(k).value = state[k];
  if ($('schedule').value !== state.schedule) $('schedule').value = DEFAULTS.schedule;
}

function readForm() {
  const s = { ...state };
  s.hta_compat = $('hta_compat').checked ? '1' : '0';
  s.include_last_step = $('include_last_step').checked ? '1' : '0';
  for (const k of GEN_FIELDS) s[k] = String($(k).value).trim();
  return s;
}

function setStatus(text) {
  $('status').textContent = text;
}

// --- Errors --------------------------------------------------------------------------------------

function markField(parameter) {
  for (const k of GEN_FIELDS) $(k).removeAttribute('aria-invalid');
  const id = parameter === 'm' ? 'microbatches' : parameter;
  if (GEN_FIELDS.includes(id)) $(id).setAttribute('aria-invalid', 'true');
}

function showError(message, parameter = '') {
  const box = $('error');
  if (!message) {
    box.hidden = true;
    clear(box);
    markField('');
    return;
  }
  clear(box).append(el('strong', {}, 'The engine refused this: '), message,
    parameter && parameter !== 'body' ? el('span', { class: 'param' }, ` (parameter: ${parameter})`) : '');
  box.hidden = false;
  markField(parameter);
}

function showFileErrors(errors) {
  const box = clear($('file-errors'));
  box.hidden = !errors.length;
  if (!errors.length) return;
  box.append(el('strong', {}, errors.length === 1 ? 'One file could not be used: ' :
    `${errors.length} files could not be used: `));
  // The engine's messages start with the file's name; it is shown once, in bold.
  const rest = (e) => (e.message.startsWith(`${e.file}: `) ? e.message.slice(e.file.length + 2) : e.message);
  box.append(el('ul', {}, errors.map((e) => el('li', { 'data-file': e.file }, el('code', {}, e.file), ': ', rest(e)))));
}

// --- Requests ------------------------------------------------------------------------------------

async function analyse() {
  if (!files.length) return;
  const total = files.reduce((n, f) => n + f.size, 0);
  if (maxUpload && total > maxUpload) {
    showError(`these ${files.length} files hold ${fmtNum(total / 2 ** 20)} MiB; the server takes up to ` +
      `${fmtNum(maxUpload / 2 ** 20)} MiB per upload (the CLI has no limit: infralens trace analyze)`);
    return;
  }
  const form = new FormData();
  for (const f of files) form.append('trace', f, f.name);
  const q = new URLSearchParams();
  if (state.hta_compat === '1') q.set('hta_compat', '1');
  if (state.include_last_step === '1') q.set('include_last_step', '1');
  const job = latest('trace', [document.querySelector('section.results')]);  // aborts the older; greys the old
  const signal = job.signal;
  setStatus(`Analysing ${files.length} file${files.length === 1 ? '' : 's'}…`);
  try {
    const res = await fetch(q.toString() ? `api/trace/analyze?${q}` : 'api/trace/analyze', { method: 'POST', body: form, signal });
    const body = await res.json().catch(() => null);
    if (signal.aborted) return;
    if (!res.ok) throw new ApiError(res.status, body);
    showError('');
    render(body);
    setStatus(`Analysed ${files.length} file${files.length === 1 ? '' : 's'}: ${body.ranks.length} ` +
      `rank${body.ranks.length === 1 ? '' : 's'}${body.errors.length ? `, ${body.errors.length} not usable` : ''}.`);
  } catch (err) {
    if (signal.aborted || err.name === 'AbortError') return;
    showError(err.message, err.parameter);
    showFileErrors((err.body && err.body.errors) || []);
    $('result').hidden = true;
    $('empty').hidden = false;
    showNotes(null);
    setStatus('Nothing to show: see the error above.');
  }
  job.done();
  document.body.dataset.analyses = String(++analyses);
}

function generatorParams(s) {
  const p = {};
  for (const k of GEN_FIELDS) if (s[k] !== '') p[k] = s[k];
  return p;
}

// The generator's typed numbers, checked where they are typed (issue 24): one message beside a bad
// field, no request, no default put in its place.
const GEN_NUMBERS = ['pp', 'microbatches', 'f', 'b', 'p2p'];
for (const k of GEN_NUMBERS) $(k).addEventListener('input', () => checkField($(k)));

async function generate() {
  showError('');  // first: it clears the marks the checks below set
  if (GEN_NUMBERS.filter((k) => checkField($(k))).length) {
    setStatus('');
    document.body.dataset.analyses = String(++analyses);
    return;
  }
  state = { ...readForm(), source: 'synth' };
  writeQuery(state, DEFAULTS);
  const params = generatorParams(state);
  setStatus('Generating the traces…');
  try {
    const [synth, sched] = await Promise.allSettled([
      fetch(`api/trace/synth?${new URLSearchParams(params)}`).then(async (res) => {
        if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
        return res.formData();
      }),
      api('api/schedule', { params }),
    ]);
    if (synth.status === 'rejected') throw synth.reason;
    files = synth.value.getAll('trace');
    simulated = sched.status === 'fulfilled' ? sched.value : null;
  } catch (err) {
    showError(err.message, err.parameter);
    setStatus('');
    document.body.dataset.analyses = String(++analyses);
    return;
  }
  $('files').value = '';
  await analyse();
}

function useFiles(list) {
  files = Array.from(list || []);
  if (!files.length) return;
  simulated = null;
  state = { ...readForm(), source: '' };
  writeQuery(state, DEFAULTS);
  analyse();
}

// --- Drawing -------------------------------------------------------------------------------------

// Segments of the stacked bars; `cls` sets the colour (css/measure.css, Okabe-Ito).
const BREAKDOWN = [
  { name: 'computation', value: (r) => r.compute_us, cls: 'seg-compute' },
  { name: 'communication only (not hidden)', value: (r) => r.comm_only_us, cls: 'seg-comm' },
  { name: 'memory copies only', value: (r) => r.memory_only_us, cls: 'seg-memory' },
  { name: 'idle (no GPU event)', value: (r) => r.idle_us, idle: true },
];
// `word`: "bubble" for a pipeline, "idle" otherwise (isPipeline).
const bubbleSegments = (word) => [
  { name: 'computation', value: (r) => r.pipeline_window_us - r.no_compute_us, cls: 'seg-compute' },
  { name: 'other exposed communication, copies', value: (r) => r.no_compute_us - r.pure_idle_us - r.p2p_wait_us, cls: 'seg-comm' },
  { name: `waiting inside send/recv (${word})`, value: (r) => r.p2p_wait_us, cls: 'seg-wait' },
  { name: `pure idle (${word})`, value: (r) => r.pure_idle_us, idle: true },
];

// Whether the traces are a pipeline: the engine's pipeline.detected when it says, else the
// evidence the answer carries (a schedule recovered from PP: annotations, or time spent waiting
// inside send/recv kernels, which only pipeline transfers count). Without a pipeline, time with no
// computation is idle, not a bubble.
export function isPipeline(d) {
  const p = d.pipeline || {};
  if (typeof p.detected === 'boolean') return p.detected;
  return Boolean(p.recovered) || d.ranks.some((r) => r.p2p_wait_us > 0);
}
let uid = 0;

function legendItems(host, segments, note) {
  clear(host);
  for (const s of segments) {
    host.append(el('li', {}, el('span', { class: s.idle ? 'swatch swatch-idle' : `swatch ${s.cls}`, 'aria-hidden': 'true' }), s.name));
  }
  if (note) host.append(el('li', { class: 'legend-note' }, note));
}

// One horizontal bar per rank, split into `segments` as shares of `total(rank)`; `right` is the
// text after the bar.
function drawStacked(host, ranks, segments, { total, right, label, aria }) {
  clear(host);
  // Laid out at the host's width (text at its CSS size on a phone): a narrow host puts the text
  // after each bar on a line of its own under it.
  const width = hostWidth(host, 300, 1000);
  const narrow = width < 600;
  const left = narrow ? 64 : 84, rightW = narrow ? 14 : 190, rowH = narrow ? 54 : 34, top = 4, axis = 30;
  const barH = narrow ? 26 : rowH - 8;
  const plotW = width - left - rightW;
  const height = top + ranks.length * rowH + axis;
  const patternId = `measure-idle-${++uid}`;
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, class: 'stacked', role: 'img', 'aria-label': aria });
  root.append(svg('defs', {}, idlePattern(patternId)));
  ranks.forEach((r, k) => {
    const y = top + k * rowH;
    const whole = total(r);
    const row = svg('g', { class: 'rank-row', 'data-rank': r.rank });
    row.append(svg('text', { x: left - 10, y: y + 3 + barH / 2 + 5, 'text-anchor': 'end', class: 'lane-label' }, label(r)));
    let x = left;
    for (const s of segments) {
      const v = Math.max(0, s.value(r));
      const w = whole > 0 ? (v / whole) * plotW : 0;
      if (w <= 0) continue;
      const share = whole > 0 ? v / whole : 0;
      const g = svg('g', { class: `segment ${s.idle ? 'seg-idle' : s.cls}`, 'data-segment': s.name });
      g.append(svg('rect', { x, y: y + 3, width: w, height: barH, fill: s.idle ? `url(#${patternId})` : null,
        stroke: '#fff', 'stroke-width': 1 }, svg('title', {}, `${label(r)}: ${s.name} ${fmtNum(v / 1000)} ms (${pct(share)})`)));
      const text = pct(share);
      if (w >= text.length * 8 + 6) {
        g.append(svg('text', { x: x + w / 2, y: y + 3 + barH / 2 + 4, 'text-anchor': 'middle', class: 'seg-label' }, text));
      }
      row.append(g);
      x += w;
    }
    row.append(narrow
      ? svg('text', { x: left, y: y + 3 + barH + 18, class: 'bar-value' }, right(r))
      : svg('text', { x: left + plotW + 10, y: y + rowH / 2 + 5, class: 'bar-value' }, right(r)));
    root.append(row);
  });
  const axisY = top + ranks.length * rowH + 2;
  for (const f of [0, 0.25, 0.5, 0.75, 1]) {
    root.append(svg('line', { x1: left + f * plotW, x2: left + f * plotW, y1: axisY, y2: axisY + 5, stroke: '#333' }));
    root.append(svg('text', { x: left + f * plotW, y: axisY + 20, 'text-anchor': 'middle', class: 'axis-tick' }, `${f * 100}%`));
  }
  host.append(root);
}

const pctOf = (part, whole) => (whole > 0 ? pct(part / whole) : '–');
const msOf = (us) => `${fmtNum(us / 1000)} ms`;
const enginePct = (x) => (x === null || x === undefined ? '–' : `${x.toFixed(2)}%`);

function table(host, head, rows) {
  clear(host).append(el('thead', {}, el('tr', {}, head.map((h, k) => el('th', { scope: 'col' }, h)))));
  const body = el('tbody');
  for (const row of rows) {
    const tr = el('tr', row.attrs || {});
    row.cells.forEach((c, k) => tr.append(k === 0 ? el('th', { scope: 'row' }, c) : el('td', {}, c)));
    body.append(tr);
  }
  host.append(body);
}

function render(d) {
  $('empty').hidden = true;
  $('result').hidden = false;
  showFileErrors(d.errors);
  const p = d.pipeline;
  const pipeline = isPipeline(d);
  const word = pipeline ? 'bubble' : 'idle';
  const BUBBLE = bubbleSegments(word);
  document.body.dataset.pipeline = pipeline ? '1' : '0';
  $('m-bubble-word').textContent = pipeline ? 'Measured bubble' : 'Idle, no computation';
  $('bubble-title').textContent = pipeline ? 'The pipeline bubble, per rank' : 'Time without computation, per rank';
  $('bubble-caption').textContent = pipeline
    ? 'The same step windows on every rank: time without a compute kernel is either pure idle (no GPU event at all), ' +
      'waiting inside a send/recv kernel, or other exposed communication and copies. Bubble = pure idle + send/recv wait.'
    : 'No pipeline in these traces (no PP: annotations, no time waiting inside send/recv), so nothing here is a ' +
      'pipeline bubble: time without a compute kernel is idle (no GPU event at all) or exposed communication and copies.';
  $('m-ranks').textContent = String(d.ranks.length);
  $('m-bubble').textContent = pct(p.bubble_fraction);
  $('m-idle').textContent = pct(p.pure_idle_fraction);
  $('m-wait').textContent = pct(p.p2p_wait_fraction);
  $('m-step').textContent = msOf(p.step_time_us);
  $('m-simulated-box').hidden = !simulated;
  $('m-simulated').textContent = simulated ? pct(simulated.bubble_fraction) : '–';
  $('mode').textContent = `${d.mode === 'hta-compat' ? 'HTA-compatible definitions' : 'InfraLens definitions'}; ` +
    `${d.include_last_step ? 'last ProfilerStep kept' : 'last ProfilerStep dropped (as HTA does)'}; ` +
    `${p.windows_from_steps ? `${p.windows} step window${p.windows === 1 ? '' : 's'} shared by all ranks` : 'no ProfilerSteps: one window over everything analysed'}.`;

  const label = (r) => `rank ${r.rank}`;
  drawStacked($('breakdown'), d.ranks, BREAKDOWN, {
    total: (r) => r.kernel_time_us, label,
    right: (r) => (r.overlap_pct === null ? 'no communication' : `overlap ${enginePct(r.overlap_pct)}`),
    aria: 'Per rank: ' + d.ranks.map((r) => `rank ${r.rank} computation ${enginePct(r.compute_pct)}, ` +
      `communication only ${pctOf(r.comm_only_us, r.kernel_time_us)}, memory only ${pctOf(r.memory_only_us, r.kernel_time_us)}, ` +
      `idle ${enginePct(r.idle_pct)}`).join('; '),
  });
  legendItems($('breakdown-legend'), BREAKDOWN, 'overlap: communication time under computation');
  table($('breakdown-table'), ['Rank', 'Window', 'Computation', 'Comm. only', 'Memory only', 'Idle', 'Overlap'],
    d.ranks.map((r) => ({ cells: [r.rank, msOf(r.kernel_time_us), enginePct(r.compute_pct),
      pctOf(r.comm_only_us, r.kernel_time_us), pctOf(r.memory_only_us, r.kernel_time_us), enginePct(r.idle_pct),
      r.overlap_pct === null ? '–' : enginePct(r.overlap_pct)] })));

  drawStacked($('bubbles'), d.ranks, BUBBLE, {
    total: (r) => r.pipeline_window_us, label,
    right: (r) => `${word} ${enginePct(r.bubble_pct)}`,
    aria: `${pipeline ? 'Pipeline bubble' : 'Idle time'} per rank: ` + d.ranks.map((r) => `rank ${r.rank} ${enginePct(r.bubble_pct)} ` +
      `(pure idle ${pctOf(r.pure_idle_us, r.pipeline_window_us)}, send/recv wait ${pctOf(r.p2p_wait_us, r.pipeline_window_us)})`).join('; '),
  });
  legendItems($('bubble-legend'), BUBBLE);
  table($('bubble-table'), ['Rank', 'Window', 'No compute', 'Pure idle', 'Send/recv wait', 'Other comm./copies', pipeline ? 'Bubble' : 'Idle + wait'],
    d.ranks.map((r) => ({ attrs: { 'data-rank': r.rank }, cells: [r.rank, msOf(r.pipeline_window_us),
      pctOf(r.no_compute_us, r.pipeline_window_us), pctOf(r.pure_idle_us, r.pipeline_window_us),
      pctOf(r.p2p_wait_us, r.pipeline_window_us), pctOf(r.no_compute_us - r.pure_idle_us - r.p2p_wait_us, r.pipeline_window_us),
      enginePct(r.bubble_pct)] })));

  drawTrace(d, pipeline);
  drawSchedule(p, d.timeline);

  const rows = [];
  for (const r of d.ranks) {
    for (const c of r.collectives) {
      rows.push({ attrs: { 'data-rank': r.rank, 'data-kind': c.kind }, cells: [r.rank, c.kind, c.count, msOf(c.time_us),
        c.bytes === null ? '–' : fmtNum(Number((c.bytes / 1e9).toFixed(3))),
        c.algbw_gbps === null ? '–' : c.algbw_gbps.toFixed(2), c.busbw_gbps === null ? '–' : c.busbw_gbps.toFixed(2),
        c.group_size > 0 ? c.group_size : '–'] });
    }
  }
  if (rows.length) {
    table($('collectives'), ['Rank', 'Kind', 'Count', 'Time', 'GB', 'algbw GB/s', 'busbw GB/s', 'Group'], rows);
  } else {
    clear($('collectives')).append(el('caption', {}, 'No communication kernels in these traces.'));
  }

  const fileRows = d.ranks.map((r) => ({ attrs: { 'data-rank': r.rank }, cells: [r.file, r.rank,
    r.world_size > 0 ? r.world_size : '–', `${fmtNum(Number((r.file_bytes / 1e6).toFixed(3)))} MB`,
    `${fmtNum(Number((r.json_bytes / 1e6).toFixed(3)))} MB`, r.trace_events, r.gpu_events, `${r.steps_analyzed} of ${r.steps}`] }));
  table($('files-table'), ['File', 'Rank', 'World size', 'Size', 'JSON', 'Trace events', 'GPU events', 'Steps analysed'], fileRows);
  const tbody = $('files-table').querySelector('tbody');
  for (const e of d.errors) {
    tbody.append(el('tr', { class: 'file-error' }, el('th', { scope: 'row' }, e.file),
      el('td', { colspan: 7, class: 'row-error' }, `not used: ${e.message}`)));
  }
  showNotes(d);
}

function actionType(a) {
  if (a.startsWith('(')) return 'FB';
  const m = /^\d+([FBIW])\d+$/.exec(a);
  return m ? m[1] : '';
}

// The trace view (web/js/traceview.js) and its top-kernels table.
function drawTrace(d, pipeline) {
  const t = d.timeline;
  const host = $('trace-view');
  if (!t || !t.ranks.length) {
    clear(host).append(el('p', {}, 'No timeline in this answer.'));
    return;
  }
  drawTraceView(host, t, { pipeline, details: $('trace-details') });
  const present = new Set();
  for (const r of t.ranks) for (const k of r.kernels) present.add(k[2]);
  traceLegend($('trace-legend'), pipeline, present, t.ranks.some((r) => r.cpu && r.cpu.length));
  const kernels = t.ranks.reduce((n, r) => n + r.kernels_in_windows, 0);
  $('trace-bounds').textContent = t.merged
    ? `${fmtNum(kernels)} kernels and their gaps are more than the ${fmtNum(t.max_intervals)} intervals an answer holds: ` +
      `neighbours shorter than ${msText(t.resolution_us)} and closer than that are drawn merged (${fmtNum(t.intervals)} ` +
      'intervals); the numbers above are exact.'
    : `${fmtNum(kernels)} kernels, each drawn where it ran (${fmtNum(t.intervals)} intervals with the gaps; ` +
      `an answer holds up to ${fmtNum(t.max_intervals)}).`;
  table($('top-kernels'), ['Kernel', 'Class', 'Count', 'GPU time', 'Share'],
    t.top_kernels.map((k) => ({ attrs: { 'data-class': k.class }, cells: [el('code', { class: 'kernel-name' }, k.name),
      k.class, k.count, msOf(k.total_us), pct(k.share)] })));
}

// The measured costs as the pipeline page takes them (its URL parameters f, b, i, w, p2p: ms per
// rank per microbatch): each action type's mean GPU time per model chunk, times the chunks per
// rank; p2p the mean send kernel.
export function measuredCosts(t, vpp) {
  const out = {};
  if (!t || !t.action_us) return out;
  const round = (ms) => String(Number(ms.toPrecision(4)));
  for (const k of ['f', 'b', 'i', 'w']) {
    if (t.action_us[k] !== null && t.action_us[k] !== undefined) out[k] = round((t.action_us[k] * Math.max(vpp || 1, 1)) / 1000);
  }
  if (t.p2p_send_us !== null && t.p2p_send_us !== undefined) out.p2p = round(t.p2p_send_us / 1000);
  return out;
}

function drawSchedule(p, timeline) {
  const note = clear($('schedule-note'));
  const grid = clear($('schedule-grid'));
  if (!p.recovered) {
    note.append(p.note ? `Not recovered: ${p.note}.` :
      'These traces carry no PP: annotations (PyTorch pipelining wraps each action in one), so there is no schedule to recover.');
    return;
  }
  note.append(`Recovered from the PP: annotations: P = ${p.pp}, v = ${p.vpp}, m = ${p.microbatches}; ${p.note}. ` +
    'Each row is one pipeline rank\'s actions in the order they ran (not to scale).');
  if (p.matches.length) {
    const q = new URLSearchParams({ schedule: p.matches[0], pp: p.pp, microbatches: p.microbatches });
    if (p.vpp > 1) q.set('vpp', p.vpp);
    const costs = measuredCosts(timeline, p.vpp);
    for (const [k, v] of Object.entries(costs)) q.set(k, v);
    const said = Object.entries(costs).map(([k, v]) => `${k === 'p2p' ? 'p2p' : k.toUpperCase()} ${v} ms`).join(', ');
    note.append(' ', el('a', { href: `pipeline.html?${q}`, id: 'pipeline-link' }, `Open ${p.matches[0]} in the pipeline lab`),
      said ? ` with the costs measured here (${said} per rank and microbatch).` : '.');
  }
  const shown = 96;
  const t = el('table', { class: 'order-grid measured', 'aria-label': 'Each pipeline rank\'s actions in the order they ran' });
  for (const r of p.ranks) {
    const tr = el('tr', { 'data-pp-rank': r.pp_rank }, el('th', { scope: 'row' }, `pp rank ${r.pp_rank}`, r.rank !== r.pp_rank ? ` (rank ${r.rank})` : ''));
    for (const a of r.actions.slice(0, shown)) {
      const type = actionType(a);
      tr.append(el('td', { 'data-type': type, title: a }, a));
    }
    if (r.actions.length > shown) tr.append(el('td', { class: 'more' }, `… ${r.actions.length - shown} more`));
    t.append(tr);
  }
  grid.append(t);
}

// --- What to notice, and common misunderstandings: the numbers of this very analysis -------------

function showNotes(d) {
  const notes = [];
  const myths = clear($('myths'));
  const myth = (claim, answer) => myths.append(el('dt', {}, `“${claim}”`), el('dd', {}, answer));
  if (!d || !d.ranks.length) {
    clear($('notice')).append(el('li', {}, 'Analyse a trace set to see what its numbers say.'));
    myth('Time inside NCCL send/recv kernels measures the link.', 'A receive kernel runs from when it is posted until its data has arrived: much of it can be waiting.');
    myth('Idle in the breakdown is the pipeline bubble.', 'A GPU waiting inside a receive kernel is not idle, and it does no work either.');
    return;
  }
  const p = d.pipeline, ranks = d.ranks;
  const share = (r, us) => (r.pipeline_window_us > 0 ? us / r.pipeline_window_us : 0);
  if (p.window_us > 0) {
    const pipeline = isPipeline(d);
    let text = `${pipeline ? 'Measured bubble' : 'No pipeline in these traces; time without computation (idle + send/recv wait)'} ${pct(p.bubble_fraction)} of ${ranks.length} rank${ranks.length === 1 ? '' : 's'} × the ` +
      `${msOf(p.step_time_us)} step window: ${pct(p.pure_idle_fraction)} with no GPU event at all and ` +
      `${pct(p.p2p_wait_fraction)} inside send/recv kernels with nothing to compute.`;
    if (simulated) {
      const same = Math.abs(simulated.bubble_fraction - p.bubble_fraction) < 5e-5;
      text += ` The schedule engine's simulation of ${simulated.schedule} says ${pct(simulated.bubble_fraction)}` +
        (same ? ': the measurement recovers it from the traces alone.' :
          `; the traces differ from the simulation by ${pct(Math.abs(simulated.bubble_fraction - p.bubble_fraction))}` +
          ' (the generated traces place each action exactly where the simulator did, so look at the step gap and the options).');
    }
    notes.push(text);
  }
  const waiting = ranks.filter((r) => r.p2p_wait_us > 0);
  if (ranks.length >= 2 && waiting.length) {
    const most = ranks.reduce((a, b) => (share(b, b.p2p_wait_us) > share(a, a.p2p_wait_us) ? b : a));
    const idlest = ranks.reduce((a, b) => (share(b, b.pure_idle_us) > share(a, a.pure_idle_us) ? b : a));
    notes.push(`Rank ${most.rank} waits ${pct(share(most, most.p2p_wait_us))} of its window inside receives and is purely ` +
      `idle ${pct(share(most, most.pure_idle_us))} of it; rank ${idlest.rank} has the most pure idle, ` +
      `${pct(share(idlest, idlest.pure_idle_us))} (and ${pct(share(idlest, idlest.p2p_wait_us))} inside receives). A receive ` +
      'is posted as soon as the rank finishes its previous action, so a rank that would sit idle shows a running NCCL ' +
      'kernel instead: the same bubble, under another name.');
  }
  // The rank with the most time inside send/recv with nothing to compute: there the breakdown's
  // "idle" and the bubble differ most for that reason (the windows differ too: a rank's own
  // first-to-last span against the step window shared by all ranks).
  const gap = waiting.length ? waiting.reduce((a, b) => (share(b, b.p2p_wait_us) > share(a, a.p2p_wait_us) ? b : a)) : null;
  if (gap) {
    notes.push(`Rank ${gap.rank}: the temporal breakdown counts ${enginePct(gap.idle_pct)} of its time as idle, the pipeline ` +
      `view ${enginePct(gap.bubble_pct)} as bubble, ${pct(share(gap, gap.p2p_wait_us))} of it inside send/recv kernels that ` +
      'wait: a waiting kernel is not idle, and it does no work.');
  }
  const comm = ranks.filter((r) => r.overlap_pct !== null);
  if (comm.length) {
    const hidden = comm.filter((r) => r.overlap_pct > 0);
    notes.push(hidden.length
      ? `Communication hidden under computation: ${comm.map((r) => `rank ${r.rank} ${enginePct(r.overlap_pct)}`).join(', ')}. ` +
        'The rest of each rank\'s communication time is on its critical path unless the rank had nothing to compute anyway.'
      : `None of the communication ran under computation (overlap 0% on ${comm.length === ranks.length ? 'every rank' :
        `${comm.length} ranks`}): each ms of it is exposed, unless the rank had nothing to compute at that moment anyway.`);
  }
  if (p.recovered) {
    notes.push(p.matches.length
      ? `The PP: annotations give every rank's order of actions, and it is exactly ${p.matches.join(', ')} with P = ${p.pp}, ` +
        `m = ${p.microbatches}: the schedule that ran is the one that was asked for.`
      : `The PP: annotations give every rank's order of actions; ${p.note}.`);
  }
  clear($('notice')).append(...notes.map((n) => el('li', {}, n)));

  // The receive with the most time, for the bandwidth misunderstanding.
  let recv = null;
  for (const r of ranks) {
    for (const c of r.collectives) {
      if (c.kind === 'recv' && c.algbw_gbps !== null && (!recv || c.time_us > recv.c.time_us)) recv = { r, c };
    }
  }
  myth('Time inside NCCL send/recv kernels measures the link.', recv && recv.r.p2p_wait_us > 0
    ? `Here rank ${recv.r.rank}'s ${recv.c.count} receives "achieve" ${recv.c.algbw_gbps.toFixed(2)} GB/s over ` +
      `${msOf(recv.c.time_us)}, but ${msOf(recv.r.p2p_wait_us)} of that rank's window is spent in send/recv with nothing to ` +
      'compute: the kernel was posted early and sat waiting for its sender. Bytes over kernel time is a bandwidth only for ' +
      'kernels that start when their data is ready.'
    : 'A receive kernel runs from when it is posted until its data has arrived: much of that can be waiting for the sender, ' +
      'so bytes over kernel time understates the link.');
  myth('Idle in the breakdown is the pipeline bubble.', gap
    ? `Rank ${gap.rank} is idle ${enginePct(gap.idle_pct)} of its time by the breakdown, yet ${enginePct(gap.bubble_pct)} of its ` +
      'step window is bubble. The breakdown asks "was any kernel running?"; the bubble asks "was the GPU computing?". A rank ' +
      'waiting inside a receive answers yes to the first and no to the second.'
    : 'The breakdown asks "was any kernel running?"; the bubble asks "was the GPU computing?". A GPU waiting inside a ' +
      'receive kernel answers yes to the first and no to the second.');
  const busy = ranks.reduce((a, b) => ((100 - b.idle_pct - b.compute_pct) > (100 - a.idle_pct - a.compute_pct) ? b : a));
  myth('A GPU that is always busy is doing useful work.',
    `nvidia-smi's utilization is the share of time some kernel runs: ${enginePct(100 - busy.idle_pct)} on rank ${busy.rank}, ` +
    `of which computation is ${enginePct(busy.compute_pct)} of the window. Kernels that move or wait for data count as busy too.`);
  myth('HTA and InfraLens disagree, so one of them is wrong.', 'They use different definitions in a few places ' +
    '(docs/measurement.md lists them); tick "HTA-compatible" to get Holistic Trace Analysis\' exact numbers on the same files.');
}

// --- Controls ------------------------------------------------------------------------------------

$('files').addEventListener('change', (ev) => useFiles(ev.target.files));
for (const id of ['hta_compat', 'include_last_step']) {
  $(id).addEventListener('change', () => {
    state = { ...state, hta_compat: $('hta_compat').checked ? '1' : '0', include_last_step: $('include_last_step').checked ? '1' : '0' };
    writeQuery(state, DEFAULTS);
    analyse();
  });
}
$('generate').addEventListener('click', generate);
// The sample: the generator's defaults (1F1B, 4 ranks, 8 microbatches), generated and analysed.
$('sample').addEventListener('click', () => {
  for (const k of GEN_FIELDS) $(k).value = DEFAULTS[k];
  generate();
});
$('controls').addEventListener('submit', (ev) => { ev.preventDefault(); generate(); });
const drop = $('drop');
for (const type of ['dragenter', 'dragover']) {
  drop.addEventListener(type, (ev) => { ev.preventDefault(); drop.classList.add('dragging'); });
}
drop.addEventListener('dragleave', () => drop.classList.remove('dragging'));
drop.addEventListener('drop', (ev) => {
  ev.preventDefault();
  drop.classList.remove('dragging');
  useFiles(ev.dataTransfer && ev.dataTransfer.files);
});

showNotes(null);
if (state.source === 'synth') generate();
