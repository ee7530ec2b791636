// Browser tests of the measurement page: generate a pipeline trace set, analyse it, and check the
// drawn ranks and the numbers against values derived by hand (1F1B with F = B: every rank idles
// (P - 1)(F + B) of the (m + P - 1)(F + B) makespan, so the bubble is (P - 1)/(m + P - 1)); upload
// files through the file input, one of them broken; the options in the URL; the keyboard.
// Screenshots go to the build folder.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openPage, shot, startBrowser, startServer } from './harness.mjs';

let server, browser;
before(async () => {
  server = await startServer();
  browser = await startBrowser();
});
after(async () => {
  if (browser) await browser.close();
  if (server) server.stop();
});

// Waits until the page has finished `n` analyses (body[data-analyses]).
async function analysed(page, n) {
  await page.waitForFunction((k) => Number(document.body.dataset.analyses || 0) >= k, n, { timeout: 20000 });
}
const text = (page, sel) => page.locator(sel).innerText();
const fillDrainBubble = (P, m) => `${((100 * (P - 1)) / (m + P - 1)).toFixed(2)}%`;

test('measurement page: generate 1F1B, P = 4, m = 8 and read the measured bubble', async () => {
  const { page, log } = await openPage(browser.context);
  await page.goto(`${server.url}measure.html`);
  await page.waitForSelector('#generate');
  assert.equal(await page.locator('#result').isHidden(), true);
  // The defaults are 1F1B, P = 4, m = 8, F = B = 1 ms; set them anyway, as a user would.
  await page.selectOption('#schedule', '1f1b');
  await page.fill('#pp', '4');
  await page.fill('#microbatches', '8');
  await page.fill('#f', '1');
  await page.fill('#b', '1');
  await page.click('#generate');
  await analysed(page, 1);

  const want = fillDrainBubble(4, 8);  // 3/11 = 27.27%
  assert.equal(await text(page, '#m-bubble'), want);
  assert.equal(await text(page, '#m-ranks'), '4');
  assert.equal(await text(page, '#m-step'), `${(8 + 4 - 1) * 2} ms`);  // (m + P - 1)(F + B)
  // The simulator's own bubble for the same schedule, side by side.
  assert.equal(await text(page, '#m-simulated'), want);
  // Four ranks drawn in each chart, each rank's bubble the same 3/11 of the window.
  assert.equal(await page.locator('#breakdown .rank-row').count(), 4);
  assert.equal(await page.locator('#bubbles .rank-row').count(), 4);
  assert.deepEqual(await page.locator('#bubbles .rank-row .bar-value').allTextContents(), Array(4).fill(`bubble ${want}`));
  // The recovered schedule: 4 pipeline ranks, 2m actions each, named 1f1b, with a link to the lab.
  assert.equal(await page.locator('#schedule-grid tr').count(), 4);
  assert.equal(await page.locator('#schedule-grid tr[data-pp-rank="3"] td').count(), 16);
  assert.deepEqual(await page.locator('#schedule-grid tr[data-pp-rank="3"] td').evaluateAll((n) => n.slice(0, 4).map((c) => c.textContent)),
    ['3F0', '3B0', '3F1', '3B1']);
  assert.match(await text(page, '#schedule-note'), /matches 1f1b/);
  assert.equal(await page.getAttribute('#schedule-note a', 'href'), 'pipeline.html?schedule=1f1b&pp=4&microbatches=8');
  // Send and receive on every rank in the collectives table; four files, no errors.
  assert.equal(await page.locator('#collectives tr[data-kind="recv"]').count(), 4);
  assert.equal(await page.locator('#files-table tbody tr').count(), 4);
  assert.equal(await page.locator('#file-errors').isHidden(), true);
  assert.match(await text(page, '#notice'), new RegExp(`Measured bubble ${want}`));
  assert.match(await text(page, '#notice'), /exactly 1f1b/);
  assert.match(await text(page, '#myths'), /receives "achieve"/);
  assert.match(page.url(), /source=synth/);
  await page.screenshot({ path: shot('measure.png'), fullPage: true });
  await page.locator('#breakdown').screenshot({ path: shot('measure-breakdown.png') });
  await page.locator('#controls').screenshot({ path: shot('measure-controls.png') });

  // The view is in the URL: a reload generates and measures the same set again.
  await page.reload();
  await analysed(page, 1);
  assert.equal(await text(page, '#m-bubble'), want);

  // Options: the last step kept gives three windows instead of two (3 profiled steps), and the
  // bubble over the three steps' windows is the same 3/11.
  await page.check('#include_last_step');
  await analysed(page, 2);
  assert.match(page.url(), /include_last_step=1/);
  assert.match(await text(page, '#mode'), /last ProfilerStep kept; 3 step windows/);
  assert.equal(await text(page, '#m-bubble'), want);

  // GPipe, P = 2, m = 3: bubble 1/4, from the keyboard alone.
  await page.focus('#schedule');
  await page.selectOption('#schedule', 'gpipe');
  await page.fill('#pp', '2');
  await page.fill('#microbatches', '3');
  await page.focus('#generate');
  await page.keyboard.press('Enter');
  await analysed(page, 3);
  assert.equal(await text(page, '#m-bubble'), fillDrainBubble(2, 3));
  assert.equal(await page.locator('#bubbles .rank-row').count(), 2);

  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});

