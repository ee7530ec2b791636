// Lab 12, parallelism design. The engine searches and evaluates (GET /api/plan, /api/presets),
// fills the worksheet (/api/worksheet), checks a learner's (/api/worksheet/check) and exports
// (/api/export); this file reads the controls, keeps them in the query string and draws the ranked
// plans, the selected plan's step-time and memory breakdowns, its communication, the explanation,
// its worksheet and its exports.
import { api, checkField, clear, el, fillFields, fmtBytes, fmtSeconds, gib, latest, markInvalid, pct, readFields, readQuery, renderNav, showRefusal, wireCopyLink, writeQuery } from './common.js';
import { drawStacked, stackedLegend } from './charts.js';
import { linkChip } from './links.js';

const DEFAULTS = {
  model: 'llama3-70b', cluster: 'dgx-h100', gpus: '64', global_batch: '512', seq: '0', precision: 'bf16',
  schedule: '', top: '10', sort: 'rank', dir: 'asc', sel: '1',
  framework: '', attention: '', tp_overlap: '', dp_overlap: '',
  my_tp: '8', my_pp: '4', my_cp: '1', my_ep: '1', my_vpp: '0', my_schedule: '1f1b', my_zero: '1', my_micro_batch: '1',
  my_recompute: 'selective', my_recompute_modules: '', my_sp: '1', my_first_stage_layers: '', my_last_stage_layers: '',
  my_layout: '',
  mine: '0', ex: '', ws: '',
  // Efficiency constants as CSV text (the API's `efficiency`; the measurement page's calibration
  // links here with them): sent with every request of the job, shown in #efficiency-note.
  efficiency: '',
};
// What the framework does (docs/planner.md): sent with every request of the job.
const JOB = ['model', 'cluster', 'gpus', 'global_batch', 'seq', 'precision', 'schedule', 'top',
  'framework', 'attention', 'tp_overlap', 'dp_overlap'];
const MINE = ['my_tp', 'my_pp', 'my_cp', 'my_ep', 'my_vpp', 'my_schedule', 'my_zero', 'my_micro_batch', 'my_recompute',
  'my_recompute_modules', 'my_sp', 'my_first_stage_layers', 'my_last_stage_layers', 'my_layout'];
const CHECKBOXES = ['my_sp'];
const $ = (id) => document.getElementById(id);

// Okabe-Ito, the pipeline bubble hatched as idle time is on the pipeline page.
export const STEP_PARTS = [
  { key: 'compute', label: 'compute', color: '#0072B2' },
  { key: 'tp_comm', label: 'TP / SP collectives', color: '#E69F00' },
  { key: 'cp_comm', label: 'CP exchange not hidden', color: '#F0E442' },
  { key: 'ep_comm', label: 'EP all-to-all', color: '#CC79A7' },
  { key: 'pp_comm', label: 'pipeline send/recv', color: '#56B4E9' },
  { key: 'bubble', label: 'pipeline bubble', color: '#bdbdbd', hatched: true },
  { key: 'dp_comm', label: 'DP not hidden', color: '#009E73' },
  { key: 'fsdp_comm', label: 'FSDP gathers not hidden', color: '#D55E00' },
  { key: 'contention', label: 'compute slowed beside collectives', color: '#80B9D8' },
  { key: 'optimizer', label: 'optimizer step', color: '#000000' },
  { key: 'offload', label: 'waiting for activation offloading', color: '#999999' },
];
export const MEMORY_PARTS = [
  { key: 'weights_bytes', label: 'weights', color: '#0072B2' },
  { key: 'gradients_bytes', label: 'gradients', color: '#E69F00' },
  { key: 'optimizer_bytes', label: 'optimizer states', color: '#009E73' },
  { key: 'activations_bytes', label: 'activations', color: '#CC79A7' },
];
const COLUMNS = [
  { key: 'rank', title: '#', value: (p) => p.rank },
  { key: 'layout', title: 'Layout', value: (p) => p.layout, text: true },
  { key: 'step', title: 'Step time', value: (p) => p.step_time_s },
  { key: 'tokens', title: 'Tokens / s', value: (p) => p.tokens_per_s },
  { key: 'tflops', title: 'TFLOP/s per GPU', value: (p) => p.model_tflops_per_gpu },
  { key: 'mfu', title: 'MFU', value: (p) => p.mfu },
  { key: 'mem', title: 'Memory (worst rank)', value: (p) => p.memory.total_bytes },
  { key: 'bubble', title: 'Bubble', value: (p) => p.bubble_fraction },
  { key: 'microbatches', title: 'Microbatches', value: (p) => p.microbatches },
];

let state = readQuery(DEFAULTS);
let search = null;   // the /api/plan search document
let mine = null;     // the /api/plan evaluation of the user's layout
let renders = 0;

// Marks a finished drawing and the state it shows (the browser tests wait on these). A form refused
// where it is typed shows the form as typed, not the last state asked for: a test waiting for its
// value must not take an earlier refusal (a blur's change event) for the answer.
function rendered(shown = state) {
  document.body.dataset.state = JSON.stringify(shown);
  document.body.dataset.renders = String(++renders);
}

renderNav('design');

const fillForm = () => fillFields([...JOB, ...MINE], state, DEFAULTS, CHECKBOXES);
const readForm = () => ({ ...state, ...readFields([...JOB, ...MINE], CHECKBOXES) });

function jobParams(s) {
  const p = {};
  for (const k of JOB) if (s[k] !== '' && !(k === 'seq' && s[k] === '0')) p[k] = s[k];
  if (s.efficiency) p.efficiency = s.efficiency;
  return p;
}

function mineParams(s) {
  const p = jobParams(s);
  delete p.top;
  for (const k of MINE) {
    const name = k.slice(3);
    if (k === 'my_sp') { if (s[k] === '1') p.sp = 1; continue; }
    if (s[k] !== '') p[name] = s[k];
  }
  if (p.vpp === '0') delete p.vpp;
  return p;
}

