// Unit tests of the web UI's pure modules (src/server/ui/web): the SSE parser and stream reader, the
// request builder, the speed line, and conversation storage with its quota guard.
// node --test tests/e2e/ui_modules.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SseParser, authHeaders, buildMessages, buildRequest, errorFrom, fetchModel, formatStats, statsFrom, streamChat } from '../../src/server/ui/web/api.js';
import { DEFAULT_SETTINGS, Store, isQuotaError, titleOf, withoutImages } from '../../src/server/ui/web/storage.js';
import { LANGUAGES, MESSAGES, language, pickLanguage, setLanguage, t } from '../../src/server/ui/web/i18n.js';
import { isAnimatedImage, showsAsVideo } from '../../src/server/ui/web/attachments.js';
import { STRIP_FRAMES, stripTimes } from '../../src/server/ui/web/thumbnails.js';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

test('SSE: events split anywhere, CRLF, multi-line data, comments, a last event without its blank line', () => {
  const stream = ': comment\r\ndata: {"a":1}\r\n\r\ndata: one\ndata: two\n\nevent: x\nid: 3\ndata:[DONE]';
  for (let cut = 0; cut <= stream.length; cut++) {
    for (const step of [1, 2, 7]) {
      const p = new SseParser();
      const out = [...p.feed(stream.slice(0, cut))];
      for (let k = cut; k < stream.length; k += step) out.push(...p.feed(stream.slice(k, k + step)));
      out.push(...p.end());
      assert.deepEqual(out, ['{"a":1}', 'one\ntwo', '[DONE]'], `cut ${cut} step ${step}`);
    }
  }
});

function sseResponse(chunks, { status = 200, split = 5 } = {}) {
  const text = chunks.join('');
  const bytes = new TextEncoder().encode(text);
  const body = new ReadableStream({
    start(c) {
      for (let k = 0; k < bytes.length; k += split) c.enqueue(bytes.slice(k, k + split));
      c.close();
    },
  });
  return new Response(body, { status, headers: { 'Content-Type': 'text/event-stream' } });
}

test('streamChat: yields chunks until [DONE], splits inside multi-byte characters', async () => {
  const events = [
    'data: {"choices":[{"delta":{"reasoning_content":"h\u00e9"}}]}\n\n',
    'data: {"choices":[{"delta":{"content":"\u732b \ud83d\ude00"}}]}\n\n',
    'data: {"choices":[],"usage":{"prompt_tokens":5}}\n\n',
    'data: [DONE]\n\n',
    'data: {"choices":[{"delta":{"content":"after done"}}]}\n\n',
  ];
  let seen;
  const fetchImpl = async (url, init) => { seen = { url, init }; return sseResponse(events, { split: 1 }); };
  const chunks = [];
  for await (const c of streamChat({ messages: [] }, { fetchImpl })) chunks.push(c);
  assert.equal(seen.url, '/v1/chat/completions');
  assert.equal(seen.init.method, 'POST');
  assert.deepEqual(JSON.parse(seen.init.body), { messages: [] });
  assert.equal(chunks.length, 3);
  assert.equal(chunks[0].choices[0].delta.reasoning_content, 'h\u00e9');
  assert.equal(chunks[1].choices[0].delta.content, '\u732b \ud83d\ude00');
  assert.equal(chunks[2].usage.prompt_tokens, 5);
});

