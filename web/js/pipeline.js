// Lab 04, the pipeline schedules page. The engine computes every number (GET /api/schedule,
// /api/compare, POST /api/import); this file reads the controls, keeps them in the query string,
// and draws what comes back.
import { api, append, checkField, clear, el, fmtNum, latest, markInvalid, ms, pct, readQuery, renderNav, wireCopyLink, saveBlob, writeQuery } from './common.js';
import { drawBars, drawBubblePlot } from './charts.js';
import { svg } from './svg.js';
import { clearTimeline, drawTimeline, drawTimelines, legend } from './timeline.js';

// `cmp`: the schedules drawn as pictures on one time axis (two or three, comma separated).
const DEFAULTS = { schedule: '1f1b', pp: '4', microbatches: '8', vpp: '0', f: '1', b: '2', i: '', w: '', fb: '', p2p: '0',
  cmp: '1f1b,interleaved-1f1b,zbv' };
const FIELDS = Object.keys(DEFAULTS).filter((k) => k !== 'cmp');
const MAX_PICTURES = 3;
const COST_FIELDS = ['f', 'b', 'i', 'w', 'fb', 'p2p'];
const $ = (id) => document.getElementById(id);

let state = readQuery(DEFAULTS);
let lastSchedule = null;
let lastCompare = null;
let renders = 0;
let pictureRenders = 0;
const SCHEDULES = [...$('schedule').options].map((o) => ({ value: o.value, label: o.textContent }));

renderNav('pipeline');
$('legend').append(legend());
buildPick();
fillForm();

function fillForm() {
  for (const k of FIELDS) $(k).value = state[k];
  if ($('schedule').value !== state.schedule) $('schedule').value = DEFAULTS.schedule;
  fillPick();
}

function readForm() {
  const s = {};
  for (const k of FIELDS) s[k] = String($(k).value).trim();
  s.cmp = picked().join(',');
  return s;
}

// --- Schedules as pictures: checkboxes, two or three drawn on one time axis ---------------------

function picked() {
  const want = String(state.cmp || '').split(',');
  return SCHEDULES.map((s) => s.value).filter((n) => want.includes(n)).slice(0, MAX_PICTURES);
}

function buildPick() {
  const box = $('pictures-pick');
  for (const s of SCHEDULES) {
    const id = `pick-${s.value}`;
    box.append(el('label', { for: id }, el('input', { type: 'checkbox', id, value: s.value, name: 'cmp' }), ` ${s.label}`));
  }
  box.addEventListener('change', () => {
    const names = [...box.querySelectorAll('input:checked')].map((i) => i.value);
    state = { ...state, cmp: names.join(',') };
    fillPick();
    writeQuery(state, DEFAULTS);
    updatePictures();
  });
}

function fillPick() {
  const names = picked();
  for (const input of $('pictures-pick').querySelectorAll('input')) {
    input.checked = names.includes(input.value);
    // At most three: the others wait until one is unticked.
    input.disabled = !input.checked && names.length >= MAX_PICTURES;
  }
}

// /api/schedule answers shared between the page's own schedule and the pictures: the same
// parameters (the pictures include the schedule on show) are asked once, not once per section.
// The last four answers are kept. A fetch still running is cancelled when every section that
// waits for it has given up on it (a newer request took over), and only then.
const scheduleAnswers = new Map();
function scheduleAnswer(params, signal) {
  const key = JSON.stringify(Object.entries(params).sort());
  let entry = scheduleAnswers.get(key);
  if (!entry) {
    const controller = new AbortController();
    entry = { controller, waiting: 0, settled: false };
    entry.promise = api('api/schedule', { params, signal: controller.signal });
    entry.promise.then(() => { entry.settled = true; }, () => { entry.settled = true; scheduleAnswers.delete(key); });
    scheduleAnswers.set(key, entry);
    // A few answers only: each can be megabytes.
    while (scheduleAnswers.size > 4) scheduleAnswers.delete(scheduleAnswers.keys().next().value);
  }
  const e = entry;
  return new Promise((resolve, reject) => {
    if (signal.aborted) { reject(new DOMException('aborted', 'AbortError')); return; }
    e.waiting += 1;
    let done = false;
    signal.addEventListener('abort', () => {
      if (done) return;
      done = true;
      reject(new DOMException('aborted', 'AbortError'));
      if (--e.waiting === 0 && !e.settled) {
        e.controller.abort();
        if (scheduleAnswers.get(key) === e) scheduleAnswers.delete(key);
      }
    }, { once: true });
    e.promise.then((v) => { if (!done) { done = true; e.waiting -= 1; resolve(v); } },
      (err) => { if (!done) { done = true; e.waiting -= 1; reject(err); } });
  });
}