// The CLI line for the same search, for runs beyond the server's limits.
function cliLine(s) {
  const p = jobParams(s);
  const parts = ['infralens plan'];
  for (const [k, v] of Object.entries(p)) {
    // The CLI reads the constants from a file: the one the measurement page downloads.
    parts.push(k === 'efficiency' ? '--efficiency efficiency.csv' : `--${k.replaceAll('_', '-')} ${v}`);
  }
  parts.push('--explain');
  return parts.join(' ');
}

function showError(boxId, err, fields) {
  const param = err ? err.parameter : '';
  const field = fields.includes(param) ? param : fields.includes(`my_${param}`) ? `my_${param}` : '';
  markInvalid(fields, field ? [field] : [], boxId);
  showRefusal(boxId, err, param ? ` (parameter: ${param})` : '');
}

let timer = 0;
function later(delay) {
  clearTimeout(timer);
  timer = setTimeout(update, delay);
}

// A search answers in two passes when it is large: the first QUICK_SECONDS of it (every layout's
// memory is estimated, then the layouts that fit are simulated lowest bound on step time first, so
// the likeliest winners come first; docs/planner.md), drawn and usable at once and
// labelled partial, then the whole search (up to the server's time limit) in the background,
// which replaces it. A search that ends inside the first pass is the whole answer.
const QUICK_SECONDS = 1;
let refining = null;  // the AbortController of the background pass, while it runs
let refiningSearch = false;  // the search on show is the first pass, and the whole one is coming

function stopRefining() {
  if (refining) refining.abort();
  refining = null;
  refiningSearch = false;
  delete document.body.dataset.refining;
}

// The job's typed numbers, checked where they are typed (issue 24): a bad one is said beside
// itself and nothing is searched until it is fixed; no value becomes a default.
const CHECKED = ['gpus', 'global_batch', 'seq', 'top'];

// Your layout's numbers, checked the same way once it is asked for (empty stage layers: even).
const MINE_CHECKED = ['my_tp', 'my_pp', 'my_cp', 'my_ep', 'my_vpp', 'my_micro_batch', 'my_first_stage_layers', 'my_last_stage_layers'];

async function update() {
  if (CHECKED.filter((k) => checkField($(k))).length) { rendered(readForm()); return; }
  if (state.mine === '1' && MINE_CHECKED.filter((k) => checkField($(k))).length) { rendered(readForm()); return; }
  state = readForm();
  writeQuery(state, DEFAULTS);
  $('cli-line').textContent = cliLine(state);
  stopRefining();
  // A newer search aborts the older; the old ranking stays, greyed, until the new one arrives.
  const job = latest('plan', ['results', 'selected', 'explain']);
  const signal = job.signal;
  const requests = [api('api/plan', { params: { ...jobParams(state), search_seconds: QUICK_SECONDS }, signal })];
  if (state.mine === '1') requests.push(api('api/plan', { params: mineParams(state), signal }));
  let [s, m] = await Promise.allSettled(requests);
  if (job.stale) return;
  if (s.status === 'rejected' && s.reason.parameter === 'search_seconds') {
    // Nothing that fits among the first pass's layouts: wait for the whole search.
    [s] = await Promise.allSettled([api('api/plan', { params: jobParams(state), signal })]);
    if (job.stale) return;
  }
  search = s.status === 'fulfilled' ? s.value : null;
  mine = m && m.status === 'fulfilled' ? m.value : null;
  showError('error', s.reason, JOB);
  showError('mine-error', m && m.status === 'rejected' ? m.reason : null, MINE);
  if (state.mine === '1' && !mine && state.sel === 'mine') state.sel = '1';
  // Stopped by the first pass's own bound (not by the server's limit, which the whole search
  // would meet again sooner): the whole search follows.
  refiningSearch = !!(search && search.partial && search.wall_s >= 0.9 * QUICK_SECONDS);
  draw();
  job.done();
  rendered();
  if (refiningSearch) refine(state);
}

// The background pass: the whole search, drawn when it arrives unless the job changed meanwhile.
// body[data-refining] is set while it runs (the browser tests and the budget wait on it).
async function refine(asked) {
  const controller = new AbortController();
  refining = controller;
  document.body.dataset.refining = '1';
  let whole = null, error = null;
  try {
    whole = await api('api/plan', { params: jobParams(asked), signal: controller.signal });
  } catch (err) {
    error = err;
  }
  if (refining !== controller) return;  // a newer job took over
  refining = null;
  refiningSearch = false;
  delete document.body.dataset.refining;
  // Keep the first pass when the whole search failed (the server's limit with nothing that fits,
  // a server gone): it is still a ranking, labelled partial.
  if (whole) search = whole;
  else if (error && error.name !== 'AbortError') console.warn('the whole search failed:', error.message);
  draw();
  rendered();
}

// Every plan on show: the ranked ones (rank 1..k) and the user's own, if evaluated.
function plans() {
  const out = search ? search.plans.map((p, k) => ({ ...p, rank: k + 1, id: String(k + 1) })) : [];
  if (mine) out.push({ ...mine.plan, rank: null, id: 'mine', yours: true });
  return out;
}

function selectedPlan() {
  const all = plans();
  return all.find((p) => p.id === state.sel) || all[0] || null;
}

function select(id) {
  state.sel = id;
  writeQuery(state, DEFAULTS);
  draw();
  rendered();
}

function draw() {
  showSummary();
  showTable();
  showSelected();
  showExplanation();
  showNotes();
  showWorksheet();
  showExport();
  if (checkedJob && checkedJob !== JSON.stringify(checkParams(state))) {
    checkedJob = '';
    clear($('check-result')).append(el('p', { class: 'info' }, 'The job changed: check your worksheet again.'));
  }
}

