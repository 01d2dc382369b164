// The OpenAI-compatible API of `qwen35 serve`, driven by the official `openai` client (and plain
// fetch where a client would refuse to send the request), against the bundled tiny model.
// The model's weights are random: only behaviour is checked, never the words.
//
// node --test tests/e2e/api.test.mjs   (QWEN35_BIN=/path/to/qwen35 to pick the binary)
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import OpenAI from 'openai';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';

import { CAT_PNG, MODEL_ID, TINY_MODEL, metric, startServer, waitFor } from './server_harness.mjs';

const CLIP = join(TINY_MODEL, 'golden_video/pan_200x150_12fps.mp4');  // 5 s, 12 fps: 10 frames sampled

const CONTEXT = 1024;
const NO_THINKING = { chat_template_kwargs: { enable_thinking: false } };
const user = (content) => [{ role: 'user', content }];
const unique = () => `nonce ${Date.now()} ${Math.random()}`;

let server;
let client;

before(async () => {
  server = await startServer({ args: ['--parallel', '4', '--ctx', String(CONTEXT), '--max-body-mib', '1'] });
  client = new OpenAI({ baseURL: server.baseURL, apiKey: 'not-needed', maxRetries: 0, timeout: 60_000 });
});

after(async () => {
  const exit = await server.stop();
  assert.equal(exit.code, 0, `the server did not stop cleanly (${JSON.stringify(exit)}):\n${server.log()}`);
});