let pictureController = null;
async function updatePictures() {
  if (pictureController) pictureController.abort();
  pictureController = new AbortController();
  const signal = pictureController.signal;
  const names = picked();
  const cp = paramsOf(state, FIELDS.filter((k) => k !== 'schedule'));
  const res = await Promise.allSettled(names.map((n) =>
    scheduleAnswer({ ...cp, schedule: n, dependencies: 1, format: 'columns' }, signal)));
  if (signal.aborted) return;
  const ok = [], errors = [];
  res.forEach((r, k) => {
    if (r.status === 'fulfilled') ok.push({ data: r.value, title: names[k] });
    else errors.push(`${names[k]}: ${r.reason.message}`);
  });
  const box = $('pictures-error');
  // The same refusal for every schedule (a bad P, say) is said once.
  const reasons = res.filter((r) => r.status === 'rejected').map((r) => r.reason.message);
  box.textContent = reasons.length > 1 && reasons.every((m) => m === reasons[0]) ? reasons[0] : errors.join(' ');
  box.hidden = errors.length === 0;
  if (ok.length) {
    drawTimelines($('pictures'), $('pictures-info'), ok, { headings: true, lane: 28, gap: 4,
      ariaTitle: `Schedules compared: ${ok.map((o) => o.title).join(', ')}` });
  } else {
    clearTimeline($('pictures'));
    $('pictures-info').textContent = names.length ? '' : 'Tick two or three schedules to draw them on one time axis.';
  }
  document.body.dataset.pictures = String(++pictureRenders);
}

// Only what the user set goes to the engine: an empty cost is derived there (B = I + W).
function paramsOf(s, keys = FIELDS) {
  const p = {};
  for (const k of keys) if (s[k] !== '') p[k] = s[k];
  return p;
}

function setDownloads() {
  const base = new URLSearchParams(paramsOf(state));
  for (const [id, format] of [['dl-csv', 'csv'], ['dl-chrome', 'chrome'], ['dl-svg', 'svg']]) {
    const q = new URLSearchParams(base);
    q.set('format', format);
    q.set('download', '1');
    $(id).href = `api/schedule?${q}`;
  }
}

function markField(parameter, message) {
  const id = parameter === 'm' ? 'microbatches' : parameter;
  markInvalid(FIELDS, id && FIELDS.includes(id) ? [id] : [], 'error');
  const box = $('error');
  if (message) {
    clear(box).append(el('strong', {}, 'The engine refused this: '), message,
      id && FIELDS.includes(id) ? el('span', { class: 'param' }, ` (parameter: ${id})`) : '');
    box.hidden = false;
  } else {
    box.hidden = true;
    clear(box);
  }
}

let timer = 0;
function schedule_update(delay) {
  clearTimeout(timer);
  timer = setTimeout(update, delay);
}

async function update() {
  // Each field checked where it is typed: a bad one says so beside itself, and nothing is asked
  // of the engine until it is fixed (no value is replaced by a default).
  const bad = FIELDS.filter((k) => k !== 'schedule').filter((k) => checkField($(k)));
  if (bad.length) {
    markField('', '');
    for (const k of bad) checkField($(k));  // markField cleared the marks
    clearSchedule();
    document.body.dataset.renders = String(++renders);
    return;
  }
  state = readForm();
  writeQuery(state, DEFAULTS);
  setDownloads();
  updatePictures();
  // A newer request aborts the older; the old numbers stay greyed until the new ones arrive.
  const job = latest('schedule', [document.querySelector('section.results'), $('compare'), $('sweep')]);
  const signal = job.signal;
  const p = paramsOf(state);
  const cp = paramsOf(state, FIELDS.filter((k) => k !== 'schedule'));
  const [s, c] = await Promise.allSettled([
    scheduleAnswer({ ...p, dependencies: 1, format: 'columns' }, signal),
    api('api/compare', { params: cp, signal }),
  ]);
  if (signal.aborted) return;
  if (s.status === 'fulfilled') {
    markField('', '');
    showSchedule(s.value);
  } else {
    markField(s.reason.parameter, s.reason.message);
    clearSchedule();
  }
  if (c.status === 'fulfilled') {
    $('compare-error').hidden = true;
    showCompare(c.value);
  } else {
    lastCompare = null;
    clear($('compare'));
    clear($('sweep'));
    $('compare-error').textContent = c.reason.message;
    $('compare-error').hidden = false;
  }
  showNotes();
  job.done();
  document.body.dataset.renders = String(++renders);
}