test('streamChat: HTTP errors and in-stream errors become ApiError with the server message', async () => {
  const bad = async () => new Response(JSON.stringify({ error: { message: 'messages: must be an array', type: 'invalid_request_error', code: 'x' } }), { status: 400 });
  await assert.rejects(async () => { for await (const _ of streamChat({}, { fetchImpl: bad })); },
    (e) => e.name === 'ApiError' && e.status === 400 && e.message === 'messages: must be an array' && e.type === 'invalid_request_error');
  const midway = async () => sseResponse(['data: {"choices":[{"delta":{"content":"a"}}]}\n\n', 'data: {"error":{"message":"context is full"}}\n\n']);
  const got = [];
  await assert.rejects(async () => { for await (const c of streamChat({}, { fetchImpl: midway })) got.push(c); },
    (e) => e.name === 'ApiError' && e.message === 'context is full');
  assert.equal(got.length, 1);
  const garbage = async () => sseResponse(['data: {not json\n\n']);
  await assert.rejects(async () => { for await (const _ of streamChat({}, { fetchImpl: garbage })); }, /malformed/);
  assert.equal(errorFrom(500, 'plain text failure').message, 'plain text failure');
  assert.equal(errorFrom(503, '').message, 'HTTP 503');
  assert.equal(errorFrom(400, '{"error":"short form"}').message, 'short form');
});

test('streamChat: an abort stops reading', async () => {
  const controller = new AbortController();
  let cancelled = false;
  const fetchImpl = async (url, init) => {
    const body = new ReadableStream({
      start(c) { c.enqueue(new TextEncoder().encode('data: {"choices":[{"delta":{"content":"a"}}]}\n\n')); },
      cancel() { cancelled = true; },
    });
    init.signal.addEventListener('abort', () => {});
    return new Response(body, { status: 200 });
  };
  const got = [];
  for await (const c of streamChat({}, { fetchImpl, signal: controller.signal })) {
    got.push(c);
    controller.abort();
    break;
  }
  assert.equal(got.length, 1);
  assert.ok(cancelled);
});

test('fetchModel reads data[0].id and meta', async () => {
  const ok = async () => Response.json({ object: 'list', data: [{ id: 'tiny-qwen35', meta: { context_size: 4096, has_vision: true } }] });
  assert.deepEqual(await fetchModel(ok), { id: 'tiny-qwen35', contextSize: 4096, hasVision: true });
  const bare = async () => Response.json({ data: [{ id: 'm' }] });
  assert.deepEqual(await fetchModel(bare), { id: 'm', contextSize: null, hasVision: null });
});

test('the API key goes out as a bearer token on every request; a 401 is an ApiError', async () => {
  assert.deepEqual(authHeaders(''), {});
  assert.deepEqual(authHeaders('k1'), { Authorization: 'Bearer k1' });
  const seen = [];
  const fetchImpl = async (url, init = {}) => {
    seen.push((init.headers || {}).Authorization);
    if ((init.headers || {}).Authorization !== 'Bearer right') {
      return new Response(JSON.stringify({ error: { message: 'incorrect API key', type: 'authentication_error', code: 'invalid_api_key' } }), { status: 401 });
    }
    if (url === '/v1/models') return Response.json({ data: [{ id: 'm' }] });
    return new Response('data: [DONE]\n\n');
  };
  await assert.rejects(fetchModel(fetchImpl, { apiKey: 'wrong' }), (e) => e.status === 401 && e.code === 'invalid_api_key');
  assert.equal((await fetchModel(fetchImpl, { apiKey: 'right' })).id, 'm');
  await assert.rejects(async () => { for await (const _ of streamChat({}, { fetchImpl })); }, (e) => e.status === 401);
  for await (const _ of streamChat({}, { fetchImpl, apiKey: 'right' }));
  assert.deepEqual(seen, ['Bearer wrong', 'Bearer right', undefined, 'Bearer right']);
});

const IMG = 'data:image/png;base64,iVBORw0KGgo=';

