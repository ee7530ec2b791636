// The measurement page's calibration panel (issue 10). The engine fits every number (POST
// /api/trace/calibrate: `infralens trace calibrate`); GET /api/trace/calibrate/sample writes an
// example trace with shapes; this file sends the files, draws the fits and the samples, saves the
// efficiency file and links to the design page with it.
//
// The link carries the efficiency file's text in the design page's query string (`efficiency`,
// the API's parameter of the same name): a calibration's file is under 1 KB, the URL stays
// shareable and survives a reload, and the server's 8 KiB request line holds it. A longer file
// (many trace names in its comments) is sent without its comment lines; if it is still too long
// the link is withheld and the page says to use the CLI.
import { ApiError, api, clear, el, fmtNum, saveBlob } from './common.js';
import { svg } from './svg.js';

const $ = (id) => document.getElementById(id);
// The sample's curves: unlike every built-in row, so that the fit visibly recovers them.
export const SAMPLE_CURVES = { gemm: 0.62, gemm_half_dim: 128, attention_fa2: 0.4, hbm: 0.7 };
const MAX_LINK_CHARS = 6000;  // of the percent-encoded query; the server reads 8 KiB lines

let calibration = null;  // the last answer: {calibration, efficiency_csv, errors}
let presets = null;
let runs = 0;

function status(text) { $('calib-status').textContent = text; }

function showError(err) {
  const box = $('calib-error');
  $('calib-gpu').removeAttribute('aria-invalid');
  $('calib-cluster').removeAttribute('aria-invalid');
  if (!err) { box.hidden = true; clear(box); return; }
  clear(box).append(el('strong', {}, 'The engine refused this: '), err.message,
    err.parameter && err.parameter !== 'body' ? el('span', { class: 'param' }, ` (parameter: ${err.parameter})`) : '');
  if (err.parameter === 'gpu') $('calib-gpu').setAttribute('aria-invalid', 'true');
  if (err.parameter === 'cluster') $('calib-cluster').setAttribute('aria-invalid', 'true');
  box.hidden = false;
}

function sampleCsv(gpu) {
  const c = SAMPLE_CURVES;
  return ['gpu,quantity,precision,value,source', `${gpu},gemm,bf16,${c.gemm},sample`,
    `${gpu},gemm_half_dim,,${c.gemm_half_dim},sample`, `${gpu},attention_fa2,,${c.attention_fa2},sample`,
    `${gpu},hbm,,${c.hbm},sample`].join('\n');
}

// The GPU for the sample (it names none in deviceProperties): the one chosen, else H100-SXM.
const sampleGpu = () => $('calib-gpu').value || 'H100-SXM';

// `gpu` '': the traces' deviceProperties name it (the engine says so in its notes).
async function run(files, label, gpu = $('calib-gpu').value) {
  const form = new FormData();
  if (gpu) form.append('gpu', gpu);
  if ($('calib-cluster').value) form.append('cluster', $('calib-cluster').value);
  for (const f of files) form.append('trace', f, f.name);
  status(`Calibrating from ${label}…`);
  $('calibrate').setAttribute('aria-busy', 'true');
  try {
    const res = await fetch('api/trace/calibrate', { method: 'POST', body: form });
    const body = await res.json().catch(() => null);
    if (!res.ok) throw new ApiError(res.status, body);
    showError(null);
    calibration = body;
    render(body);
    const fitted = body.calibration.fits.filter((f) => f.fitted).length;
    const notes = (body.calibration.notes || []).map((n) => n.charAt(0).toUpperCase() + n.slice(1));
    status(`Calibrated ${body.calibration.gpu} from ${label}: ${fitted} of ${body.calibration.fits.length} constants fitted.${notes.length ? ` ${notes.join('. ')}.` : ''}`);
  } catch (err) {
    showError(err);
    $('calib-result').hidden = true;
    status('Nothing fitted: see the error above.');
  }
  $('calibrate').removeAttribute('aria-busy');
  document.body.dataset.calibrations = String(++runs);
}

async function runSample() {
  const gpu = sampleGpu();
  status('Writing a sample trace with shapes…');
  try {
    const q = new URLSearchParams({ gpu, efficiency: sampleCsv(gpu) });
    const res = await fetch(`api/trace/calibrate/sample?${q}`);
    if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
    const parts = await res.formData();  // one file part, rank0.json
    await run(parts.getAll('trace'), 'a sample trace', gpu);
  } catch (err) {
    showError(err);
    status('Nothing fitted: see the error above.');
    document.body.dataset.calibrations = String(++runs);
  }
}