function clearSchedule() {
  lastSchedule = null;
  for (const id of ['m-makespan', 'm-bubble', 'm-span-bubble', 'm-peak']) $(id).textContent = '–';
  clearTimeline($('timeline'));
  clear($('peaks'));
  $('timeline-info').textContent = '';
}

function showSchedule(d) {
  lastSchedule = d;
  $('m-makespan').textContent = ms(d.makespan);
  $('m-bubble').textContent = pct(d.bubble_fraction);
  $('m-span-bubble').textContent = pct(d.span_bubble_fraction);
  $('m-peak').textContent = `${d.peak_activations} chunks`;
  // What the engine derived for the costs left empty.
  for (const k of ['f', 'b', 'i', 'w', 'fb']) $(k).placeholder = fmtNum(d.costs[k]);
  const title = `${d.schedule}: P = ${d.pp} ranks, v = ${d.vpp} chunk${d.vpp === 1 ? '' : 's'} per rank, m = ${d.microbatches} microbatches`;
  $('timeline-title').textContent = `Timeline: ${title}`;
  drawTimeline($('timeline'), $('timeline-info'), d, { title: d.schedule });
  setPlaying(false);
  $('follow-mb').max = String(Math.max(0, d.microbatches - 1));
  drawBars($('peaks'), d.ranks.map((r) => ({ label: `rank ${r.rank}`, value: r.peak_activations })), {
    unit: (v) => (v === 1 ? ' chunk' : ' chunks'),
    ariaLabel: `Peak activations per rank: ${d.ranks.map((r) => `rank ${r.rank} ${r.peak_activations}`).join(', ')}`,
  });
}

function meter(fraction) {
  const w = 80;
  return svg('svg', { viewBox: `0 0 ${w} 10`, class: 'meter', 'aria-hidden': 'true' },
    svg('rect', { x: 0, y: 0, width: w, height: 10, class: 'meter-bg' }),
    svg('rect', { x: 0, y: 0, width: Math.max(0, Math.min(1, fraction)) * w, height: 10, class: 'meter-fill' }));
}

function showCompare(c) {
  lastCompare = c;
  const u = c.costs_per_rank;
  $('compare-caption').textContent =
    `P = ${c.pp}, m = ${c.microbatches}. Costs per rank per microbatch, as above (F = ${fmtNum(u.f)}, ` +
    `B = ${fmtNum(u.b)}, I = ${fmtNum(u.i)}, W = ${fmtNum(u.w)} ms): a schedule with v chunks runs each chunk's ` +
    'action in 1/v of them, so every schedule does the same work. × stage divides the peak by v.';
  const table = clear($('compare'));
  table.append(el('thead', {}, el('tr', {},
    ['Schedule', 'v', 'Makespan (ms)', 'Bubble', 'Idle in spans', 'Peak act. (chunks)', '× stage'].map((h) =>
      el('th', { scope: 'col' }, h)))));
  const body = el('tbody');
  for (const r of c.schedules) {
    const pick = el('button', { type: 'button', class: 'link', 'data-schedule': r.schedule,
      'aria-label': `Show ${r.schedule} above`, onclick: () => { $('schedule').value = r.schedule; update(); } }, r.schedule);
    const tr = el('tr', { class: r.schedule === state.schedule ? 'current' : null, 'data-schedule': r.schedule },
      el('th', { scope: 'row' }, pick), el('td', {}, r.vpp));
    if (r.error !== undefined) {
      tr.append(el('td', { colspan: 5, class: 'row-error' }, r.error));
    } else {
      tr.append(
        el('td', {}, fmtNum(r.makespan)),
        el('td', {}, meter(r.bubble_fraction), ' ', pct(r.bubble_fraction)),
        el('td', {}, meter(r.span_bubble_fraction), ' ', pct(r.span_bubble_fraction)),
        el('td', {}, r.peak_activations),
        el('td', {}, fmtNum(r.peak_activations_stage_equivalent)));
    }
    body.append(tr);
  }
  table.append(body);
  drawBubblePlot($('sweep'), c.bubble_vs_microbatches, c.schedules.map((r) => r.schedule),
    { current: state.schedule, markM: c.microbatches });
}

