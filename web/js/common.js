// Shared by every page: DOM building without innerHTML, the site navigation, API calls with the
// server's JSON errors, the query string as the page's state, and number formatting.
import { LABS } from './labs.js';

// el('p', {class: 'x', onclick: f}, 'text', child, ...) -> element. Strings become text nodes.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

// Marks the fields `marked` (element ids, among `fields`) invalid, pointing at the box `boxId` that
// says why, and clears the mark of every other field of `fields`.
export function markInvalid(fields, marked, boxId) {
  for (const k of fields) {
    const input = document.getElementById(k);
    if (marked.includes(k)) {
      input.setAttribute('aria-invalid', 'true');
      input.setAttribute('aria-errormessage', boxId);
    } else {
      input.removeAttribute('aria-invalid');
      input.removeAttribute('aria-errormessage');
    }
  }
}

// The engine's refusal `err` ({ message, status }) in the box `boxId`, `note` after it (e.g.
// " (parameter: tp)"); a 503 says the request was too much work. `null` hides the box.
export function showRefusal(boxId, err, note = '') {
  const box = document.getElementById(boxId);
  if (!err) {
    box.hidden = true;
    clear(box);
    return;
  }
  clear(box).append(el('strong', {}, err.status === 503 ? 'Too much work for one request: ' : 'The engine refused this: '),
    err.message, note ? el('span', { class: 'param' }, note) : '');
  box.hidden = false;
}

// The header navigation, marking the current lab. Pages carry it already (web/partials/header.html,
// filled in at build time): then there is nothing to do.
export function renderNav(current) {
  const nav = document.getElementById('site-nav');
  if (!nav || nav.querySelector('ul')) return;
  const list = el('ul');
  list.append(el('li', {}, el('a', { href: './', 'aria-current': current === 'home' ? 'page' : null }, 'Home')));
  for (const lab of LABS) {
    const label = lab.number ? `${lab.number} ${lab.title}` : lab.title;
    list.append(
      el(
        'li',
        {},
        lab.page
          ? el('a', { href: lab.page, 'aria-current': current === lab.id ? 'page' : null }, label)
          : el('span', { class: 'coming', title: 'coming once its engine lands' }, label, ' (coming)'),
      ),
    );
  }
  clear(nav).append(list);
}

// The engine's messages name CLI flags (--global-batch); a page names its fields. Each --flag whose
// field is on this page (id global_batch, or my_global_batch for the design page's own layout)
// becomes the field's label, quoted; any other becomes its query parameter name.
export function speakFields(message) {
  return String(message).replace(/(^|[\s(“"'])--([a-z][a-z0-9-]*)/g, (all, pre, flag) => {
    const id = flag.replaceAll('-', '_');
    const label = document.querySelector(`label[for="${id}"]`) || document.querySelector(`label[for="my_${id}"]`);
    const text = label ? [...label.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent).join('').trim() : '';
    return `${pre}${text ? `“${text}”` : id}`;
  });
}

export class ApiError extends Error {
  constructor(status, body) {
    super(speakFields(body && body.error ? body.error : `HTTP ${status}`));
    this.status = status;
    this.body = body || {};
    this.parameter = this.body.parameter || '';
  }
}

// GET (or POST with a body of Content-Type `type`) an API path; resolves to parsed JSON or text,
// rejects with ApiError.
export async function api(path, { params = {}, body = null, as = 'json', signal, type = 'text/csv' } = {}) {
  const query = new URLSearchParams(params).toString();
  const url = query ? `${path}?${query}` : path;
  const init = body === null ? { signal } : { method: 'POST', body, signal, headers: { 'Content-Type': type } };
  let res = await fetch(url, init);
  // A busy server (its lanes full, or this browser's share of them taken by requests it has just
  // abandoned) says 503 with Retry-After at once, before any work: ask again after that wait, a
  // few times, rather than show the page's own overlap as an error. A 503 without Retry-After
  // (the time limit ran out on the work itself) is the answer.
  for (let retries = 0; res.status === 503 && res.headers.has('Retry-After') && retries < 4; retries++) {
    const waitS = Math.min(5, Math.max(1, Number(res.headers.get('Retry-After')) || 1));
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, waitS * 1000);
      signal?.addEventListener('abort', () => { clearTimeout(timer); reject(new DOMException('aborted', 'AbortError')); }, { once: true });
    });
    res = await fetch(url, init);
  }
  if (!res.ok) {
    let data = null;
    try {
      data = await res.json();
    } catch (_) {
      data = null;
    }
    throw new ApiError(res.status, data);
  }
  if (as === 'json') return res.json();
  if (as === 'blob') return res.blob();
  return res.text();
}

