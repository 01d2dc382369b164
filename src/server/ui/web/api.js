// Talking to the qwen35 server: the model list, streamed chat completions (SSE read from a fetch
// body), and the pure pieces around them (conversation -> request, usage/timings -> speed line)
// that node tests import directly.
import { t } from './i18n.js';

// Server-sent events: feed() text as it arrives, get back the complete `data:` payloads.
// Events end at a blank line; several data lines of one event are joined with "\n".
export class SseParser {
  constructor() {
    this.buf = '';
    this.data = [];
  }

  feed(text) {
    this.buf += text;
    const out = [];
    let nl;
    while ((nl = this.buf.search(/\r\n|\r|\n/)) >= 0) {
      const line = this.buf.slice(0, nl);
      const len = this.buf.startsWith('\r\n', nl) ? 2 : 1;
      // A lone \r at the end may be the first half of \r\n: wait for more.
      if (this.buf[nl] === '\r' && nl + 1 === this.buf.length) break;
      this.buf = this.buf.slice(nl + len);
      this.line(line, out);
    }
    return out;
  }

  // The end of the stream: a last event without its blank line still counts.
  end() {
    const out = [];
    if (this.buf) this.line(this.buf, out);
    this.buf = '';
    this.line('', out);
    return out;
  }

  line(line, out) {
    if (line === '') {
      if (this.data.length) out.push(this.data.join('\n'));
      this.data = [];
    } else if (line.startsWith('data:')) {
      this.data.push(line.slice(line[5] === ' ' ? 6 : 5));
    }
    // comments (":"), event:, id:, retry: carry nothing we use.
  }
}

export class ApiError extends Error {
  constructor(message, { status = 0, type = '', code = '' } = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.type = type;
    this.code = code;
  }
}

// An OpenAI error body ({error: {message, type, code}}) or any text -> ApiError.
export function errorFrom(status, bodyText) {
  let message = bodyText && bodyText.trim() ? bodyText.trim().slice(0, 2000) : `HTTP ${status}`;
  let type = '';
  let code = '';
  try {
    const j = JSON.parse(bodyText);
    const e = j && (j.error ?? j);
    if (typeof e === 'string') message = e;
    else if (e && typeof e.message === 'string') {
      message = e.message;
      type = e.type || '';
      code = e.code ?? '';
    }
  } catch { /* not JSON: keep the text */ }
  return new ApiError(message, { status, type, code });
}

// The header that carries an API key (servers started with --api-key want it on every request).
export function authHeaders(apiKey) {
  return apiKey ? { Authorization: `Bearer ${apiKey}` } : {};
}

// GET /v1/models -> {id, contextSize, hasVision} of the first model. A 401 (no key, or a wrong
// one) is an ApiError with status 401.
export async function fetchModel(fetchImpl = fetch, { apiKey = '' } = {}) {
  const res = await fetchImpl('/v1/models', { headers: authHeaders(apiKey) });
  if (!res.ok) throw errorFrom(res.status, await res.text());
  const j = await res.json();
  const m = (j && j.data && j.data[0]) || {};
  const meta = m.meta || {};
  return {
    id: m.id || '',
    contextSize: Number.isFinite(meta.context_size) ? meta.context_size : null,
    hasVision: typeof meta.has_vision === 'boolean' ? meta.has_vision : null,
  };
}

// POSTs a streamed chat completion and yields each parsed chunk until [DONE].
// Throws ApiError for HTTP errors and for error objects sent inside the stream; an abort through
// `signal` surfaces as the fetch's AbortError.
export async function* streamChat(body, { signal, fetchImpl = fetch, apiKey = '' } = {}) {
  const res = await fetchImpl('/v1/chat/completions', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream', ...authHeaders(apiKey) },
    body: JSON.stringify(body),
    signal,
  });
  if (!res.ok) throw errorFrom(res.status, await res.text());
  if (!res.body) throw new ApiError(t('error.noBody'));
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const sse = new SseParser();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      const payloads = done ? [...sse.feed(decoder.decode()), ...sse.end()] : sse.feed(decoder.decode(value, { stream: true }));
      for (const p of payloads) {
        if (p.trim() === '[DONE]') return;
        let chunk;
        try {
          chunk = JSON.parse(p);
        } catch {
          throw new ApiError(t('error.malformed', { event: p.slice(0, 200) }));
        }
        if (chunk && chunk.error) throw errorFrom(res.status, JSON.stringify(chunk));
        yield chunk;
      }
      if (done) return;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

