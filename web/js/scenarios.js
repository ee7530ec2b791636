// Lab 09, interview scenarios. The engine writes every answer (GET /api/scenarios, /api/explain,
// /api/presets); this file keeps the chosen scenario or the custom design in the query string,
// draws the five parts (problem, mechanism, communication, tradeoff, measurement) with the numbers
// behind each, and ties the notes to those numbers.
import { api, checkField, clear, el, fillFields, fmtNum, latest, markInvalid, readFields, readQuery, renderNav, showRefusal, wireCopyLink, writeQuery } from './common.js';

// Every field has a default so that readQuery/writeQuery keep the address short: an empty degree
// or option means "not given" (the planner or the engine's default decides).
const DEFAULTS = {
  mode: 'scenario', name: '',
  model: 'llama3-70b', cluster: 'dgx-h100', gpus: '64', global_batch: '512', seq: '8192',
  tp: '', pp: '', cp: '', ep: '', zero: '', recompute: '', micro_batch: '', schedule: '', sp: '',
};
const JOB = ['model', 'cluster', 'gpus', 'global_batch', 'seq'];
const DEGREES = ['tp', 'pp', 'cp', 'ep'];
const OPTIONS = ['zero', 'recompute', 'micro_batch', 'schedule', 'sp'];
const FIELDS = [...JOB, ...DEGREES, ...OPTIONS];
const CHECKBOXES = ['sp'];
// The scenario whose numbers refute "more GPUs means more data parallelism".
const OOM = 'dp64-oom';
const $ = (id) => document.getElementById(id);

let state = readQuery(DEFAULTS);
if (state.mode !== 'custom') state.mode = 'scenario';
let scenarios = [];  // /api/scenarios: name, title, question, live one-line answer
let doc = null;      // the five-part answer on show
let oomDoc = null;   // dp64-oom's five-part answer, for the misunderstandings panel
let renders = 0;

// Marks a finished drawing and the state it shows (the browser tests wait on these).
function rendered() {
  document.body.dataset.state = JSON.stringify(state);
  document.body.dataset.renders = String(++renders);
}

// --- Formatting --------------------------------------------------------------------------------
// Each number is printed in its unit the way the engine's own sentences print it (GiB to one
// decimal, MiB to two, seconds to two decimals in the unit that reads best, fractions as a percent
// to one decimal), so a number in a table reads the same as in the sentence beside it.

function bytes(v) {
  if (v >= 2 ** 30) return `${(v / 2 ** 30).toFixed(1)} GiB`;
  if (v >= 2 ** 20) return `${(v / 2 ** 20).toFixed(2)} MiB`;
  if (v >= 2 ** 10) return `${(v / 2 ** 10).toFixed(1)} KiB`;
  return `${Math.round(v)} B`;
}
function seconds(v) {
  if (v === 0) return '0 s';
  if (v >= 1) return `${v.toFixed(2)} s`;
  if (v >= 1e-3) return `${(v * 1e3).toFixed(2)} ms`;
  return `${(v * 1e6).toFixed(1)} µs`;
}
function flops(v) {
  for (const [p, f] of [['E', 1e18], ['P', 1e15], ['T', 1e12], ['G', 1e9]]) if (v >= f) return `${(v / f).toFixed(2)} ${p}FLOP`;
  return `${fmtNum(v)} FLOP`;
}
function formatValue(value, unit) {
  if (value === null || value === undefined || Number.isNaN(value)) return '–';
  // A negative headroom is an overshoot: keep the sign in front of the unit's number.
  const sign = value < 0 ? '−' : '';
  const v = Math.abs(value);
  switch (unit) {
    case 'bytes': return sign + bytes(v);
    case 's': return sign + seconds(v);
    case 'fraction': return `${sign}${(100 * v).toFixed(1)}%`;
    case 'tokens/s': return `${sign}${Math.round(v).toLocaleString('en-US')} tokens/s`;
    case 'FLOP': return sign + flops(v);
    case 'bytes/s': return `${sign}${(v / 1e9).toFixed(1)} GB/s`;
    case 'count': return sign + (Number.isInteger(v) ? v.toLocaleString('en-US') : fmtNum(v));
    case 'bool': return value ? 'yes' : 'no';
    case 'ratio': return `${sign}${v.toFixed(2)}×`;
    default: return `${sign}${fmtNum(v)} ${unit}`;
  }
}
const sec = (v) => formatValue(v, 's');
const gib = (v) => formatValue(v, 'bytes');
const pct = (v) => formatValue(v, 'fraction');
const times = (v) => `${v.toFixed(1)}×`;

