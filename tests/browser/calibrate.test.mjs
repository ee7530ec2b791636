// Browser tests of the measurement page's calibration panel (issue 10): the sample trace's known
// curves (GEMMs at e 0.62 and k_half 128 in plan/gemm_time.h's model, attention 0.40, HBM 0.70: web/js/calibrate.js asks the
// server to synthesise them) come back in the fit table within 1%; the GEMM plot draws one point
// per sample, on the planner's GEMM model at the calibrated constants (served by the engine);
// the download is the efficiency file; the link opens the design page whose plan uses the
// calibrated constants; a trace without shapes gives the engine's one-line refusal.
// Screenshots at 1440x900 and 390x844 go to the build folder.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { openPage, serverAndBrowserForFile, shot } from './harness.mjs';

const { server, browser } = serverAndBrowserForFile();

const GEMM = 0.62, HALF_DIM = 128, FA2 = 0.40, HBM = 0.70;
// llama3-8b at tp 1 (trace/calibrate_synth.h): 4 GEMMs per layer (QKV, attention out, MLP up,
// MLP down) x 8 token counts (64 ... 8192).
const GEMM_SAMPLES = 4 * 8;

async function calibrations(page, n) {
  await page.waitForFunction((k) => Number(document.body.dataset.calibrations || 0) >= k, n, { timeout: 30000 });
}
const near = (got, want, rel, what) => assert.ok(Math.abs(got - want) <= rel * want, `${what}: ${got}, want ${want} ± ${100 * rel}%`);
const cell = async (page, curve) => Number(await page.getAttribute(`#calib-fits tr[data-curve="${curve}"] td[data-value]`, 'data-value'));

