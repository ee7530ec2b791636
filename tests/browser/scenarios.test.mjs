// Browser tests of lab 09 (interview scenarios): the page opened in headless Chromium, the
// scenario list and each part's numbers checked against the API's JSON fetched beside the page
// (the page formats, the engine computes), the view kept in the URL, your own design's layout
// checked against degrees worked out by hand (dp = GPUs / (tp pp)), refused input named and
// marked, the keyboard. Screenshots go to the build folder.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertOnlyRefused, openPage, serverAndBrowserForFile, shot } from './harness.mjs';

const { server, browser } = serverAndBrowserForFile();

const PARTS = ['problem', 'mechanism', 'communication', 'tradeoff', 'measurement'];
const JOB = { model: 'llama3-70b', cluster: 'dgx-h100', gpus: '64', global_batch: '512', seq: '8192' };

async function getJson(path, params = {}) {
  const url = new URL(path, server.url);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const res = await fetch(url);
  assert.equal(res.status, 200, `${url}`);
  return res.json();
}
const renders = (page) => page.evaluate(() => Number(document.body.dataset.renders || 0));
async function rendered(page, n) {
  await page.waitForFunction((k) => Number(document.body.dataset.renders || 0) >= k, n, { timeout: 20000 });
}
// Waits for a drawing after `n` whose state has `key` = `value`.
async function renderedWith(page, n, key, value) {
  await page.waitForFunction(([k, key, v]) => Number(document.body.dataset.renders || 0) > k &&
    JSON.parse(document.body.dataset.state || '{}')[key] === v, [n, key, value], { timeout: 20000 });
}
const text = (page, sel) => page.locator(sel).innerText();
// Sets a field of the custom form and waits for the drawing of the state that holds the value.
async function change(page, sel, value) {
  const n = await renders(page);
  if ((await page.locator(sel).evaluate((e) => e.tagName)) === 'SELECT') await page.selectOption(sel, value);
  else {
    // Typed and committed in one task, as a paste and Enter would: with fill() and a separate
    // change, a loaded machine can let the page's input debounce fire between the two, and the
    // page asks twice (each refusal counted twice).
    await page.locator(sel).evaluate((e, v) => {
      e.value = v;
      e.dispatchEvent(new Event('input', { bubbles: true }));
      e.dispatchEvent(new Event('change', { bubbles: true }));
    }, value);
  }
  await renderedWith(page, n, sel.slice(1), value);
}
const row = (page, part, name) => page.locator(`#part-${part} tr[data-name="${name}"] td`).first();
const value = (doc, part, name) => doc.sections.find((s) => s.name === part).numbers.find((x) => x.name === name).value;