// Which efficiency constants the plan used (request.efficiency.gemm_from): the calibrated ones
// the query string carries, with a way back to the built-in table.
function showEfficiency() {
  const note = $('efficiency-note');
  const r = search && search.request;
  note.hidden = !state.efficiency;
  if (!state.efficiency) return;
  const e = r && r.efficiency;
  clear(note).append(el('strong', {}, 'Calibrated efficiency constants in use'),
    e ? `: GEMM ${e.gemm.toFixed(3)} · d / (d + ${e.gemm_half_dim.toFixed(0)}), attention ${e.attention.toFixed(3)}, ` +
      `FlashAttention-2 ${e.attention_fa2.toFixed(3)}, HBM ${e.hbm.toFixed(3)} on ${r.gpu} (GEMM from ${e.gemm_from}). ` : '. ',
    el('button', { type: 'button', class: 'link', id: 'efficiency-clear', onclick: () => { state.efficiency = ''; update(); } },
      'Use the built-in constants'));
}

function showSummary() {
  showEfficiency();
  const ids = ['m-step', 'm-tokens', 'm-mfu', 'm-mem'];
  const note = $('partial-note');
  note.hidden = !(search && search.partial);
  note.textContent = '';
  if (search && search.partial) {
    const looked = search.evaluated + search.refused;
    note.textContent = `partial: ${looked.toLocaleString('en-US')} of ${search.layouts.toLocaleString('en-US')} layouts evaluated. ` +
      (refiningSearch
        ? `This is the best of the first ${QUICK_SECONDS} s of the search (every layout's memory, then the most promising ` +
          'layouts by a lower bound on their step time first); ' +
          'the whole search is running and will replace it.'
        : "The search reached the server's limit; this is the best of those it reached, and a layout it did not reach may be " +
          'faster. Name a schedule or fewer GPUs, or run the CLI line on every core.');
  }
  if (!search || !search.plans.length) {
    $('published-note').hidden = true;
    for (const id of ids) $(id).textContent = '–';
    $('ranked-caption').textContent = '';
    return;
  }
  const w = search.plans[0], r = search.request;
  // The winner above every published run on this GPU at this precision (the plan's text says
  // the same: plan::AbovePublishedText).
  const best = search.uncertainty && search.uncertainty.published_best;
  const above = $('published-note');
  above.hidden = !(best && w.mfu > best.best_mfu);
  above.textContent = above.hidden ? '' :
    `MFU ${pct(w.mfu)} is above every published run on ${best.gpu} in ${best.precision} the model was checked on ` +
    `(${best.published_runs} run${best.published_runs === 1 ? '' : 's'}; the best, ${best.best_run}, reached ` +
    `${pct(best.best_mfu)}).`;
  $('m-step').textContent = `${w.step_time_s.toFixed(3)} s`;
  $('m-tokens').textContent = Math.round(w.tokens_per_s).toLocaleString('en-US');
  $('m-mfu').textContent = pct(w.mfu);
  $('m-mem').textContent = `${(w.memory.total_bytes / 2 ** 30).toFixed(1)} / ${gib(w.memory.usable_bytes)}`;
  $('ranked-caption').textContent =
    `${r.model} on ${r.gpus} × ${r.gpu} (${r.cluster}, ${r.nodes} node${r.nodes === 1 ? '' : 's'}); global batch ` +
    `${r.global_batch} × ${r.seq} tokens; ${r.precision}. Searched ${search.evaluated + search.refused}` +
    `${search.partial ? ` of ${search.layouts}` : ''} layouts in ` +
    `${search.wall_s.toFixed(2)} s: ${search.evaluated} evaluated, ${search.refused} refused (degrees or batch do not divide). ` +
    `The ${search.plans.length} fastest that fit${search.partial ? ' among them (partial ranking)' : ''}:`;
}

// Selective recompute in words: "selective", or with its modules where they are not Megatron's
// default attention core alone, "selective (core_attn layernorm mlp)".
export function recomputeText(p) {
  const mods = p.recompute === 'selective' ? p.recompute_modules : '';
  return mods && mods !== 'core_attn' ? `${p.recompute} (${mods})` : p.recompute;
}

// A selective module list in a few characters (the attention core, the default, left out).
const MODULE_TAGS = { layernorm: 'ln', moe_act: 'act', mla_up_proj: 'mla', mlp: 'mlp', shared_experts: 'shx',
  moe: 'moe' };

// A layout in a few characters: tp8·pp4·v5·dp2·z1 (chunks per rank v, cp/ep when used, ZeRO z),
// then what else tells plans of the same degrees apart (micro-batch, recompute and its modules,
// schedule).
export function shortTag(p) {
  const par = p.parallel;
  const parts = [`tp${par.tp}`, `pp${par.pp}`];
  if (par.vpp > 1) parts.push(`v${par.vpp}`);
  if (par.cp > 1) parts.push(`cp${par.cp}`);
  if (par.ep > 1) parts.push(`ep${par.ep}`);
  parts.push(`dp${par.dp}`, `z${par.zero}`);
  if (p.micro_batch > 1) parts.push(`mb${p.micro_batch}`);
  if (p.recompute && p.recompute !== 'selective') parts.push(p.recompute === 'full' ? 'rc-full' : 'rc-none');
  const mods = p.recompute === 'selective' && p.recompute_modules ? p.recompute_modules.split(' ') : [];
  const tags = mods.filter((m) => MODULE_TAGS[m]).map((m) => MODULE_TAGS[m]);
  if (tags.length) parts.push(`rc-${tags.join('+')}`);
  const sched = { 'zb-h1': 'zbh1', zbv: 'zbv', dualpipev: 'dpv', gpipe: 'gpipe' }[p.schedule];
  if (sched) parts.push(sched);
  return parts.join('·');
}

// The plan's placement on the topology page and its schedule on the pipeline page (their URL state).
export function topologyHref(p, s, request) {
  const par = p.parallel;
  const q = { cluster: s.cluster, nodes: request ? request.nodes : '', tp: par.tp, pp: par.pp, dp: par.dp, cp: par.cp,
    ep: par.ep, order: par.order, model: s.model, global_batch: s.global_batch, micro_batch: p.micro_batch,
    zero: par.zero, sp: par.sequence_parallel ? '1' : '0' };
  return `topology.html?${new URLSearchParams(q)}`;
}
export function pipelineHref(p) {
  const par = p.parallel;
  const q = { schedule: p.schedule, pp: par.pp, microbatches: p.microbatches };
  if (par.vpp > 1) q.vpp = par.vpp;
  return `pipeline.html?${new URLSearchParams(q)}`;
}