// "What to notice" and "common misunderstandings", in the project's words, with the numbers of
// this very view (from the engine; nothing here is recomputed).
function showNotes() {
  const d = lastSchedule, c = lastCompare;
  const row = (n) => (c ? c.schedules.find((s) => s.schedule === n && s.makespan !== undefined) : undefined);
  const g = row('gpipe'), o = row('1f1b'), z = row('zbv') || row('zb-h2'), h2 = row('zb-h2'), il = row('interleaved-1f1b');
  const notes = [];
  if (d) {
    notes.push(`${d.schedule}: ${pct(d.bubble_fraction)} of P × makespan (${d.pp} × ${ms(d.makespan)}) is idle, ` +
      `but only ${pct(d.span_bubble_fraction)} inside the ranks' own spans. The rest is the ramp: rank r starts ` +
      'r steps late, and the first ranks finish early. Point at a block to see what it waited for.');
  }
  if (g && o) {
    notes.push(`GPipe and 1F1B take the same time here (${ms(g.makespan)} and ${ms(o.makespan)}; bubble ` +
      `${pct(g.bubble_fraction)} and ${pct(o.bubble_fraction)}), but at its peak GPipe holds ${g.peak_activations} ` +
      `chunk activations and 1F1B ${o.peak_activations}: 1F1B bounds memory, it does not shrink the bubble.`);
  }
  if (c) {
    const cur = c.schedules.some((s) => s.schedule === state.schedule) ? state.schedule : '1f1b';
    const pts = c.bubble_vs_microbatches.filter((p) => p.bubble_fraction[cur] !== null);
    const here = pts.find((p) => p.microbatches === c.microbatches);
    const more = pts.filter((p) => p.microbatches > c.microbatches);
    if (here && more.length) {
      const far = more[more.length - 1];
      notes.push(`More microbatches shrink the bubble: ${cur} wastes ${pct(here.bubble_fraction[cur])} at m = ` +
        `${c.microbatches}, ${pct(more[0].bubble_fraction[cur])} at m = ${more[0].microbatches} and ` +
        `${pct(far.bubble_fraction[cur])} at m = ${far.microbatches} (per-rank costs, as in the table). The ramp is ` +
        'paid once per iteration; more, smaller microbatches spread it thinner, but each runs less efficiently on a GPU.');
    }
  }
  if (z) {
    notes.push(`${z.schedule}: ${pct(z.span_bubble_fraction)} idle inside the ranks' spans, yet ` +
      `${pct(z.bubble_fraction)} of P × makespan. Zero bubble is about idle inside each rank's span; the ramp at ` +
      'the start and the end of an iteration remains.');
  }
  if (il && o) {
    notes.push(`interleaved-1f1b with v = ${il.vpp}: bubble ${pct(il.bubble_fraction)} against 1F1B's ` +
      `${pct(o.bubble_fraction)}. Smaller chunks per rank shorten the ramp, at the price of v times as many sends ` +
      `between ranks and more activations held (${il.peak_activations} chunks, ` +
      `${fmtNum(il.peak_activations_stage_equivalent)} stage-equivalents).`);
  }
  const list = clear($('notice'));
  for (const n of notes) list.append(el('li', {}, n));

  const myths = clear($('myths'));
  const myth = (claim, answer) => myths.append(el('dt', {}, `“${claim}”`), el('dd', {}, answer));
  myth('1F1B has a smaller bubble than GPipe.', g && o
    ? `Not with the same m: here both waste ${pct(g.bubble_fraction)} and ${pct(o.bubble_fraction)}. 1F1B starts ` +
      `each backward as early as it can, so a rank holds at most P microbatches (${o.peak_activations} chunks ` +
      `against GPipe's ${g.peak_activations}). Same bubble, bounded memory.`
    : 'Not with the same m: both have the same bubble; 1F1B bounds the activations a rank holds to P microbatches.');
  myth('Zero bubble means the GPUs never idle.', z
    ? `Within one iteration the last rank still waits for the pipeline to fill: ${z.schedule} idles ` +
      `${pct(z.bubble_fraction)} of P × makespan. What the zero-bubble schedules drive toward zero is the idle ` +
      `inside each rank's span (${pct(z.span_bubble_fraction)} here; none when F, I and W cost the same): ` +
      'deferred W fill the gaps, the ramp stays.'
    : 'Within one iteration the ramp remains; what goes to zero is the idle inside each rank\'s span.');
  myth('The bubble is (P − 1)/m.', 'That divides the ramp by the ideal time (m microbatches without a bubble). ' +
    'As a share of the whole iteration, which this page shows, fill-drain schedules waste (P − 1)/(m + P − 1). ' +
    'Both shrink as m grows; say which one you mean.');
  myth('Splitting the backward into I and W is free.', h2 && o
    ? `A deferred W keeps its activation alive (W needs it too): zb-h2 holds up to ${h2.peak_activations} chunks ` +
      `against 1F1B's ${o.peak_activations}.`
    : 'A deferred W keeps its activation alive, so the schedules that defer most hold the most.');
  myth('More chunks per rank is a free win.', 'Interleaving shrinks the ramp but multiplies the sends between ranks ' +
    'by v; set a p2p latency above and watch the gain shrink.');
}