test('scenarios: the list is the API\'s, a scenario\'s five parts carry its numbers, the view is in the URL', async () => {
  const { page, log } = await openPage(browser.context);
  const list = (await getJson('api/scenarios')).scenarios;
  assert.ok(list.length >= 2);
  await page.goto(`${server.url}scenarios.html`);
  await rendered(page, 1);

  // One card per scenario, in the API's order, each with its question and live answer.
  assert.equal(await page.locator('#scenario-list .sc-pick').count(), list.length);
  assert.deepEqual(await page.locator('#scenario-list li').evaluateAll((ls) => ls.map((l) => l.dataset.name)), list.map((s) => s.name));
  for (const [k, s] of list.entries()) {
    const card = page.locator('#scenario-list li').nth(k);
    assert.equal((await card.locator('.sc-pick').innerText()).toLowerCase(), s.title.toLowerCase());
    assert.equal(await card.locator('.sc-question').innerText(), s.question);
    assert.match(await card.locator('.sc-live').innerText(), new RegExp(`${s.answer.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
  }
  // With no scenario named, the first one is on show.
  assert.equal(await page.locator('#scenario-list .sc-pick[aria-current="true"]').getAttribute('data-name'), list[0].name);
  assert.equal(await text(page, '#answer-title'), (await getJson('api/scenarios', { name: list[0].name })).title);

  // Pick dp64-oom: the five parts in order, each part's sentences and numbers the API's.
  const name = 'dp64-oom';
  assert.ok(list.some((s) => s.name === name));
  const n = await renders(page);
  await page.click(`#scenario-list .sc-pick[data-name="${name}"]`);
  await renderedWith(page, n, 'name', name);
  const want = await getJson('api/scenarios', { name });
  assert.equal(await text(page, '#answer-title'), want.title);
  assert.equal(await text(page, '#answer-question'), want.question);
  assert.equal(await text(page, '#layout'), want.layout);
  assert.equal(await page.locator('#planner-badge').isVisible(), want.planner_best);
  assert.match(await text(page, '#one-line'), new RegExp(list.find((s) => s.name === name).answer.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  assert.deepEqual(await page.locator('#parts section.part').evaluateAll((ss) => ss.map((s) => s.dataset.part)), PARTS);
  assert.deepEqual(want.sections.map((s) => s.name), PARTS);
  for (const s of want.sections) {
    const part = page.locator(`#part-${s.name}`);
    assert.match(await part.locator('h2').innerText(), new RegExp(`^${PARTS.indexOf(s.name) + 1}\\s*${s.title}$`));
    assert.deepEqual(await part.locator('.sentences li').allInnerTexts(), s.sentences);
    assert.deepEqual(await part.locator('tr[data-name]').evaluateAll((rs) => rs.map((r) => [r.dataset.name, Number(r.dataset.value)])),
      s.numbers.map((x) => [x.name, x.value]));
    for (const t of await part.locator('tr[data-name] td').allInnerTexts()) assert.notEqual(t, '–');
  }
  // Each unit formatted from the API's value: bytes in binary units, seconds in the unit that
  // reads best, fractions as percent, FLOP with its prefix, tokens per second, counts.
  const total = value(want, 'mechanism', 'total_bytes');
  assert.equal(await row(page, 'mechanism', 'total_bytes').innerText(), `${(total / 2 ** 30).toFixed(1)} GiB`);
  // The same figure as the engine's own sentence says it.
  const shown = await row(page, 'mechanism', 'total_bytes').innerText();
  assert.ok(want.sections.find((s) => s.name === 'mechanism').sentences.some((t) => t.includes(shown)), shown);
  assert.equal(await row(page, 'mechanism', 'usable_bytes').innerText(), `${(value(want, 'mechanism', 'usable_bytes') / 2 ** 30).toFixed(1)} GiB`);
  const headroom = value(want, 'tradeoff', 'memory_headroom_bytes');
  assert.ok(headroom < 0);
  assert.equal(await row(page, 'tradeoff', 'memory_headroom_bytes').innerText(), `−${(-headroom / 2 ** 30).toFixed(1)} GiB`);
  const message = value(want, 'communication', 'dp_all_reduce_message_bytes');
  assert.ok(message >= 2 ** 20 && message < 2 ** 30);
  assert.equal(await row(page, 'communication', 'dp_all_reduce_message_bytes').innerText(), `${(message / 2 ** 20).toFixed(2)} MiB`);
  const commTime = value(want, 'communication', 'dp_all_reduce_time_per_step_s');
  assert.ok(commTime >= 1e-3 && commTime < 1);
  assert.equal(await row(page, 'communication', 'dp_all_reduce_time_per_step_s').innerText(), `${(commTime * 1e3).toFixed(2)} ms`);
  assert.equal(await row(page, 'problem', 'step_s').innerText(), `${value(want, 'problem', 'step_s').toFixed(2)} s`);
  assert.equal(await row(page, 'problem', 'fits').innerText(), 'no');
  assert.equal(await row(page, 'problem', 'model_flops_per_step').innerText(),
    `${(value(want, 'problem', 'model_flops_per_step') / 1e18).toFixed(2)} EFLOP`);
  assert.equal(await row(page, 'mechanism', 'dp').innerText(), '64');
  assert.equal(await row(page, 'problem', 'parameters').innerText(), value(want, 'problem', 'parameters').toLocaleString('en-US'));
  assert.equal(await row(page, 'measurement', 'expected_mfu').innerText(), `${(100 * value(want, 'measurement', 'expected_mfu')).toFixed(1)}%`);
  assert.equal(await row(page, 'measurement', 'expected_tokens_per_s').innerText(),
    `${Math.round(value(want, 'measurement', 'expected_tokens_per_s')).toLocaleString('en-US')} tokens/s`);
  // The summary: step time, and memory marked as not fitting.
  assert.equal(await text(page, '#m-step'), `${value(want, 'problem', 'step_s').toFixed(2)} s`);
  const gib = (total / 2 ** 30).toFixed(1).replace('.', '\\.');
  assert.match(await text(page, '#m-mem'), new RegExp(`^${gib} / 76\\.0 GiB\\s+does not fit$`));
  // The panels cite this answer's numbers; the DP=64 misunderstanding is refuted by dp64-oom's.
  assert.match(await text(page, '#notice'), new RegExp(`${want.layout} takes ${value(want, 'problem', 'step_s').toFixed(2)} s per step`));
  assert.match(await text(page, '#myths'), new RegExp(`DP=64 asks ${gib} GiB of each GPU against 76\\.0 GiB usable`));
  assert.match(await text(page, '#cli-line'), /^infralens scenarios dp64-oom$/);
  await page.screenshot({ path: shot('scenarios.png'), fullPage: false });
  await page.screenshot({ path: shot('scenarios-full.png'), fullPage: true });

  // The view is in the URL: reloading shows the same scenario.
  assert.match(page.url(), /[?&]name=dp64-oom\b/);
  await page.reload();
  await rendered(page, 1);
  assert.equal(await text(page, '#answer-title'), want.title);
  assert.equal(await page.locator('#scenario-list .sc-pick[aria-current="true"]').getAttribute('data-name'), name);
  assert.equal(await row(page, 'mechanism', 'total_bytes').innerText(), shown);

  // Keyboard only: Tab reaches the scenario buttons, each shows the focus ring, Enter picks one.
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  let reached = false;
  for (let k = 0; k < 40 && !reached; k++) {
    await page.keyboard.press('Tab');
    reached = await page.evaluate(() => document.activeElement.classList.contains('sc-pick'));
  }
  assert.ok(reached, 'Tab reaches a scenario button');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.name), list[0].name);
  assert.equal(await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle), 'solid');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.name), list[1].name);
  let m = await renders(page);
  await page.keyboard.press('Enter');
  await renderedWith(page, m, 'name', list[1].name);
  assert.equal(await page.locator('#scenario-list .sc-pick[aria-current="true"]').getAttribute('data-name'), list[1].name);
  assert.equal(await page.evaluate(() => document.activeElement.dataset.name), list[1].name);  // focus stays put
  assert.equal(await text(page, '#layout'), (await getJson('api/scenarios', { name: list[1].name })).layout);

  // "Change this layout yourself" opens the scenario's job and layout as your own design: the
  // engine explains the same layout.
  m = await renders(page);
  await page.click(`#scenario-list .sc-pick[data-name="${name}"]`);
  await renderedWith(page, m, 'name', name);
  await page.click('#try-it');
  await page.waitForURL(/mode=custom/);
  await rendered(page, 1);
  assert.equal(await page.locator('#custom-panel').isVisible(), true);
  assert.equal(await page.locator('#scenario-panel').isVisible(), false);
  assert.equal(await text(page, '#layout'), want.layout);
  assert.equal(await page.inputValue('#tp'), '1');
  assert.equal(await page.inputValue('#recompute'), 'full');

  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});