const expanded = new Set();  // plans whose details row is open

function showTable() {
  const table = clear($('plans'));
  table.classList.add('ranked');
  clear($('axis-note'));
  const all = plans();
  if (!all.length) return;
  const col = COLUMNS.find((c) => c.key === state.sort) || COLUMNS[0];
  const dir = state.dir === 'desc' ? -1 : 1;
  const rows = [...all].sort((a, b) => {
    const va = col.value(a), vb = col.value(b);
    if (va === vb) return 0;
    if (va === null) return 1;
    if (vb === null) return -1;
    return (col.text ? String(va).localeCompare(String(vb)) : va - vb) * dir;
  });
  // Step-time bars show the difference from the fastest listed plan, not the step time from zero:
  // plans a few percent apart would otherwise look equal.
  const times = all.map((p) => p.step_time_s);
  const best = Math.min(...times), worst = Math.max(...times);
  const span = worst - best;
  const head = el('tr');
  // Tokens/s and TFLOP/s follow the step time for one job: they wait in the details row.
  const shown = [['rank', ''], ['layout', ''], ['step', 'bar-cell'], ['mfu', 'wide'], ['mem', 'wide']];
  for (const [key, cls] of shown) {
    const c = COLUMNS.find((x) => x.key === key);
    const active = c.key === col.key;
    head.append(el('th', { scope: 'col', 'aria-sort': active ? (dir > 0 ? 'ascending' : 'descending') : null,
      class: [c.text ? 'left' : '', cls].filter(Boolean).join(' ') || null },
    el('button', { type: 'button', class: 'sort', 'data-sort': c.key,
      onclick: () => {
        if (state.sort === c.key) state.dir = state.dir === 'asc' ? 'desc' : 'asc';
        else { state.sort = c.key; state.dir = 'asc'; }
        writeQuery(state, DEFAULTS);
        showTable();
        rendered();
      } }, { step: 'Step time, vs. fastest', mem: 'Memory' }[key] || c.title,
    el('span', { class: 'sort-mark', 'aria-hidden': 'true' }, active ? (dir > 0 ? ' ▲' : ' ▼') : ''))));
  }
  head.append(el('th', { scope: 'col' }, el('span', { class: 'visually-hidden' }, 'Details')));
  table.append(el('thead', {}, head));
  const body = el('tbody');
  const sel = selectedPlan();
  for (const p of rows) {
    const fits = p.memory.fits;
    const tag = shortTag(p);
    const open = expanded.has(p.id);
    const detailsId = `details-${p.id}`;
    const slower = p.step_time_s / best - 1;
    body.append(el('tr', { class: [p.id === sel.id ? 'current' : '', p.yours ? 'yours' : ''].filter(Boolean).join(' ') || null,
      'data-id': p.id, 'data-layout': p.layout, 'data-tag': tag },
    el('td', {}, p.yours ? 'yours' : p.rank),
    el('th', { scope: 'row', class: 'left' }, el('button', { type: 'button', class: 'link tag', title: p.layout,
      'aria-label': `Show the breakdown of ${p.layout}`, onclick: () => select(p.id) },
    // A line may break after each '·' on a narrow screen.
    tag.split('·').flatMap((part, j) => (j ? ['·', el('wbr'), part] : [part])))),
    el('td', { class: 'bar-cell', 'data-delta': slower.toFixed(6) }, `${p.step_time_s.toFixed(3)} s`,
      el('span', { class: 'delta' }, slower < 5e-5 ? 'fastest listed' : `+${(100 * slower).toFixed(1)}%`),
      el('span', { class: 'bar-track', 'aria-hidden': 'true' }, el('span', { class: 'bar-fill' }))),
    el('td', { class: 'wide' }, pct(p.mfu)),
    el('td', { class: fits ? 'wide mem' : 'wide mem oom' }, gib(p.memory.total_bytes), fits ? '' : ' (does not fit)'),
    el('td', {}, el('button', { type: 'button', class: 'details-toggle', 'aria-expanded': String(open), 'aria-controls': detailsId,
      'aria-label': `Details of ${tag}`,
      onclick: () => {
        if (expanded.has(p.id)) expanded.delete(p.id);
        else expanded.add(p.id);
        showTable();
        rendered();
      } }, open ? 'less' : 'more'))));
    const details = el('tr', { class: 'details', id: detailsId, hidden: !open },
      el('td', { colspan: 6 },
        el('dl', {},
          el('div', {}, el('dt', {}, 'Layout'), el('dd', { class: 'full-layout' }, p.layout)),
          el('div', {}, el('dt', {}, 'Schedule'), el('dd', {}, `${p.schedule}, ${p.microbatches} microbatches of ${p.micro_batch}`)),
          el('div', {}, el('dt', {}, 'Recompute'), el('dd', {}, recomputeText(p))),
          el('div', {}, el('dt', {}, 'Tokens / s'), el('dd', {}, Math.round(p.tokens_per_s).toLocaleString('en-US'))),
          el('div', {}, el('dt', {}, 'MFU'), el('dd', {}, pct(p.mfu))),
          el('div', {}, el('dt', {}, 'TFLOP/s per GPU'), el('dd', {}, p.model_tflops_per_gpu.toFixed(1))),
          el('div', {}, el('dt', {}, 'Memory (worst rank)'), el('dd', {}, `${gib(p.memory.total_bytes)} of ${gib(p.memory.usable_bytes)}`)),
          el('div', {}, el('dt', {}, 'Bubble'), el('dd', {}, pct(p.bubble_fraction)))),
        el('p', { class: 'buttons' },
          el('a', { class: 'plan-link topology-link', href: topologyHref(p, state, search && search.request) }, `Placement of ${tag} on the topology page`),
          ' ',
          el('a', { class: 'plan-link pipeline-link', href: pipelineHref(p) }, `Its schedule on the pipeline page`))));
    body.append(details);
  }
  // Bar widths, set through the CSSOM (the CSP allows no style attributes).
  for (const cell of body.querySelectorAll('td.bar-cell')) {
    const t = all.find((p) => p.id === cell.parentElement.dataset.id).step_time_s;
    cell.querySelector('.bar-fill').style.width = `${(span > 0 ? (100 * (t - best)) / span : 0).toFixed(1)}%`;
  }
  table.append(body);
  $('axis-note').textContent = span > 0
    ? `Bars: how much slower each plan is than the fastest listed (${best.toFixed(3)} s), from 0 to +${(100 * (worst / best - 1)).toFixed(1)}%; ` +
      'not the step time from zero (the chart below is).'
    : 'Every listed plan has the same step time.';
}