// --- Import: paste or upload PyTorch's CSV -------------------------------------------------------

function importParams() {
  return { ...paramsOf(state, COST_FIELDS), dependencies: 1 };
}

function showImportError(err, text) {
  $('import-result').hidden = true;
  const box = $('import-error');
  clear(box).append(el('strong', {}, 'Not a runnable schedule: '), err.message);
  box.hidden = false;
  const where = clear($('import-where'));
  const body = err.body || {};
  if (body.line) {
    // The line with the cell that could not be read.
    const line = text.split('\n')[body.line - 1] || '';
    const cells = line.replace(/\r$/, '').split(',');
    const shown = el('code', { class: 'csv-line' });
    cells.forEach((cell, k) => {
      if (k) shown.append(',');
      shown.append(k + 1 === body.column ? el('mark', { class: 'bad-cell' }, cell || ' ') : cell);
    });
    where.append(el('p', {}, `Line ${body.line}, column ${body.column}:`), el('pre', { class: 'csv-excerpt' }, shown));
  }
  if (body.deadlock && body.ranks) {
    const first = body.deadlock[0];
    const cells = body.ranks.reduce((n, r) => n + r.length, 0);
    const w = first.waits_for;
    where.append(el('p', { class: 'broken' }, el('strong', {}, 'First broken dependency: '),
      `rank ${first.rank}'s action #${first.index} (${first.action}) waits for ${w.type === 'F' ? 'the forward' : 'the backward'} ` +
      `of stage ${w.stage}, microbatch ${w.microbatch}, which rank ${w.rank} ` +
      (w.action !== undefined ? `runs as its action #${w.index} (${w.action}), only after what it is itself stuck on.` : 'never runs.')));
    if (cells <= 4000) {
      const stuck = new Set(body.deadlock.map((d) => `${d.rank}:${d.index}`));
      const awaited = new Set(body.deadlock.filter((d) => d.waits_for.index !== undefined).map((d) => `${d.waits_for.rank}:${d.waits_for.index}`));
      const table = el('table', { class: 'order-grid', 'aria-label': 'Each rank\'s actions in order; the stuck ones marked' });
      body.ranks.forEach((row, r) => {
        const tr = el('tr', {}, el('th', { scope: 'row' }, `rank ${r}`));
        row.forEach((cell, k) => {
          const key = `${r}:${k}`;
          const cls = [key === `${first.rank}:${first.index}` ? 'first-broken' : '', stuck.has(key) ? 'stuck' : '',
            awaited.has(key) ? 'awaited' : ''].filter(Boolean).join(' ');
          tr.append(el('td', { class: cls || null, title: cls ? cls.replace('-', ' ') : null }, cell));
        });
        table.append(tr);
      });
      where.append(el('div', { class: 'table-wrap' }, table),
        el('p', { class: 'caption' }, 'Thick red outline: the first action that can never start. Red: every stuck ' +
          'action of the waiting chain. Dashed: the action each one waits for.'));
    }
  }
}

