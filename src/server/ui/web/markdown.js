// Our small Markdown renderer for model answers. It never builds HTML text: parseMarkdown returns
// a tree of plain nodes, {tag, attrs, children} or strings, and dom.js turns that tree into DOM
// nodes with createElement/createTextNode, so nothing the model writes can become markup.
//
// Blocks: paragraphs (single newlines become line breaks), ATX headings, fenced code blocks with a
// language label and a copy button, bullet and ordered lists (nested), block quotes, horizontal
// rules, pipe tables. Inline: code spans, **strong**, *em*, ~~del~~, links (http/https only),
// autolinks <https://...> and bare URLs, backslash escapes.
import { highlight } from './highlight.js';
import { t } from './i18n.js';

export const h = (tag, attrs = {}, children = []) => ({ tag, attrs, children });

// Only absolute http(s) URLs become links: no javascript:, data:, relative or protocol-relative.
export function safeUrl(url) {
  const u = String(url || '').trim();
  if (!/^https?:\/\/[^\s/?#]+/i.test(u)) return null;
  if (/[\u0000-\u001f\u007f\s<>"]/.test(u)) return null;
  return u;
}

export function link(url, children) {
  return h('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, children);
}

// ---------------------------------------------------------------------------------------------
// Blocks

const FENCE = /^( {0,3})(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const HR = /^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)])(?:([ \t]+)(.*))?$/;
const TABLE_SEP = /^ *\|? *:?-+:? *(?:\| *:?-+:? *)*\|? *$/;

const isBlank = (line) => /^\s*$/.test(line);
const indentOf = (line) => line.match(/^ */)[0].length;

export function parseMarkdown(text) {
  const lines = String(text ?? '').replace(/\r\n?/g, '\n').replace(/\t/g, '    ').split('\n');
  return parseBlocks(lines, 0);
}

function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || HR.test(line) || QUOTE.test(line) || ITEM.test(line);
}

function parseBlocks(lines, depth) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (isBlank(line)) {
      i++;
    } else if ((m = FENCE.exec(line))) {
      i = parseFence(lines, i, m, out);
    } else if ((m = HEADING.exec(line))) {
      out.push(h('h' + m[1].length, {}, parseInline(m[2] || '')));
      i++;
    } else if (HR.test(line)) {
      out.push(h('hr'));
      i++;
    } else if (QUOTE.test(line) && depth < 16) {
      const inner = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i]))) inner.push(m[1]), i++;
      out.push(h('blockquote', {}, parseBlocks(inner, depth + 1)));
    } else if (ITEM.test(line) && depth < 16) {
      i = parseList(lines, i, depth, out);
    } else if (line.includes('|') && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes('-')) {
      i = parseTable(lines, i, out);
    } else {
      const para = [];
      while (i < lines.length && !isBlank(lines[i]) && (para.length === 0 || !startsBlock(lines[i]))) {
        para.push(lines[i].replace(/^ +/, ''));
        i++;
      }
      out.push(h('p', {}, parseInline(para.join('\n'))));
    }
  }
  return out;
}

function parseFence(lines, i, m, out) {
  const indent = m[1].length;
  const fence = m[2];
  const lang = m[3].replace(/[^\w+#.-]/g, '').slice(0, 32);
  const body = [];
  i++;
  while (i < lines.length) {
    const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(lines[i]);
    if (close && close[1][0] === fence[0] && close[1].length >= fence.length) { i++; break; }
    body.push(lines[i].slice(Math.min(indent, indentOf(lines[i]))));
    i++;
  }
  out.push(codeBlock(body.join('\n'), lang));
  return i;
}

export function codeBlock(code, lang) {
  const tokens = highlight(code, lang).map((t) => (t.type === 'plain' ? t.text : h('span', { class: 'tok-' + t.type }, [t.text])));
  const codeAttrs = lang ? { class: 'language-' + lang } : {};
  return h('div', { class: 'code-block' }, [
    h('div', { class: 'code-head' }, [
      h('span', { class: 'code-lang' }, [lang || 'text']),
      h('button', { type: 'button', class: 'copy-code', 'aria-label': t('code.copyLabel'), 'data-testid': 'copy-code' }, [t('code.copy')]),
    ]),
    h('pre', {}, [h('code', codeAttrs, tokens)]),
  ]);
}

function parseList(lines, i, depth, out) {
  const first = ITEM.exec(lines[i]);
  const ordered = /\d/.test(first[2]);
  const kind = ordered ? first[2].slice(-1) : first[2];
  const baseIndent = first[1].length;
  const items = [];
  let loose = false;
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[1].length > baseIndent + 3 || m[1].length < baseIndent) break;
    if (/\d/.test(m[2]) !== ordered || (ordered ? m[2].slice(-1) : m[2]) !== kind) break;
    const gap = m[3] ? m[3].length : 1;
    const contentIndent = m[1].length + m[2].length + (gap > 4 ? 1 : gap);
    const body = [m[4] || ''];
    i++;
    let blankRun = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (isBlank(line)) { blankRun++; body.push(''); i++; continue; }
      const ind = indentOf(line);
      const sub = ITEM.exec(line);
      if (ind >= contentIndent || (sub && ind > baseIndent)) {
        body.push(line.slice(Math.min(ind, contentIndent)));
      } else if (blankRun === 0 && !startsBlock(line)) {
        body.push(line.trim());  // lazy continuation of the item's paragraph
      } else {
        break;
      }
      blankRun = 0;
      i++;
    }
    while (body.length > 1 && body[body.length - 1] === '') body.pop();
    // A blank line between two items makes the list loose (items keep their paragraphs).
    if (blankRun > 0 && i < lines.length && ITEM.test(lines[i]) && indentOf(lines[i]) === baseIndent) loose = true;
    items.push(parseBlocks(body, depth + 1));
  }
  const tight = (blocks) => blocks.flatMap((b, k) => (k === 0 && b.tag === 'p' ? b.children : [b]));
  const lis = items.map((blocks) => h('li', {}, loose ? blocks : tight(blocks)));
  const attrs = {};
  if (ordered) {
    const start = parseInt(first[2], 10);
    if (start !== 1) attrs.start = String(start);
  }
  out.push(h(ordered ? 'ol' : 'ul', attrs, lis));
  return i;
}

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const cells = [];
  let cur = '';
  let inCode = false;
  for (let k = 0; k < s.length; k++) {
    const c = s[k];
    if (c === '\\' && s[k + 1] === '|') { cur += '|'; k++; continue; }
    if (c === '`') inCode = !inCode;
    if (c === '|' && !inCode) { cells.push(cur.trim()); cur = ''; continue; }
    cur += c;
  }
  cells.push(cur.trim());
  return cells;
}