// The conversation as OpenAI messages. User turns with images or videos become content parts
// (image_url / video_url first, then the text); assistant turns carry reasoning_content so the server can match its
// prefix cache; failed assistant turns with no text are left out.
export function buildMessages(conversation, settings = {}) {
  const msgs = [];
  const system = (settings.systemPrompt || '').trim();
  if (system) msgs.push({ role: 'system', content: system });
  for (const m of conversation.messages) {
    if (m.role === 'user') {
      const images = (m.images || []).filter((im) => im && im.url);
      if (images.length === 0) {
        msgs.push({ role: 'user', content: m.text || '' });
      } else {
        const parts = images.map((im) => (im.kind === 'video'
          ? { type: 'video_url', video_url: { url: im.url } }
          : { type: 'image_url', image_url: { url: im.url } }));
        if (m.text) parts.push({ type: 'text', text: m.text });
        msgs.push({ role: 'user', content: parts });
      }
    } else if (m.role === 'assistant') {
      if (!m.content && !m.reasoning) continue;
      const a = { role: 'assistant', content: m.content || '' };
      if (m.reasoning) a.reasoning_content = m.reasoning;
      msgs.push(a);
    }
  }
  return msgs;
}

export function buildRequest(conversation, settings, model) {
  const body = {
    model: model || undefined,
    messages: buildMessages(conversation, settings),
    stream: true,
    stream_options: { include_usage: true },
    chat_template_kwargs: { enable_thinking: !!settings.thinking },
  };
  const t = Number(settings.temperature);
  if (settings.temperature !== '' && settings.temperature != null && Number.isFinite(t)) body.temperature = t;
  const n = Number(settings.maxTokens);
  if (settings.maxTokens !== '' && settings.maxTokens != null && Number.isInteger(n) && n > 0) body.max_tokens = n;
  return body;
}

// usage + timings of the last chunk -> the numbers under an answer.
export function statsFrom(usage, timings) {
  const u = usage || {};
  const t = timings || {};
  const num = (x) => (typeof x === 'number' && Number.isFinite(x) ? x : null);
  const rate = (n, ms) => (num(n) !== null && num(ms) && ms > 0 ? (n * 1000) / ms : null);
  return {
    promptTokens: num(u.prompt_tokens) ?? num(t.prompt_n),
    completionTokens: num(u.completion_tokens) ?? num(t.predicted_n),
    cachedTokens: num(u.prompt_tokens_details && u.prompt_tokens_details.cached_tokens) ?? num(t.cached_n),
    prefillPerSecond: num(t.prompt_per_second) ?? rate(t.prompt_n, t.prompt_ms),
    decodePerSecond: num(t.predicted_per_second) ?? rate(t.predicted_n, t.predicted_ms),
    visionMs: num(t.vision_ms),
  };
}

export function formatStats(s) {
  if (!s) return '';
  const parts = [];
  const fmt = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
  if (s.prefillPerSecond != null) parts.push(t('stats.prefill', { rate: fmt(s.prefillPerSecond) }));
  if (s.decodePerSecond != null) parts.push(t('stats.decode', { rate: fmt(s.decodePerSecond) }));
  if (s.cachedTokens != null) parts.push(t('stats.cached', { n: s.cachedTokens }));
  if (s.promptTokens != null && s.completionTokens != null) parts.push(t('stats.tokens', { in: s.promptTokens, out: s.completionTokens }));
  if (s.visionMs >= 0.5) parts.push(t('stats.vision', { ms: s.visionMs.toFixed(0) }));  // text-only turns report ~0
  return parts.join(' · ');
}
