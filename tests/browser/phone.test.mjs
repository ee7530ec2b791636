// Browser tests of issue 24 item 2 on a 390 px phone: the charts and the cluster drawing are laid
// out for the screen, so every text in them renders at 11 CSS px or more (a chart drawn at a fixed
// 1,000-unit viewBox and scaled down rendered it at 4-5 px), and a cluster of hundreds of nodes
// gets an overview and a scrolling window instead of a page thousands of pixels long. The rendered
// size is the text's CSS font size times the SVG's scale (its box over its viewBox), as the
// browser reports them; nothing is copied from the page's own numbers.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openPage, shot, startBrowser, startServer } from './harness.mjs';

let server, phone;
before(async () => {
  server = await startServer();
  phone = await startBrowser({ width: 390, height: 844 }, { hasTouch: true, isMobile: true, deviceScaleFactor: 2 });
});
after(async () => {
  if (phone) await phone.close();
  if (server) server.stop();
});
const T = 20000;

// The smallest rendered text size in the SVGs under `host`, with the text that has it.
async function smallestText(page, host) {
  return page.locator(host).evaluate((h) => {
    let min = { px: Infinity, text: '' };
    for (const s of h.querySelectorAll('svg')) {
      const vb = s.viewBox && s.viewBox.baseVal;
      const box = s.getBoundingClientRect();
      if (!vb || !vb.width || !box.width) continue;
      const scale = box.width / vb.width;
      for (const t of s.querySelectorAll('text')) {
        if (!t.textContent.trim() || t.closest('[display="none"]')) continue;
        const px = parseFloat(getComputedStyle(t).fontSize) * scale;
        if (px < min.px) min = { px, text: t.textContent.slice(0, 40) };
      }
    }
    return min;
  });
}

test('phone: chart and drawing text at 11 px or more; the page does not scroll sideways', async () => {
  const { page, log } = await openPage(phone.context);
  const views = [
    ['pipeline.html?schedule=1f1b&pp=4&microbatches=8&cmp=', ['#sweep', '#peaks'], () => Number(document.body.dataset.renders || 0) >= 1],
    ['topology.html?cluster=dgx-h100&nodes=8&tp=8&pp=2&dp=4', ['#drawing'], () => Number(document.body.dataset.renders || 0) >= 1],
    ['design.html?model=llama3-8b&gpus=16&global_batch=256', ['#breakdown', '#memory'], () => Number(document.body.dataset.renders || 0) >= 1],
    ['measure.html?source=synth&f=1&b=2', ['#breakdown'], () => Number(document.body.dataset.analyses || 0) >= 1],
  ];
  for (const [path, hosts, ready] of views) {
    await page.goto(`${server.url}${path}`);
    await page.waitForFunction(ready, null, { timeout: T });
    for (const h of hosts) {
      await page.waitForFunction((s) => document.querySelector(`${s} svg text`), h, { timeout: T });
      const min = await smallestText(page, h);
      assert.ok(min.px >= 11, `${path} ${h}: "${min.text}" at ${min.px.toFixed(1)} px`);
    }
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1),
      `${path}: the page is ${await page.evaluate(() => document.documentElement.scrollWidth)} px wide`);
    await page.screenshot({ path: shot(`phone-${path.split('.')[0]}.png`), fullPage: true });
  }
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});

test('a cluster of 256 drawn nodes: an overview of all, the drawing of a window of them, moved and zoomed', async () => {
  const { page, log } = await openPage(phone.context);
  await page.goto(`${server.url}topology.html?cluster=dgx-h100&nodes=256&tp=8&pp=1&dp=256&max_nodes=256`);
  await page.waitForFunction(() => Number(document.body.dataset.renders || 0) >= 1, null, { timeout: T });
  const ov = page.locator('#drawing canvas.cluster-overview');
  await ov.waitFor({ state: 'visible', timeout: T });
  // The drawing holds a window of 8 nodes (8 GPUs each), not all 256: no page thousands of
  // pixels long; the overview frames the window.
  assert.equal(await page.locator('#drawing .gpu').count(), 8 * 8);
  assert.equal(await ov.getAttribute('data-first'), '0');
  assert.match(await page.locator('#drawing .cluster-range').innerText(), /^nodes 0–7 of 256 drawn$/);
  const tall = (await page.locator('#drawing').boundingBox()).height;
  assert.ok(tall < 2 * 844, `drawing ${tall} px tall`);
  // A tap on the overview's last node moves the window to the end: nodes 248-255.
  await ov.scrollIntoViewIfNeeded();
  const box = await ov.boundingBox();
  const perLine = Math.floor((box.width - 8) / 4);
  const last = 255, x = 4 + (last % perLine) * 4 + 1, y = 2 + Math.floor(last / perLine) * (8 * 2 + 4) + 4;
  await page.touchscreen.tap(box.x + x, box.y + y);
  await page.waitForFunction(() => document.querySelector('#drawing canvas.cluster-overview').dataset.first === '248', null, { timeout: T });
  assert.equal(await page.locator('#drawing .gpu[data-node="255"]').count(), 8);
  assert.equal(await page.locator('#drawing .gpu[data-node="247"]').count(), 0);
  assert.equal(await page.locator('#drawing .cl-next').isDisabled(), true);
  // Zoom out: twice the nodes, around the same place; zoom in: half.
  await page.tap('#drawing .cl-zoom-out');
  assert.equal(await page.locator('#drawing .gpu').count(), 16 * 8);
  assert.equal(await ov.getAttribute('data-first'), '240');
  await page.tap('#drawing .cl-zoom-in');
  await page.tap('#drawing .cl-zoom-in');
  assert.equal(await page.locator('#drawing .gpu').count(), 4 * 8);
  await page.tap('#drawing .cl-prev');
  assert.match(await page.locator('#drawing .cluster-range').innerText(), /^nodes \d+–\d+ of 256 drawn$/);
  await page.screenshot({ path: shot('topology-256-phone.png') });
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});
