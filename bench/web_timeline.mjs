// Frame time and zoom-step latency of the workbench's large timelines (issue 24), run by hand, not
// by ctest (a timing belongs in a benchmark, never in a test):
//   INFRALENS_BIN=build/infralens node bench/web_timeline.mjs [--steps 20] [--width 1440] [--trace-m 176]
//     [--pipeline-only | --trace-only]
// Starts `infralens serve` and headless Debian Chromium (tests/browser/harness.mjs), opens each
// large view and measures, inside the page:
//   frame   the drawing of one frame (the canvas timeline's render(), web/js/timeline.js) at the
//           whole view and at each of `steps` zoom levels, W by W (x1.25);
//   step    a zoom or pan step from the key press (a keydown event on the drawing) to the end of the
//           next animation frame that shows it, which includes waiting for that frame (up to one
//           display refresh, 16.7 ms at 60 Hz).
// The measured trace: `infralens trace synth` of 1F1B, P = 8 ranks, --trace-m microbatches, 8
// kernels per action, 3 steps (176: about 100 MB), uploaded on the measurement page (its trace
// view, web/js/traceview.js, is the same canvas component: host._timeline).
// Prints median, 95th percentile and worst of each, in ms, as a Markdown table (docs/workbench.md).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIN, closeBrowsers, openPage, startBrowser, startServer } from '../tests/browser/harness.mjs';

const arg = (name, dflt) => {
  const k = process.argv.indexOf(`--${name}`);
  return k > 0 ? Number(process.argv[k + 1]) : dflt;
};
const STEPS = arg('steps', 20);
const WIDTH = arg('width', 1440);
const TRACE_M = arg('trace-m', 176);
const ONLY = process.argv.includes('--pipeline-only');
const TRACE_ONLY = process.argv.includes('--trace-only');

const VIEWS = [
  // [name, path, host of the drawing, ready predicate source]
  // m = 1,024: interleaved needs m to be a multiple of its round count (1,000 is refused).
  ['pipeline interleaved-1f1b P=64 m=1024 (262,144 actions)',
    'pipeline.html?schedule=interleaved-1f1b&pp=64&microbatches=1024&cmp=', '#timeline'],
  ['pipeline zbv P=64 m=1000, v=2 (384,000 actions)',
    'pipeline.html?schedule=zbv&pp=64&microbatches=1000&cmp=', '#timeline'],
  ['pipeline 1f1b P=4 m=8 (64 actions)', 'pipeline.html?schedule=1f1b&pp=4&microbatches=8&cmp=', '#timeline'],
];

const q = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};
const f1 = (v) => v.toFixed(1);

// Runs in the page: frame times of render() over the zoom levels, and key-to-frame latencies.
async function measure(page, host, steps) {
  return page.evaluate(async ({ host, steps }) => {
    const h = document.querySelector(host);
    const t = h._timeline;
    const c = h.querySelector('canvas.timeline');
    const nextFrame = () => new Promise((r) => requestAnimationFrame(() => r()));
    const frames = [], zooms = [], pans = [];
    const key = (k) => c.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true, cancelable: true }));
    t.zoom.reset();
    await nextFrame();
    for (let i = 0; i < 5; i++) { const a = performance.now(); t.redraw(); frames.push(performance.now() - a); }
    for (let s = 0; s < steps; s++) {
      let a = performance.now();
      key('w');
      await nextFrame();
      zooms.push(performance.now() - a);
      a = performance.now();
      t.redraw();
      frames.push(performance.now() - a);
      a = performance.now();
      key('d');
      await nextFrame();
      pans.push(performance.now() - a);
    }
    return { frames, zooms, pans };
  }, { host, steps });
}

const server = await startServer();
const browser = await startBrowser({ width: WIDTH, height: 900 });
const rows = [];
try {
  for (const [name, path, host] of TRACE_ONLY ? [] : VIEWS) {
    const { page } = await openPage(browser.context);
    const t0 = Date.now();
    await page.goto(`${server.url}${path}`);
    await page.waitForFunction(() => Number(document.body.dataset.renders || 0) >= 1, null, { timeout: 300000 });
    const loadMs = Date.now() - t0;
    await page.waitForFunction((hs) => document.querySelector(hs)?._timeline, host, { timeout: 300000 });
    const r = await measure(page, host, STEPS);
    rows.push({ name, loadMs, ...r });
    process.stderr.write(`${name}: done\n`);
  }
  // The measured trace, uploaded (--pipeline-only leaves it out).
  const dir = ONLY ? null : fs.mkdtempSync(path.join(os.tmpdir(), 'infralens-bench-trace-'));
  if (dir) try {
    const out = path.join(dir, 'ranks');
    const said = execFileSync(BIN, ['trace', 'synth', '-s', '1f1b', '--pp', '8', '-m', String(TRACE_M), '--steps', '3',
      '--kernels-per-action', '8', '--cpu-ops-per-kernel', '2', '-o', out], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const files = fs.readdirSync(out).map((f) => path.join(out, f));
    const mb = files.reduce((n, f) => n + fs.statSync(f).size, 0) / 1e6;
    const { page } = await openPage(browser.context);
    await page.goto(`${server.url}measure.html`);
    const t0 = Date.now();
    await page.setInputFiles('#files', files);
    await page.waitForFunction(() => document.querySelector('#trace-view')?._timeline, null, { timeout: 300000 });
    const loadMs = Date.now() - t0;
    const r = await measure(page, '#trace-view', STEPS);
    rows.push({ name: `measured trace, 8 ranks, ${mb.toFixed(0)} MB (1F1B m=${TRACE_M}, canvas trace view)`, loadMs, ...r });
    process.stderr.write(`trace: ${said.trim()}\n`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
} finally {
  await browser.close();
  await closeBrowsers();
  server.stop();
}
console.log(`Chromium headless, ${WIDTH} x 900, ${STEPS} zoom steps (W, x1.25) each followed by a pan (D); ms.\n`);
console.log('| view | load to drawn | frame median | frame p95 | frame worst | zoom step median | zoom p95 | pan step median | pan p95 |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(`| ${r.name} | ${r.loadMs} | ${f1(q(r.frames, 0.5))} | ${f1(q(r.frames, 0.95))} | ${f1(Math.max(...r.frames))} | ` +
    `${f1(q(r.zooms, 0.5))} | ${f1(q(r.zooms, 0.95))} | ${f1(q(r.pans, 0.5))} | ${f1(q(r.pans, 0.95))} |`);
}