// One request at a time per `key` (a form, a panel): latest(key, regions) aborts the older request
// of that key, marks `regions` (elements or ids) pending while the new one runs (class `pending`:
// greyed with an "updating…" marker, aria-busy="true"), and returns {signal, stale, done()}:
// pass `signal` to api(), drop the answer when `stale` (a newer request replaced this one), call
// done() when the answer is drawn (a no-op for a stale request). The browser tests wait on
// body[data-pending] being empty.
const jobs = new Map();
export function latest(key, regions = []) {
  const old = jobs.get(key);
  if (old) {
    old.controller.abort();
    old.mark(false);
  }
  const controller = new AbortController();
  const nodes = regions.map((r) => (typeof r === 'string' ? document.getElementById(r) : r)).filter(Boolean);
  const job = {
    controller,
    signal: controller.signal,
    get stale() { return jobs.get(key) !== job; },
    mark(on) { for (const n of nodes) setPending(n, on); },
    done() {
      if (jobs.get(key) !== job) return;
      jobs.delete(key);
      job.mark(false);
      markPendingKeys();
    },
  };
  jobs.set(key, job);
  job.mark(true);
  markPendingKeys();
  return job;
}

function markPendingKeys() {
  document.body.dataset.pending = [...jobs.keys()].join(' ');
}

// Greys a region whose numbers are stale while a request for new ones runs.
export function setPending(node, on) {
  node.classList.toggle('pending', on);
  if (on) node.setAttribute('aria-busy', 'true');
  else node.removeAttribute('aria-busy');
}

// A form's fields (element id = state key) set from the state: a checkbox is checked for '1'; a
// select given a value it does not offer shows the default instead.
export function fillFields(ids, state, defaults, checkboxes = []) {
  for (const k of ids) {
    const e = document.getElementById(k);
    if (checkboxes.includes(k)) e.checked = state[k] === '1';
    else if (e.tagName === 'SELECT' && ![...e.options].some((o) => o.value === state[k])) e.value = defaults[k];
    else e.value = state[k];
  }
}

// The fields read back: trimmed text, a checkbox as '1' or `unchecked`.
export function readFields(ids, checkboxes = [], unchecked = '0') {
  const s = {};
  for (const k of ids) {
    const e = document.getElementById(k);
    s[k] = checkboxes.includes(k) ? (e.checked ? '1' : unchecked) : String(e.value).trim();
  }
  return s;
}

// The page state lives in the query string, so a view can be shared and reloaded.
export function readQuery(defaults) {
  const q = new URLSearchParams(location.search);
  const out = {};
  for (const k of Object.keys(defaults)) out[k] = q.has(k) ? q.get(k) : defaults[k];
  return out;
}

export function writeQuery(state, defaults) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(state)) {
    if (v === '' || v === null || v === undefined || String(v) === String(defaults[k])) continue;
    q.set(k, v);
  }
  const s = q.toString();
  const url = s ? `${location.pathname}?${s}` : location.pathname;
  if (url !== `${location.pathname}${location.search}`) history.replaceState(null, '', url);
}

// Formatting only: the numbers come from the engine.
export function ms(x) {
  return `${fmtNum(x)} ms`;
}
export function fmtNum(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return '–';
  return Number.isInteger(x) ? String(x) : String(Number(x.toPrecision(6)));
}
export function pct(fraction) {
  if (fraction === null || fraction === undefined || Number.isNaN(fraction)) return '–';
  return `${(100 * fraction).toFixed(2)}%`;
}