test('calibration panel: the sample comes back as its curves, plotted, downloaded and planned with', async () => {
  const { page, log } = await openPage(browser.context);
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`${server.url}measure.html`);
  await page.waitForFunction(() => document.body.dataset.calibReady === '1');
  // By default the traces name their GPU (deviceProperties) and the cluster is dgx-h100 for
  // H100-SXM traces; the sample names none and runs as H100-SXM.
  assert.equal(await page.inputValue('#calib-gpu'), '');
  assert.equal(await page.inputValue('#calib-cluster'), '');
  assert.equal(await page.locator('#calib-result').isHidden(), true);
  await page.click('#calib-sample');
  await calibrations(page, 1);
  assert.equal(await page.locator('#calib-error').isHidden(), true);

  // The fit table: the known curves within 1%, the built-in default beside them.
  near(await cell(page, 'gemm bf16'), GEMM, 0.01, 'gemm bf16');
  near(await cell(page, 'gemm_half_dim bf16'), HALF_DIM, 0.01, 'gemm_half_dim bf16');
  near(await cell(page, 'attention_fa2'), FA2, 0.01, 'attention_fa2');
  near(await cell(page, 'hbm'), HBM, 0.01, 'hbm');
  assert.equal(await page.locator('#calib-fits tr[data-curve="gemm bf16"] td').nth(2).innerText(), '0.720');  // data/hw/efficiency.csv, H100-SXM bf16
  assert.equal(await page.locator('#calib-fits tr[data-curve="gemm fp8"]').getAttribute('class'), 'kept');

  // The GEMM plot: one point per sample, as many as the API reports for the same trace.
  const apiSamples = await page.evaluate(async () => {
    const q = new URLSearchParams({ gpu: 'H100-SXM', efficiency: 'gpu,quantity,precision,value,source\nH100-SXM,gemm,bf16,0.62,t' });
    const form = await (await fetch(`api/trace/calibrate/sample?${q}`)).formData();
    form.append('gpu', 'H100-SXM');
    const body = await (await fetch('api/trace/calibrate', { method: 'POST', body: form })).json();
    return body.calibration.gemm.filter((s) => s.precision === 'bf16').length;
  });
  assert.equal(apiSamples, GEMM_SAMPLES);
  // Samples on the same spot are one marker carrying their count (data-samples): the counts add up
  // to the samples, and a marker is never drawn twice on one spot.
  const spots = async (sel) => page.locator(sel).evaluateAll((cs) => ({
    markers: cs.length,
    samples: cs.reduce((a, c) => a + Number(c.dataset.samples), 0),
    distinct: new Set(cs.map((c) => `${c.getAttribute('cx')},${c.getAttribute('cy')},${c.classList.contains('hollow')}`)).size,
  }));
  const gemm = await spots('#plot-gemm-bf16 circle.pt');
  assert.equal(gemm.samples, apiSamples);
  assert.equal(gemm.distinct, gemm.markers);
  assert.ok(gemm.markers < gemm.samples, 'the sample repeats its GEMM shapes: they share markers');
  // The planner's GEMM model at the calibrated and at the built-in constants are both drawn (the
  // engine's model_efficiency and default_efficiency per sample); attention and HBM have their plots.
  assert.equal(await page.locator('#plot-gemm-bf16 path.curve').count(), 2);
  assert.equal((await spots('#plot-attention circle.pt')).samples, 10);  // fwd + bwd x 5 lengths >= 512
  assert.equal((await spots('#plot-hbm circle.pt')).samples, 16);        // 2 adds x 8 token counts
  assert.equal((await spots('#plot-hbm circle.pt.hollow')).samples, 6);  // < 8e6 bytes: 64..256 tokens
  // A point's place: the QKV GEMM at 64 tokens (m 64, n 6144, k 4096) is one part-filled wave of
  // 1 x 24 tiles of 128 x 256 on 132 SMs, its k-loops split s <= floor(132 / 24) = 5 ways, the
  // fastest (plan/gemm_time.h). Each way's k-loop: 2 x 128 x 256 x (4096 / s + 128) FLOPs at
  // 989.4 TFLOP/s / 132 x 0.62; its bytes (64 x 4096 + 4096 x 6144) x 2 + 64 x 6144 x 2 =
  // 51,642,368 plus the partials 64 x 6144 x 4 x 2 x s, at 0.70 x 3.35 TB/s:
  //   s = 1: max(59.57, 22.02) = 59.57 us   s = 3: max(21.06, 26.05) = 26.05 us
  //   s = 2: max(30.69, 24.71) = 30.69 us   s = 4: max(16.25, 27.39) = 27.39 us
  //   s = 5: max(13.36, 28.73) = 28.73 us (the most ways, slower: its partials' traffic)
  // so 3 ways on the HBM floor, 61,079,552 bytes in 26.05 us; 2 x 64 x 6144 x 4096 FLOPs in that
  // time is 0.125 of the 989.4 TFLOP/s peak (0.113 at 5 ways).
  const title = await page.locator('#plot-gemm-bf16 circle.pt title').allTextContents();
  assert.ok(title.some((t) => t.split('\n').some((l) => l.startsWith('aten::mm 64×6144×4096: 0.125 (model 0.125, split-K 3)'))),
    title.slice(0, 3).join(' | '));
  // The points and the calibrated model agree: the sample's kernels follow the model, so every
  // marker sits on a tick of the calibrated model's path (within 2 px: the fit is within 1%).
  const onModel = await page.evaluate(() => {
    const d = document.querySelector('#plot-gemm-bf16 path.curve.fitted').getAttribute('d');
    const ticks = [...d.matchAll(/M([\d.]+),([\d.]+)h12/g)].map((m) => [Number(m[1]) + 6, Number(m[2])]);
    return [...document.querySelectorAll('#plot-gemm-bf16 circle.pt')].filter((c) => !ticks.some(([x, y]) =>
      Math.abs(x - Number(c.getAttribute('cx'))) <= 0.2 && Math.abs(y - Number(c.getAttribute('cy'))) <= 2)).length;
  });
  assert.equal(onModel, 0, 'markers off the calibrated model');

  await page.locator('#calibrate').screenshot({ path: shot('calibrate-1440.png') });

  // The download is the efficiency file with the fitted row.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#calib-download')]);
  assert.equal(download.suggestedFilename(), 'efficiency.csv');
  const csv = fs.readFileSync(await download.path(), 'utf8');
  assert.match(csv, /^gpu,quantity,precision,value,source$/m);
  const row = csv.split('\n').find((l) => l.startsWith('H100-SXM,gemm,bf16,'));
  near(Number(row.split(',')[3]), GEMM, 0.01, 'downloaded gemm');

  // The link: the design page plans with the calibrated constants.
  const href = await page.getAttribute('#calib-plan', 'href');
  assert.match(href, /^design\.html\?.*efficiency=/);
  const planned = page.waitForResponse((r) => r.url().includes('/api/plan?') && r.url().includes('efficiency='), { timeout: 60000 });
  await page.click('#calib-plan');
  const plan = await (await planned).json();
  assert.match(plan.request.efficiency.gemm_from, /--efficiency/);
  near(plan.request.efficiency.gemm, GEMM, 0.01, 'plan gemm');
  near(plan.request.efficiency.gemm_half_dim, HALF_DIM, 0.01, 'plan gemm_half_dim');
  assert.equal(plan.request.gpu, 'H100-SXM');
  await page.waitForSelector('#efficiency-note:not([hidden])');
  assert.match(await page.innerText('#efficiency-note'), /Calibrated efficiency constants in use/);
  assert.match(await page.innerText('#cli-line'), /--efficiency efficiency\.csv/);
  await page.screenshot({ path: shot('calibrate-design-1440.png') });
  // Back to the built-in table.
  const builtin = page.waitForResponse((r) => r.url().includes('/api/plan?') && !r.url().includes('efficiency='), { timeout: 60000 });
  await page.click('#efficiency-clear');
  assert.equal((await (await builtin).json()).request.efficiency.gemm, 0.72);
  await page.waitForSelector('#efficiency-note', { state: 'hidden' });
  assert.deepEqual(log.pageErrors, []);
});

