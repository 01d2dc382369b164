// Unit tests of the web UI's Markdown renderer and code highlighter (src/server/ui/web), imported
// directly as ES modules: node --test tests/e2e/markdown.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { parseMarkdown, parseInline, renderMarkdownToHtml as md, safeUrl, toHtml } from '../../src/server/ui/web/markdown.js';
import { highlight, languageOf } from '../../src/server/ui/web/highlight.js';

// Every tag and attribute the renderer may produce; dom.js enforces the same lists in the page.
const TAGS = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'em', 'strong', 'del', 'code', 'pre', 'ul', 'ol', 'li',
  'a', 'blockquote', 'hr', 'br', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'span', 'div', 'button']);
const ATTRS = new Set(['class', 'href', 'target', 'rel', 'start', 'type', 'aria-label', 'data-testid']);

function walk(nodes, visit) {
  for (const n of nodes) {
    visit(n);
    if (typeof n !== 'string') walk(n.children || [], visit);
  }
}

function textOf(nodes) {
  let s = '';
  walk(nodes, (n) => { if (typeof n === 'string') s += n; });
  return s;
}

// The renderer's whole output is allowed tags and attributes, and links are http(s) only.
function assertSafeTree(nodes) {
  walk(nodes, (n) => {
    if (typeof n === 'string') return;
    assert.ok(TAGS.has(n.tag), `unexpected tag ${n.tag}`);
    for (const [k, v] of Object.entries(n.attrs || {})) {
      assert.ok(ATTRS.has(k), `unexpected attribute ${k}`);
      if (k === 'href') assert.match(v, /^https?:\/\//i);
      if (k === 'class') assert.match(v, /^[\w+#.-]+(?: [\w+#.-]+)*$/);
    }
  });
}

test('paragraphs, headings, emphasis, inline code, line breaks', () => {
  assert.equal(md('# Title'), '<h1>Title</h1>');
  assert.equal(md('### Three ###'), '<h3>Three</h3>');
  assert.equal(md('a **b** *c* ***d*** __e__ _f_ ~~g~~ `h`'),
    '<p>a <strong>b</strong> <em>c</em> <strong><em>d</em></strong> <strong>e</strong> <em>f</em> <del>g</del> <code>h</code></p>');
  assert.equal(md('one\ntwo\n\nthree'), '<p>one<br>two</p><p>three</p>');
  assert.equal(md('snake_case_word and 2 * 3'), '<p>snake_case_word and 2 * 3</p>');
  assert.equal(md('**unclosed and `open'), '<p>**unclosed and `open</p>');
  assert.equal(md('\\*not em\\*'), '<p>*not em*</p>');
  assert.equal(md('``a ` b``'), '<p><code>a ` b</code></p>');
  assert.equal(md('---'), '<hr>');
  assert.equal(md('> quoted\n> **text**'), '<blockquote><p>quoted<br><strong>text</strong></p></blockquote>');
});

test('lists: bullets, ordered with start, nested, loose', () => {
  assert.equal(md('- a\n- b\n  - c\n- d'), '<ul><li>a</li><li>b<ul><li>c</li></ul></li><li>d</li></ul>');
  assert.equal(md('3. x\n4. y'), '<ol start="3"><li>x</li><li>y</li></ol>');
  assert.equal(md('1. a\n\n2. b'), '<ol><li><p>a</p></li><li><p>b</p></li></ol>');
  assert.equal(md('* one\n  continued'), '<ul><li>one<br>continued</li></ul>');
  assert.equal(md('1. step\n   ```sh\n   ls\n   ```'),
    '<ol><li>step<div class="code-block"><div class="code-head"><span class="code-lang">sh</span>' +
    '<button type="button" class="copy-code" aria-label="Copy code" data-testid="copy-code">Copy</button></div>' +
    '<pre><code class="language-sh">ls</code></pre></div></li></ol>');
  assert.equal(md('*emphasis*, not a list'), '<p><em>emphasis</em>, not a list</p>');
});

test('fenced code: language label, highlighting, copy button, unclosed fence while streaming', () => {
  const tree = parseMarkdown('```python\nx = "<b>" # hi\n```');
  assert.equal(tree.length, 1);
  assert.equal(textOf(tree), 'pythonCopyx = "<b>" # hi');
  const html = toHtml(tree);
  assert.ok(html.includes('<span class="code-lang">python</span>'));
  assert.ok(html.includes('data-testid="copy-code"'));
  assert.ok(html.includes('<span class="tok-string">&quot;&lt;b&gt;&quot;</span>'));
  assert.ok(html.includes('<span class="tok-comment"># hi</span>'));
  // While an answer streams the closing fence has not arrived yet.
  assert.equal(textOf(parseMarkdown('```js\nlet a = 1')), 'jsCopylet a = 1');
  // ~~~ fences, longer closing fences, and a label that tries to break out of the class.
  assert.equal(textOf(parseMarkdown('~~~\nplain\n~~~~')), 'textCopyplain');
  const evil = toHtml(parseMarkdown('```"><script>x\ncode\n```'));
  assert.ok(!evil.includes('<script'), evil);
});

test('tables', () => {
  assert.equal(md('| a | b |\n|:--|--:|\n| `x|y` | **2** |'),
    '<div class="table-wrap"><table><thead><tr><th class="align-left">a</th><th class="align-right">b</th></tr></thead>' +
    '<tbody><tr><td class="align-left"><code>x|y</code></td><td class="align-right"><strong>2</strong></td></tr></tbody></table></div>');
});

test('links: http and https only, with rel=noopener', () => {
  assert.equal(md('[site](https://example.com/a_(b))'),
    '<p><a href="https://example.com/a_(b)" target="_blank" rel="noopener noreferrer">site</a></p>');
  assert.equal(md('see https://example.com/x.'),
    '<p>see <a href="https://example.com/x" target="_blank" rel="noopener noreferrer">https://example.com/x</a>.</p>');
  assert.equal(md('<http://a.b/c>'), '<p><a href="http://a.b/c" target="_blank" rel="noopener noreferrer">http://a.b/c</a></p>');
  for (const bad of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', ' javascript:alert(1)', 'data:text/html,<script>alert(1)</script>',
    'vbscript:x', '//evil.example/x', '/relative', 'file:///etc/passwd', 'https://', 'java\tscript:alert(1)']) {
    const html = md(`[click](${bad})`);
    assert.ok(!html.includes('<a'), `${bad} -> ${html}`);
    assert.equal(safeUrl(bad), null, bad);
  }
  assert.equal(md('![cat](https://x.org/c.png)'), '<p><a href="https://x.org/c.png" target="_blank" rel="noopener noreferrer">image: cat</a></p>');
  assert.equal(md('![cat](javascript:x)'), '<p>cat</p>');
});

test('XSS: model text is always text, never markup', () => {
  const payloads = [
    '<script>alert(1)</script>',
    '<img src=x onerror=alert(1)>',
    '"><svg onload=alert(1)>',
    '<a href="javascript:alert(1)">x</a>',
    '[x](javascript:alert(1))',
    '[x](https://ok.example" onmouseover="alert(1))',
    '<https://x.example/"onmouseover=alert(1)>',
    '```html\n<script>alert(1)</script>\n```',
    '| <b>h</b> |\n|---|\n| <i onclick=x>c</i> |',
    '- <iframe src=javascript:alert(1)>',
    '# <style>*{display:none}</style>',
    '`<script>`',
    '&lt;script&gt; &amp;',
    '**<script>**alert(1)**</script>**',
  ];
  for (const p of payloads) {
    const tree = parseMarkdown(p);
    assertSafeTree(tree);
    const html = toHtml(tree);
    for (const [, tag, attrs] of html.matchAll(/<\/?([a-zA-Z0-9]+)([^>]*)>/g)) {
      assert.ok(TAGS.has(tag), `${p} -> <${tag}> in ${html}`);
      for (const [, name] of attrs.matchAll(/\s([^\s=]+)="[^"]*"/g)) assert.ok(ATTRS.has(name), `${p} -> ${name}= in ${html}`);
      assert.equal(attrs.replace(/\s[^\s=]+="[^"]*"/g, ''), '', `${p} -> stray attribute text in ${html}`);
    }
  }
  // The raw characters survive as text (escaped only when serialized).
  assert.equal(textOf(parseMarkdown('<b>bold?</b> & "q"')), '<b>bold?</b> & "q"');
  assert.equal(md('<b>x</b> & \'q\''), '<p>&lt;b&gt;x&lt;/b&gt; &amp; &#39;q&#39;</p>');
});

test('random input: never throws, only safe nodes, text is kept', () => {
  const alphabet = ['*', '_', '`', '~', '[', ']', '(', ')', '<', '>', '#', '-', '|', ':', '\n', ' ', 'a', 'b', '1.', '!', '\\', '"', 'http://x.y', 'javascript:'];
  let seed = 12345;
  const rand = (n) => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return (seed >>> 8) % n; };
  for (let k = 0; k < 500; k++) {
    let s = '';
    const len = rand(80);
    for (let j = 0; j < len; j++) s += alphabet[rand(alphabet.length)];
    const tree = parseMarkdown(s);
    assertSafeTree(tree);
    // Letters are never invented, and never lost outside link targets and fence info strings
    // (markup characters may be consumed).
    const letters = (x) => x.replace(/[^ab]/g, '');
    const shown = letters(toHtml(tree).replace(/<[^>]*>|text|Copy|image: /g, '').replace(/&[a-z#0-9]+;/g, ''));
    const expected = letters(s).length;
    const exact = !/[[]|```|~~~/.test(s);
    assert.ok(exact ? shown.length === expected : shown.length <= expected,
      `${JSON.stringify(s)}: ${shown.length} letters shown, ${expected} in the input`);
  }
});

test('pathological input stays fast', () => {
  const t0 = Date.now();
  parseMarkdown('*'.repeat(20000) + '['.repeat(20000) + '`'.repeat(200) + '_a '.repeat(5000) + '**x '.repeat(5000));
  parseMarkdown('- '.repeat(3000));
  parseMarkdown('>'.repeat(5000) + ' deep');
  parseMarkdown('    '.repeat(2000) + '- x\n'.repeat(2000));
  assert.ok(Date.now() - t0 < 3000, `took ${Date.now() - t0} ms`);
});

test('inline parser: nesting depth is bounded', () => {
  const deep = '['.repeat(200) + 'x' + '](https://a.b)'.repeat(200);
  assertSafeTree(parseInline(deep));
});

test('highlighter: tokens cover the input exactly', () => {
  const samples = {
    js: 'const a = `t${x}` + "s"; // c\n/* b */ let n = 0x1F + 3.5e2;',
    python: 'def f():\n    """doc"""\n    return None  # done',
    cpp: '#include <vector>\nint main() { return 0; } // x',
    rust: 'fn main() { let s: String = "a\\"b".into(); }',
    go: 'func main() { x := nil }',
    sql: "SELECT * FROM t WHERE a = 'x' -- c",
    bash: 'echo "hi" # c',
    json: '{"a": [1, true, null]}',
    unknownlang: 'whatever <b>',
  };
  for (const [lang, code] of Object.entries(samples)) {
    const tokens = highlight(code, lang);
    assert.equal(tokens.map((t) => t.text).join(''), code, lang);
  }
  const types = (code, lang) => highlight(code, lang).filter((t) => t.type !== 'plain').map((t) => `${t.type}:${t.text}`);
  assert.deepEqual(types('const x = "a"; // c', 'js'), ['keyword:const', 'string:"a"', 'comment:// c']);
  assert.deepEqual(types('def f(): return 42 # n', 'py'), ['keyword:def', 'keyword:return', 'number:42', 'comment:# n']);
  assert.deepEqual(types('select 1 from t', 'sql'), ['keyword:select', 'number:1', 'keyword:from']);
  assert.deepEqual(types('x1 = True', 'python'), ['literal:True']);
  assert.deepEqual(types('"unterminated\nnext', 'c'), ['string:"unterminated']);
  assert.equal(languageOf('nope'), null);
  assert.equal(languageOf('TS').name, 'javascript');
  assert.deepEqual(highlight('', 'js'), []);
});