test('buildMessages: system prompt, images as image_url parts, assistant turns with reasoning_content', () => {
  const conv = {
    messages: [
      { role: 'user', text: 'what is this?', images: [{ name: 'a.png', url: IMG }, { name: 'b.png', url: IMG }] },
      { role: 'assistant', content: 'a cat', reasoning: 'looks furry' },
      { role: 'user', text: 'and now?', images: [] },
      { role: 'assistant', content: '', reasoning: '', error: 'server said no' },
      { role: 'user', text: 'again', images: [{ name: 'gone.png', dropped: true }] },
      { role: 'assistant', content: 'partial', stopped: true },
    ],
  };
  assert.deepEqual(buildMessages(conv, { systemPrompt: '  Be brief.  ' }), [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: [
      { type: 'image_url', image_url: { url: IMG } },
      { type: 'image_url', image_url: { url: IMG } },
      { type: 'text', text: 'what is this?' },
    ] },
    { role: 'assistant', content: 'a cat', reasoning_content: 'looks furry' },
    { role: 'user', content: 'and now?' },
    { role: 'user', content: 'again' },
    { role: 'assistant', content: 'partial' },
  ]);
  assert.deepEqual(buildMessages({ messages: [{ role: 'user', text: '', images: [{ url: IMG }] }] }, {}),
    [{ role: 'user', content: [{ type: 'image_url', image_url: { url: IMG } }] }]);
});

test('buildMessages: attached videos become video_url parts beside images', () => {
  const VID = 'data:video/mp4;base64,AAAAIGZ0eXBpc29t';
  const conv = { messages: [{ role: 'user', text: 'what happens?', images: [{ name: 'a.png', url: IMG }, { name: 'c.mp4', url: VID, kind: 'video' }] }] };
  assert.deepEqual(buildMessages(conv, {}), [{ role: 'user', content: [
    { type: 'image_url', image_url: { url: IMG } },
    { type: 'video_url', video_url: { url: VID } },
    { type: 'text', text: 'what happens?' },
  ] }]);
});

test('buildRequest: streaming with usage, thinking switch, temperature and max tokens', () => {
  const conv = { messages: [{ role: 'user', text: 'hi' }] };
  assert.deepEqual(buildRequest(conv, { thinking: true, temperature: 0.5, maxTokens: 2000 }, 'tiny'), {
    model: 'tiny',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
    stream_options: { include_usage: true },
    chat_template_kwargs: { enable_thinking: true },
    temperature: 0.5,
    max_tokens: 2000,
  });
  const r = buildRequest(conv, { thinking: false, temperature: '', maxTokens: '' }, '');
  assert.equal(r.chat_template_kwargs.enable_thinking, false);
  assert.ok(!('temperature' in r) && !('max_tokens' in r));
  assert.equal(JSON.parse(JSON.stringify(r)).model, undefined);
  assert.equal(buildRequest(conv, { temperature: 0, maxTokens: 0 }, 'm').temperature, 0);
  assert.ok(!('max_tokens' in buildRequest(conv, { maxTokens: 0 }, 'm')));
});

test('speed line from usage and timings', () => {
  const s = statsFrom(
    { prompt_tokens: 120, completion_tokens: 40, prompt_tokens_details: { cached_tokens: 100 } },
    { prompt_n: 20, prompt_ms: 50, prompt_per_second: 400, predicted_n: 40, predicted_ms: 800, predicted_per_second: 50, cached_n: 100, vision_ms: 0 });
  assert.deepEqual(s, { promptTokens: 120, completionTokens: 40, cachedTokens: 100, prefillPerSecond: 400, decodePerSecond: 50, visionMs: 0 });
  assert.equal(formatStats(s), 'prefill 400 tok/s \u00b7 decode 50.0 tok/s \u00b7 cached 100 tok \u00b7 120 in, 40 out');
  // Rates computed from counts and times when the per-second fields are missing.
  const t = statsFrom(null, { prompt_n: 10, prompt_ms: 100, predicted_n: 5, predicted_ms: 250, cached_n: 0, vision_ms: 12.4 });
  assert.equal(formatStats(t), 'prefill 100 tok/s \u00b7 decode 20.0 tok/s \u00b7 cached 0 tok \u00b7 10 in, 5 out \u00b7 vision 12 ms');
  assert.equal(formatStats(statsFrom({ prompt_tokens: 3, completion_tokens: 1 }, undefined)), '3 in, 1 out');
  assert.ok(!formatStats(statsFrom(null, { vision_ms: 0.0001 })).includes('vision'), 'text-only turns show no vision time');
  assert.equal(formatStats(null), '');
});