const seconds = (v) => `${v.toFixed(3)} s`;

function showSelected() {
  for (const id of ['breakdown', 'breakdown-legend', 'memory', 'memory-legend', 'all-breakdowns', 'comm']) clear($(id));
  $('selected-caption').textContent = '';
  const p = selectedPlan();
  if (!p) {
    $('selected-title').textContent = 'The selected plan';
    return;
  }
  $('selected-title').textContent = p.yours ? `Your layout: ${p.layout}` : `Plan #${p.rank}: ${p.layout}`;
  const par = p.parallel;
  $('selected-caption').textContent =
    `tp ${par.tp}, pp ${par.pp}${par.vpp > 1 ? ` (${par.vpp} chunks per rank)` : ''}, dp ${par.dp}` +
    `${par.cp > 1 ? `, cp ${par.cp}` : ''}${par.ep > 1 ? `, ep ${par.ep}` : ''}; ZeRO ${par.zero}` +
    `${par.sequence_parallel ? ', sequence parallel' : ''}; recompute ${recomputeText(p)}; micro-batch ${p.micro_batch}, ` +
    `${p.microbatches} microbatches through ${p.schedule}. Step ${seconds(p.step_time_s)}, pipeline makespan ` +
    `${seconds(p.pipeline_makespan_s)}, ${Math.round(p.tokens_per_s).toLocaleString('en-US')} tokens/s, MFU ${pct(p.mfu)}, HFU ${pct(p.hfu)}.`;
  drawStacked($('breakdown'), [{ label: 'step', values: p.breakdown_s, total: p.step_time_s }], STEP_PARTS,
    { format: seconds, ariaLabel: `Step time ${seconds(p.step_time_s)}: ` +
      STEP_PARTS.map((x) => `${x.label} ${seconds(p.breakdown_s[x.key] || 0)}`).join(', '), labelWidth: 60, rowH: 64, width: 560 });
  stackedLegend($('breakdown-legend'), STEP_PARTS, p.breakdown_s, seconds);
  const usable = p.memory.usable_bytes;
  drawStacked($('memory'), p.memory.ranks.map((r) => ({ label: `rank ${r.rank}`, values: r, total: r.total_bytes,
    note: `${gib(r.total_bytes)}${r.total_bytes > usable ? ' ✗' : ''}` })), MEMORY_PARTS,
  { format: gib, marker: { value: usable, label: `usable ${gib(usable)}` }, labelWidth: 80, width: 560,
    rowH: p.memory.ranks.length > 16 ? 22 : 36,
    ariaLabel: `Memory per pipeline rank against ${gib(usable)} usable: ` +
      p.memory.ranks.map((r) => `rank ${r.rank} ${gib(r.total_bytes)}`).join(', ') });
  const worst = p.memory.ranks[p.memory.worst_rank];
  stackedLegend($('memory-legend'), MEMORY_PARTS, worst, gib);
  $('memory-legend').prepend(el('p', { class: 'caption' }, `Worst rank ${p.memory.worst_rank}: ${gib(p.memory.total_bytes)} of ` +
    `${gib(usable)} usable: ${p.memory.fits ? 'fits' : 'does not fit'}.`));
  const all = plans();
  const k = all.findIndex((x) => x.id === p.id);
  drawStacked($('all-breakdowns'), all.map((x) => ({ label: x.yours ? 'yours' : `#${x.rank}`, values: x.breakdown_s, total: x.step_time_s })),
    STEP_PARTS, { format: seconds, selected: k, onSelect: (j) => select(all[j].id), labelWidth: 70, rowH: 30,
      ariaLabel: 'Step time of every listed plan, broken down; each bar selects its plan' });
  const table = $('comm');
  table.append(el('thead', {}, el('tr', {}, ['Communication', 'Group', 'Collective', 'Link', 'Message', 'Calls / step', 'Per step', 'Overlap']
    .map((h) => el('th', { scope: 'col' }, h)))));
  const body = el('tbody');
  for (const it of p.comm) {
    body.append(el('tr', {}, el('th', { scope: 'row', class: 'wrap' }, it.communication), el('td', {}, `${it.group} (${it.group_size})`),
      el('td', { class: 'left' }, it.collective), el('td', { class: 'left' }, linkChip(it.link)), el('td', {}, fmtBytes(it.message_bytes)),
      el('td', {}, it.count_per_step.toLocaleString('en-US')), el('td', {}, fmtSeconds(it.time_per_step_s)), el('td', { class: 'left' }, it.overlap)));
  }
  if (!p.comm.length) body.append(el('tr', {}, el('td', { colspan: 8, class: 'row-error' }, 'One GPU: nothing to communicate.')));
  table.append(body);
}

function showExplanation() {
  const table = clear($('families'));
  $('winner-reason').textContent = search ? `Winner: ${search.explanation.winner}.` : '';
  if (!search) return;
  table.append(el('thead', {}, el('tr', {}, ['Family of layouts', 'Layouts', 'Best that fits', 'Verdict']
    .map((h) => el('th', { scope: 'col', class: 'left' }, h)))));
  const body = el('tbody');
  for (const f of search.explanation.families) {
    body.append(el('tr', { 'data-family': f.family }, el('th', { scope: 'row', class: 'left wrap' }, f.family), el('td', {}, f.layouts),
      el('td', { class: 'left wrap' }, f.best_layout ? `${f.best_layout} (${f.best_step_time_s.toFixed(2)} s)` : 'none'),
      el('td', { class: 'left wrap verdict' }, f.verdict)));
  }
  table.append(body);
}