function parseTable(lines, i, out) {
  const head = splitRow(lines[i]);
  const aligns = splitRow(lines[i + 1]).map((c) =>
    c.startsWith(':') && c.endsWith(':') ? 'center' : c.endsWith(':') ? 'right' : c.startsWith(':') ? 'left' : '');
  const cell = (tag, text, k) => h(tag, aligns[k] ? { class: 'align-' + aligns[k] } : {}, parseInline(text || ''));
  i += 2;
  const rows = [];
  while (i < lines.length && !isBlank(lines[i]) && lines[i].includes('|')) {
    const cells = splitRow(lines[i]);
    rows.push(h('tr', {}, head.map((_, k) => cell('td', cells[k], k))));
    i++;
  }
  out.push(h('div', { class: 'table-wrap' }, [
    h('table', {}, [
      h('thead', {}, [h('tr', {}, head.map((t, k) => cell('th', t, k)))]),
      h('tbody', {}, rows),
    ]),
  ]));
  return i;
}

// ---------------------------------------------------------------------------------------------
// Inline

const PUNCT = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/;
const BARE_URL = /^https?:\/\/[^\s<>"]*[^\s<>"'.,:;!?)\]*_~]/i;
const MAX_INLINE_DEPTH = 12;

export function parseInline(text, depth = 0) {
  const out = [];
  let buf = '';
  const flush = () => { if (buf) out.push(buf), buf = ''; };
  const failed = new Set();  // closers known to be absent from here on (keeps the scan linear-ish)
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\' && PUNCT.test(text[i + 1] || '')) {
      buf += text[i + 1];
      i += 2;
    } else if (c === '\\' && text[i + 1] === '\n') {
      flush(); out.push(h('br')); i += 2;
    } else if (c === '\n') {
      buf = buf.replace(/ +$/, '');
      flush(); out.push(h('br')); i++;
    } else if (c === '`') {
      const run = text.slice(i).match(/^`+/)[0];
      const end = failed.has(run) ? -1 : findRun(text, i + run.length, run);
      if (end < 0) {
        failed.add(run);
        buf += run;
        i += run.length;
      } else {
        let code = text.slice(i + run.length, end).replace(/\n/g, ' ');
        if (/^ .*[^ ].* $/.test(code)) code = code.slice(1, -1);
        flush(); out.push(h('code', {}, [code]));
        i = end + run.length;
      }
    } else if ((c === '*' || c === '_' || c === '~') && depth < MAX_INLINE_DEPTH) {
      const r = emphasis(text, i, depth, failed);
      if (r) { flush(); out.push(r.node); i = r.end; }
      else { const run = text.slice(i).match(/^(\*+|_+|~+)/)[0]; buf += run; i += run.length; }
    } else if ((c === '[' || (c === '!' && text[i + 1] === '[')) && depth < MAX_INLINE_DEPTH && !failed.has('[')) {
      const r = linkAt(text, c === '!' ? i + 1 : i, depth, failed);
      if (r) {
        flush();
        if (c === '!') out.push(r.url ? link(r.url, [r.label ? 'image: ' + r.label : r.url]) : r.label);
        else out.push(...(r.url ? [link(r.url, parseInline(r.label, depth + 1))] : parseInline(r.label, depth + 1)));
        i = r.end;
      } else {
        buf += c; i++;
      }
    } else if (c === '<' && /^<https?:\/\/[^\s<>]+>/i.test(text.slice(i, i + 2048))) {
      const m = /^<(https?:\/\/[^\s<>]+)>/i.exec(text.slice(i, i + 2048));
      const url = safeUrl(m[1]);
      flush();
      out.push(url ? link(url, [m[1]]) : m[0]);
      i += m[0].length;
    } else if ((c === 'h' || c === 'H') && !/[\w]/.test(text[i - 1] || '') && BARE_URL.test(text.slice(i, i + 2048))) {
      const m = BARE_URL.exec(text.slice(i, i + 2048));
      const url = safeUrl(m[0]);
      flush();
      out.push(url ? link(url, [m[0]]) : m[0]);
      i += m[0].length;
    } else {
      buf += c;
      i++;
    }
  }
  flush();
  return out;
}

// Index of the next backtick run of exactly run.length at or after `from`, or -1.
function findRun(text, from, run) {
  let k = from;
  while ((k = text.indexOf(run, k)) >= 0) {
    let e = k + run.length;
    if (text[k - 1] !== '`' && text[e] !== '`') return k;
    while (text[e] === '`') e++;
    k = e;
  }
  return -1;
}

// Parses *em*, **strong**, ***both***, _em_, __strong__, ~~del~~ starting at i, or returns null.
function emphasis(text, i, depth, failed) {
  const c = text[i];
  let run = text.slice(i).match(c === '*' ? /^\*+/ : c === '_' ? /^_+/ : /^~+/)[0];
  if (c === '~' && run.length !== 2) return null;
  if (run.length > 3) return null;
  const after = text[i + run.length] || '';
  if (!after || /\s/.test(after)) return null;
  if (c === '_' && /[\p{L}\p{N}]/u.test(text[i - 1] || '')) return null;
  const key = 'em' + run;
  if (failed.has(key)) return null;
  // The closer: same run, not after whitespace, not followed by the same char; skip code spans.
  let k = i + run.length;
  while (k < text.length) {
    const ch = text[k];
    if (ch === '\\') { k += 2; continue; }
    if (ch === '`') {
      const r = text.slice(k).match(/^`+/)[0];
      const e = findRun(text, k + r.length, r);
      k = e < 0 ? k + r.length : e + r.length;
      continue;
    }
    if (text.startsWith(run, k) && text[k + run.length] !== c && text[k - 1] !== c && !/\s/.test(text[k - 1]) && k > i + run.length &&
        (c !== '_' || !/[\p{L}\p{N}]/u.test(text[k + run.length] || ''))) {
      const inner = parseInline(text.slice(i + run.length, k), depth + 1);
      let node;
      if (c === '~') node = h('del', {}, inner);
      else if (run.length === 1) node = h('em', {}, inner);
      else if (run.length === 2) node = h('strong', {}, inner);
      else node = h('strong', {}, [h('em', {}, inner)]);
      return { node, end: k + run.length };
    }
    k++;
  }
  failed.add(key);
  return null;
}

// Parses [label](url "title") at i (text[i] === '['); returns {label, url|null, end} or null.
function linkAt(text, i, depth, failed) {
  let d = 0;
  let k = i;
  for (; k < text.length; k++) {
    const ch = text[k];
    if (ch === '\\') { k++; continue; }
    if (ch === '[') d++;
    else if (ch === ']' && --d === 0) break;
  }
  if (k >= text.length) { failed.add('['); return null; }
  if (text[k + 1] !== '(') return null;
  const label = text.slice(i + 1, k);
  let p = k + 2;
  let parens = 1;
  const start = p;
  for (; p < text.length && p - start < 4096; p++) {
    const ch = text[p];
    if (ch === '\\') { p++; continue; }
    if (ch === '(') parens++;
    else if (ch === ')' && --parens === 0) break;
    else if (ch === '\n') return null;
  }
  if (parens !== 0) return null;
  const dest = text.slice(start, p).trim().replace(/\s+("[^"]*"|'[^']*')$/, '').replace(/^<(.*)>$/, '$1');
  return { label, url: safeUrl(dest), end: p + 1 };
}

// ---------------------------------------------------------------------------------------------
// The tree as escaped HTML text: used by tests and for debugging, never to fill the page.

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);
const VOID = new Set(['br', 'hr']);

export function toHtml(nodes) {
  return nodes.map((n) => {
    if (typeof n === 'string') return escapeHtml(n);
    const attrs = Object.entries(n.attrs || {}).map(([k, v]) => ` ${k}="${escapeHtml(v)}"`).join('');
    if (VOID.has(n.tag)) return `<${n.tag}${attrs}>`;
    return `<${n.tag}${attrs}>${toHtml(n.children || [])}</${n.tag}>`;
  }).join('');
}

export const renderMarkdownToHtml = (text) => toHtml(parseMarkdown(text));