// A localStorage stand-in with a byte budget that throws like browsers do.
class FakeStorage {
  constructor(budget = Infinity) { this.map = new Map(); this.budget = budget; }
  used() { let n = 0; for (const [k, v] of this.map) n += k.length + v.length; return n; }
  getItem(k) { return this.map.has(k) ? this.map.get(k) : null; }
  setItem(k, v) {
    const old = this.map.get(k);
    const size = this.used() - (old ? k.length + old.length : 0) + k.length + String(v).length;
    if (size > this.budget) {
      const e = new Error('The quota has been exceeded.');
      e.name = 'QuotaExceededError';
      e.code = 22;
      throw e;
    }
    this.map.set(k, String(v));
  }
  removeItem(k) { this.map.delete(k); }
}

const conv = (id, text, images = [], updated = 1) => ({ id, updated, messages: [{ role: 'user', text, images }, { role: 'assistant', content: 'ok' }] });

test('storage: save, list newest first, get, remove, current, settings', () => {
  const store = new Store(new FakeStorage());
  assert.deepEqual(store.list(), []);
  assert.deepEqual(store.loadSettings(), DEFAULT_SETTINGS);
  assert.deepEqual(store.save(conv('a', 'first', [], 1)), { ok: true, droppedImages: false });
  store.save(conv('b', 'second', [], 2));
  assert.deepEqual(store.list().map((e) => [e.id, e.title]), [['b', 'second'], ['a', 'first']]);
  assert.equal(store.get('a').messages[0].text, 'first');
  assert.equal(store.get('missing'), null);
  store.remove('b');
  assert.deepEqual(store.list().map((e) => e.id), ['a']);
  store.setCurrent('a');
  assert.equal(store.current(), 'a');
  store.setCurrent(null);
  assert.equal(store.current(), null);
  store.saveSettings({ ...DEFAULT_SETTINGS, systemPrompt: 'x', thinking: true });
  assert.equal(store.loadSettings().systemPrompt, 'x');
  assert.equal(store.loadSettings().thinking, true);
});

test('storage: thinking is on by default; only a choice the user made turns it off', () => {
  assert.equal(DEFAULT_SETTINGS.thinking, true);
  const store = new Store(new FakeStorage());
  assert.equal(store.loadSettings().thinking, true);
  // Saved by an older page, which wrote thinking: false with every setting: the default wins.
  store.saveSettings({ systemPrompt: '', temperature: 0.3, maxTokens: 100, thinking: false });
  assert.equal(store.loadSettings().thinking, true);
  assert.equal(store.loadSettings().temperature, 0.3);
  // The user flipped the toggle: that choice is kept, off or on.
  store.saveSettings({ ...store.loadSettings(), thinking: false, thinkingChosen: true });
  assert.equal(new Store(store.storage).loadSettings().thinking, false);
  store.saveSettings({ ...store.loadSettings(), thinking: true, thinkingChosen: true });
  assert.equal(new Store(store.storage).loadSettings().thinking, true);
  // A marked but broken value is not a choice.
  store.saveSettings({ thinking: 'no', thinkingChosen: true });
  assert.equal(store.loadSettings().thinking, true);
});

test('storage: the picked language is kept and removed', () => {
  const store = new Store(new FakeStorage());
  assert.equal(store.language(), '');
  assert.ok(store.saveLanguage('ja'));
  assert.equal(new Store(store.storage).language(), 'ja');
  store.saveLanguage('');
  assert.equal(store.language(), '');
});

test('storage: the API key is kept, replaced and removed', () => {
  const store = new Store(new FakeStorage());
  assert.equal(store.apiKey(), '');
  assert.ok(store.saveApiKey('sekrit'));
  assert.equal(new Store(store.storage).apiKey(), 'sekrit');
  store.saveApiKey('other');
  assert.equal(store.apiKey(), 'other');
  store.saveApiKey('');
  assert.equal(store.apiKey(), '');
});