test('scenarios: your own design, the planner\'s best, refused input named and marked, markdown', async () => {
  const { page, log } = await openPage(browser.context);
  await page.goto(`${server.url}scenarios.html`);
  await rendered(page, 1);
  let n = await renders(page);
  await page.click('#mode-custom');
  await renderedWith(page, n, 'mode', 'custom');
  assert.equal(await page.getAttribute('#mode-custom', 'aria-pressed'), 'true');
  assert.equal(await page.locator('#custom-panel').isVisible(), true);
  assert.equal(await page.locator('#scenario-panel').isVisible(), false);

  // No degree given: the planner's best, the same as the API says.
  const best = await getJson('api/explain', JOB);
  assert.equal(best.planner_best, true);
  assert.equal(await text(page, '#layout'), best.layout);
  assert.equal(await page.locator('#planner-badge').isVisible(), true);
  assert.match(await text(page, '#answer-kind'), /planner's best/);

  // tp=8 pp=4 on 64 GPUs leaves dp = 64 / (8 x 4) = 2.
  await change(page, '#tp', '8');
  await change(page, '#pp', '4');
  const dp = 64 / (8 * 4);
  assert.match(await text(page, '#layout'), new RegExp(`^tp=8 pp=4 dp=${dp} `));
  assert.equal(await page.locator('#planner-badge').isVisible(), false);
  const mine = await getJson('api/explain', { ...JOB, tp: 8, pp: 4 });
  assert.equal(await text(page, '#layout'), mine.layout);
  assert.deepEqual(await page.locator('#parts section.part').evaluateAll((ss) => ss.map((s) => s.dataset.part)), PARTS);
  assert.equal(await row(page, 'mechanism', 'dp').innerText(), String(dp));
  assert.equal(await text(page, '#m-step'), `${value(mine, 'problem', 'step_s').toFixed(2)} s`);
  assert.equal(await text(page, '#cli-line'),
    'infralens explain --model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch 512 --seq 8192 --tp 8 --pp 4');
  assert.match(page.url(), /mode=custom/);
  assert.match(page.url(), /tp=8/);
  assert.match(page.url(), /pp=4/);

  // The view is in the URL.
  await page.reload();
  await rendered(page, 1);
  assert.equal(await page.inputValue('#tp'), '8');
  assert.equal(await page.inputValue('#pp'), '4');
  assert.match(await text(page, '#layout'), new RegExp(`^tp=8 pp=4 dp=${dp} `));

  // The answer as markdown: the API's text, on the clipboard or, refused, shown selected.
  const md = await (await fetch(new URL(`api/explain?${new URLSearchParams({ ...JOB, tp: 8, pp: 4, format: 'markdown' })}`, server.url))).text();
  assert.match(md, /^# llama3-70b on 64/);
  await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(server.url).origin });
  await page.click('#copy-markdown');
  await page.waitForFunction(() => document.getElementById('copy-status').textContent !== '');
  const copied = (await page.locator('#markdown-fallback').isVisible())
    ? await page.inputValue('#markdown')
    : await page.evaluate(() => navigator.clipboard.readText());
  assert.equal(copied, md);
  // A browser that refuses the clipboard: the markdown is shown, selected, with focus on it.
  await page.evaluate(() => { navigator.clipboard.writeText = () => Promise.reject(new Error('refused')); });
  await page.click('#copy-markdown');
  await page.waitForSelector('#markdown-fallback:not([hidden])');
  assert.equal(await page.inputValue('#markdown'), md);
  assert.match(await text(page, '#copy-status'), /clipboard refused/);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'markdown');

  // tp=3 does not divide 64 GPUs: the engine refuses, the box names it, the degrees are marked.
  await change(page, '#tp', '3');
  assert.equal(await page.locator('#error').isVisible(), true);
  assert.equal(await page.getAttribute('#error', 'role'), 'alert');
  assert.match(await text(page, '#error'), /tp=3/);
  assert.match(await text(page, '#error'), /\btp\b.*\)$/);
  assert.equal(await page.getAttribute('#tp', 'aria-invalid'), 'true');
  assert.equal(await text(page, '#layout'), '–');
  assert.equal(await page.locator('#parts section.part').count(), 0);
  await page.screenshot({ path: shot('scenarios-error.png'), fullPage: false });
  await change(page, '#tp', '8');
  assert.equal(await page.locator('#error').isVisible(), false);
  assert.equal(await page.getAttribute('#tp', 'aria-invalid'), null);
  // 12 GPUs are not whole DGX nodes of 8: the engine names gpus.
  await change(page, '#gpus', '12');
  assert.equal(await page.locator('#error').isVisible(), true);
  assert.match(await text(page, '#error'), /\(parameter: gpus\)/);
  assert.equal(await page.getAttribute('#gpus', 'aria-invalid'), 'true');
  assert.equal(await page.getAttribute('#tp', 'aria-invalid'), null);
  await change(page, '#gpus', '64');
  assert.equal(await page.locator('#error').isVisible(), false);
  assert.match(await text(page, '#layout'), new RegExp(`^tp=8 pp=4 dp=${dp} `));

  // Typed numbers are checked where they are typed (from each field's own attributes): empty,
  // fractional or out of range is one message at that field, none in the error box, no request
  // and no default put in its place.
  await change(page, '#gpus', '');
  assert.equal(await text(page, '#gpus-problem'), 'GPUs is empty; enter a whole number of 1 or more.');
  assert.equal(await page.locator('#error').isVisible(), false);
  assert.equal(await text(page, '#layout'), '–');
  await change(page, '#gpus', '64');
  await change(page, '#micro_batch', '0');
  assert.equal(await text(page, '#micro_batch-problem'), 'Micro-batch: 0 is out of range; enter a whole number of 1 or more.');
  await change(page, '#tp', '2.5');
  assert.equal(await text(page, '#tp-problem'), 'TP: 2.5 is not a whole number; enter a whole number of 1 or more.');
  assert.equal(await page.locator('.field-error').count(), 2, 'each error shown once');
  assert.equal(await page.locator('#error').isVisible(), false);
  assert.equal(await page.getAttribute('#tp', 'aria-describedby'), 'tp-problem degrees-hint');
  await change(page, '#tp', '8');
  await change(page, '#micro_batch', '');
  assert.equal(await page.locator('.field-error').count(), 0);
  assert.equal(await page.getAttribute('#tp', 'aria-describedby'), 'degrees-hint');
  assert.match(await text(page, '#layout'), new RegExp(`^tp=8 pp=4 dp=${dp} `));

  // Only the browser's notes on the two refused requests.
  assertOnlyRefused(log, 2);
});

test('scenarios read on a projector: 1280 x 720 and larger type', async () => {
  const { page, log } = await openPage(browser.context);
  await page.setViewportSize({ width: 1280, height: 720 });
  await page.goto(`${server.url}scenarios.html?name=tp-across-nodes`);
  await rendered(page, 1);
  // Projector settings: larger type (CSSOM, which the page's CSP allows).
  await page.evaluate(() => { document.documentElement.style.fontSize = '22px'; });
  // Nothing runs off the side: no horizontal scrolling of the page.
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth));
  // The list and the answer side by side still.
  const [list, answer] = await Promise.all([page.locator('#scenario-panel').boundingBox(), page.locator('#answer-head').boundingBox()]);
  assert.ok(list.x + list.width <= answer.x, 'two columns at 1280 px');
  await page.screenshot({ path: shot('scenarios-1280.png'), fullPage: false });
  await page.setViewportSize({ width: 1440, height: 900 });
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.errors, []);
});
