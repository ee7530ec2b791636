// Browser tests of issue 24 item 2 on a 390 px phone: the charts and the cluster drawing are laid
// out for the screen, so every text in them renders at 11 CSS px or more (a chart drawn at a fixed
// 1,000-unit viewBox and scaled down rendered it at 4-5 px), and a cluster of thousands of nodes
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

// The 16,384 GPUs: 2,048 DGX H100 nodes, tp=8 pp=16 dp=128, coloured by TP group (the
// fastest axis), so node n's 8 GPUs are TP group n and wear colour n mod 8 of the page's Okabe-Ito
// palette. The overview's pixels are read back for every node; the window is moved to the last
// node (whose GPUs are ranks 8 x 2047 + k = 16376..16383) and back to the first.
const OKABE_ITO = ['#E69F00', '#56B4E9', '#009E73', '#F0E442', '#0072B2', '#D55E00', '#CC79A7', '#000000'];
test('a cluster of 2,048 nodes: an overview of every node, the drawing of a window of them, moved and zoomed', async () => {
  const { page, log } = await openPage(phone.context);
  await page.goto(`${server.url}topology.html?cluster=dgx-h100&nodes=2048&tp=8&pp=16&dp=128&global_batch=2048`);
  await page.waitForFunction(() => Number(document.body.dataset.renders || 0) >= 1, null, { timeout: T });
  const ov = page.locator('#drawing canvas.cluster-overview');
  await ov.waitFor({ state: 'visible', timeout: T });
  // The drawing holds a window of 8 nodes (8 GPUs each), not 2,048; the overview frames it.
  assert.equal(await page.locator('#drawing .gpu').count(), 8 * 8);
  assert.equal(await ov.getAttribute('data-first'), '0');
  assert.match(await page.locator('#drawing .cluster-range').innerText(), /^nodes 0–7 of 2048$/);
  const layout = await ov.evaluate((c) => ({ ...c.dataset }));
  assert.equal(layout.nodes, '2048');
  // Every node's column is in its TP group's colour (its top and bottom GPU).
  const hex = (rgb) => `#${rgb.slice(0, 3).map((v) => v.toString(16).padStart(2, '0')).join('')}`.toUpperCase();
  const colours = await ov.evaluate((c) => {
    const d = c.dataset, perLine = Number(d.perLine), nodeW = Number(d.nodeW), lineH = Number(d.lineH), cellH = Number(d.cellH);
    const scale = c.width / c.getBoundingClientRect().width;
    const g = c.getContext('2d');
    const out = [];
    for (let n = 0; n < 2048; n++) {
      const x = 4 + (n % perLine) * nodeW + 1, y = 2 + Math.floor(n / perLine) * lineH;
      out.push([0, 7].map((k) => Array.from(g.getImageData(Math.floor((x + 0.5) * scale), Math.floor((y + k * cellH + 1) * scale), 1, 1).data)));
    }
    return out;
  });
  assert.equal(colours.length, 2048);
  for (let n = 8; n < 2048; n++) {  // the window's frame is drawn over nodes 0-7
    for (const px of colours[n]) assert.equal(hex(px), OKABE_ITO[n % 8], `node ${n}`);
  }
  // The drawing is a window: the page is not thousands of pixels long.
  const tall = (await page.locator('#drawing').boundingBox()).height;
  assert.ok(tall < 2 * 844, `drawing ${tall} px tall`);
  // A tap on the overview's last node moves the window to the end: nodes 2040-2047, drawn from a
  // request for the nodes around them.
  const tapNode = async (n) => {
    await ov.scrollIntoViewIfNeeded();
    const box = await ov.boundingBox();
    const perLine = Number(layout.perLine), nodeW = Number(layout.nodeW), lineH = Number(layout.lineH);
    await page.touchscreen.tap(box.x + 4 + (n % perLine) * nodeW + 1, box.y + 2 + Math.floor(n / perLine) * lineH + 4);
  };
  const windowAt = (first) => page.waitForFunction((f) => {
    const c = document.querySelector('#drawing canvas.cluster-overview');
    return c.dataset.first === f && !c.dataset.loading;
  }, String(first), { timeout: T });
  await tapNode(2047);
  await windowAt(2040);
  assert.equal(await page.locator('#drawing .gpu[data-node="2047"]').count(), 8);
  assert.equal(await page.locator('#drawing .gpu[data-node="2039"]').count(), 0);
  assert.deepEqual(await page.locator('#drawing .gpu[data-node="2047"] .gpu-rank').allTextContents(),
    [16376, 16377, 16378, 16379, 16380, 16381, 16382, 16383].map((r) => `r${r}`));
  assert.equal(await page.locator('#drawing .cl-next').isDisabled(), true);
  assert.match(await page.locator('#drawing .cluster-range').innerText(), /^nodes 2040–2047 of 2048$/);
  let min = await smallestText(page, '#drawing');
  assert.ok(min.px >= 11, `"${min.text}" at ${min.px.toFixed(1)} px`);
  // Zoom out: twice the nodes, around the same place; zoom in: half.
  await page.tap('#drawing .cl-zoom-out');
  await windowAt(2032);
  assert.equal(await page.locator('#drawing .gpu').count(), 16 * 8);
  await page.tap('#drawing .cl-zoom-in');
  await page.tap('#drawing .cl-zoom-in');
  assert.equal(await page.locator('#drawing .gpu').count(), 4 * 8);
  await page.tap('#drawing .cl-prev');
  assert.match(await page.locator('#drawing .cluster-range').innerText(), /^nodes \d+–\d+ of 2048$/);
  // Back to the first node: its GPUs are ranks 0-7 again.
  await tapNode(0);
  await windowAt(0);
  assert.equal(await page.locator('#drawing .gpu[data-node="0"]').count(), 8);
  min = await smallestText(page, '#drawing');
  assert.ok(min.px >= 11, `"${min.text}" at ${min.px.toFixed(1)} px`);
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1));
  await page.screenshot({ path: shot('topology-2048-phone.png') });
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});
