// dom.js — a tiny element builder, so the page never assembles HTML from
// strings (text is always set as text, never parsed).

/** h creates an element: attrs sets attributes (on* keys add listeners,
 * a false/null value skips the attribute); children are nodes or text. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value') el.value = v;
    else if (k === 'checked') el.checked = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** clear removes every child of el. */
export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

let nextId = 0;
/** uid returns a page-unique element ID with the prefix. */
export function uid(prefix) {
  nextId += 1;
  return `${prefix}-${nextId}`;
}

/** ago formats a time as a short relative text ("3 min ago"). */
export function ago(iso) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.max(0, Math.round((Date.now() - t) / 1000));
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(t).toLocaleDateString();
}

/** patch makes parent's children the nodes given, in order, keeping each
 * child drawn before whose drawing is the same as a new node's (compared
 * by the HTML each was built with, not the live one, so a block the
 * reader opened counts as unchanged): a redraw replaces only what
 * changed, and the reader's scroll position, selection and open blocks
 * survive it. Children patch did not put there are removed, except those
 * keep(child) holds on to (the caller places them). */
export function patch(parent, nodes, keep = () => false) {
  const old = new Map(); // drawing -> children drawn so, in order
  for (const c of parent.children) {
    if (!c.drawn) continue;
    const list = old.get(c.drawn);
    if (list) list.push(c); else old.set(c.drawn, [c]);
  }
  const next = nodes.map((n) => {
    const drawn = n.outerHTML;
    const same = old.get(drawn);
    if (same && same.length) return same.shift();
    n.drawn = drawn;
    return n;
  });
  const wanted = new Set(next);
  for (const c of [...parent.children]) if (!wanted.has(c) && !keep(c)) c.remove();
  let at = parent.firstElementChild;
  for (const n of next) {
    while (at && !wanted.has(at)) at = at.nextElementSibling; // a kept child stays where it is
    if (at === n) { at = at.nextElementSibling; continue; }
    parent.insertBefore(n, at);
  }
  return parent;
}