test('storage: corrupt entries do not break loading', () => {
  const fake = new FakeStorage();
  fake.setItem('qwen35.index', '{not json');
  fake.setItem('qwen35.conv.x', '[1,2]');
  fake.setItem('qwen35.settings', '"str"');
  const store = new Store(fake);
  assert.deepEqual(store.list(), []);
  assert.equal(store.get('x'), null);
  assert.deepEqual(store.loadSettings(), DEFAULT_SETTINGS);
});

test('storage: on quota errors, image data is dropped with a note instead of failing', () => {
  const big = 'data:image/png;base64,' + 'A'.repeat(4000);
  const fake = new FakeStorage(6000);
  const store = new Store(fake);
  // One conversation with an image fits.
  assert.deepEqual(store.save(conv('old', 'old one', [{ name: 'o.png', url: big }], 1)), { ok: true, droppedImages: false });
  // The second does not: its own image is dropped first...
  const r = store.save(conv('new', 'new one', [{ name: 'n.png', url: big }], 2));
  assert.equal(r.ok, true);
  assert.equal(r.droppedImages, true);
  assert.deepEqual(store.get('new').messages[0].images, [{ name: 'n.png', dropped: true }]);
  assert.equal(store.get('old').messages[0].images[0].url, big);
  // ...and when even that does not fit, other conversations' images go too.
  const r2 = store.save(conv('third', 'x'.repeat(1500), [{ name: 't.png', url: big }], 3));
  assert.equal(r2.ok, true);
  assert.deepEqual(store.get('old').messages[0].images, [{ name: 'o.png', dropped: true }]);
  assert.equal(store.list().length, 3);
  // Text that cannot fit at all reports an error, without throwing.
  const r3 = store.save(conv('huge', 'y'.repeat(10000)));
  assert.equal(r3.ok, false);
  assert.ok(isQuotaError(r3.error));
});

test('storage helpers: titles and image stripping', () => {
  assert.equal(titleOf({ messages: [] }), 'New chat');
  assert.equal(titleOf({ messages: [{ role: 'user', text: '  hello\n  world ' }] }), 'hello world');
  assert.equal(titleOf({ messages: [{ role: 'user', text: '', images: [{ url: IMG }] }] }), 'Image');
  assert.equal(titleOf({ messages: [{ role: 'user', text: 'z'.repeat(100) }] }).length, 60);
  // Long titles are cut between characters, not inside an emoji's surrogate pair.
  const cut = titleOf({ messages: [{ role: 'user', text: 'a' + '\u{1f600}'.repeat(70) }] });
  assert.equal(cut, 'a' + '\u{1f600}'.repeat(56) + '...');
  assert.ok(!/[\ud800-\udbff](?![\udc00-\udfff])/.test(cut), 'no lone high surrogate');
  const c = conv('a', 't', [{ name: 'i', url: IMG }]);
  const r = withoutImages(c);
  assert.equal(r.dropped, true);
  assert.equal(c.messages[0].images[0].url, IMG, 'the original keeps its images');
  assert.equal(withoutImages(conv('b', 't')).dropped, false);
});

// --- Languages (i18n.js) ---------------------------------------------------------------------

const WEB = new URL('../../src/server/ui/web/', import.meta.url).pathname;

test('i18n: the language follows the stored pick, else the browser list, else English', () => {
  assert.deepEqual(Object.keys(LANGUAGES), ['en', 'ja']);
  assert.equal(pickLanguage('', ['ja-JP', 'en-US']), 'ja');
  assert.equal(pickLanguage('', ['ja']), 'ja');
  assert.equal(pickLanguage('', ['en-US', 'ja-JP']), 'en');
  assert.equal(pickLanguage('', ['fr-FR', 'ja_JP']), 'ja', 'the first listed language that has a table');
  assert.equal(pickLanguage('', ['fr-FR', 'de']), 'en');
  assert.equal(pickLanguage('', []), 'en');
  assert.equal(pickLanguage('', undefined), 'en');
  assert.equal(pickLanguage('en', ['ja-JP']), 'en', 'a stored pick wins');
  assert.equal(pickLanguage('ja', ['en-US']), 'ja');
  assert.equal(pickLanguage('xx', ['ja-JP']), 'ja', 'an unknown stored value is ignored');
});