// A number's name as a reader says it: the unit is printed with the value, so it leaves the name.
function label(name, unit) {
  const suffix = { bytes: '_bytes', s: '_s', 'bytes/s': '_bytes_per_s' }[unit];
  let n = suffix && name.endsWith(suffix) ? name.slice(0, -suffix.length) : name;
  n = n.replaceAll('_', ' ').replace(/\b(tp|pp|dp|cp|ep|edp|vpp|mfu|gpu|fsdp)\b/g, (x) => x.toUpperCase());
  return n.charAt(0).toUpperCase() + n.slice(1);
}
const capitalise = (s) => s.charAt(0).toUpperCase() + s.slice(1);

// The first number of that name in the answer (the engine repeats a few, e.g. usable memory).
function num(name, d = doc) {
  if (!d) return undefined;
  for (const s of d.sections) {
    const n = s.numbers.find((x) => x.name === name);
    if (n) return n.value;
  }
  return undefined;
}
const has = (...names) => names.every((n) => num(n) !== undefined);

// --- State and the form ------------------------------------------------------------------------

const fillForm = () => fillFields(FIELDS, state, DEFAULTS, CHECKBOXES);
// An unchecked option is "not given" (''), not "off".
const readForm = () => ({ ...state, ...readFields(FIELDS, CHECKBOXES, '') });

function customParams(s) {
  const p = {};
  for (const k of FIELDS) if (s[k] !== '') p[k] = s[k];
  return p;
}

const degreesGiven = (s) => DEGREES.some((k) => s[k] !== '');

function currentName() {
  return state.name || (scenarios[0] ? scenarios[0].name : '');
}

function cliLine() {
  if (state.mode === 'scenario') return `infralens scenarios ${currentName()}`;
  const parts = ['infralens explain'];
  for (const [k, v] of Object.entries(customParams(state))) parts.push(k === 'sp' ? '--sp' : `--${k.replace('_', '-')} ${v}`);
  return parts.join(' ');
}

// --- Errors ------------------------------------------------------------------------------------

// The fields to mark for an error. The engine names no single parameter when the degrees together
// do not divide the GPUs ("parallel degrees tp=3 cp=1 pp=4 multiply to 12, ..."): then the degrees
// the learner gave that the message quotes are the ones to look at.
function invalidFields(err) {
  if (state.mode !== 'custom') return [];
  if (FIELDS.includes(err.parameter)) return [err.parameter];
  return DEGREES.filter((k) => state[k] !== '' && new RegExp(`\\b${k}=${state[k]}\\b`).test(err.message));
}

function showError(err) {
  const marked = err ? invalidFields(err) : [];
  markInvalid(FIELDS, marked, 'error');
  const param = err ? err.parameter || '' : '';
  showRefusal('error', err, param ? ` (parameter: ${param})` : marked.length ? ` (the degrees together: ${marked.join(', ')})` : '');
}

// --- Fetching ----------------------------------------------------------------------------------

let timer = 0;
let picked = false;  // the last update came from a click in the list
function later(delay) {
  clearTimeout(timer);
  timer = setTimeout(update, delay);
}

// The custom design's typed numbers, checked where they are typed (issue 24): a bad one is said
// beside itself, once, and nothing is asked of the engine until it is fixed; none becomes a default.
const CHECKED = ['gpus', 'global_batch', 'seq', 'tp', 'pp', 'cp', 'ep', 'micro_batch'];