function showImport(d) {
  $('import-error').hidden = true;
  clear($('import-where'));
  $('import-result').hidden = false;
  const m = clear($('import-metrics'));
  const item = (label, value, id) => m.append(el('div', {}, el('dt', {}, label), el('dd', { id }, value)));
  item('Ranks × chunks, microbatches', `${d.pp} × ${d.vpp}, ${d.microbatches}`, 'i-shape');
  item('Makespan', ms(d.makespan), 'i-makespan');
  item('Bubble', pct(d.bubble_fraction), 'i-bubble');
  item('Idle inside spans', pct(d.span_bubble_fraction), 'i-span-bubble');
  item('Peak activations', `${d.peak_activations} chunks`, 'i-peak');
  drawTimeline($('import-timeline'), $('import-info'), d, { title: 'imported schedule' });
}

async function runImport() {
  const text = $('csv').value;
  if (!text.trim()) {
    showImportError(new Error('the box is empty: paste a CSV, upload a file, or start from the schedule above'), '');
    return;
  }
  try {
    showImport(await api('api/import', { params: importParams(), body: text }));
  } catch (err) {
    showImportError(err, text);
  }
  document.body.dataset.imports = String(Number(document.body.dataset.imports || 0) + 1);
}

$('csv-run').addEventListener('click', runImport);
$('csv-current').addEventListener('click', async () => {
  try {
    $('csv').value = await api('api/schedule', { params: { ...paramsOf(state), format: 'csv' }, as: 'text' });
    $('csv').focus();
  } catch (err) {
    showImportError(err, '');
  }
});
$('csv-file').addEventListener('change', async (ev) => {
  const file = ev.target.files && ev.target.files[0];
  if (!file) return;
  if (file.size > 4 << 20) {
    showImportError(new Error(`${file.name} is ${file.size} bytes; the server takes up to 4 MiB`), '');
    return;
  }
  $('csv').value = await file.text();
  runImport();
});
for (const b of document.querySelectorAll('#import-result button[data-format]')) {
  b.addEventListener('click', async () => {
    const format = b.dataset.format;
    try {
      const blob = await api('api/import', { params: { ...paramsOf(state, COST_FIELDS), format, download: 1 },
        body: $('csv').value, as: 'blob' });
      saveBlob(blob, `imported.${format === 'chrome' ? 'trace.json' : format}`);
    } catch (err) {
      showImportError(err, $('csv').value);
    }
  });
}

// --- One microbatch played through the stages ---------------------------------------------------

function setPlaying(on) {
  $('follow-play').setAttribute('aria-pressed', String(on));
  $('follow-play').textContent = on ? 'Stop' : 'Play it through the stages';
}
$('follow-play').addEventListener('click', () => {
  const t = $('timeline')._timeline;
  if (!t) return;
  if (t.playing) { t.stop(); setPlaying(false); return; }
  const mb = Math.trunc(Number($('follow-mb').value));
  if (!Number.isFinite(mb) || !t.play(mb, { onEnd: () => setPlaying(false) })) {
    $('timeline-info').textContent = `This schedule has no microbatch ${$('follow-mb').value}: pick 0 to ${lastSchedule ? lastSchedule.microbatches - 1 : 0}.`;
    return;
  }
  setPlaying(true);
});
// The follow controls are not schedule parameters.
$('follow-mb').addEventListener('keydown', (ev) => { if (ev.key === 'Enter') { ev.preventDefault(); $('follow-play').click(); } });

// --- Controls ----------------------------------------------------------------------------------

$('controls').addEventListener('input', () => schedule_update(250));
$('controls').addEventListener('change', () => schedule_update(0));
$('controls').addEventListener('submit', (ev) => { ev.preventDefault(); schedule_update(0); });
$('reset').addEventListener('click', () => {
  state = { ...DEFAULTS };
  fillForm();
  update();
});
wireCopyLink($('copy-link'));

update();
