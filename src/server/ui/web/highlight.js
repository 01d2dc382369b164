// A small tokenizer-based code highlighter: one table row per language (keywords, literals,
// comment and string syntax) and one scanner for all of them. It returns tokens, never HTML:
// markdown.js wraps them in <span class="tok-TYPE"> nodes.

const words = (s) => new Set(s.split(/\s+/).filter(Boolean));

const C_LIKE = { line: ['//'], block: [['/*', '*/']], quotes: ['"', "'"] };
const HASH = { line: ['#'], block: [], quotes: ['"', "'"] };

// name -> { keywords, literals, line: [...], block: [[open, close]], quotes: [...], caseless }
const LANGS = {
  javascript: {
    ...C_LIKE, quotes: ['"', "'", '`'],
    keywords: words(`async await break case catch class const continue debugger default delete do else
      export extends finally for from function if import in instanceof let new of return static super
      switch this throw try typeof var void while with yield interface type enum implements private
      protected public readonly declare namespace abstract as keyof`),
    literals: words('true false null undefined NaN Infinity'),
  },
  python: {
    ...HASH, triple: true,
    keywords: words(`and as assert async await break class continue def del elif else except finally for
      from global if import in is lambda nonlocal not or pass raise return try while with yield match case
      self print`),
    literals: words('True False None'),
  },
  c: {
    ...C_LIKE,
    keywords: words(`auto break case char const continue default do double else enum extern float for goto
      if inline int long register restrict return short signed sizeof static struct switch typedef union
      unsigned void volatile while bool class namespace template typename public private protected virtual
      override final constexpr consteval noexcept new delete this throw try catch using operator friend
      explicit mutable static_cast dynamic_cast reinterpret_cast const_cast decltype concept requires
      co_await co_return co_yield include define ifdef ifndef endif pragma size_t int8_t int16_t int32_t
      int64_t uint8_t uint16_t uint32_t uint64_t std`),
    literals: words('true false NULL nullptr'),
  },
  rust: {
    ...C_LIKE, quotes: ['"'],
    keywords: words(`as async await break const continue crate dyn else enum extern fn for if impl in let
      loop match mod move mut pub ref return self Self static struct super trait type unsafe use where
      while i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str String Vec Option
      Result Some None Ok Err Box`),
    literals: words('true false'),
  },
  go: {
    ...C_LIKE, quotes: ['"', "'", '`'],
    keywords: words(`break case chan const continue default defer else fallthrough for func go goto if
      import interface map package range return select struct switch type var int int8 int16 int32 int64
      uint uint8 uint16 uint32 uint64 float32 float64 string byte rune bool error make len cap append new`),
    literals: words('true false nil iota'),
  },
  java: {
    ...C_LIKE,
    keywords: words(`abstract assert boolean break byte case catch char class const continue default do
      double else enum extends final finally float for if implements import instanceof int interface long
      native new package private protected public return short static super switch synchronized this
      throw throws transient try void volatile while var record val fun when object override`),
    literals: words('true false null'),
  },
  csharp: {
    ...C_LIKE,
    keywords: words(`abstract as base bool break byte case catch char class const continue decimal default
      delegate do double else enum event explicit extern finally fixed float for foreach if implicit in
      int interface internal is lock long namespace new object operator out override params private
      protected public readonly ref return sealed short static string struct switch this throw try typeof
      uint ulong unsafe using var virtual void while async await`),
    literals: words('true false null'),
  },
  bash: {
    ...HASH,
    keywords: words(`if then else elif fi for while until do done case esac function in return exit
      export local readonly echo cd set unset source alias sudo`),
    literals: words('true false'),
  },
  json: { line: [], block: [], quotes: ['"'], keywords: new Set(), literals: words('true false null') },
  sql: {
    line: ['--'], block: [['/*', '*/']], quotes: ["'", '"'], caseless: true,
    keywords: words(`select from where insert into values update set delete create table drop alter add
      index primary key foreign references join inner left right outer on group by order having limit
      offset as and or not in is like between distinct union all case when then else end count sum avg
      min max exists view begin commit rollback`),
    literals: words('null true false'),
  },
  css: {
    line: [], block: [['/*', '*/']], quotes: ['"', "'"],
    keywords: words('important media import from to px em rem vh vw auto none inherit solid flex grid'),
    literals: new Set(),
  },
  html: {
    line: [], block: [['<!--', '-->']], quotes: ['"', "'"],
    keywords: words('html head body div span script style link meta title p a img ul ol li table tr td th'),
    literals: new Set(),
  },
  yaml: { ...HASH, keywords: new Set(), literals: words('true false null yes no') },
};