async function update() {
  clearTimeout(timer);
  state = readForm();
  writeQuery(state, DEFAULTS);
  showMode();
  $('cli-line').textContent = cliLine();
  if (state.mode === 'custom') {
    showError(null);  // first: it clears the marks the checks below set
    if (CHECKED.filter((k) => checkField($(k))).length) {
      latest('answer', [document.querySelector('section.sc-answer')]).done();  // drops a request on its way
      doc = null;  // no old numbers left standing
      draw();
      rendered();
      return;
    }
  }
  // A newer request aborts the older; the old answer stays greyed until the new one arrives.
  const job = latest('answer', [document.querySelector('section.sc-answer')]);
  const signal = job.signal;
  let main;
  if (state.mode === 'custom') main = api('api/explain', { params: customParams(state), signal });
  else if (currentName()) main = api('api/scenarios', { params: { name: currentName() }, signal });
  else main = Promise.reject(new Error('the scenario list did not load'));
  // dp64-oom's numbers answer a misunderstanding on every view: fetch them once.
  const needOom = !oomDoc && scenarios.some((s) => s.name === OOM);
  const [r, o] = await Promise.allSettled([main, needOom ? api('api/scenarios', { params: { name: OOM }, signal }) : null]);
  if (job.stale) return;
  if (needOom && o.status === 'fulfilled') oomDoc = o.value;
  doc = r.status === 'fulfilled' ? r.value : null;
  showError(r.status === 'rejected' ? r.reason : null);
  draw();
  job.done();
  rendered();
  // In one column the answer sits under the list: bring it into view after a pick.
  if (picked && matchMedia('(max-width: 1000px)').matches) $('answer-head').scrollIntoView({ block: 'start' });
  picked = false;
}

function pick(name) {
  state.name = name;
  state.mode = 'scenario';
  picked = true;
  update();
}

// --- Drawing -----------------------------------------------------------------------------------

function showMode() {
  const custom = state.mode === 'custom';
  $('mode-scenario').setAttribute('aria-pressed', String(!custom));
  $('mode-custom').setAttribute('aria-pressed', String(custom));
  $('scenario-panel').hidden = custom;
  $('custom-panel').hidden = !custom;
}

function drawList() {
  const list = clear($('scenario-list'));
  scenarios.forEach((s, k) => {
    const q = `sc-q-${k}`;
    list.append(el('li', { class: 'sc-card', 'data-name': s.name },
      el('h3', {}, el('button', { type: 'button', class: 'sc-pick', 'data-name': s.name, 'aria-describedby': q,
        onclick: () => pick(s.name) }, capitalise(s.title))),
      el('p', { class: 'sc-question', id: q }, s.question),
      el('p', { class: 'sc-live' }, el('b', {}, 'Live answer: '), s.answer)));
  });
  $('list-caption').textContent = `${scenarios.length} scenarios, each with its answer in one line, computed now by the engine.`;
}

function markList() {
  const name = state.mode === 'scenario' && doc ? currentName() : '';
  for (const li of $('scenario-list').children) {
    const on = li.dataset.name === name;
    li.classList.toggle('current', on);
    const b = li.querySelector('button');
    if (on) b.setAttribute('aria-current', 'true');
    else b.removeAttribute('aria-current');
  }
}

function draw() {
  markList();
  drawHead();
  drawParts();
  showNotes();
}