// Saves a Blob as a file.
export function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = el('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// Bytes as the CLI prints them (binary units): 128.00 MiB, 1.5 KiB.
export function fmtBytes(b) {
  if (b === null || b === undefined || Number.isNaN(b)) return '–';
  if (b >= 2 ** 30) return `${(b / 2 ** 30).toFixed(2)} GiB`;
  if (b >= 2 ** 20) return `${(b / 2 ** 20).toFixed(2)} MiB`;
  if (b >= 2 ** 10) return `${(b / 2 ** 10).toFixed(1)} KiB`;
  return `${Math.round(b)} B`;
}
// Seconds in the unit that reads best: 3.58 s, 349.6 µs, 12.40 ms.
export function fmtSeconds(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return '–';
  if (s >= 1) return `${s.toFixed(3)} s`;
  if (s >= 1e-3) return `${(s * 1e3).toFixed(2)} ms`;
  return `${(s * 1e6).toFixed(1)} µs`;
}
export function gib(bytes) {
  return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
}

// The "copy link to this view" button: the view lives in the query string, so the address is the
// link. Clipboard access can be refused; then the button says where the link is.
export function wireCopyLink(button) {
  const label = button.textContent;
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(location.href);
      button.textContent = 'Link copied';
    } catch (_) {
      button.textContent = 'Copy the address bar: it holds this view';
    }
    setTimeout(() => { button.textContent = label; }, 2500);
  });
}

// Checks a typed field against its own attributes, where it is typed: `required` (empty is
// refused; without it, empty means "the engine derives it"), min, max, and step="1" for whole
// numbers. Shows one message beside the field (its aria-describedby) and marks it aria-invalid;
// returns the message, '' when the value is fine (or the field is disabled). A value is never
// replaced by a default.
export function checkField(input) {
  const off = input.disabled;  // a disabled field is not sent: nothing to say about it
  const raw = off ? '' : String(input.value).trim();
  const label = document.querySelector(`label[for="${input.id}"]`);
  const name = label ? [...label.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent).join('').trim() : input.id;
  const min = input.min !== '' ? Number(input.min) : -Infinity;
  const max = input.max !== '' ? Number(input.max) : Infinity;
  const whole = input.step === '1';
  const range = Number.isFinite(min) && Number.isFinite(max) ? `from ${min} to ${max}`
    : Number.isFinite(min) ? `of ${min} or more` : Number.isFinite(max) ? `up to ${max}` : '';
  const want = `${whole ? 'a whole number' : 'a number'}${range ? ` ${range}` : ''}`;
  let message = '';
  // A number input holding text the browser cannot read reports an empty value with badInput.
  if (!off && input.validity && input.validity.badInput) message = `${name}: what is typed is not a number; enter ${want}.`;
  else if (raw === '') message = input.required && !off ? `${name} is empty; enter ${want}.` : '';
  else {
    const v = Number(raw);
    if (!Number.isFinite(v)) message = `${name}: “${raw}” is not a number; enter ${want}.`;
    else if (whole && !Number.isInteger(v)) message = `${name}: ${raw} is not a whole number; enter ${want}.`;
    else if (v < min || v > max) message = `${name}: ${raw} is out of range; enter ${want}.`;
  }
  const id = `${input.id}-problem`;
  let note = document.getElementById(id);
  if (message) {
    if (!note) {
      note = el('span', { id, class: 'field-error', role: 'status' });
      input.insertAdjacentElement('afterend', note);
    }
    note.textContent = message;
    input.setAttribute('aria-invalid', 'true');
    // The message first, then any hint the field already named (kept when the message goes).
    const others = (input.getAttribute('aria-describedby') || '').split(/\s+/).filter((t) => t && t !== id);
    input.setAttribute('aria-describedby', [id, ...others].join(' '));
  } else {
    if (note) note.remove();
    const others = (input.getAttribute('aria-describedby') || '').split(/\s+/).filter((t) => t && t !== id);
    if (others.length) input.setAttribute('aria-describedby', others.join(' '));
    else input.removeAttribute('aria-describedby');
    input.removeAttribute('aria-invalid');
  }
  return message;
}