test('i18n: t() fills placeholders, falls back to English, then to the key', () => {
  try {
    assert.equal(setLanguage('en'), 'en');
    assert.equal(t('send'), 'Send');
    assert.equal(t('chat.deleteLabel', { title: 'a {b}' }), 'Delete conversation: a {b}');
    assert.equal(t('attach.tooBig', { name: 'x.png' }), 'x.png is larger than {mb} MB', 'a missing param stays visible');
    assert.equal(t('no.such.key'), 'no.such.key');
    assert.equal(setLanguage('ja'), 'ja');
    assert.equal(language(), 'ja');
    assert.equal(t('send'), '送信');
    assert.equal(t('thinking'), '思考モード');
    assert.equal(t('chat.new'), '新しい会話');
    assert.equal(t('attach.label'), '画像または動画を添付');
    assert.equal(t('stop'), '停止');
    assert.equal(t('notice.contextFull', { used: 900, ctx: 1024 }).includes('1024'), true);
    assert.equal(formatStats({ prefillPerSecond: 400, decodePerSecond: 50, cachedTokens: 3, promptTokens: 12, completionTokens: 4 }),
      'プリフィル 400 tok/s \u00b7 デコード 50.0 tok/s \u00b7 キャッシュ 3 tok \u00b7 入力 12、出力 4');
    assert.equal(titleOf({ messages: [] }), '新しい会話');
    assert.equal(setLanguage('xx'), 'en', 'unknown languages are English');
  } finally {
    setLanguage('en');
  }
});

test('i18n: both tables have the same keys and placeholders; Japanese text is Japanese', () => {
  const en = MESSAGES.en;
  const ja = MESSAGES.ja;
  assert.deepEqual(Object.keys(ja).sort(), Object.keys(en).sort());
  const params = (s) => (s.match(/\{\w+\}/g) || []).sort();
  // Reasoning summaries count words in English and characters in Japanese.
  const allowed = { 'reasoning.done': [['{words}'], ['{chars}']] };
  for (const k of Object.keys(en)) {
    if (allowed[k]) {
      assert.deepEqual([params(en[k]), params(ja[k])], allowed[k], k);
      continue;
    }
    assert.deepEqual(params(ja[k]), params(en[k]), `placeholders of ${k}`);
  }
  // Every Japanese entry that is not just a pattern of placeholders and symbols has Japanese in it.
  const same = Object.keys(en).filter((k) => ja[k] === en[k]);
  assert.deepEqual(same, ['page.titleOf'], 'untranslated entries');
  const kana = /[\u3000-\u30ff\u4e00-\u9fff\uff01-\uff5e]/;
  const notJapanese = Object.keys(ja).filter((k) => !kana.test(ja[k]) && !['page.titleOf'].includes(k));
  assert.deepEqual(notJapanese, []);
});