// --- Drawing -------------------------------------------------------------------------------------

const fmt3 = (x) => x.toFixed(3);
const curveName = (f) => (f.precision ? `${f.quantity} ${f.precision}` : f.quantity);
const residual = (f) => (f.fitted ? `${(100 * f.rms_residual).toFixed(1)}% (max ${(100 * f.max_residual).toFixed(1)}%)` : '–');

function fitTable(cal) {
  const head = el('thead', {}, el('tr', {}, ['Curve', 'Samples', 'Value', 'Default', 'Residual (rms)', 'Note']
    .map((t, k) => el('th', { scope: 'col', class: k === 5 ? 'left' : '' }, t))));
  const rows = cal.fits.map((f) => {
    const dim = f.quantity === 'gemm_half_dim';
    const v = (x) => (dim ? x.toFixed(1) : fmt3(x));
    return el('tr', { 'data-curve': curveName(f), class: f.fitted ? 'fitted' : 'kept' },
      el('th', { scope: 'row' }, curveName(f)), el('td', {}, String(f.samples)),
      el('td', { 'data-value': String(f.value) }, f.fitted ? v(f.value) : `${v(f.value)} (kept)`),
      el('td', {}, v(f.default)), el('td', {}, residual(f)), el('td', { class: 'left wrap' }, f.note));
  });
  return [el('caption', { class: 'visually-hidden' }, `Fitted efficiency constants for ${cal.gpu}`), head, el('tbody', {}, rows)];
}

// A scatter plot: log-x axis, efficiency 0..1 on y, points and lines (curves or constants).
function plot({ title, xLabel, points, lines, id }) {
  const W = 560, H = 300, L = 52, R = 14, T = 28, B = 44;
  const xs = points.map((p) => p.x).filter((x) => x > 0);
  const lo = Math.floor(Math.log10(Math.min(...xs))), hi = Math.ceil(Math.log10(Math.max(...xs)));
  const hiX = hi === lo ? hi + 1 : hi;
  const X = (x) => L + ((Math.log10(x) - lo) / (hiX - lo)) * (W - L - R);
  const Y = (y) => T + (1 - Math.min(Math.max(y, 0), 1)) * (H - T - B);
  const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': `${id}-t`, class: 'calib-plot', id });
  g.append(svg('title', { id: `${id}-t` }, `${title}: ${points.length} measured points`));
  g.append(svg('text', { x: L, y: 16, class: 'plot-title' }, title));
  for (let y = 0; y <= 1.0001; y += 0.25) {
    g.append(svg('line', { x1: L, x2: W - R, y1: Y(y), y2: Y(y), class: 'grid' }),
      svg('text', { x: L - 6, y: Y(y) + 4, 'text-anchor': 'end', class: 'tick' }, y.toFixed(2)));
  }
  for (let e = lo; e <= hiX; ++e) {
    g.append(svg('line', { x1: X(10 ** e), x2: X(10 ** e), y1: T, y2: H - B, class: 'grid' }),
      svg('text', { x: X(10 ** e), y: H - B + 16, 'text-anchor': 'middle', class: 'tick' }, `1e${e}`));
  }
  g.append(svg('text', { x: (L + W - R) / 2, y: H - 8, 'text-anchor': 'middle', class: 'axis-label' }, xLabel));
  for (const line of lines) {
    const path = [];
    if (line.f) {
      for (let k = 0; k <= 120; ++k) {
        const x = 10 ** (lo + ((hiX - lo) * k) / 120);
        path.push(`${k ? 'L' : 'M'}${X(x).toFixed(1)},${Y(line.f(x)).toFixed(1)}`);
      }
    } else {
      // Given points (the engine's model at the samples' own shapes): a polyline per run of
      // points, and a short tick at each point, so a lone point shows where the model puts it.
      for (const run of line.runs) {
        run.forEach((p, k) => path.push(`${k ? 'L' : 'M'}${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`));
      }
      const ticks = new Set(line.runs.flat().map((p) => `M${(X(p.x) - 6).toFixed(1)},${Y(p.y).toFixed(1)}h12`));
      path.push(...ticks);
    }
    g.append(svg('path', { d: path.join(''), class: `curve ${line.cls}` }, svg('title', {}, line.label)));
  }
  // Samples that land on the same spot (the same GEMM shape in every layer, the same sequence
  // length in every step) are one marker, larger with its count, its title naming them all.
  const spots = new Map();
  for (const p of points) {
    const cx = X(p.x).toFixed(1), cy = Y(p.y).toFixed(1), key = `${cx},${cy},${p.hollow ? 1 : 0}`;
    if (!spots.has(key)) spots.set(key, { cx, cy, hollow: p.hollow, labels: new Map(), n: 0 });
    const s = spots.get(key);
    s.n += 1;
    s.labels.set(p.label, (s.labels.get(p.label) || 0) + 1);
  }
  for (const s of spots.values()) {
    const named = [...s.labels].slice(0, 6).map(([l, k]) => (k > 1 ? `${l} (×${k})` : l));
    if (s.labels.size > 6) named.push(`and ${s.labels.size - 6} more shapes`);
    const title = s.n === 1 ? named[0] : `${s.n} samples here:\n${named.join('\n')}`;
    g.append(svg('circle', { cx: s.cx, cy: s.cy, r: Math.min(9, 4 + 1.5 * Math.log2(s.n)).toFixed(1),
      class: `pt${s.hollow ? ' hollow' : ''}`, 'data-samples': s.n }, svg('title', {}, title)));
  }
  const legend = el('ul', { class: 'legend calib-legend', 'aria-label': 'legend' },
    el('li', {}, el('span', { class: 'mark pt-mark', 'aria-hidden': 'true' }), 'measured (a larger dot: several samples at one spot)'),
    lines.map((l) => el('li', {}, el('span', { class: `mark line-mark ${l.cls}`, 'aria-hidden': 'true' }), l.label)));
  return el('figure', { class: 'figure calib-figure' }, g, legend);
}

