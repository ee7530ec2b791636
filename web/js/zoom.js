// A zoomable, pannable window onto a time axis, shared by every timeline (pipeline, comparison,
// measurement). It owns only the view [t0, t1] inside the domain; the caller redraws in onChange.
//
// Gestures, as Perfetto's UI has them: the wheel zooms around the pointer (a trackpad's pinch
// arrives as a wheel event with ctrlKey), shift+wheel or a horizontal wheel pans, a drag pans, two
// fingers pinch; on the focused element W/S zoom in/out around the pointer (or the centre) and
// A/D pan; 0 resets. A press that moves less than DRAG_PX is left alone, so a click or a tap still
// reaches the block under it.
//
//   const zoom = createZoom({ domain: [0, makespan], onChange: (v) => redraw(v) });
//   zoom.attach(svgElement, { plotLeft: 74, plotWidth: 910, viewBoxWidth: 1000 });
//     (wheelNeedsFocus: true leaves a plain wheel to scroll the page until the element has focus,
//     so a long page scrolls past the timeline; Ctrl+wheel, a pinch, always zooms. shouldPan(ev):
//     false keeps a press from panning, for the caller's own use of it.)
//   zoom.view  -> { t0, t1 }          zoom.set(t0, t1)   zoom.reset()
//   zoom.zoomBy(factor, anchorT)      zoom.panBy(fractionOfSpan)   zoom.zoomed -> bool

const DRAG_PX = 5;
const KEY_ZOOM = 1.25;  // per key press
const KEY_PAN = 0.1;    // fraction of the visible span per key press