test('i18n: every key the page and the modules use is in the tables', () => {
  const keys = new Set(Object.keys(MESSAGES.en));
  const used = [];
  const html = readFileSync(join(WEB, 'index.html'), 'utf8');
  for (const m of html.matchAll(/data-i18n(?:-[a-z-]+)?="([^"]+)"/g)) used.push(['index.html', m[1]]);
  for (const f of readdirSync(WEB).filter((n) => n.endsWith('.js') && n !== 'i18n.js')) {
    const src = readFileSync(join(WEB, f), 'utf8');
    for (const m of src.matchAll(/\bt\('([^']+)'/g)) used.push([f, m[1]]);
    // Keys kept in tables or state, looked up later: MODEL_STATUS's values, state.keyMessage.
    for (const m of src.matchAll(/(?:: |keyMessage = .*?\[)'([a-z]+\.[A-Za-z.]+)'/g)) used.push([f, m[1]]);
  }
  assert.ok(used.length > 80, `found ${used.length} uses`);
  assert.deepEqual(used.filter(([, k]) => !keys.has(k)), []);
  // And index.html's visible English matches the table (what shows before app.js runs).
  for (const m of html.matchAll(/data-i18n="([^"]+)"[^>]*>([^<]*)</g)) assert.equal(m[2], MESSAGES.en[m[1]], m[1]);
});

test('attachments: an animated GIF or WebP is a video, a still one (or a cut one) an image', () => {
  const bytes = (...parts) => Uint8Array.from(parts.flat());
  const ascii = (s) => [...s].map((c) => c.charCodeAt(0));
  const le32 = (n) => [n & 255, (n >> 8) & 255, (n >> 16) & 255, n >>> 24];
  // GIF89a, a 1x1 screen with a 2-entry global table, a graphic control extension, then frames.
  const screen = [...ascii('GIF89a'), 1, 0, 1, 0, 0x80, 0, 0, 0, 0, 0, 255, 255, 255];
  const control = [0x21, 0xf9, 4, 0, 10, 0, 0, 0];
  const frame = [0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 1, 0];
  const gif = (n) => bytes(screen, ...Array(n).fill([...control, ...frame]), 0x3b);
  assert.equal(isAnimatedImage(gif(1)), false);
  assert.equal(isAnimatedImage(gif(2)), true);
  assert.equal(isAnimatedImage(gif(3)), true);
  const two = gif(2);
  assert.equal(isAnimatedImage(two.slice(0, two.length - 3)), false, 'the second frame cut short');
  // A frame with a local colour table (4 entries) is skipped past it.
  const local = [0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0x81, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 2, 2, 0x44, 1, 0];
  assert.equal(isAnimatedImage(bytes(screen, local, local, 0x3b)), true);
  // WebP: RIFF, then chunks; ANMF chunks are the frames.
  const chunk = (id, payload) => [...ascii(id), ...le32(payload.length), ...payload, ...(payload.length & 1 ? [0] : [])];
  const webp = (...chunks) => {
    const body = [...ascii('WEBP'), ...chunks.flat()];
    return bytes(ascii('RIFF'), le32(body.length), body);
  };
  const vp8x = chunk('VP8X', [0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
  const anmf = chunk('ANMF', Array(17).fill(0));
  assert.equal(isAnimatedImage(webp(vp8x, chunk('ANIM', [0, 0, 0, 0, 0, 0]), anmf, anmf)), true);
  assert.equal(isAnimatedImage(webp(vp8x, chunk('ANIM', [0, 0, 0, 0, 0, 0]), anmf)), false);
  assert.equal(isAnimatedImage(webp(chunk('VP8L', Array(9).fill(0)))), false);
  assert.equal(isAnimatedImage(bytes(ascii('\x89PNG'))), false);
  assert.equal(isAnimatedImage(bytes([])), false);
  // Previews: an animated image shows in <img>, a video file in <video>.
  assert.equal(showsAsVideo({ kind: 'video', url: 'data:image/gif;base64,R0lG' }), false);
  assert.equal(showsAsVideo({ kind: 'video', url: 'data:video/mp4;base64,AAAA' }), true);
  assert.equal(showsAsVideo({ kind: 'image', url: 'data:image/png;base64,AAAA' }), false);
});

test('thumbnails: a strip shows the middles of equal parts of the clip', () => {
  assert.equal(STRIP_FRAMES, 6);
  assert.deepEqual(stripTimes(6), [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]);
  assert.deepEqual(stripTimes(1, 2), [0.25, 0.75]);
  for (const unknown of [0, NaN, Infinity, -1, undefined]) assert.deepEqual(stripTimes(unknown), [0]);
});