// --- What to notice, common misunderstandings ---------------------------------------------------

function family(pred) {
  return search ? search.explanation.families.find((f) => pred(f.family)) : undefined;
}

function showNotes() {
  const notes = [];
  const p = selectedPlan();
  if (search && search.plans.length) {
    const w = search.plans[0], b = w.breakdown_s;
    notes.push(`The winner, ${w.layout}, spends ${seconds(b.compute)} of its ${seconds(w.step_time_s)} step computing; the rest is ` +
      `communication that could not hide (TP ${seconds(b.tp_comm)}, DP ${seconds(b.dp_comm)}), the bubble ` +
      `(${seconds(b.bubble)}) and the optimizer (${seconds(b.optimizer)}). That is how it reaches ${pct(w.mfu)} MFU, not 100%.`);
    const last = search.plans[search.plans.length - 1];
    if (search.plans.length > 1) {
      notes.push(`The top ${search.plans.length} are close: #1 takes ${seconds(w.step_time_s)}, #${search.plans.length} ` +
        `${seconds(last.step_time_s)}. Layouts that differ only in ZeRO stage or schedule often tie on time and differ in memory ` +
        `(#1 holds ${gib(w.memory.total_bytes)} on its worst rank): the memory column decides what headroom you keep.`);
    }
    const oom = search.explanation.families.filter((f) => f.verdict.startsWith('out of memory'));
    if (oom.length) {
      notes.push(`Memory rules out whole families before speed is asked: ${oom.map((f) => `${f.family}: ${f.verdict}`).join('; ')}.`);
    }
  }
  if (p && p.parallel.pp > 1) {
    const r0 = p.memory.ranks[0], rl = p.memory.ranks[p.memory.ranks.length - 1];
    notes.push(`In ${p.layout}, pipeline rank 0 holds ${gib(r0.activations_bytes)} of activations and rank ${rl.rank} ` +
      `${gib(rl.activations_bytes)}: under ${p.schedule} the first stage keeps the most microbatches in flight. ` +
      `The bubble costs ${seconds(p.breakdown_s.bubble)} (${pct(p.bubble_fraction)} of the pipeline's time).`);
  }
  const list = clear($('notice'));
  for (const n of notes) list.append(el('li', {}, n));

  const myths = clear($('myths'));
  const myth = (claim, answer) => myths.append(el('dt', {}, `“${claim}”`), el('dd', {}, answer));
  // A family's verdict starts "the winner's family" or says "as fast as the winner" when it wins.
  const wins = (f) => f && (f.verdict.startsWith("the winner's family") || f.verdict.includes('as fast as the winner'));
  const dp = family((f) => f.startsWith('pure data parallel'));
  myth('If the model fits, pure data parallelism is fastest.', !dp
    ? 'Only while one GPU holds the whole model, optimizer states and activations, and the gradient all-reduce hides behind the backward.'
    : wins(dp)
      ? `Here it holds (${dp.family}: ${dp.verdict}), because the model is small enough for every GPU to hold it and the ` +
        'gradient reduction hides behind the backward. Pick a larger model and watch this family run out of memory.'
      : `Not here: ${dp.family}: ${dp.verdict}. Every GPU holds the whole model, and the gradient reduction grows with it.`);
  const tpx = family((f) => f.includes('TP across nodes'));
  myth('More tensor parallelism is always faster: it splits the work.', tpx
    ? `It splits the matmuls but adds collectives on the critical path of every layer. ${tpx.family}: ${tpx.verdict}.`
    : 'It splits the matmuls but adds collectives on the critical path of every layer; past one node they cross the network.');
  const fsdp = family((f) => f.includes('FSDP'));
  myth('ZeRO-3 / FSDP gives the memory back for free.', !fsdp
    ? 'It gathers the weights before every layer, forward and backward: half as much traffic again as plain data parallelism.'
    : wins(fsdp)
      ? `It costs traffic: it gathers the weights before every layer, forward and backward. Here the gathers hide behind ` +
        `compute (${fsdp.family}: ${fsdp.verdict}); with fewer tokens per GPU there is less compute to hide them behind.`
      : `It gathers the weights before every layer, forward and backward. ${fsdp.family}: ${fsdp.verdict}.`);
  myth('Pipeline parallelism only costs the bubble.', p && p.parallel.pp > 1
    ? `${p.layout} also sends activations between stages (${seconds(p.breakdown_s.pp_comm)} on the critical path) and its ` +
      `first rank holds the most activations (${gib(p.memory.ranks[0].activations_bytes)}).`
    : 'It also sends activations between stages, and the first stage holds the most activations in flight.');
  myth('MFU should approach 100%.', search && search.plans.length
    ? `The best layout here reaches ${pct(search.plans[0].mfu)}: memory-bound kernels, attention, unhidden communication, the ` +
      'bubble and the optimizer all take time that does no model FLOPs. Published large runs report 35-55%.'
    : 'Memory-bound kernels, attention, communication, the bubble and the optimizer all take time that does no model FLOPs.');
}

// --- Worksheet, check, export --------------------------------------------------------------------

// The job alone (model, cluster, GPUs, batch, sequence, precision): what a worksheet check takes.
function checkParams(s) {
  const p = jobParams(s);
  delete p.top;
  delete p.schedule;
  return p;
}