async function post(path, body, headers = {}) {
  const res = await fetch(server.url + path.replace(/^\//, ''), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, json, text, headers: res.headers };
}

function assertErrorObject(r, status, code) {
  assert.equal(r.status, status, r.text);
  assert.ok(r.json && typeof r.json.error === 'object', `an error object, got ${r.text}`);
  const e = r.json.error;
  assert.equal(typeof e.message, 'string');
  assert.ok(e.message.length > 0);
  assert.equal(typeof e.type, 'string');
  assert.ok('param' in e && 'code' in e, r.text);
  if (code !== undefined) assert.equal(e.code, code, r.text);
}

async function assertHealthy() {
  const res = await fetch(server.url + 'health');
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { status: 'ok' });
}

describe('models', () => {
  test('lists the one served model with its meta', async () => {
    const page = await client.models.list();
    assert.equal(page.data.length, 1);
    const m = page.data[0];
    assert.equal(m.id, MODEL_ID);
    assert.equal(m.object, 'model');
    assert.equal(m.meta.context_size, CONTEXT);
    assert.equal(m.meta.has_vision, true);
    const one = await client.models.retrieve(MODEL_ID);
    assert.equal(one.id, MODEL_ID);
    await assert.rejects(client.models.retrieve('gpt-4o'), (e) => e instanceof OpenAI.NotFoundError);
  });
});

describe('chat completions', () => {
  test('non-streaming: message, finish_reason, usage and timings', async () => {
    const r = await client.chat.completions.create({ model: MODEL_ID, messages: user('Hello!'), max_tokens: 6, temperature: 0, ...NO_THINKING });
    assert.equal(r.object, 'chat.completion');
    assert.match(r.id, /^chatcmpl-/);
    assert.equal(r.model, MODEL_ID);
    const c = r.choices[0];
    assert.equal(c.message.role, 'assistant');
    assert.equal(typeof c.message.content, 'string');
    assert.ok(c.finish_reason === 'length' || c.finish_reason === 'stop');
    assert.ok(r.usage.prompt_tokens > 0);
    assert.ok(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 6);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
    assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, 'number');
    for (const k of ['prompt_n', 'prompt_ms', 'prompt_per_second', 'predicted_n', 'predicted_ms', 'predicted_per_second', 'cached_n', 'vision_ms'])
      assert.equal(typeof r.timings[k], 'number', k);
    assert.equal(r.timings.predicted_n, r.usage.completion_tokens);
  });

  test('speculative override: same answer, drafts reported in timings; bad values are 400', async () => {
    const ask = (speculative) => client.chat.completions.create({
      model: MODEL_ID, messages: user('Count to twenty.'), max_tokens: 12, temperature: 0, ignore_eos: true,
      ...NO_THINKING, ...(speculative ? { speculative } : {}),
    });
    const off = await ask({ mode: 'off' });
    const mtp = await ask({ mode: 'mtp', draft_max: 3 });
    assert.equal(mtp.choices[0].message.content, off.choices[0].message.content);
    assert.equal(off.timings.draft_n, 0);
    assert.ok(mtp.timings.draft_n > 0, JSON.stringify(mtp.timings));
    assert.equal(typeof mtp.timings.draft_n_accepted, 'number');
    const bad = await post('/v1/chat/completions', { messages: user('hi'), speculative: { mode: 'eagle' } });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(JSON.parse(bad.text).error.param, 'speculative.mode');
  });

  test('the model may be omitted, empty or any name; answers name the served one', async () => {
    const r = await post('/v1/chat/completions', { messages: user('hi'), max_tokens: 1 });
    assert.equal(r.status, 200, r.text);
    const r2 = await post('/v1/chat/completions', { model: '', messages: user('hi'), max_tokens: 1 });
    assert.equal(r2.status, 200, r2.text);
    const r3 = await client.chat.completions.create({ model: 'gpt-4o', messages: user('hi'), max_tokens: 1 });
    assert.equal(r3.model, MODEL_ID);
  });

  test('max_completion_tokens limits the answer; finish_reason length', async () => {
    const r = await client.chat.completions.create({
      model: MODEL_ID, messages: user('Count to one hundred.'), max_completion_tokens: 3, temperature: 0, ignore_eos: true,
    });
    assert.equal(r.usage.completion_tokens, 3);
    assert.equal(r.choices[0].finish_reason, 'length');
  });

  test('streaming: role first, deltas, finish chunk, usage with timings last', async () => {
    const stream = await client.chat.completions.create({
      model: MODEL_ID, messages: user('Tell me a story.'), max_tokens: 8, temperature: 0, stream: true,
      stream_options: { include_usage: true }, ignore_eos: true,
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    assert.ok(chunks.length >= 3);
    for (const c of chunks) {
      assert.equal(c.object, 'chat.completion.chunk');
      assert.equal(c.id, chunks[0].id);
    }
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    const last = chunks.at(-1);
    assert.deepEqual(last.choices, []);
    assert.equal(last.usage.completion_tokens, 8);
    assert.equal(typeof last.usage.prompt_tokens_details.cached_tokens, 'number');
    assert.equal(last.timings.predicted_n, 8);
    const finish = chunks.at(-2);
    assert.equal(finish.choices[0].finish_reason, 'length');
    // Thinking is on by default: the text arrives as reasoning_content deltas.
    const reasoning = chunks.map((c) => c.choices[0]?.delta?.reasoning_content || '').join('');
    const content = chunks.map((c) => c.choices[0]?.delta?.content || '').join('');
    assert.ok(reasoning.length + content.length > 0);
    for (const c of chunks.slice(0, -1)) assert.equal(c.usage, null);
  });

  test('streaming without include_usage sends no usage', async () => {
    const stream = await client.chat.completions.create({ model: MODEL_ID, messages: user('Hi'), max_tokens: 3, stream: true, ...NO_THINKING });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    assert.ok(chunks.every((c) => c.usage === undefined || c.usage === null));
    assert.ok(chunks.at(-1).choices[0].finish_reason);
  });

  test('thinking off: the answer is content; on: reasoning_content', async () => {
    const off = await client.chat.completions.create({ model: MODEL_ID, messages: user('Hi'), max_tokens: 5, temperature: 0, ignore_eos: true, ...NO_THINKING });
    assert.ok(off.choices[0].message.content.length > 0);
    assert.equal(off.choices[0].message.reasoning_content, undefined);
    const on = await client.chat.completions.create({ model: MODEL_ID, messages: user('Hi'), max_tokens: 5, temperature: 0, ignore_eos: true, enable_thinking: true });
    assert.ok(on.choices[0].message.reasoning_content.length > 0);
  });

  test('an image as a data URL', async () => {
    const b64 = readFileSync(CAT_PNG).toString('base64');
    const text = await client.chat.completions.create({ model: MODEL_ID, messages: user('What is this?'), max_tokens: 2, ...NO_THINKING });
    const r = await client.chat.completions.create({
      model: MODEL_ID,
      messages: user([
        { type: 'image_url', image_url: { url: `data:image/png;base64,${b64}` } },
        { type: 'text', text: 'What is this?' },
      ]),
      max_tokens: 2,
      ...NO_THINKING,
    });
    // The image expands into many placeholder tokens, and the vision tower ran.
    assert.ok(r.usage.prompt_tokens > text.usage.prompt_tokens + 50, `${r.usage.prompt_tokens} vs ${text.usage.prompt_tokens}`);
    assert.ok(r.timings.vision_ms > 0);
  });

  test('a video as video_url, as input_video and as a list of frames', async () => {
    const b64 = readFileSync(CLIP).toString('base64');
    const ask = async (video) => client.chat.completions.create({
      model: MODEL_ID,
      messages: user([video, { type: 'text', text: 'Describe this video.' }]),
      max_tokens: 2,
      temperature: 0,
      ...NO_THINKING,
    });
    // The golden case video_pan: 5 pairs of 30 tokens with their time stamps, 206 prompt tokens.
    const a = await ask({ type: 'video_url', video_url: { url: `data:video/mp4;base64,${b64}` } });
    assert.equal(a.usage.prompt_tokens, 206);
    assert.equal(a.usage.prompt_tokens_details.video_tokens, 150);
    assert.equal(a.usage.prompt_tokens_details.image_tokens, 0);
    assert.ok(a.timings.vision_ms > 0);
    const b = await ask({ type: 'input_video', input_video: { data: b64, format: 'mp4' } });
    assert.equal(b.usage.prompt_tokens, 206);
    assert.equal(b.choices[0].message.content, a.choices[0].message.content);
    // A token cap makes the frames smaller.
    const c = await ask({ type: 'video_url', video_url: { url: `data:video/mp4;base64,${b64}` }, max_tokens: 40 });
    assert.ok(c.usage.prompt_tokens < 206 - 100, `${c.usage.prompt_tokens}`);
    // Frames as images (two, at two per second: one pair; the body limit here is 1 MiB).
    const png = `data:image/png;base64,${readFileSync(CAT_PNG).toString('base64')}`;
    const d = await ask({ type: 'video', video: [png, png], frame_rate: 2 });
    assert.ok(d.timings.vision_ms > 0);
    assert.ok(d.usage.prompt_tokens > 100, `${d.usage.prompt_tokens}`);
  });

  test('multi-turn: the follow-up reuses the cached prefix', async () => {
    const messages = [
      { role: 'system', content: `You are a helpful assistant. (${unique()})` },
      { role: 'user', content: 'Explain what a tokenizer does, in detail, with an example or two.' },
    ];
    const first = await client.chat.completions.create({ model: MODEL_ID, messages, max_tokens: 6, temperature: 0 });
    assert.equal(first.usage.prompt_tokens_details.cached_tokens, 0);
    const answer = first.choices[0].message;
    assert.ok(answer.reasoning_content.length > 0);
    const second = await client.chat.completions.create({
      model: MODEL_ID,
      messages: [...messages, { role: 'assistant', content: answer.content, reasoning_content: answer.reasoning_content },
        { role: 'user', content: 'Shorter, please.' }],
      max_tokens: 4,
      temperature: 0,
    });
    const cached = second.usage.prompt_tokens_details.cached_tokens;
    assert.ok(cached > 0, 'cached_tokens must be > 0 on the follow-up');
    assert.ok(cached >= first.usage.prompt_tokens / 2, `cached ${cached} of the first prompt's ${first.usage.prompt_tokens}`);
    assert.equal(second.timings.cached_n, cached);
  });

  test('stop strings (a string and a list) end the answer before them', async () => {
    const base = { model: MODEL_ID, messages: user('Say something long.'), max_tokens: 24, temperature: 0, ignore_eos: true, ...NO_THINKING };
    const full = (await client.chat.completions.create(base)).choices[0].message.content;
    const chars = Array.from(full);
    assert.ok(chars.length >= 8, `need some text to cut: ${JSON.stringify(full)}`);
    const stop = chars.slice(4, 6).join('');
    const expected = full.slice(0, full.indexOf(stop));
    const r = await client.chat.completions.create({ ...base, stop });
    assert.equal(r.choices[0].message.content, expected);
    assert.equal(r.choices[0].finish_reason, 'stop');
    const r2 = await client.chat.completions.create({ ...base, stop: ['\u0000never', stop] });
    assert.equal(r2.choices[0].message.content, expected);
    // Streaming gives the same text.
    const stream = await client.chat.completions.create({ ...base, stop, stream: true });
    let streamed = '';
    let reason = null;
    for await (const c of stream) {
      streamed += c.choices[0]?.delta?.content || '';
      reason = c.choices[0]?.finish_reason || reason;
    }
    assert.equal(streamed, expected);
    assert.equal(reason, 'stop');
  });

  test('seed: the same seed gives the same text at temperature 1', async () => {
    const ask = (seed) => client.chat.completions.create({
      model: MODEL_ID, messages: user('Write a poem.'), max_tokens: 12, temperature: 1, top_p: 1, top_k: 0, seed, ignore_eos: true, ...NO_THINKING,
    });
    const a = await ask(1234);
    const b = await ask(1234);
    const c = await ask(4321);
    assert.equal(a.choices[0].message.content, b.choices[0].message.content);
    assert.notEqual(a.choices[0].message.content, c.choices[0].message.content);
  });

  test('logprobs and top_logprobs, also streamed', async () => {
    const r = await client.chat.completions.create({
      model: MODEL_ID, messages: user('Hi'), max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 3, ignore_eos: true, ...NO_THINKING,
    });
    const lp = r.choices[0].logprobs.content;
    assert.equal(lp.length, 4);
    for (const t of lp) {
      assert.equal(typeof t.token, 'string');
      assert.ok(t.logprob <= 0);
      assert.ok(Array.isArray(t.bytes));
      assert.equal(t.top_logprobs.length, 3);
      for (let i = 1; i < 3; i++) assert.ok(t.top_logprobs[i - 1].logprob >= t.top_logprobs[i].logprob);
    }
    // Greedy: the chosen token is the most likely one.
    assert.equal(lp[0].logprob, lp[0].top_logprobs[0].logprob);
    const stream = await client.chat.completions.create({
      model: MODEL_ID, messages: user('Hi'), max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 1, stream: true, ignore_eos: true, ...NO_THINKING,
    });
    let n = 0;
    for await (const c of stream) n += c.choices[0]?.logprobs?.content?.length || 0;
    assert.equal(n, 4);
    const plain = await client.chat.completions.create({ model: MODEL_ID, messages: user('Hi'), max_tokens: 2 });
    assert.equal(plain.choices[0].logprobs, null);
  });

  test('tools are accepted and passed to the template', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
    const withTools = await client.chat.completions.create({ model: MODEL_ID, messages: user('Weather in Paris?'), tools, max_tokens: 1 });
    const without = await client.chat.completions.create({ model: MODEL_ID, messages: user('Weather in Paris?'), max_tokens: 1 });
    assert.ok(withTools.usage.prompt_tokens > without.usage.prompt_tokens + 20);
  });

  test('aborting a stream cancels the generation and the server serves the next request', async () => {
    const cancelled = await metric(server.url, 'qwen35_generations_total{outcome="cancelled"}');
    const controller = new AbortController();
    const stream = await client.chat.completions.create({
      model: MODEL_ID, messages: user('Go on forever.'), max_tokens: 100000, temperature: 0, ignore_eos: true, stream: true,
    }, { signal: controller.signal });
    let seen = 0;
    try {
      for await (const chunk of stream) {
        if (++seen === 3) {
          controller.abort();
          break;
        }
      }
    } catch (e) {  // depending on the client version the loop ends quietly or throws an abort error
      assert.ok(e instanceof OpenAI.APIUserAbortError || e.name === 'AbortError', String(e));
    }
    assert.equal(seen, 3);
    await waitFor(async () => (await metric(server.url, 'qwen35_generations_total{outcome="cancelled"}')) > cancelled,
      10_000, 'the aborted generation to be cancelled');
    await waitFor(async () => (await metric(server.url, 'qwen35_active_generations')) === 0, 10_000, 'no active generation');
    const r = await client.chat.completions.create({ model: MODEL_ID, messages: user('Still there?'), max_tokens: 2 });
    assert.ok(r.choices[0].message);
    await assertHealthy();
  });

  test('16 concurrent clients (parallel 4) all get answers', async () => {
    const jobs = [];
    for (let i = 0; i < 16; i++) {
      const params = { model: MODEL_ID, messages: user(`Client ${i}: hello`), max_tokens: 8, temperature: 0.7, seed: i, ignore_eos: true };
      if (i % 2) {
        jobs.push((async () => {
          const s = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
          let usage = null;
          for await (const c of s) usage = c.usage || usage;
          return usage.completion_tokens;
        })());
      } else {
        jobs.push(client.chat.completions.create(params).then((r) => r.usage.completion_tokens));
      }
    }
    const counts = await Promise.all(jobs);
    assert.deepEqual(counts, new Array(16).fill(8));
    await assertHealthy();
  });
});

describe('Japanese and mixed-script text: UTF-8 end to end', () => {
  // The random model's answers are gibberish in many scripts; what is checked is that the
  // streamed deltas are exactly the non-streamed answer, valid text, and never carry U+FFFD for
  // bytes that a later token completes: a token may end inside a character (in this vocabulary
  // 1,448 tokens do), and the server must hold those bytes back until the character is whole.
  // The third prompt is one whose greedy reasoning (on the machine these tests were written on)
  // has a character split over two tokens, so that hold-back is used; the test says when not.
  const PROMPTS = [
    ['Japanese', '日本の首都はどこですか？簡単に説明してください。'],
    ['mixed', 'Explain「侘び寂び」(wabi-sabi) in English と日本語 🍵🌸 — with an emoji 👍🏽 please.'],
    ['split', '東京の天気はどうですか？ (51)'],
  ];
  const fatal = new TextDecoder('utf-8', { fatal: true });
  const whole = (bytes) => { try { fatal.decode(new Uint8Array(bytes)); return true; } catch { return false; } };

  for (const [name, prompt] of PROMPTS) {
    for (const thinking of [false, true]) {
      test(`${name} prompt, thinking ${thinking ? 'on' : 'off'}: the streamed deltas join to the answer, no U+FFFD`, async (t) => {
        const body = {
          model: MODEL_ID, messages: user(prompt), max_tokens: 24, temperature: 0, seed: 7, ignore_eos: true,
          logprobs: true, chat_template_kwargs: { enable_thinking: thinking },
        };
        const r = await client.chat.completions.create(body);
        const msg = r.choices[0].message;
        const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
        const deltas = { content: [], reasoning_content: [] };
        const tokens = [];
        let usage = null;
        for await (const c of stream) {
          usage = c.usage || usage;
          const ch = c.choices[0];
          if (!ch) continue;
          for (const k of Object.keys(deltas)) if (typeof ch.delta?.[k] === 'string' && ch.delta[k]) deltas[k].push(ch.delta[k]);
          tokens.push(...(ch.logprobs?.content || []));
        }
        assert.equal(usage.completion_tokens, 24);
        assert.equal(r.usage.completion_tokens, 24);
        assert.equal(r.usage.prompt_tokens, usage.prompt_tokens);
        assert.deepEqual(tokens.map((x) => x.token), r.choices[0].logprobs.content.map((x) => x.token), 'the same tokens');

        const text = { content: msg.content || '', reasoning_content: msg.reasoning_content || '' };
        assert.ok(text.content.length + text.reasoning_content.length > 0);
        if (!thinking) assert.equal(text.reasoning_content, '');
        for (const k of Object.keys(deltas)) {
          assert.equal(deltas[k].join(''), text[k], `${k}: streamed = non-streamed`);
          assert.ok(text[k].isWellFormed(), `${k} is valid Unicode (no lone surrogates)`);
        }
        // U+FFFD belongs only where the model's own bytes are ill-formed (a token ending inside a
        // character that the next token does not complete); then the non-streamed answer has it too.
        const bytes = tokens.flatMap((x) => x.bytes);
        const broken = !whole(bytes);
        if (!thinking) assert.equal(text.content, new TextDecoder().decode(new Uint8Array(bytes)), 'the answer is the tokens\' bytes');
        const all = [...deltas.content, ...deltas.reasoning_content];
        if (!broken) {
          for (const d of all) assert.ok(!d.includes('\uFFFD'), `no U+FFFD in ${JSON.stringify(d)}`);
        } else {
          t.diagnostic('the model produced ill-formed bytes: U+FFFD is expected where they are');
          assert.ok(text.content.includes('\uFFFD') || text.reasoning_content.includes('\uFFFD'));
        }
        const split = tokens.filter((x) => !whole(x.bytes)).length;
        t.diagnostic(`${split} of ${tokens.length} tokens end inside a character${broken ? '' : ' (completed by the next)'}`);
        if (name === 'split' && thinking && (broken || split === 0)) {
          t.diagnostic('this machine\'s greedy answer has no character split over tokens: the hold-back is not exercised here');
        }
      });
    }
  }

  test('Japanese and emoji prompts reach the model intact: the raw prompt echoes back byte for byte', async () => {
    for (const [, prompt] of PROMPTS) {
      const r = await client.completions.create({ model: MODEL_ID, prompt, max_tokens: 1, temperature: 0, echo: true, ignore_eos: true });
      assert.ok(r.choices[0].text.startsWith(prompt), JSON.stringify(r.choices[0].text));
      const ids = await client.completions.create({ model: MODEL_ID, prompt, max_tokens: 1, temperature: 0 });
      assert.ok(ids.usage.prompt_tokens > 0);
    }
  });
});

describe('reasoning budget', () => {
  // The engine's closing of a thought over its budget (kThoughtClosing in engine.h), as it reads
  // at the end of reasoning_content.
  const SENTENCE = 'Considering the limited time by the user, I have to give the solution based on the thinking directly now.';
  const ask = (extra) => client.chat.completions.create({
    model: MODEL_ID, messages: user('How many legs does a spider have?'), temperature: 0, ignore_eos: true, ...extra,
  });

  // Budget 0 closes the thought at once: its reasoning is the sentence alone, and its tokens are
  // the forced tokens that reasoning_tokens counts for any cut thought.
  let forced;
  before(async () => {
    const r = await ask({ max_tokens: 40, chat_template_kwargs: { thinking_budget: 0 } });
    assert.equal(r.choices[0].message.reasoning_content, SENTENCE);
    forced = r.usage.completion_tokens_details.reasoning_tokens;
    assert.ok(forced > 10, `the sentence is ${forced} tokens`);
  });

  test('thinking_budget: N model tokens, the sentence, then the answer; reasoning_tokens counts both', async () => {
    const free = await ask({ max_tokens: 8 });
    assert.equal(free.usage.completion_tokens_details.reasoning_tokens, 8);
    const r = await ask({ max_tokens: 60, chat_template_kwargs: { thinking_budget: 8 } });
    const m = r.choices[0].message;
    assert.equal(r.usage.completion_tokens_details.reasoning_tokens, 8 + forced);
    assert.equal(r.usage.completion_tokens, 60);
    assert.ok(m.reasoning_content.startsWith(free.choices[0].message.reasoning_content), m.reasoning_content);
    assert.match(m.reasoning_content.slice(free.choices[0].message.reasoning_content.length), /^\n*Considering the limited time/);
    assert.ok(m.reasoning_content.endsWith(SENTENCE), m.reasoning_content);
    assert.equal(typeof m.content, 'string');
  });

  test('reasoning_effort low (512 tokens), streamed: the usage chunk counts the reasoning tokens', async () => {
    const stream = await ask({ max_tokens: 512 + forced + 8, reasoning_effort: 'low', stream: true, stream_options: { include_usage: true } });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const reasoning = chunks.map((c) => c.choices[0]?.delta?.reasoning_content || '').join('');
    assert.ok(reasoning.endsWith(SENTENCE), reasoning.slice(-200));
    const usage = chunks.at(-1).usage;
    assert.equal(usage.completion_tokens_details.reasoning_tokens, 512 + forced);
    assert.equal(usage.completion_tokens, 512 + forced + 8);
  });

  test('thinking_budget wins over reasoning_effort; no thinking, no reasoning tokens', async () => {
    const r = await ask({ max_tokens: forced + 10, reasoning_effort: 'high', chat_template_kwargs: { thinking_budget: 2 } });
    assert.equal(r.usage.completion_tokens_details.reasoning_tokens, 2 + forced);
    const off = await ask({ max_tokens: 6, reasoning_effort: 'low', ...NO_THINKING });
    assert.equal(off.usage.completion_tokens_details.reasoning_tokens, 0);
    assert.equal(off.choices[0].message.reasoning_content, undefined);
  });

  test('bad budgets are 400 with the field named', async () => {
    for (const [extra, param] of [
      [{ reasoning_effort: 'extreme' }, 'reasoning_effort'],
      [{ reasoning_effort: 3 }, 'reasoning_effort'],
      [{ chat_template_kwargs: { thinking_budget: -2 } }, 'chat_template_kwargs.thinking_budget'],
      [{ chat_template_kwargs: { thinking_budget: 2.5 } }, 'chat_template_kwargs.thinking_budget'],
      [{ chat_template_kwargs: { thinking_budget: '64' } }, 'chat_template_kwargs.thinking_budget'],
    ]) {
      await assert.rejects(ask({ max_tokens: 2, ...extra }),
        (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === param && e.message.length > 0,
        JSON.stringify(extra));
    }
    await assertHealthy();
  });

  test('--reasoning-budget sets the default; a request overrides it', async () => {
    const s = await startServer({ args: ['--ctx', '256', '--reasoning-budget', '3'] });
    try {
      const c = new OpenAI({ baseURL: s.baseURL, apiKey: 'x', maxRetries: 0 });
      const base = { model: MODEL_ID, messages: user('Hi'), temperature: 0, ignore_eos: true, max_tokens: 40 };
      const r = await c.chat.completions.create(base);
      assert.equal(r.usage.completion_tokens_details.reasoning_tokens, 3 + forced);
      assert.ok(r.choices[0].message.reasoning_content.endsWith(SENTENCE));
      const unlimited = await c.chat.completions.create({ ...base, chat_template_kwargs: { thinking_budget: -1 } });
      assert.equal(unlimited.usage.completion_tokens_details.reasoning_tokens, 40);
    } finally {
      await s.stop();
    }
  });
});

describe('continuous batching', () => {
  let batched;
  let bclient;
  before(async () => {
    // Small prefill blocks: a long prompt takes many rounds, each one shared with the streams.
    batched = await startServer({ args: ['--parallel', '4', '--ctx', '2048', '--prefill-block', '32'] });
    bclient = new OpenAI({ baseURL: batched.baseURL, apiKey: 'not-needed', maxRetries: 0, timeout: 120_000 });
  });
  after(async () => {
    const exit = await batched.stop();
    assert.equal(exit.code, 0, batched.log());
  });

  const requestsFor = () => [
    { messages: user('Greedy client: tell me about rivers.'), max_tokens: 24, temperature: 0 },
    { messages: user('Seeded client: a story, please.'), max_tokens: 24, temperature: 0.8, top_p: 0.9, seed: 42 },
    { messages: user('Another seeded client.'), max_tokens: 20, temperature: 1.0, seed: 7, logprobs: true, top_logprobs: 2 },
    { messages: [{ role: 'user', content: [
      { type: 'image_url', image_url: { url: `data:image/png;base64,${readFileSync(CAT_PNG).toString('base64')}` } },
      { type: 'text', text: 'What is this?' }] }], max_tokens: 12, temperature: 0 },
  ].map((r) => ({ model: MODEL_ID, ignore_eos: true, ...NO_THINKING, ...r }));

  const answer = (r) => ({ text: r.choices[0].message.content, logprobs: r.choices[0].logprobs?.content?.map((t) => t.logprob) ?? null });

  test('concurrent clients get exactly their solo answers (greedy, seeded, logprobs, an image)', async () => {
    const reqs = requestsFor();
    const solo = [];
    for (const r of reqs) solo.push(answer(await bclient.chat.completions.create(r)));
    const passes0 = await metric(batched.url, 'qwen35_batched_passes_total');
    const rows0 = await metric(batched.url, 'qwen35_batched_rows_total');
    // Twice, the second time streamed for half of them: all four at once.
    for (let round = 0; round < 2; round++) {
      const together = await Promise.all(reqs.map(async (r, i) => {
        if (round === 1 && i % 2 === 0) {
          const s = await bclient.chat.completions.create({ ...r, stream: true });
          let text = '';
          const lps = [];
          for await (const c of s) {
            text += c.choices[0]?.delta?.content ?? '';
            for (const t of c.choices[0]?.logprobs?.content ?? []) lps.push(t.logprob);
          }
          return { text, logprobs: r.logprobs ? lps : null };
        }
        return answer(await bclient.chat.completions.create(r));
      }));
      assert.deepEqual(together, solo, `round ${round}: batched answers differ from the solo ones`);
    }
    const passes = (await metric(batched.url, 'qwen35_batched_passes_total')) - passes0;
    const rows = (await metric(batched.url, 'qwen35_batched_rows_total')) - rows0;
    assert.ok(passes > 0 && rows > 2 * passes, `passes really were shared (${passes} passes, ${rows} rows)`);
  });

  test('a long prompt arriving mid-stream does not stall the stream beyond a prefill block', async () => {
    const stream = await bclient.chat.completions.create({
      model: MODEL_ID, messages: user('Stream a long answer.'), max_tokens: 400, temperature: 0, ignore_eos: true, stream: true, ...NO_THINKING,
    });
    let tokens = 0;
    let atLongStart = -1;
    let atLongFirst = -1;
    let longDone = null;
    const longPrompt = Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');  // ~20 prefill blocks
    for await (const c of stream) {
      if (c.choices[0]?.delta?.content) tokens++;
      if (tokens === 5 && !longDone) {
        atLongStart = tokens;
        longDone = (async () => {
          const s = await bclient.chat.completions.create({
            model: MODEL_ID, messages: user(longPrompt), max_tokens: 2, temperature: 0, ignore_eos: true, stream: true, ...NO_THINKING,
          });
          for await (const d of s) if (d.choices[0]?.delta?.content && atLongFirst < 0) atLongFirst = tokens;
        })();
      }
    }
    await longDone;
    // Each round gives the stream one token and the long prompt one block: the stream kept going
    // through the long prefill instead of waiting for it.
    const blocks = Math.floor(300 / 32);
    assert.ok(atLongFirst - atLongStart >= blocks / 2,
      `the stream advanced ${atLongFirst - atLongStart} tokens while ~${blocks} prefill blocks of the long prompt ran`);
  });
});

describe('completions', () => {
  test('a raw prompt string, without a template', async () => {
    const r = await client.completions.create({ model: MODEL_ID, prompt: 'Once upon a time', max_tokens: 5, temperature: 0, ignore_eos: true });
    assert.equal(r.object, 'text_completion');
    assert.equal(typeof r.choices[0].text, 'string');
    assert.equal(r.usage.completion_tokens, 5);
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.ok(r.usage.prompt_tokens <= 6, `no template around the prompt: ${r.usage.prompt_tokens} tokens`);
  });

  test('token ids, logprobs, echo and streaming', async () => {
    const ids = [9707, 11, 1879, 0];
    const r = await client.completions.create({ model: MODEL_ID, prompt: ids, max_tokens: 3, temperature: 0, logprobs: 2, ignore_eos: true });
    assert.equal(r.usage.prompt_tokens, ids.length);
    assert.equal(r.choices[0].logprobs.tokens.length, 3);
    assert.equal(Object.keys(r.choices[0].logprobs.top_logprobs[0]).length, 2);
    const echo = await client.completions.create({ model: MODEL_ID, prompt: 'Echo me', max_tokens: 2, echo: true, temperature: 0 });
    assert.ok(echo.choices[0].text.startsWith('Echo me'));
    const stream = await client.completions.create({
      model: MODEL_ID, prompt: 'Once upon a time', max_tokens: 5, temperature: 0, stream: true, stream_options: { include_usage: true }, ignore_eos: true,
    });
    let text = '';
    let usage = null;
    for await (const c of stream) {
      text += c.choices[0]?.text || '';
      usage = c.usage || usage;
    }
    assert.equal(usage.completion_tokens, 5);
    const whole = await client.completions.create({ model: MODEL_ID, prompt: 'Once upon a time', max_tokens: 5, temperature: 0, ignore_eos: true });
    assert.equal(text, whole.choices[0].text);
  });
});

// The SDK's own structured-output helpers, unchanged, against the server: zod schemas become
// strict JSON Schemas, and the SDK parses (and zod-validates) what comes back. The random-weight
// model is a hostile writer, so every bound is small enough for an answer to end.
describe('structured output through the SDK helpers', () => {
  const Event = z.object({
    name: z.string().max(12),
    day: z.enum(['mon', 'tue', 'wed']),
    attendees: z.array(z.string().max(6)).max(3),
    priority: z.number().int().min(1).max(5),
    weight: z.number().min(0.5).max(2.5),
    online: z.boolean().nullable(),
  });
  const Weather = z.object({ city: z.string().max(10), days: z.number().int().min(1).max(7) });

  test('chat.completions.parse with zodResponseFormat: parsed matches the schema, thinking on and off', async () => {
    for (const thinking of [false, true]) {
      const r = await client.chat.completions.parse({
        model: MODEL_ID, messages: user('Plan an event.'), response_format: zodResponseFormat(Event, 'event'),
        max_tokens: 700, temperature: 1, seed: 11,
        chat_template_kwargs: { enable_thinking: thinking, ...(thinking ? { thinking_budget: 16 } : {}) },
      });
      const m = r.choices[0].message;
      assert.equal(r.choices[0].finish_reason, 'stop', JSON.stringify(r));
      assert.ok(m.parsed, m.content);
      assert.deepEqual(Event.parse(m.parsed), m.parsed);
      assert.ok(!(m.reasoning_content || '').includes('"attendees"'), 'the JSON is the answer, not the thought');
    }
  });

  test('zodFunction tools: the call is parsed into parsed_arguments; streamed calls assemble to the same call', async () => {
    const tools = [zodFunction({ name: 'get_weather', parameters: Weather, description: 'Weather for a city' })];
    const body = { model: MODEL_ID, messages: user('Weather in Paris?'), tools, tool_choice: 'required',
      parallel_tool_calls: false, max_tokens: 200, temperature: 0, ...NO_THINKING };
    const r = await client.chat.completions.parse(body);
    const call = r.choices[0].message.tool_calls[0];
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(Weather.parse(call.function.parsed_arguments), call.function.parsed_arguments);
    // The SDK's stream helper assembles the deltas (id and name first, then argument fragments).
    const stream = client.chat.completions.stream(body);
    let fragments = 0;
    stream.on('tool_calls.function.arguments.delta', () => { fragments += 1; });
    const final = await stream.finalChatCompletion();
    const streamed = final.choices[0].message.tool_calls[0];
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
    assert.match(streamed.id, /^call_/);
    assert.equal(streamed.function.name, 'get_weather');
    assert.equal(streamed.function.arguments, call.function.arguments);  // greedy: the same call
    assert.deepEqual(streamed.function.parsed_arguments, call.function.parsed_arguments);
    assert.ok(fragments >= 2, `arguments came in ${fragments} fragments`);
  });
});

describe('bad requests get OpenAI error objects and the server stays healthy', () => {
  const chat = (extra) => ({ model: MODEL_ID, messages: user('hi'), max_tokens: 2, ...extra });
  const png = readFileSync(CAT_PNG).toString('base64');
  const image = (url) => ({ model: MODEL_ID, max_tokens: 1, messages: user([{ type: 'image_url', image_url: { url } }, { type: 'text', text: 'hi' }]) });
  const clip = readFileSync(CLIP).toString('base64');
  const video = (src, extra = {}) => ({ model: MODEL_ID, max_tokens: 1, messages: user([{ type: 'video_url', video_url: src, ...extra }, { type: 'text', text: 'hi' }]) });

  const cases = [
    ['malformed JSON', '/v1/chat/completions', '{"messages": [', 400, 'invalid_json'],
    ['a JSON array body', '/v1/chat/completions', '[1, 2]', 400, 'invalid_json'],
    ['messages missing', '/v1/chat/completions', { model: MODEL_ID }, 400, 'missing_field'],
    ['messages not an array', '/v1/chat/completions', { messages: 'hi' }, 400, 'invalid_value'],
    ['a message without a role', '/v1/chat/completions', { messages: [{ content: 'hi' }] }, 400, 'invalid_value'],
    ['temperature as a string', '/v1/chat/completions', chat({ temperature: 'hot' }), 400, 'invalid_type'],
    ['max_tokens as a string', '/v1/chat/completions', chat({ max_tokens: '5' }), 400, 'invalid_type'],
    ['stream as a string', '/v1/chat/completions', chat({ stream: 'yes' }), 400, 'invalid_type'],
    ['stop as a number', '/v1/chat/completions', chat({ stop: 3 }), 400, 'invalid_type'],
    ['negative max_tokens', '/v1/chat/completions', chat({ max_tokens: -1 }), 400, 'invalid_value'],
    ['top_p above 1', '/v1/chat/completions', chat({ top_p: 1.5 }), 400, 'invalid_value'],
    ['top_logprobs above 20', '/v1/chat/completions', chat({ logprobs: true, top_logprobs: 50 }), 400, 'invalid_value'],
    ['n = 2', '/v1/chat/completions', chat({ n: 2 }), 400, 'invalid_value'],
    ['malformed tools', '/v1/chat/completions', chat({ tools: [{ type: 'function', function: { name: 3 } }] }), 400, 'invalid_type'],
    ['an unknown tool_choice', '/v1/chat/completions', chat({ tool_choice: 'always' }), 400, 'invalid_value'],
    ['bad base64 image', '/v1/chat/completions', image('data:image/png;base64,!!!notbase64!!!'), 400, 'invalid_value'],
    ['broken image bytes', '/v1/chat/completions', image(`data:image/png;base64,${png.slice(0, 2000)}`), 400, 'invalid_value'],
    ['not an image at all', '/v1/chat/completions', image(`data:image/png;base64,${Buffer.from('hello world, not a png').toString('base64')}`), 400, 'invalid_value'],
    ['a remote image URL (disabled)', '/v1/chat/completions', image('http://127.0.0.1:1/cat.png'), 400, 'invalid_value'],
    ['a local file path', '/v1/chat/completions', image('/etc/passwd'), 400, 'invalid_value'],
    ['a video that is not one', '/v1/chat/completions', video({ url: `data:video/mp4;base64,${Buffer.from('hello world, not a video').toString('base64')}` }), 400, 'invalid_value'],
    ['a truncated video', '/v1/chat/completions', video({ url: `data:video/mp4;base64,${clip.slice(0, 4000)}` }), 400, 'invalid_value'],
    ['a video asking for more tokens than the server allows', '/v1/chat/completions', video({ url: `data:video/mp4;base64,${clip}` }, { max_tokens: 1e9 }), 400, 'invalid_value'],
    ['a video whose pairs cannot fit its token cap', '/v1/chat/completions', video({ url: `data:video/mp4;base64,${clip}` }, { max_tokens: 4 }), 400, 'invalid_value'],
    ['a video frame list with a broken frame', '/v1/chat/completions', { model: MODEL_ID, max_tokens: 1, messages: user([{ type: 'video', video: ['data:image/png;base64,AAAA'] }]) }, 400, 'invalid_value'],
    ['a prompt over the context', '/v1/chat/completions', chat({ messages: user('word '.repeat(2 * CONTEXT)) }), 400, 'context_length_exceeded'],
    ['a streamed prompt over the context', '/v1/chat/completions', chat({ stream: true, messages: user('word '.repeat(2 * CONTEXT)) }), 400, 'context_length_exceeded'],
    ['completions without a prompt', '/v1/completions', { model: MODEL_ID }, 400, 'missing_field'],
    ['completions with a token outside the vocabulary', '/v1/completions', { prompt: [1, 2, 1e9] }, 400, 'invalid_value'],
    ['completions over the context', '/v1/completions', { prompt: new Array(CONTEXT + 10).fill(9707) }, 400, 'context_length_exceeded'],
    ['an unknown route', '/v1/embeddings', { input: 'x' }, 404, 'not_found'],
    ['a body over --max-body-mib', '/v1/chat/completions', chat({ messages: user('x'.repeat(1536 * 1024)) }), 413, 'request_too_large'],
  ];
  for (const [name, path, body, status, code] of cases) {
    test(name, async () => {
      assertErrorObject(await post(path, body), status, code);
      await assertHealthy();
    });
  }

  test('unknown extra fields are ignored', async () => {
    const r = await post('/v1/chat/completions', chat({ some_future_option: { x: 1 }, user: 'me', metadata: { a: 'b' } }));
    assert.equal(r.status, 200, r.text);
  });

  test('the openai client sees typed errors', async () => {
    await assert.rejects(client.models.retrieve('no-such-model'),
      (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
    await assert.rejects(client.chat.completions.create(chat({ max_tokens: -5 })),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'max_tokens');
    await assertHealthy();
  });

  test('errors are counted in /metrics', async () => {
    const text = await (await fetch(server.url + 'metrics')).text();
    assert.match(text, /qwen35_requests_total\{endpoint="\/v1\/chat\/completions",status="400"\} \d+/);
    assert.match(text, /qwen35_requests_total\{endpoint="\/v1\/chat\/completions",status="200"\} \d+/);
    assert.match(text, /qwen35_prefix_cache_hits_total \d+/);
  });
});

describe('API key', () => {
  let keyed;
  before(async () => { keyed = await startServer({ args: ['--api-key', 'test-key-123', '--ctx', '256'] }); });
  after(async () => { await keyed.stop(); });

  test('a wrong or missing key is 401; the right one works; /health needs none', async () => {
    const wrong = new OpenAI({ baseURL: keyed.baseURL, apiKey: 'wrong-key', maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
    await assert.rejects(wrong.chat.completions.create({ model: MODEL_ID, messages: user('hi'), max_tokens: 1 }),
      (e) => e instanceof OpenAI.AuthenticationError);
    const none = await fetch(keyed.url + 'v1/models');
    assert.equal(none.status, 401);
    assert.equal((await none.json()).error.code, 'invalid_api_key');
    const right = new OpenAI({ baseURL: keyed.baseURL, apiKey: 'test-key-123', maxRetries: 0 });
    assert.equal((await right.models.list()).data[0].id, MODEL_ID);
    const r = await right.chat.completions.create({ model: MODEL_ID, messages: user('hi'), max_tokens: 1 });
    assert.ok(r.choices[0]);
    assert.equal((await fetch(keyed.url + 'health')).status, 200);
  });

  test('/metrics needs the key too; the page itself does not', async () => {
    assert.equal((await fetch(keyed.url + 'metrics')).status, 401);
    const m = await fetch(keyed.url + 'metrics', { headers: { Authorization: 'Bearer test-key-123' } });
    assert.equal(m.status, 200);
    assert.match(await m.text(), /qwen35_model_loaded 1/);
    assert.equal((await fetch(keyed.url)).status, 200);
  });
});

describe('server without -m', () => {
  test('serves the bundled tiny model and says so', async () => {
    const s = await startServer({ model: null, args: ['--ctx', '256'], env: { QWEN35_DEFAULT_MODEL: '' } });
    try {
      assert.match(s.log(), /bundled tiny test model/);
      const c = new OpenAI({ baseURL: s.baseURL, apiKey: 'x', maxRetries: 0 });
      assert.equal((await c.models.list()).data[0].id, MODEL_ID);
    } finally {
      await s.stop();
    }
  });

  test('QWEN35_DEFAULT_MODEL picks the default model', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'qwen35-e2e-'));
    symlinkSync(TINY_MODEL, join(dir, 'renamed-model'));
    const s = await startServer({ model: null, args: ['--ctx', '256'], env: { QWEN35_DEFAULT_MODEL: join(dir, 'renamed-model') } });
    try {
      const c = new OpenAI({ baseURL: s.baseURL, apiKey: 'x', maxRetries: 0 });
      assert.equal((await c.models.list()).data[0].id, 'renamed-model');
    } finally {
      await s.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