test('measurement page: uploaded files, one of them cut off, are analysed and the bad one named', async () => {
  const { page, log } = await openPage(browser.context);
  // The generated set fetched as JSON, as a script would; one file is truncated.
  const res = await page.request.get(`${server.url}api/trace/synth?schedule=1f1b&pp=4&microbatches=8&f=1&b=1&format=json`);
  const set = await res.json();
  const uploads = set.files.map((f) => ({ name: f.name, mimeType: 'application/json', buffer: Buffer.from(f.content) }));
  uploads[2].buffer = uploads[2].buffer.subarray(0, uploads[2].buffer.length >> 1);
  await page.goto(`${server.url}measure.html?hta_compat=1`);
  await page.waitForSelector('#files');
  assert.equal(await page.isChecked('#hta_compat'), true);
  await page.setInputFiles('#files', uploads);
  await analysed(page, 1);
  assert.equal(await text(page, '#m-ranks'), '3');
  assert.equal(await page.locator('#breakdown .rank-row').count(), 3);
  assert.deepEqual(await page.locator('#bubbles .rank-row').evaluateAll((n) => n.map((g) => g.dataset.rank)), ['0', '1', '3']);
  assert.equal(await page.locator('#file-errors').isVisible(), true);
  assert.match(await text(page, '#file-errors'), /rank2\.json: truncated: the file ends inside traceEvents/);
  assert.match(await text(page, '#mode'), /HTA-compatible definitions/);
  assert.equal(await page.locator('#m-simulated-box').isHidden(), true);
  await page.screenshot({ path: shot('measure-upload-error.png'), fullPage: false });

  // Every file broken: the engine's error, with each file named.
  await page.setInputFiles('#files', [{ name: 'a.json', mimeType: 'application/json', buffer: Buffer.from('{"traceEvents": [') },
    { name: 'b.json', mimeType: 'application/json', buffer: Buffer.from('nope') }]);
  await analysed(page, 2);
  assert.equal(await page.locator('#error').isVisible(), true);
  assert.match(await text(page, '#error'), /none of the 2 files could be used/);
  assert.equal(await page.locator('#file-errors li').count(), 2);
  assert.equal(await page.locator('#result').isHidden(), true);

  assert.deepEqual(log.pageErrors, []);
  // The only console error is the browser's note on the refused request above.
  assert.equal(log.errors.length, 1, log.errors.join('\n'));
  assert.match(log.errors[0], /status of 400/);
});