// A scenario's job and layout as the custom form's fields, read from its title and layout line
// ("dp64-oom: llama3-70b on 64 x H100-SXM (dgx-h100, 8 nodes of 8), global batch 512 x 8192
// tokens", "tp=1 pp=1 dp=64 full mb=1"), so the learner can change one thing and compare.
function designOf(d) {
  const m = /^(?:[\w.-]+: )?(\S+) on (\d+) x \S+ \(([\w-]+)[ ,].*global batch (\d+) x (\d+) tokens/.exec(d.title);
  if (!m) return null;
  const out = { model: m[1], gpus: m[2], cluster: m[3], global_batch: m[4], seq: m[5] };
  const known = (id, v) => [...$(id).options].some((o) => o.value === v);
  if (!known('model', out.model) || !known('cluster', out.cluster)) return null;
  for (const tok of d.layout.split(/\s+/)) {
    const kv = /^(tp|pp|cp|ep|zero|mb)=(\d+)$/.exec(tok);
    if (kv) out[kv[1] === 'mb' ? 'micro_batch' : kv[1]] = kv[2];
    else if (tok === 'sp') out.sp = '1';
    else if (tok === 'full' || tok === 'none') out.recompute = tok;
    else if (known('schedule', tok)) out.schedule = tok;
  }
  // A scenario may change the cluster (a slower network): the form has only the presets.
  out.note = / with /.test(d.title) ? ` (on the standard ${out.cluster} network)` : '';
  return out;
}

function drawHead() {
  const custom = state.mode === 'custom';
  const idx = scenarios.findIndex((s) => s.name === currentName());
  $('answer-kind').textContent = custom
    ? (doc && doc.planner_best ? "Your job · the planner's best layout" : 'Your own design')
    : idx >= 0 ? `Scenario ${idx + 1} of ${scenarios.length} · ${currentName()}` : `No scenario named “${currentName()}”: pick one from the list`;
  $('answer-title').textContent = doc ? doc.title : '–';
  $('answer-question').hidden = !(doc && doc.question);
  $('answer-question').textContent = doc && doc.question ? doc.question : '';
  $('layout').textContent = doc ? doc.layout : '–';
  $('planner-badge').hidden = !(doc && doc.planner_best);
  const line = $('one-line');
  line.hidden = true;
  if (doc && !custom && idx >= 0) {
    clear(line).append(el('strong', {}, 'In one line: '), scenarios[idx].answer);
    line.hidden = false;
  } else if (doc && custom && doc.planner_best && OPTIONS.some((k) => state[k] !== '')) {
    // The engine explains the planner's best when no degree is given, and the planner picks ZeRO,
    // recomputation, micro-batch and schedule itself: say so rather than let the options look used.
    clear(line).append('No degree given, so the planner chose the whole layout, ZeRO stage, recomputation, micro-batch ' +
      'and schedule included: your options are not used. Give at least one degree (TP 1 will do) to explain your own layout.');
    line.hidden = false;
  }

  const step = num('step_s'), mem = num('memory_per_gpu_bytes'), usable = num('usable_bytes_per_gpu');
  const fits = num('fits'), tokens = num('expected_tokens_per_s'), mfu = num('expected_mfu');
  $('m-step').textContent = step === undefined ? '–' : sec(step);
  const m = clear($('m-mem'));
  m.classList.toggle('bad', fits === 0);
  if (mem !== undefined && usable !== undefined) {
    m.append(`${(mem / 2 ** 30).toFixed(1)} / ${gib(usable)}`);
    if (fits === 0) m.append(el('small', {}, ' does not fit'));
  } else m.append('–');
  $('m-tokens').textContent = tokens === undefined ? '–' : Math.round(tokens).toLocaleString('en-US');
  $('m-mfu').textContent = mfu === undefined ? '–' : pct(mfu);

  // The "change it yourself" link: a real link to the custom view of this scenario's layout.
  const link = $('try-it');
  const design = doc && !custom ? designOf(doc) : null;
  link.hidden = !design;
  if (design) {
    const q = new URLSearchParams({ mode: 'custom', name: currentName() });
    for (const k of FIELDS) if (design[k] !== undefined && design[k] !== DEFAULTS[k]) q.set(k, design[k]);
    link.href = `?${q}`;
    link.textContent = `Change this layout yourself${design.note}`;
  }
  $('copy-markdown').disabled = !doc;
  $('markdown-fallback').hidden = true;
  $('copy-status').textContent = '';
}

function drawParts() {
  const box = clear($('parts'));
  if (!doc) return;
  box.append(el('nav', { class: 'part-jump', 'aria-label': 'The five parts' }, 'Jump to: ',
    doc.sections.flatMap((s, k) => [k ? ' · ' : '', el('a', { href: `#part-${s.name}` }, s.title)])));
  doc.sections.forEach((s, k) => {
    const id = `part-${s.name}`;
    const rows = s.numbers.map((n) => {
      const bad = (n.name === 'fits' && n.value === 0) || (n.name === 'memory_headroom_bytes' && n.value < 0);
      return el('tr', { 'data-name': n.name, 'data-unit': n.unit, 'data-value': String(n.value) },
        el('th', { scope: 'row', title: n.name }, label(n.name, n.unit)),
        el('td', { class: bad ? 'bad' : null }, formatValue(n.value, n.unit)));
    });
    box.append(el('section', { class: 'panel part', id, 'data-part': s.name, 'aria-labelledby': `${id}-title` },
      el('h2', { id: `${id}-title` }, el('span', { class: 'part-no' }, `${k + 1}`), s.title),
      el('div', { class: 'part-body' },
        el('ul', { class: 'sentences' }, s.sentences.map((t) => el('li', {}, t))),
        el('div', { class: 'numbers-wrap' },
          el('h3', { id: `${id}-numbers` }, `The numbers behind it (${s.numbers.length})`),
          s.numbers.length
            ? el('table', { class: 'compare numbers', 'aria-labelledby': `${id}-numbers` }, el('tbody', {}, rows))
            : el('p', { class: 'caption' }, 'None: this part is prose only.')))));
  });
}

// --- What to notice, common misunderstandings ---------------------------------------------------

function showNotes() {
  const notes = [];
  const d = doc;
  if (d) {
    const step = num('step_s'), ideal = num('ideal_step_s'), compute = num('compute_s');
    const exposed = num('exposed_comm_s'), bubble = num('bubble_s'), total = num('total_comm_time_per_step_s');
    const mem = num('memory_per_gpu_bytes'), usable = num('usable_bytes_per_gpu'), headroom = num('memory_headroom_bytes');
    const count = d.sections.reduce((a, s) => a + s.numbers.length, 0);
    notes.push(`Every part of this answer carries its numbers, ${count} in all: ${d.layout} takes ${sec(step)} per step and ` +
      `${gib(mem)} per GPU of ${gib(usable)} usable. That is what turns "I would shard it" into a claim someone can check.`);
    if (has('ideal_step_s', 'step_s', 'compute_s', 'exposed_comm_s', 'bubble_s')) {
      notes.push(`At 100% of peak the model's FLOPs would take ${sec(ideal)}; this layout takes ${sec(step)}, ` +
        `${times(step / ideal)} as long. Computing (recomputation included) is ${sec(compute)}; communication that does not ` +
        `hide adds ${sec(exposed)} and the pipeline bubble ${sec(bubble)}.`);
    }
    if (total !== undefined && exposed !== undefined) {
      notes.push(`The communication part adds up to ${sec(total)} per step, but only ${sec(exposed)} lands on the step: ` +
        'the rest overlaps with compute. Which collectives sit on the critical path matters more than how many bytes move.');
    }
    if (headroom !== undefined) {
      notes.push(headroom < 0
        ? `It does not fit: ${gib(-headroom)} over the ${gib(usable)} usable per GPU. Its step time is what it would take if it ` +
          'fit; memory decides first, speed second.'
        : `It fits with ${gib(headroom)} to spare per GPU: the room a longer sequence or a larger micro-batch could spend.`);
    }
    // The scenarios' own comparisons, when the answer carries them.
    if (has('zero1_model_state_bytes', 'zero3_model_state_bytes')) {
      notes.push(`Sharding, not more replicas: ZeRO-1 cuts the model state to ${gib(num('zero1_model_state_bytes'))} per GPU, ` +
        `FSDP (ZeRO-3) to ${gib(num('zero3_model_state_bytes'))}, against ${gib(usable)} usable.`);
    }
    if (has('m64_bubble_fraction', 'bubble_fraction', 'm64_tokens_per_s', 'expected_tokens_per_s')) {
      notes.push(`A batch of 64 sequences instead of 8: the bubble falls from ${pct(num('bubble_fraction'))} to ` +
        `${pct(num('m64_bubble_fraction'))} of the step, ${formatValue(num('expected_tokens_per_s'), 'tokens/s')} become ` +
        `${formatValue(num('m64_tokens_per_s'), 'tokens/s')}.`);
    }
    if (has('tp8_tp_comm_s', 'tp8_step_s', 'tp_comm_s')) {
      notes.push(`TP kept inside a node: the TP collectives cost ${sec(num('tp8_tp_comm_s'))} per step instead of ` +
        `${sec(num('tp_comm_s'))}, the step ${sec(num('tp8_step_s'))} instead of ${sec(step)}.`);
    }
    if (has('ep_inside_node_ep_comm_s', 'ep_inside_node_step_s', 'ep_comm_s')) {
      notes.push(`The expert group inside one node: the all-to-all costs ${sec(num('ep_inside_node_ep_comm_s'))} per step ` +
        `instead of ${sec(num('ep_comm_s'))}, the step ${sec(num('ep_inside_node_step_s'))} instead of ${sec(step)}.`);
    }
    if (has('zero1_slow_step_s', 'fsdp_fast_step_s', 'zero1_fast_step_s')) {
      notes.push(`The network picks the sharding: on the slow network FSDP takes ${sec(step)} and ZeRO-1 ` +
        `${sec(num('zero1_slow_step_s'))}; on the standard one ${sec(num('fsdp_fast_step_s'))} and ${sec(num('zero1_fast_step_s'))}.`);
    }
    if (has('cp1_activations_bytes', 'activations_bytes')) {
      notes.push(`Context parallelism splits the sequence: ${gib(num('activations_bytes'))} of activations per GPU here, ` +
        `${gib(num('cp1_activations_bytes'))} without it (cp=1).`);
    }
    if (has('step_time_vs_best', 'best_step_s')) {
      notes.push(`Against the planner's best (${sec(num('best_step_s'))} per step) this layout is ` +
        `${num('step_time_vs_best').toFixed(2)}× as slow${headroom < 0 ? ', if it fit at all' : ''}.`);
    }
  }
  const list = clear($('notice'));
  for (const n of notes) list.append(el('li', {}, n));

  const myths = clear($('myths'));
  const myth = (claim, ...answer) => myths.append(el('dt', {}, `“${claim}”`), el('dd', {}, ...answer));
  const o = oomDoc || (d && state.mode === 'scenario' && currentName() === OOM ? d : null);
  if (o) {
    const mem = num('memory_per_gpu_bytes', o), usable = num('usable_bytes_per_gpu', o);
    myth('64 GPUs means DP=64: more GPUs, more data parallelism.',
      `Data parallelism copies the whole model state to every GPU. For Llama-3 70B that is ${gib(num('model_state_bytes', o))}, ` +
      `so DP=64 asks ${gib(mem)} of each GPU against ${gib(usable)} usable, ${times(mem / usable)} too much, however many GPUs ` +
      `you add. Sharding comes first: FSDP brings the model state to ${gib(num('zero3_model_state_bytes', o))} per GPU. See `,
      el('a', { href: `?name=${OOM}` }, 'the dp64-oom scenario'), '.');
  } else {
    myth('More GPUs, more data parallelism.', 'Data parallelism copies the whole model state to every GPU: past one GPU\'s memory, ' +
      'more replicas do not help; sharding, tensor or pipeline parallelism come first.');
  }
  if (d) {
    const count = d.sections.reduce((a, s) => a + s.numbers.length, 0);
    myth('Naming the right technique is the answer; the numbers are detail.',
      `An interview answer without numbers is not an answer: nobody can tell it from a guess. This one commits to ${count} ` +
      `numbers, and its measurement part says what a profiler should show (a step near ${sec(num('expected_step_s'))}, ` +
      `a peak near ${gib(num('expected_peak_memory_bytes'))}), so it can be proved wrong.`);
    const total = num('total_comm_time_per_step_s'), exposed = num('exposed_comm_s');
    if (total !== undefined && exposed !== undefined) {
      myth('Communication time is the sum of the collectives.',
        `Here the collectives add up to ${sec(total)} per step; ${sec(exposed)} of it is on the critical path. Overlap decides: ` +
        'the DP and FSDP traffic hides behind the backward, TP collectives inside a layer do not.');
    }
    const bf = num('bubble_fraction'), pp = num('pp');
    myth('The pipeline bubble is small enough to ignore.', pp > 1
      ? `Here it idles ${pct(bf)} of the step (${sec(num('bubble_s'))}) with pp=${pp}; the fewer microbatches per step, the ` +
        'larger it grows, as the few-microbatches scenario shows.'
      : 'This layout has no pipeline (pp=1), so no bubble. With few microbatches per pipeline the bubble can take half the ' +
        'step: see the few-microbatches scenario.');
    const mfu = num('expected_mfu'), extra = num('recompute_extra_flops_fraction');
    if (mfu !== undefined) {
      myth('A good layout reaches close to 100% MFU.',
        `This one reaches ${pct(mfu)}. Memory-bound kernels, exposed communication, the bubble and the optimizer do no model ` +
        `FLOPs${extra ? `, and recomputation adds ${pct(extra)} FLOPs MFU does not count` : ''}. Large published runs report 35-55%.`);
    }
  }
}

// --- Copy the answer as markdown ----------------------------------------------------------------

async function copyMarkdown() {
  const status = $('copy-status');
  const params = state.mode === 'custom' ? customParams(state) : { name: currentName() };
  let text;
  try {
    text = await api(state.mode === 'custom' ? 'api/explain' : 'api/scenarios', { params: { ...params, format: 'markdown' }, as: 'text' });
  } catch (err) {
    status.textContent = `Could not fetch the markdown: ${err.message}`;
    return;
  }
  $('markdown').value = text;
  try {
    await navigator.clipboard.writeText(text);
    $('markdown-fallback').hidden = true;
    status.textContent = `Copied: ${text.trim().split('\n').length} lines of markdown.`;
  } catch (_) {
    // Clipboard access can be refused (no secure context, no permission): show the text, selected.
    $('markdown-fallback').hidden = false;
    $('markdown').focus();
    $('markdown').select();
    status.textContent = 'The clipboard refused: the markdown is below, selected; press Ctrl+C to copy it.';
  }
}

// --- Controls ----------------------------------------------------------------------------------

async function start() {
  renderNav('scenarios');
  const [presets, list] = await Promise.allSettled([api('api/presets'), api('api/scenarios')]);
  if (presets.status === 'fulfilled') {
    for (const m of presets.value.models) $('model').append(el('option', { value: m.name }, m.name));
    for (const c of presets.value.clusters) $('cluster').append(el('option', { value: c.name }, `${c.name}: ${c.gpus_per_node} × ${c.gpu}`));
  }
  if (list.status === 'fulfilled') {
    scenarios = list.value.scenarios;
    drawList();
  }
  fillForm();
  for (const b of [$('mode-scenario'), $('mode-custom')]) {
    b.addEventListener('click', () => {
      if (state.mode === b.dataset.mode) return;
      state.mode = b.dataset.mode;
      update();
    });
  }
  const form = $('custom-panel');
  form.addEventListener('input', (ev) => { if (ev.target.tagName === 'INPUT' && ev.target.type !== 'checkbox') later(600); });
  form.addEventListener('change', () => later(0));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); later(0); });
  $('reset').addEventListener('click', () => {
    for (const k of FIELDS) state[k] = DEFAULTS[k];
    fillForm();
    update();
  });
  $('copy-markdown').addEventListener('click', copyMarkdown);
  wireCopyLink($('copy-link'));
  const failed = [presets, list].find((r) => r.status === 'rejected');
  await update();
  // The list or the presets could not load: say so (over any later answer's silence).
  if (failed && !$('error').textContent) {
    showError(failed.reason);
    rendered();
  }
}

start();
