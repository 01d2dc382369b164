// Turns markdown.js trees into DOM nodes. Text only ever becomes text nodes; tags and attributes
// come from fixed allow-lists and links are checked again, so a tree cannot carry markup or script.
import { safeUrl } from './markdown.js';

const TAGS = new Set([
  'p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'em', 'strong', 'del', 'code', 'pre', 'ul', 'ol', 'li',
  'a', 'blockquote', 'hr', 'br', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'span', 'div', 'button',
]);
const ATTRS = new Set(['class', 'href', 'target', 'rel', 'start', 'type', 'aria-label', 'data-testid', 'title']);

export function toDom(nodes, doc = document) {
  const frag = doc.createDocumentFragment();
  for (const n of nodes) frag.appendChild(nodeToDom(n, doc));
  return frag;
}

function nodeToDom(n, doc) {
  if (typeof n === 'string') return doc.createTextNode(n);
  if (!n || !TAGS.has(n.tag)) return doc.createTextNode('');
  const el = doc.createElement(n.tag);
  for (const [k, v] of Object.entries(n.attrs || {})) {
    if (!ATTRS.has(k)) continue;
    if (k === 'href') {
      const url = safeUrl(v);
      if (url) el.setAttribute('href', url);
    } else {
      el.setAttribute(k, String(v));
    }
  }
  for (const c of n.children || []) el.appendChild(nodeToDom(c, doc));
  return el;
}

// Small element helper for the app's own chrome: el('button', {class: 'x', onclick}, 'text', child).
export function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return e;
}

// One of index.html's sprite icons (<symbol id="i-NAME">).
export function icon(name) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'icon');
  svg.setAttribute('aria-hidden', 'true');
  const use = document.createElementNS(ns, 'use');
  use.setAttribute('href', '#i-' + name);
  svg.append(use);
  return svg;
}