export function createZoom({ domain, minSpan, onChange = () => {} }) {
  let [d0, d1] = domain;
  if (!(d1 > d0)) d1 = d0 + 1;
  // At most 1e6 times magnification, and never below a nanosecond-scale span.
  const floor = minSpan || Math.max((d1 - d0) / 1e6, 1e-9);
  let t0 = d0, t1 = d1;
  let geom = null, target = null, lastPointerT = null;
  const cleanups = [];

  function clamp(a, b) {
    let span = Math.min(Math.max(b - a, floor), d1 - d0);
    if (a < d0) a = d0;
    if (a + span > d1) a = d1 - span;
    return [a, a + span];
  }
  function set(a, b, notify = true) {
    const [na, nb] = clamp(a, b);
    if (na === t0 && nb === t1) return;
    t0 = na; t1 = nb;
    if (notify) onChange({ t0, t1 });
  }
  function zoomBy(factor, anchor) {
    const at = anchor ?? (t0 + t1) / 2;
    const span = (t1 - t0) / factor;
    const frac = (at - t0) / (t1 - t0);
    set(at - frac * span, at - frac * span + span);
  }
  function panBy(fraction) {
    const dt = fraction * (t1 - t0);
    set(t0 + dt, t1 + dt);
  }
  // Client x (px) to a time in the current view; null outside the element.
  function timeAt(clientX) {
    if (!target || !geom) return null;
    const box = target.getBoundingClientRect();
    if (!box.width) return null;
    const vx = ((clientX - box.left) / box.width) * geom.viewBoxWidth;
    const f = (vx - geom.plotLeft) / geom.plotWidth;
    return t0 + Math.min(Math.max(f, 0), 1) * (t1 - t0);
  }
  function pxToTime(dxPx) {
    const box = target.getBoundingClientRect();
    return (dxPx / box.width) * geom.viewBoxWidth / geom.plotWidth * (t1 - t0);
  }

  function attach(el, g) {
    detach();
    target = el;
    geom = g;
    const on = (type, fn, opts) => { el.addEventListener(type, fn, opts); cleanups.push(() => el.removeEventListener(type, fn, opts)); };

    on('wheel', (ev) => {
      if (geom.wheelNeedsFocus && !ev.ctrlKey && document.activeElement !== el) return;
      const horizontal = ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY);
      ev.preventDefault();
      if (horizontal) {
        const d = ev.shiftKey ? ev.deltaY : ev.deltaX;
        set(t0 + pxToTime(d), t1 + pxToTime(d));
        return;
      }
      // deltaMode 1 is lines; a pinch on a trackpad is ctrlKey + small deltas.
      const delta = ev.deltaMode === 1 ? ev.deltaY * 16 : ev.deltaY;
      zoomBy(Math.exp(-delta * (ev.ctrlKey ? 0.01 : 0.002)), timeAt(ev.clientX));
    }, { passive: false });

    // Pointers: one pans (after DRAG_PX), two pinch.
    const down = new Map();
    let dragging = false, startX = 0, startView = null, pinch = null;
    on('pointerdown', (ev) => {
      if (ev.pointerType === 'mouse' && ev.button !== 0) return;
      // The caller keeps some presses for itself (a range selection, say).
      if (geom.shouldPan && down.size === 0 && !geom.shouldPan(ev)) return;
      down.set(ev.pointerId, ev.clientX);
      if (down.size === 1) { startX = ev.clientX; startView = [t0, t1]; dragging = false; }
      if (down.size === 2) {
        // Both fingers stay with this element while the drawing under them is redrawn.
        for (const id of down.keys()) { try { el.setPointerCapture?.(id); } catch { /* already gone */ } }
        const xs = [...down.values()];
        pinch = { dist: Math.abs(xs[0] - xs[1]) || 1, mid: timeAt((xs[0] + xs[1]) / 2), view: [t0, t1] };
      }
    });
    on('pointermove', (ev) => {
      lastPointerT = timeAt(ev.clientX);
      if (!down.has(ev.pointerId)) return;
      down.set(ev.pointerId, ev.clientX);
      if (pinch && down.size >= 2) {
        const xs = [...down.values()];
        const factor = (Math.abs(xs[0] - xs[1]) || 1) / pinch.dist;
        const span = (pinch.view[1] - pinch.view[0]) / factor;
        const frac = (pinch.mid - pinch.view[0]) / (pinch.view[1] - pinch.view[0]);
        set(pinch.mid - frac * span, pinch.mid - frac * span + span);
        return;
      }
      if (!dragging && Math.abs(ev.clientX - startX) >= DRAG_PX) {
        dragging = true;
        el.setPointerCapture?.(ev.pointerId);
        el.classList.add('panning');
      }
      if (dragging) {
        const box = el.getBoundingClientRect();
        const dt = ((startX - ev.clientX) / box.width) * geom.viewBoxWidth / geom.plotWidth * (startView[1] - startView[0]);
        set(startView[0] + dt, startView[1] + dt);
      }
    });
    const up = (ev) => {
      down.delete(ev.pointerId);
      if (down.size < 2) pinch = null;
      if (down.size === 0 && dragging) {
        el.classList.remove('panning');
        // Swallow the click that ends a drag, so a pan never selects a block.
        const swallow = (c) => { c.stopImmediatePropagation(); c.preventDefault(); };
        el.addEventListener('click', swallow, { capture: true, once: true });
        setTimeout(() => el.removeEventListener('click', swallow, { capture: true }), 0);
      }
      if (down.size === 0) dragging = false;
    };
    on('pointerup', up);
    on('pointercancel', up);
    on('pointerleave', () => { lastPointerT = null; });

    on('keydown', (ev) => {
      if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
      const k = ev.key.toLowerCase();
      if (k === 'w') zoomBy(KEY_ZOOM, lastPointerT);
      else if (k === 's') zoomBy(1 / KEY_ZOOM, lastPointerT);
      else if (k === 'a') panBy(-KEY_PAN);
      else if (k === 'd') panBy(KEY_PAN);
      else if (k === '0') set(d0, d1);
      else return;
      ev.preventDefault();
    });
    // A double click anywhere on the drawing resets, as the pages' help says.
    on('dblclick', () => set(d0, d1));
  }

  function detach() {
    while (cleanups.length) cleanups.pop()();
    target = null;
  }

  return {
    attach,
    detach,
    set,
    zoomBy,
    panBy,
    reset: () => set(d0, d1),
    setDomain(a, b, keepView = false) {
      d0 = a; d1 = b > a ? b : a + 1;
      if (keepView) set(t0, t1, false); else { t0 = d0; t1 = d1; }
    },
    timeAt,
    get view() { return { t0, t1 }; },
    get domain() { return { t0: d0, t1: d1 }; },
    get zoomed() { return t0 > d0 || t1 < d1; },
  };
}