// The degrees and knobs that name plan `p`, so that the API evaluates exactly that layout.
function layoutParams(p) {
  const par = p.parallel;
  const q = { ...checkParams(state), tp: par.tp, pp: par.pp, dp: par.dp, cp: par.cp, ep: par.ep, zero: par.zero,
    order: par.order, recompute: p.recompute, micro_batch: p.micro_batch, schedule: p.schedule };
  if (par.vpp > 1) q.vpp = par.vpp;
  if (par.sequence_parallel) q.sp = 1;
  // Uneven stages travel with the plan, or the worksheet and exports would split evenly.
  if (par.first_stage_layers > 0) q.first_stage_layers = par.first_stage_layers;
  if (par.last_stage_layers > 0) q.last_stage_layers = par.last_stage_layers;
  if (par.embedding_in_split) q.embedding_in_split = 1;
  if (par.loss_in_split) q.loss_in_split = 1;
  if (par.stage_layout) q.layout = par.stage_layout;
  // The modules a selective plan recomputes (Megatron's --recompute-modules) travel with it: your
  // layout's own, or the heavier list a search tried beyond the framework's (a plan with the
  // framework's own list sends none, so the server searches as the page did).
  const framework = search && search.request && search.request.behaviour
    ? search.request.behaviour.recompute_modules : '';
  if (p.recompute === 'selective' && p.yours && state.my_recompute_modules) {
    q.recompute_modules = state.my_recompute_modules;
  } else if (p.recompute === 'selective' && !p.yours && p.recompute_modules && p.recompute_modules !== framework) {
    q.recompute_modules = p.recompute_modules;
  }
  return q;
}

const planKey = (p) => (p ? JSON.stringify(layoutParams(p)) : '');
const fileStem = (p) => `${state.model}_${p.layout.replace(/[^a-z0-9]+/gi, '_').replace(/_+$/, '')}`;

function markDone(name, value) {
  document.body.dataset[name] = value;
}

// One request per panel (worksheet, check, export) at a time: a newer one aborts the older.
// Resolves to the answer, or null when it was superseded or refused (the refusal then shown in
// the panel's error box, passed to `onError`, and marked done as 'error').
async function panelRequest(panel, path, options, onError = () => {}) {
  const job = latest(panel, [$(`${panel}-error`).closest('section')]);
  try {
    const out = await api(path, { ...options, signal: job.signal });
    if (job.stale) return null;
    job.done();
    return out;
  } catch (err) {
    if (job.stale) return null;
    job.done();
    showError(`${panel}-error`, err, []);
    onError(err);
    markDone(panel, 'error');
    return null;
  }
}

let wsKey = null;
async function showWorksheet() {
  const p = selectedPlan();
  const key = planKey(p);
  if (key === wsKey) return;
  wsKey = key;
  clear($('ws-axes'));
  clear($('ws-comms'));
  showError('worksheet-error', null, []);
  $('ws-download').hidden = !p;
  $('ws-to-check').disabled = !p;
  if (!p) return;
  const params = layoutParams(p);
  $('ws-download').href = `api/worksheet?${new URLSearchParams({ ...params, format: 'markdown' })}`;
  $('ws-download').setAttribute('download', `worksheet_${fileStem(p)}.md`);
  const w = await panelRequest('worksheet', 'api/worksheet', { params });
  if (!w) return;
  $('worksheet-caption').textContent = `${w.layout} for ${w.model} on ${w.gpus} GPUs (${w.cluster}), global batch ` +
    `${w.global_batch} × ${w.seq_len} tokens: ${fmtSeconds(w.step_s)} per step, MFU ${pct(w.mfu)}, ` +
    `${gib(w.memory_per_gpu_bytes)} per GPU. Each reason quotes the plan's own numbers.`;
  const table = (node, headers, rows, keys) => {
    node.append(el('thead', {}, el('tr', {}, headers.map((h) => el('th', { scope: 'col', class: 'left' }, h)))));
    const body = el('tbody');
    for (const r of rows) {
      body.append(el('tr', {}, el('th', { scope: 'row', class: 'left' }, r[keys[0]]),
        keys.slice(1).map((k) => el('td', { class: 'left wrap' }, r[k]))));
    }
    node.append(body);
  };
  table($('ws-axes'), ['Axis', 'Degree', 'Placement', 'Reason'], w.axes, ['axis', 'degree', 'placement', 'reason']);
  table($('ws-comms'), ['Communication', 'Frequency', 'Preferred link', 'Risk'], w.communication,
    ['communication', 'frequency', 'preferred_link', 'risk']);
  markDone('worksheet', w.layout);
}

// The lab's two tables, empty: what a learner starts from.
function blankWorksheet() {
  return `# My design: ${state.model} on ${state.gpus} GPUs (${state.cluster}), global batch ${state.global_batch}\n\n` +
    '| Axis | Degree | Placement | Reason |\n| --- | --- | --- | --- |\n' +
    ['TP', 'PP', 'DP', 'FSDP/ZeRO'].map((a) => `| ${a} |  |  |  |\n`).join('') +
    '\n| Communication | Frequency | Preferred link | Risk |\n| --- | --- | --- | --- |\n' +
    ['TP collectives', 'PP send/recv', 'DP all-reduce', 'FSDP all-gather'].map((c) => `| ${c} |  |  |  |\n`).join('');
}

// Long worksheets do not fit in a shareable address; they stay in the page only.
const MAX_WS_IN_URL = 3000;
function keepWorksheetText() {
  const text = $('ws-text').value;
  state.ws = text.length <= MAX_WS_IN_URL ? text : '';
  writeQuery(state, DEFAULTS);
}

const SEVERITY = { ok: '✓ ok', info: 'ℹ info', warning: '! warning', error: '✗ error' };