function plots(cal) {
  const out = [];
  const fit = (q, p) => cal.fits.find((f) => f.quantity === q && f.precision === p);
  const hbmFit = fit('hbm', '');
  for (const precision of ['bf16', 'fp8']) {
    const samples = cal.gemm.filter((s) => s.precision === precision && s.efficiency > 0);
    if (!samples.length) continue;
    const e = fit('gemm', precision), h = fit('gemm_half_dim', precision);
    const d = (s) => Math.min(s.m, s.n, s.k);
    // The planner's GEMM model (tiles in waves, the last wave split K ways, the HBM floor) is a
    // function of the whole shape, not of d: the engine gives its efficiency at each sample's
    // shape (model_efficiency at the calibrated constants, default_efficiency at the built-in
    // ones). A run joins the shapes that differ in M only (a layer's GEMM over token counts).
    const runs = (key) => {
      const byShape = new Map();
      for (const s of samples) {
        const id = `${s.batch}|${s.n}|${s.k}`;
        if (!byShape.has(id)) byShape.set(id, new Map());
        byShape.get(id).set(s.m, { x: d(s), y: s[key] });
      }
      return [...byShape.values()].map((ms) => [...ms].sort((a, b) => a[0] - b[0]).map(([, p]) => p));
    };
    const constants = (ev, hv, bw) => `e ${fmt3(ev)}, k_half ${hv.toFixed(0)}, HBM ${fmt3(bw)}`;
    const lines = [
      { cls: 'fitted', label: `planner's GEMM model, calibrated (${constants(e.value, h.value, hbmFit.value)})`, runs: runs('model_efficiency') },
      { cls: 'default', label: `planner's GEMM model, built-in (${constants(e.default, h.default, hbmFit.default)})`, runs: runs('default_efficiency') },
    ];
    out.push(plot({
      id: `plot-gemm-${precision}`, title: `${cal.gpu} ${precision.toUpperCase()} GEMM efficiency vs d = min(M, N, K)`,
      xLabel: 'd = min(M, N, K), log scale', lines,
      points: samples.map((s) => ({ x: d(s), y: s.efficiency, label: `${s.op} ${s.m}×${s.n}×${s.k}: ${fmt3(s.efficiency)} (model ${fmt3(s.model_efficiency)}, split-K ${s.split})` })),
    }));
  }
  const att = cal.attention.filter((s) => s.efficiency > 0 && s.backend !== 'efficient');
  if (att.length) {
    const lines = [];
    for (const [q, backend] of [['attention', 'cudnn'], ['attention_fa2', 'flash']]) {
      const f = fit(q, '');
      if (f && att.some((s) => s.backend === backend)) lines.push({ cls: 'fitted', label: `${q} ${f.fitted ? 'fitted' : 'kept'}: ${fmt3(f.value)}`, f: () => f.value });
    }
    out.push(plot({
      id: 'plot-attention', title: `${cal.gpu} attention efficiency vs sequence length (BF16 peak)`,
      xLabel: 'keys per query (seq_k), log scale', lines,
      points: att.map((s) => ({ x: s.seq_k, y: s.efficiency, label: `${s.op} (${s.backend}${s.backward ? ', backward' : ''}) seq ${s.seq_k}: ${fmt3(s.efficiency)}` })),
    }));
  }
  const hbm = cal.hbm.filter((s) => s.efficiency > 0);
  if (hbm.length) {
    const f = fit('hbm', '');
    out.push(plot({
      id: 'plot-hbm', title: `${cal.gpu} streaming kernels: fraction of HBM bandwidth`,
      xLabel: 'bytes read + written, log scale (hollow: too small to fit)',
      lines: [{ cls: 'fitted', label: `hbm ${f.fitted ? 'fitted' : 'kept'}: ${fmt3(f.value)}`, f: () => f.value }],
      points: hbm.map((s) => ({ x: s.bytes, y: s.efficiency, hollow: !s.in_fit, label: `${s.op} ${fmtNum(s.bytes / 1e6)} MB: ${fmt3(s.efficiency)}` })),
    }));
  }
  return out;
}