const ALIASES = {
  js: 'javascript', jsx: 'javascript', mjs: 'javascript', ts: 'javascript', tsx: 'javascript',
  typescript: 'javascript', node: 'javascript',
  py: 'python', python3: 'python',
  cpp: 'c', 'c++': 'c', cc: 'c', cxx: 'c', h: 'c', hpp: 'c', cuda: 'c', objc: 'c',
  rs: 'rust', golang: 'go', kotlin: 'java', kt: 'java', scala: 'java', swift: 'java', dart: 'java',
  cs: 'csharp', 'c#': 'csharp',
  sh: 'bash', shell: 'bash', zsh: 'bash', console: 'bash',
  jsonc: 'json', json5: 'json',
  xml: 'html', svg: 'html', vue: 'html',
  scss: 'css', less: 'css',
  yml: 'yaml', toml: 'yaml', ini: 'yaml', dockerfile: 'bash', makefile: 'bash', cmake: 'bash',
  postgres: 'sql', mysql: 'sql', sqlite: 'sql',
};

// The table row for a fence's language label, or null.
export function languageOf(label) {
  const key = String(label || '').toLowerCase();
  const name = LANGS[key] ? key : ALIASES[key];
  return name ? { name, ...LANGS[name] } : null;
}

const NUMBER = /^(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][+-]?\d+)?)[a-zA-Z]*/;
const IDENT = /^[A-Za-z_$][\w$]*/;

// Splits code into [{type, text}] with type in plain, keyword, literal, string, comment, number.
// Unknown languages come back as one plain token. Concatenating the texts gives the input back.
export function highlight(code, label) {
  const lang = languageOf(label);
  if (!lang) return code ? [{ type: 'plain', text: code }] : [];
  const out = [];
  const push = (type, text) => {
    if (!text) return;
    const last = out[out.length - 1];
    if (last && last.type === type) last.text += text;
    else out.push({ type, text });
  };
  let i = 0;
  const n = code.length;
  const at = (prefix) => code.startsWith(prefix, i);
  while (i < n) {
    let matched = false;
    for (const [open, close] of lang.block) {
      if (at(open)) {
        const end = code.indexOf(close, i + open.length);
        const stop = end < 0 ? n : end + close.length;
        push('comment', code.slice(i, stop));
        i = stop;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    if (lang.line.some(at)) {
      const end = code.indexOf('\n', i);
      const stop = end < 0 ? n : end;
      push('comment', code.slice(i, stop));
      i = stop;
      continue;
    }
    const ch = code[i];
    if (lang.quotes.includes(ch)) {
      const stop = scanString(code, i, lang.triple && code.startsWith(ch.repeat(3), i) ? ch.repeat(3) : ch);
      push('string', code.slice(i, stop));
      i = stop;
      continue;
    }
    const prev = i > 0 ? code[i - 1] : '';
    if (/[0-9.]/.test(ch) && !/[\w$]/.test(prev)) {
      const m = NUMBER.exec(code.slice(i, i + 64));
      if (m && /\d/.test(m[0])) {
        push('number', m[0]);
        i += m[0].length;
        continue;
      }
    }
    const id = IDENT.exec(code.slice(i, i + 256));
    if (id) {
      const word = id[0];
      const key = lang.caseless ? word.toLowerCase() : word;
      push(lang.keywords.has(key) ? 'keyword' : lang.literals.has(key) ? 'literal' : 'plain', word);
      i += word.length;
      continue;
    }
    push('plain', ch);
    i++;
  }
  return out;
}

// The end of a string that starts at `start` with delimiter `quote`; backslash escapes; single-
// character quotes other than the backtick end at a newline (an unterminated string).
function scanString(code, start, quote) {
  const multiline = quote.length === 3 || quote === '`';
  let i = start + quote.length;
  while (i < code.length) {
    const c = code[i];
    if (c === '\\') { i += 2; continue; }
    if (code.startsWith(quote, i)) return i + quote.length;
    if (c === '\n' && !multiline) return i;
    i++;
  }
  return code.length;
}