let checkedJob = '';  // the job the shown check answered
async function runCheck() {
  checkedJob = JSON.stringify(checkParams(state));
  keepWorksheetText();
  const out = clear($('check-result'));
  showError('check-error', null, []);
  $('ws-text').removeAttribute('aria-invalid');
  const c = await panelRequest('check', 'api/worksheet/check',
    { params: checkParams(state), body: $('ws-text').value, type: 'text/markdown' }, (err) => {
      // Refused for its text: the text area is what to fix.
      if (err.parameter !== 'body') return;
      $('ws-text').setAttribute('aria-invalid', 'true');
      $('ws-text').setAttribute('aria-errormessage', 'check-error');
    });
  if (!c) return;
  out.append(el('h3', {}, `Check: ${c.title}`));
  const facts = el('dl', { class: 'facts' });
  const fact = (k, v) => facts.append(el('dt', {}, k), el('dd', {}, v));
  fact('Your design, as read', c.design);
  if (c.evaluated) {
    fact('Evaluated as', `${c.layout} (${c.knobs})`);
    const r = c.predicted;
    fact('Prediction', `${fmtSeconds(r.step_s)} per step, ${Math.round(r.tokens_per_s).toLocaleString('en-US')} tokens/s, ` +
      `MFU ${pct(r.mfu)}, ${gib(r.memory_per_gpu_bytes)} per GPU of ${gib(r.usable_bytes)} usable: ${r.fits ? 'fits' : 'does not fit'}`);
  }
  if (c.best) {
    fact("The planner's best", `${c.best.layout}: ${fmtSeconds(c.best.step_s)} per step, ` +
      `${Math.round(c.best.tokens_per_s).toLocaleString('en-US')} tokens/s, MFU ${pct(c.best.mfu)}`);
  }
  out.append(facts);
  const list = el('ol', { class: 'findings', id: 'findings' });
  for (const f of c.findings) {
    list.append(el('li', { class: `finding sev-${f.severity}`, 'data-id': f.id, 'data-severity': f.severity },
      el('span', { class: 'severity' }, SEVERITY[f.severity] || f.severity), ' ',
      el('strong', {}, f.title), f.line ? el('span', { class: 'line' }, ` (line ${f.line})`) : '', ': ', f.detail));
  }
  out.append(el('h3', {}, 'Point by point'), list);
  if (c.links && c.links.length) {
    const t = el('table', { class: 'compare', id: 'check-links' });
    t.append(el('thead', {}, el('tr', {}, ['Communication', 'Group', 'Your preferred link', 'Real link', 'Nodes', 'Per step', 'Match']
      .map((h) => el('th', { scope: 'col', class: 'left' }, h)))));
    const body = el('tbody');
    for (const l of c.links) {
      body.append(el('tr', {}, el('th', { scope: 'row', class: 'left' }, l.communication), el('td', { class: 'left' }, l.group),
        el('td', { class: 'left' }, l.preferred || '–'), el('td', { class: 'left' }, linkChip(l.real_link)), el('td', {}, l.nodes),
        el('td', {}, fmtSeconds(l.time_per_step_s)), el('td', { class: l.matches ? 'left' : 'left oom' }, l.matches ? 'yes' : 'no')));
    }
    t.append(body);
    out.append(el('h3', {}, 'Which link each collective really crosses'), el('div', { class: 'table-wrap' }, t));
  }
  markDone('check', String(c.findings.length));
}

let exKey = null;
async function showExport() {
  const p = selectedPlan();
  const format = state.ex;
  for (const b of document.querySelectorAll('button.export')) b.setAttribute('aria-pressed', String(b.dataset.format === format));
  const key = `${format}|${planKey(p)}`;
  if (key === exKey) return;
  exKey = key;
  showError('export-error', null, []);
  $('export-result').hidden = true;
  if (!p || !format) return;
  const params = { ...layoutParams(p), format };
  const e = await panelRequest('export', 'api/export', { params });
  if (!e) return;
  $('export-caption').textContent = `${e.file_name}: ${e.layout}${e.planner_best ? " (the planner's best)" : ''}.`;
  const notes = clear($('export-notes'));
  for (const n of e.notes) notes.append(el('li', {}, n));
  $('export-text').textContent = e.content;
  $('export-download').href = `api/export?${new URLSearchParams({ ...params, download: 1 })}`;
  $('export-download').setAttribute('download', e.file_name);
  $('export-result').hidden = false;
  markDone('export', `${e.format} ${e.layout}`);
}

async function copyText(button, text) {
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch (_) {
    button.textContent = 'Select the text and copy it';
  }
  setTimeout(() => { button.textContent = label; }, 2500);
}

function wireLabTools() {
  $('ws-text').value = state.ws || blankWorksheet();
  $('check-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    runCheck();
  });
  $('ws-blank').addEventListener('click', () => {
    $('ws-text').value = blankWorksheet();
    keepWorksheetText();
    $('ws-text').focus();
  });
  $('ws-to-check').addEventListener('click', async () => {
    const p = selectedPlan();
    if (!p) return;
    try {
      $('ws-text').value = await api('api/worksheet', { params: { ...layoutParams(p), format: 'markdown' }, as: 'text' });
    } catch (err) {
      showError('check-error', err, []);
      return;
    }
    $('worksheet-check').scrollIntoView({ block: 'start' });
    runCheck();
  });
  for (const b of document.querySelectorAll('button.export')) {
    b.addEventListener('click', () => {
      state.ex = state.ex === b.dataset.format ? '' : b.dataset.format;
      writeQuery(state, DEFAULTS);
      showExport();
    });
  }
  $('export-copy').addEventListener('click', () => copyText($('export-copy'), $('export-text').textContent));
  if (state.ws) runCheck();
}

// --- Controls ----------------------------------------------------------------------------------

async function start() {
  let presets;
  try {
    presets = await api('api/presets');
  } catch (err) {
    showError('error', err, []);
    return;
  }
  for (const m of presets.models) $('model').append(el('option', { value: m.name }, m.name));
  for (const c of presets.clusters) $('cluster').append(el('option', { value: c.name }, `${c.name}: ${c.gpus_per_node} × ${c.gpu}`));
  fillForm();
  $('controls').addEventListener('input', (ev) => { if (ev.target.tagName === 'INPUT') later(500); });
  $('controls').addEventListener('change', () => later(0));
  $('controls').addEventListener('submit', (ev) => { ev.preventDefault(); later(0); });
  $('mine-controls').addEventListener('input', (ev) => { if (ev.target.type === 'number') checkField(ev.target); });
  $('mine-controls').addEventListener('submit', (ev) => {
    ev.preventDefault();
    state = readForm();
    state.mine = '1';
    state.sel = 'mine';
    update();
  });
  $('reset').addEventListener('click', () => {
    state = { ...DEFAULTS };
    fillForm();
    update();
  });
  wireCopyLink($('copy-link'));
  wireLabTools();
  update();
}

start();