// The design page with a cluster of this GPU and the constants in its query string.
function planLink(cal, csv) {
  const cluster = presets && presets.clusters.find((c) => c.gpu === cal.gpu);
  const q = new URLSearchParams();
  if (cluster) q.set('cluster', cluster.name);  // the rest of the job: the design page's defaults
  q.set('efficiency', csv);
  if (q.toString().length > MAX_LINK_CHARS) q.set('efficiency', csv.split('\n').filter((l) => !l.startsWith('#')).join('\n'));
  return q.toString().length > MAX_LINK_CHARS ? '' : `design.html?${q}`;
}

function render(body) {
  const cal = body.calibration;
  $('calib-result').hidden = false;
  clear($('calib-fits')).append(...fitTable(cal));
  const figs = plots(cal);
  clear($('calib-plots')).append(...(figs.length ? figs : [el('p', {}, 'No sample has an efficiency to plot.')]));
  $('calib-csv').textContent = body.efficiency_csv;
  const href = planLink(cal, body.efficiency_csv);
  const link = $('calib-plan');
  link.hidden = !href;
  if (href) link.href = href;
  $('calib-plan-note').textContent = href
    ? `Opens the design page${presets && presets.clusters.find((c) => c.gpu === cal.gpu) ? '' : ' (no cluster preset has this GPU: pick one there)'} with these constants in its address.`
    : 'This efficiency file is too long for an address: download it and use infralens plan --efficiency FILE.';
}

function download() {
  if (!calibration) return;
  saveBlob(new Blob([calibration.efficiency_csv], { type: 'text/csv' }), 'efficiency.csv');
}

export async function initCalibration() {
  $('calib-sample').addEventListener('click', runSample);
  $('calib-run').addEventListener('click', () => {
    const files = [...$('calib-files').files];
    if (!files.length) { showError({ message: 'choose one or more trace files recorded with record_shapes=True first', parameter: '' }); return; }
    run(files, `${files.length} file${files.length === 1 ? '' : 's'}`);
  });
  $('calib-download').addEventListener('click', download);
  try {
    presets = await api('api/presets');
    // Uploaded traces name their GPU in deviceProperties (PyTorch's profiler writes it): the
    // default. The sample names none, so it runs as H100-SXM unless a GPU is chosen.
    const select = clear($('calib-gpu'));
    select.append(el('option', { value: '' }, 'the one the traces name'));
    for (const g of presets.gpus) select.append(el('option', { value: g.name }, g.name));
    select.value = '';
    const clusters = clear($('calib-cluster'));
    clusters.append(el('option', { value: '' }, 'dgx-h100 for H100-SXM traces, else none'));
    for (const c of presets.clusters) clusters.append(el('option', { value: c.name }, `${c.name}: ${c.gpus_per_node} × ${c.gpu}`));
    clusters.value = '';
  } catch (err) {
    showError(err);
  }
  document.body.dataset.calibReady = '1';
}