test('calibration panel: a trace without shapes is refused in one line; the phone layout', async () => {
  const { page, log } = await openPage(browser.context);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${server.url}measure.html`);
  await page.waitForFunction(() => document.body.dataset.calibReady === '1');
  // A pipeline trace (no Input Dims): the engine says how to record shapes.
  const synth = await (await fetch(`${server.url}api/trace/synth?schedule=1f1b&pp=2&microbatches=2&format=json`)).json();
  await page.setInputFiles('#calib-files', [{ name: synth.files[0].name, mimeType: 'application/json', buffer: Buffer.from(synth.files[0].content) }]);
  await page.click('#calib-run');
  await calibrations(page, 1);
  const error = await page.innerText('#calib-error');
  assert.match(error, /record_shapes=True/);
  assert.equal(error.trim().split('\n').length, 1);
  assert.equal(await page.locator('#calib-result').isHidden(), true);

  await page.click('#calib-sample');
  await calibrations(page, 2);
  near(await cell(page, 'gemm bf16'), GEMM, 0.01, 'gemm bf16 at 390');
  // Nothing wider than the phone: the plots scale, the table scrolls inside its wrapper.
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `page scrolls sideways by ${overflow}px`);
  // Keyboard: the sample button, the download and the link are reachable and labelled.
  await page.focus('#calib-sample');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'calib-sample');
  assert.equal(await page.locator('label[for="calib-gpu"]').count(), 1);
  assert.equal(await page.locator('label[for="calib-cluster"]').count(), 1);

  // A trace that names its GPU in deviceProperties (as PyTorch's profiler writes it) is calibrated
  // for that GPU, and the page says where the GPU came from; a cluster of another GPU is used as
  // chosen, and said so.
  const sample = await (await fetch(`${server.url}api/trace/calibrate/sample`)).formData();
  const text = await sample.get('trace').text();
  const named = '{"deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85198045184}], ' + text.slice(1);
  await page.setInputFiles('#calib-files', [{ name: 'a100.json', mimeType: 'application/json', buffer: Buffer.from(named) }]);
  await page.selectOption('#calib-cluster', 'dgx-h100');
  await page.click('#calib-run');
  await calibrations(page, 3);
  const said = await page.innerText('#calib-status');
  assert.match(said, /^Calibrated A100-80GB from 1 file/);
  assert.match(said, /GPU A100-80GB from the traces' deviceProperties \('NVIDIA A100-SXM4-80GB'\)/);
  assert.match(said, /The cluster field dgx-h100 holds H100-SXM, the traces ran on A100-80GB/);
  assert.equal(await page.locator('label[for="calib-files"]').count(), 1);

  await page.locator('#calibrate').screenshot({ path: shot('calibrate-390.png') });
  assert.deepEqual(log.pageErrors, []);
});
