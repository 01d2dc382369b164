// Browser tests of the chat UI served by `qwen35 serve` with the tiny random model: answers are
// gibberish, only behaviour is checked. Screenshots go to tests/e2e/artifacts/.
// node --test tests/e2e/browser.test.mjs   (QWEN35_BIN=/path/to/qwen35 to pick the binary)
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { CAT_PNG, launchBrowser, openPage, screenshot, startServer } from './browser_harness.mjs';
import { MESSAGES } from '../../src/server/ui/web/i18n.js';

const CLIP = new URL('../data/tiny-qwen35/golden_video/pan_200x150_12fps.mp4', import.meta.url).pathname;

let server;
let browser;
const contexts = [];

before(async () => {
  server = await startServer();
  browser = await launchBrowser();
});

after(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  if (browser) await browser.close();
  if (server) await server.stop();
});

async function open(opts = {}) {
  const r = await openPage(browser, server.url, opts);
  contexts.push(r.context);
  await r.page.locator('[data-testid=model-name][data-state=ready]').waitFor();  // in any language
  return r;
}

// Settings through the panel (and the thinking switch under the input), as a person would.
// Thinking is on by default; tests that look at the answer's text turn it off (the tiny model's
// reasoning would rarely end).
async function setSettings(page, { maxTokens, temperature, system, thinking } = {}) {
  if (thinking !== undefined && (await page.getByTestId('thinking-toggle').isChecked()) !== thinking) {
    await page.getByTestId('thinking-label').click();
    assert.equal(await page.getByTestId('thinking-toggle').isChecked(), thinking);
  }
  await page.getByTestId('settings-button').click();  // by test id: the page may be in Japanese
  if (maxTokens !== undefined) await page.getByTestId('setting-max-tokens').fill(String(maxTokens));
  if (temperature !== undefined) await page.getByTestId('setting-temperature').fill(String(temperature));
  if (system !== undefined) await page.getByTestId('setting-system').fill(system);
  await page.getByTestId('settings-close').click();
}

async function sendMessage(page, text) {
  await page.getByTestId('input').fill(text);
  await page.getByTestId('input').press('Enter');
}

// Waits until the newest assistant message is finished (the send button is back).
async function waitForAnswer(page, timeout = 60_000) {
  await page.getByTestId('send').waitFor({ state: 'visible', timeout });
  return page.getByTestId('message-assistant').last();
}

// The bodies of chat requests the page sends.
function recordRequests(page) {
  const bodies = [];
  page.on('request', (req) => {
    if (req.url().endsWith('/v1/chat/completions') && req.method() === 'POST') bodies.push(JSON.parse(req.postData()));
  });
  return bodies;
}

test('the page loads from the binary with its assets and the model name', async () => {
  const { page, errors } = await open();
  await assert.doesNotReject(page.getByTestId('empty-state').waitFor());
  const model = await page.getByTestId('model-name').textContent();
  assert.match(model, /tiny/i);
  for (const asset of ['style.css', 'app.js', 'markdown.js', 'highlight.js', 'api.js', 'storage.js']) {
    const res = await page.request.get(server.url + asset);
    assert.equal(res.status(), 200, asset);
  }
  assert.match((await page.request.get(server.url + 'app.js')).headers()['content-type'], /javascript/);
  await screenshot(page, 'empty');
  assert.deepEqual(errors, []);
});

test('a message gets a streamed answer that grows, then a speed line', async () => {
  const { page, errors } = await open();
  assert.equal(await page.getByTestId('thinking-toggle').isChecked(), true, 'thinking is on by default');
  await setSettings(page, { maxTokens: 600, temperature: 0.8, thinking: false });  // long enough to stream over many frames
  const requests = recordRequests(page);
  // Record the answer's length at every change, to see it grow while it streams.
  await page.evaluate(() => {
    window.__lengths = [];
    window.__stopShown = false;
    new MutationObserver(() => {
      const last = [...document.querySelectorAll('[data-testid=message-assistant]')].pop();
      if (last) window.__lengths.push(last.querySelector('[data-testid=assistant-content]').textContent.length);
      if (!document.querySelector('[data-testid=stop]').hidden) window.__stopShown = true;
    }).observe(document.getElementById('messages'), { childList: true, subtree: true, characterData: true });
  });
  await sendMessage(page, 'Hello there, who are you?');
  await page.getByTestId('message-user').getByText('Hello there, who are you?').waitFor();
  const msg = await waitForAnswer(page);
  assert.ok(await page.evaluate(() => window.__stopShown), 'the stop button showed while the answer streamed');
  const content = await msg.getByTestId('assistant-content').textContent();
  assert.ok(content.length > 0, 'the answer has text');
  const lengths = await page.evaluate(() => window.__lengths.filter((n) => n > 0));
  assert.ok(new Set(lengths).size >= 2, `the answer grew in steps: ${lengths.join(',')}`);
  const speed = await msg.getByTestId('speed').textContent();
  assert.match(speed, /prefill [\d.]+ tok\/s/);
  assert.match(speed, /decode [\d.]+ tok\/s/);
  assert.match(speed, /cached \d+ tok/);
  assert.equal(requests.length, 1);
  const body = requests[0];
  assert.equal(body.stream, true);
  assert.deepEqual(body.stream_options, { include_usage: true });
  assert.equal(body.max_tokens, 600);
  assert.equal(body.temperature, 0.8);
  assert.equal(body.chat_template_kwargs.enable_thinking, false);
  assert.match(body.model, /tiny/i);
  assert.deepEqual(body.messages, [{ role: 'user', content: 'Hello there, who are you?' }]);
  await screenshot(page, 'answer');

  // A second turn sends the whole conversation, the first answer as an assistant turn with
  // exactly the text that streamed in (as kept in localStorage; the page shows it as Markdown).
  const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('qwen35.conv.' + localStorage.getItem('qwen35.current'))));
  const answer = stored.messages[1].content;
  assert.ok(answer.length > 0);
  const rendered = await page.evaluate(async (text) => {
    const [{ parseMarkdown }, { toDom }] = await Promise.all([import('/markdown.js'), import('/dom.js')]);
    const div = document.createElement('div');
    div.append(toDom(parseMarkdown(text)));
    return div.textContent;
  }, answer);
  assert.equal(content, rendered, 'the page shows the whole answer');
  await sendMessage(page, 'And then?');
  await waitForAnswer(page);
  assert.equal(requests.length, 2);
  const turns = requests[1].messages;
  assert.deepEqual(turns.map((m) => m.role), ['user', 'assistant', 'user']);
  assert.deepEqual(turns[1], { role: 'assistant', content: answer });
  assert.equal(await page.getByTestId('message-assistant').count(), 2);
  assert.deepEqual(errors, []);
});

test('Enter sends, Shift+Enter makes a new line', async () => {
  const { page } = await open();
  await setSettings(page, { maxTokens: 8 });
  const input = page.getByTestId('input');
  await input.click();
  await page.keyboard.type('first line');
  await page.keyboard.press('Shift+Enter');
  await page.keyboard.type('second line');
  assert.equal(await input.inputValue(), 'first line\nsecond line');
  assert.equal(await page.getByTestId('message-user').count(), 0);
  await page.keyboard.press('Enter');
  await page.getByTestId('message-user').waitFor();
  assert.equal(await page.getByTestId('user-text').textContent(), 'first line\nsecond line');
  assert.equal(await input.inputValue(), '');
  await waitForAnswer(page);
});

test('images: attach, preview, remove, send; the answer comes back', async () => {
  const { page, errors } = await open();
  await setSettings(page, { maxTokens: 16, thinking: false });
  const requests = recordRequests(page);
  await page.getByTestId('file-input').setInputFiles(CAT_PNG);
  await page.getByTestId('attachment-preview').waitFor();
  await page.getByTestId('file-input').setInputFiles([CAT_PNG]);
  await page.getByTestId('attachment-preview').nth(1).waitFor();
  assert.equal(await page.getByTestId('attachment').count(), 2);
  await screenshot(page, 'image-preview');
  await page.getByRole('button', { name: 'Remove chelsea.png' }).first().click();
  assert.equal(await page.getByTestId('attachment').count(), 1);

  await sendMessage(page, 'What is in this picture?');
  await page.getByTestId('message-image').waitFor();
  assert.equal(await page.getByTestId('attachment').count(), 0, 'the composer is cleared');
  const msg = await waitForAnswer(page, 120_000);
  assert.equal(await msg.getByTestId('error').count(), 0, 'no error');
  assert.ok((await msg.getByTestId('assistant-content').textContent()).length > 0);
  await msg.getByTestId('speed').waitFor();
  const parts = requests[0].messages[0].content;
  assert.equal(parts.length, 2);
  assert.equal(parts[0].type, 'image_url');
  const expected = 'data:image/png;base64,' + readFileSync(CAT_PNG).toString('base64');
  assert.equal(parts[0].image_url.url, expected);
  assert.deepEqual(parts[1], { type: 'text', text: 'What is in this picture?' });
  await screenshot(page, 'image-answer');
  assert.deepEqual(errors, []);
});

test('videos: attach a clip like an image; it is sent as a video_url part and answered', async () => {
  const { page, errors } = await open();
  await setSettings(page, { maxTokens: 8, thinking: false });
  const requests = recordRequests(page);
  await page.getByTestId('file-input').setInputFiles(CLIP);
  const preview = page.getByTestId('attachment-preview');
  await preview.waitFor();
  assert.equal(await preview.evaluate((e) => e.tagName), 'VIDEO');
  // A thumbnail strip of the clip's frames, drawn by the browser.
  await page.getByTestId('video-thumb').nth(5).waitFor({ timeout: 20_000 });
  assert.equal(await page.getByTestId('video-thumb').count(), 6);
  await screenshot(page, 'video-strip');
  await sendMessage(page, 'What happens?');
  await page.getByTestId('message-video').waitFor();
  const msg = await waitForAnswer(page, 120_000);
  assert.equal(await msg.getByTestId('error').count(), 0, 'no error');
  const parts = requests[0].messages[0].content;
  assert.equal(parts[0].type, 'video_url');
  assert.equal(parts[0].video_url.url, 'data:video/mp4;base64,' + readFileSync(CLIP).toString('base64'));
  assert.deepEqual(parts[1], { type: 'text', text: 'What happens?' });
  assert.deepEqual(errors, []);
});

test('videos: an animated GIF goes as a video_url part and previews as an image; a still GIF as an image', async () => {
  const { page } = await open();
  await setSettings(page, { maxTokens: 4, thinking: false });
  const requests = recordRequests(page);
  // GIF89a, 1x1, two frames (and the same with one frame).
  const screen = [71, 73, 70, 56, 57, 97, 1, 0, 1, 0, 0x80, 0, 0, 0, 0, 0, 255, 255, 255];
  const frame = [0x21, 0xf9, 4, 0, 10, 0, 0, 0, 0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 1, 0];
  const gif = (frames) => Buffer.from([...screen, ...Array(frames).fill(frame).flat(), 0x3b]);
  await page.getByTestId('file-input').setInputFiles([
    { name: 'anim.gif', mimeType: 'image/gif', buffer: gif(2) },
    { name: 'still.gif', mimeType: 'image/gif', buffer: gif(1) },
  ]);
  await page.getByTestId('attachment-preview').nth(1).waitFor();
  assert.deepEqual(await page.getByTestId('attachment-preview').evaluateAll((es) => es.map((e) => e.tagName)), ['IMG', 'IMG']);
  await sendMessage(page, 'What moves?');
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=message-user]').length > 0);
  await page.waitForTimeout(500);
  const parts = requests[0].messages[0].content;
  assert.equal(parts[0].type, 'video_url');
  assert.equal(parts[0].video_url.url, 'data:image/gif;base64,' + gif(2).toString('base64'));
  assert.equal(parts[1].type, 'image_url');
  assert.equal(parts[1].image_url.url, 'data:image/gif;base64,' + gif(1).toString('base64'));
});

test('images: paste from the clipboard and drop onto the page', async () => {
  const { page } = await open();
  const bytes = [...readFileSync(CAT_PNG)];
  await page.evaluate((data) => {
    const file = () => new File([new Uint8Array(data)], 'pasted.png', { type: 'image/png' });
    const paste = new DataTransfer();
    paste.items.add(file());
    document.querySelector('[data-testid=input]').dispatchEvent(new ClipboardEvent('paste', { clipboardData: paste, bubbles: true, cancelable: true }));
    const drop = new DataTransfer();
    drop.items.add(file());
    drop.items.add(file());
    const target = document.querySelector('[data-testid=messages]');
    target.dispatchEvent(new DragEvent('dragenter', { dataTransfer: drop, bubbles: true, cancelable: true }));
    target.dispatchEvent(new DragEvent('drop', { dataTransfer: drop, bubbles: true, cancelable: true }));
  }, bytes);
  await page.getByTestId('attachment').nth(2).waitFor();
  assert.equal(await page.getByTestId('attachment').count(), 3);
  assert.ok(await page.getByTestId('drop-overlay').isHidden());
});

test('thinking: on by default, sent, and the reasoning shows in a collapsible block', async () => {
  const { page, errors } = await open();
  await setSettings(page, { maxTokens: 40 });
  const requests = recordRequests(page);
  assert.equal(await page.getByTestId('thinking-toggle').isChecked(), true, 'on without any choice made');
  await sendMessage(page, 'Think about the number seven.');
  const block = page.getByTestId('reasoning');
  await block.waitFor();
  const msg = await waitForAnswer(page);
  assert.equal(requests[0].chat_template_kwargs.enable_thinking, true);
  const reasoning = await msg.getByTestId('reasoning-text').textContent();
  assert.ok(reasoning.length > 0, 'reasoning text arrived');
  // Collapsible: the summary toggles it open and closed.
  const wasOpen = await block.evaluate((d) => d.open);
  await msg.getByTestId('reasoning-toggle').click();
  assert.equal(await block.evaluate((d) => d.open), !wasOpen);
  if (!(await block.evaluate((d) => d.open))) await msg.getByTestId('reasoning-toggle').click();
  assert.ok(await msg.getByTestId('reasoning-text').isVisible());
  await screenshot(page, 'thinking');

  // The next turn carries the reasoning back as reasoning_content.
  await sendMessage(page, 'Go on.');
  await waitForAnswer(page);
  const prev = requests[1].messages[1];
  assert.equal(prev.role, 'assistant');
  assert.equal(prev.reasoning_content, reasoning);
  // Settings saved without touching the toggle (max tokens above) leave the default on.
  await page.reload();
  assert.equal(await page.getByTestId('thinking-toggle').isChecked(), true);
  // Turned off by the user: remembered over the default, and sent.
  await page.getByText('Thinking', { exact: true }).click();
  assert.equal(await page.getByTestId('thinking-toggle').isChecked(), false);
  await page.reload();
  assert.equal(await page.getByTestId('thinking-toggle').isChecked(), false, 'the choice survives a reload');
  await sendMessage(page, 'No thinking now.');
  await waitForAnswer(page);
  assert.equal(requests.at(-1).chat_template_kwargs.enable_thinking, false);
  assert.deepEqual(errors, []);
});

test('thinking: settings stored by the older page (thinking: false, not chosen) get the new default', async () => {
  const { page } = await open();
  await page.evaluate(() => localStorage.setItem('qwen35.settings',
    JSON.stringify({ systemPrompt: '', temperature: 0.3, maxTokens: 77, thinking: false })));
  await page.reload();
  assert.equal(await page.getByTestId('thinking-toggle').isChecked(), true);
  await page.getByRole('button', { name: 'Settings' }).click();
  assert.equal(await page.getByTestId('setting-max-tokens').inputValue(), '77', 'the other settings are kept');
  await page.getByRole('button', { name: 'Close settings' }).click();
});

test('stop: aborts a long generation, keeps the partial answer, the UI stays usable', async () => {
  const { page, errors } = await open();
  await setSettings(page, { maxTokens: 2000, thinking: false });
  await sendMessage(page, 'Write a very long story.');
  const msg = page.getByTestId('message-assistant').last();
  await page.waitForFunction(() => {
    const m = [...document.querySelectorAll('[data-testid=message-assistant]')].pop();
    return m && m.querySelector('[data-testid=assistant-content]').textContent.length > 20;
  }, null, { timeout: 60_000 });
  await page.getByRole('button', { name: 'Stop' }).click();
  await page.getByTestId('send').waitFor({ state: 'visible' });
  assert.ok(await page.getByTestId('stop').isHidden());
  const partial = await msg.getByTestId('assistant-content').textContent();
  assert.ok(partial.length > 20, 'the partial answer stays');
  assert.match(await msg.getByTestId('message-note').textContent(), /stopped/);
  await page.waitForTimeout(300);
  assert.equal(await msg.getByTestId('assistant-content').textContent(), partial, 'nothing arrives after stop');
  await screenshot(page, 'stopped');

  await setSettings(page, { maxTokens: 8 });
  await sendMessage(page, 'Short one now.');
  const next = await waitForAnswer(page);
  assert.equal(await page.getByTestId('message-assistant').count(), 2);
  await next.getByTestId('speed').waitFor();
  assert.deepEqual(errors, []);
});

test('conversations survive a reload; new chat, switch and delete', async () => {
  const { page, context } = await open();
  await setSettings(page, { maxTokens: 8, thinking: false });
  await sendMessage(page, 'Remember the first conversation');
  await waitForAnswer(page);
  await page.getByRole('button', { name: 'New chat' }).click();
  await page.getByTestId('empty-state').waitFor();
  await sendMessage(page, 'A second conversation');
  await waitForAnswer(page);
  assert.equal(await page.getByTestId('conversation-item').count(), 2);

  await page.reload();
  await page.getByTestId('message-user').waitFor();
  assert.equal(await page.getByTestId('user-text').textContent(), 'A second conversation', 'the open conversation comes back');
  assert.equal(await page.getByTestId('conversation-item').count(), 2);
  await page.getByTestId('conversation-open').filter({ hasText: 'Remember the first conversation' }).click();
  await page.getByTestId('user-text').filter({ hasText: 'Remember the first conversation' }).waitFor();
  assert.equal(await page.getByTestId('message-assistant').count(), 1);
  assert.ok((await page.getByTestId('assistant-content').textContent()).length > 0);
  await screenshot(page, 'reloaded');

  // A second tab of the same browser profile sees the same list.
  const other = await context.newPage();
  await other.goto(server.url);
  await other.getByTestId('conversation-item').nth(1).waitFor();
  await other.close();

  // Delete takes two clicks.
  await page.getByRole('button', { name: 'Delete conversation: A second conversation' }).click();
  assert.equal(await page.getByTestId('conversation-item').count(), 2);
  await page.getByRole('button', { name: 'Confirm delete: A second conversation' }).click();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=conversation-item]').length === 1);
  await page.reload();
  assert.equal(await page.getByTestId('conversation-item').count(), 1);
  assert.match(await page.getByTestId('conversation-open').textContent(), /Remember the first/);
});

test('a server with --api-key: the page asks for the key once, keeps it, and uses it', async () => {
  const keyed = await startServer({ args: ['--api-key', 'browser-key-42'] });
  try {
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 800 }, locale: 'en-US' });
    contexts.push(ctx);
    const page = await ctx.newPage();
    const auth = [];
    page.on('request', (req) => { if (req.url().includes('/v1/')) auth.push(req.headers().authorization || ''); });
    await page.goto(keyed.url);
    const dialog = page.getByTestId('key-dialog');
    await dialog.waitFor();
    assert.equal(await page.getByTestId('model-name').textContent(), 'API key needed');
    await screenshot(page, 'api-key');
    // A wrong key: asked again, saying so.
    await page.getByTestId('key-input').fill('not-the-key');
    await page.getByTestId('key-save').click();
    await page.getByTestId('key-message').filter({ hasText: /did not accept/ }).waitFor();
    assert.ok(await dialog.isVisible());
    // The right one: the model shows, a message gets its answer.
    await page.getByTestId('key-input').fill('browser-key-42');
    await page.getByTestId('key-save').click();
    await page.getByTestId('model-name').filter({ hasText: 'tiny-qwen35' }).waitFor();
    assert.ok(!(await dialog.isVisible()));
    await setSettings(page, { maxTokens: 6 });
    await sendMessage(page, 'Hello with a key');
    const answer = await waitForAnswer(page);
    assert.equal(await answer.getByTestId('error').count(), 0);
    await answer.getByTestId('speed').waitFor();
    assert.ok(auth.includes('Bearer browser-key-42'), auth.join(','));
    assert.ok(auth.includes('Bearer not-the-key'));
    // Kept in the browser: a reload asks nothing.
    await page.reload();
    await page.getByTestId('model-name').filter({ hasText: 'tiny-qwen35' }).waitFor();
    assert.ok(!(await dialog.isVisible()));
    assert.equal(await page.evaluate(() => localStorage.getItem('qwen35.apiKey')), 'browser-key-42');
  } finally {
    await keyed.stop();
  }
});

test('server errors show inline and the UI stays usable', async () => {
  const { page } = await open();
  await setSettings(page, { maxTokens: 8 });
  // Break one request on its way out, so the real server answers with its own error object.
  let broken = false;
  await page.route('**/v1/chat/completions', async (route) => {
    if (broken) return route.continue();
    broken = true;
    const body = JSON.parse(route.request().postData());
    body.messages = [{ role: 'wizard', content: 'hi' }];
    await route.continue({ postData: JSON.stringify(body) });
  });
  await sendMessage(page, 'This one fails');
  const failed = await waitForAnswer(page);
  const error = failed.getByTestId('error');
  await error.waitFor();
  assert.ok((await error.textContent()).length > 5);
  assert.equal(await error.getAttribute('role'), 'alert');
  await screenshot(page, 'error');
  await sendMessage(page, 'This one works');
  const ok = await waitForAnswer(page);
  assert.equal(await ok.getByTestId('error').count(), 0);
  await ok.getByTestId('speed').waitFor();
});

test('phone-sized screen: no horizontal scroll, sidebar as a drawer', async () => {
  const { page, errors } = await open({ viewport: { width: 375, height: 740 } });
  await setSettings(page, { maxTokens: 24 });
  await page.getByTestId('file-input').setInputFiles(CAT_PNG);
  await sendMessage(page, 'A_very_long_word_without_spaces_' + 'x'.repeat(120) + ' and a long URL https://example.com/' + 'y'.repeat(150));
  await waitForAnswer(page, 120_000);
  const overflow = await page.evaluate(() => {
    const d = document.documentElement;
    const m = document.querySelector('[data-testid=messages]');
    return { doc: d.scrollWidth - d.clientWidth, body: document.body.scrollWidth - document.body.clientWidth, messages: m.scrollWidth - m.clientWidth };
  });
  assert.deepEqual(overflow, { doc: 0, body: 0, messages: 0 });
  assert.ok(await page.getByTestId('sidebar').isHidden(), 'the sidebar is off screen');
  await screenshot(page, 'phone');
  await page.getByRole('button', { name: 'Open conversations' }).click();
  await page.getByTestId('conversation-item').first().waitFor({ state: 'visible' });
  // The drawer slides in.
  await page.waitForFunction(() => document.querySelector('[data-testid=sidebar]').getBoundingClientRect().x >= 0);
  const box = await page.getByTestId('sidebar').boundingBox();
  assert.ok(box.x === 0 && box.width < 375, JSON.stringify(box));
  await screenshot(page, 'phone-drawer');
  await page.getByTestId('backdrop').click({ position: { x: 360, y: 400 } });
  await page.getByTestId('sidebar').waitFor({ state: 'hidden' });
  assert.deepEqual(errors, []);
});

// An answer with HTML and Markdown tricks, streamed in small pieces to the real page.
const EVIL_ANSWER = [
  'Here <img src=x onerror="window.__xss=1"> and <script>window.__xss=2</script>\n\n',
  '[click](javascript:window.__xss=3) [fine](https://example.com/) <a href="javascript:alert(1)">raw</a>\n\n',
  '**bold <b>tag</b>** `<i>code</i>`\n\n',
  '```html\n<script>window.__xss=4</script>\n```\n\n',
  '| <svg onload=window.__xss=5> | b |\n|---|---|\n| 1 | 2 |\n',
];

function sse(pieces) {
  const chunk = (delta) => `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
  let body = chunk({ reasoning_content: '<img src=x onerror="window.__xss=6">' });
  for (const p of pieces) for (let k = 0; k < p.length; k += 7) body += chunk({ content: p.slice(k, k + 7) });
  body += `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 0 } } })}\n\n`;
  return body + 'data: [DONE]\n\n';
}

test('XSS: HTML in answers, reasoning and user messages is shown as text', async () => {
  const { page, errors } = await open();
  await page.route('**/v1/chat/completions', (route) =>
    route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream' }, body: sse(EVIL_ANSWER) }));
  await sendMessage(page, '<img src=x onerror="window.__xss=7"> **not bold** <script>window.__xss=8</script>');
  const msg = await waitForAnswer(page);
  await msg.getByText('fine').waitFor();
  const found = await page.evaluate(() => {
    const root = document.querySelector('[data-testid=messages]');
    return {
      xss: window.__xss ?? null,
      dangerous: root.querySelectorAll('script, img:not([data-testid=message-image]), svg, iframe, b, i, [onerror], [onload], [onclick]').length,
      hrefs: [...root.querySelectorAll('a')].map((a) => a.getAttribute('href')),
      rels: [...root.querySelectorAll('a')].map((a) => a.rel),
      user: root.querySelector('[data-testid=user-text]').textContent,
      userHtml: root.querySelector('[data-testid=user-text]').innerHTML,
    };
  });
  assert.equal(found.xss, null);
  assert.equal(found.dangerous, 0);
  assert.deepEqual(found.hrefs, ['https://example.com/']);
  assert.deepEqual(found.rels, ['noopener noreferrer']);
  assert.equal(found.user, '<img src=x onerror="window.__xss=7"> **not bold** <script>window.__xss=8</script>');
  assert.ok(!found.userHtml.includes('<img'));
  const text = await msg.getByTestId('assistant-content').textContent();
  assert.ok(text.includes('<img src=x onerror="window.__xss=1">'));
  assert.ok(text.includes('<script>window.__xss=4</script>'));
  assert.equal(await msg.getByTestId('assistant-content').locator('strong').first().textContent(), 'bold <b>tag</b>');
  assert.equal(await msg.locator('.code-lang').textContent(), 'html');
  await screenshot(page, 'xss');
  assert.deepEqual(errors, []);
});

test('code blocks have a working copy button', async () => {
  const { page, context } = await open();
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url.replace(/\/$/, '') });
  await page.route('**/v1/chat/completions', (route) =>
    route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream' }, body: sse(['```python\nprint("hi")  # x\n```\n']) }));
  await sendMessage(page, 'code please');
  const msg = await waitForAnswer(page);
  await msg.locator('.tok-keyword, .tok-string').first().waitFor();
  await msg.getByRole('button', { name: 'Copy code' }).click();
  await msg.getByRole('button', { name: 'Copy code' }).filter({ hasText: 'Copied' }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'print("hi")  # x');
});

test('storage quota: images that do not fit are dropped with a note, the chat is kept', async () => {
  const { page, errors } = await open();
  await setSettings(page, { maxTokens: 8 });
  // Fill localStorage until about 40 kB are left: room for the text, not for the image.
  await page.evaluate(() => {
    let n = 0;
    for (let size = 1 << 20; size >= 1024; size >>= 1) {
      for (;;) {
        try { localStorage.setItem('filler.' + n++, 'x'.repeat(size)); } catch { break; }
      }
    }
    // The last blocks are the smallest: free about 40 kB from there.
    let freed = 0;
    for (let k = n - 1; k >= 0 && freed < 40_000; k--) {
      const v = localStorage.getItem('filler.' + k);
      if (v) { freed += v.length; localStorage.removeItem('filler.' + k); }
    }
  });
  await page.getByTestId('file-input').setInputFiles(CAT_PNG);
  await page.getByTestId('attachment-preview').waitFor();
  await sendMessage(page, 'Keep this conversation');
  await waitForAnswer(page, 120_000);
  await page.getByTestId('notice').filter({ hasText: /storage is full/i }).waitFor();
  assert.equal(await page.getByTestId('message-image').count(), 1, 'the image stays on the page for now');
  await screenshot(page, 'quota-note');
  await page.reload();
  await page.getByTestId('user-text').filter({ hasText: 'Keep this conversation' }).waitFor();
  assert.equal(await page.getByTestId('message-image-dropped').count(), 1);
  assert.equal(await page.getByTestId('message-assistant').count(), 1);
  assert.deepEqual(errors, []);
});

test('switching conversations during a generation stops it and keeps the partial answer there', async () => {
  const { page, errors } = await open();
  await setSettings(page, { maxTokens: 8, thinking: false });
  await sendMessage(page, 'Older conversation');
  await waitForAnswer(page);
  await page.getByRole('button', { name: 'New chat' }).click();
  await setSettings(page, { maxTokens: 2000 });
  await sendMessage(page, 'Long running one');
  await page.waitForFunction(() => {
    const m = document.querySelector('[data-testid=message-assistant] [data-testid=assistant-content]');
    return m && m.textContent.length > 10;
  }, null, { timeout: 60_000 });
  await page.getByTestId('conversation-open').filter({ hasText: 'Older conversation' }).click();
  await page.getByTestId('send').waitFor({ state: 'visible' });
  await page.getByTestId('user-text').filter({ hasText: 'Older conversation' }).waitFor();
  await page.getByTestId('conversation-open').filter({ hasText: 'Long running one' }).click();
  const msg = page.getByTestId('message-assistant');
  assert.ok((await msg.getByTestId('assistant-content').textContent()).length > 10);
  assert.match(await msg.getByTestId('message-note').textContent(), /stopped/);
  await page.reload();
  assert.match(await page.getByTestId('message-note').textContent(), /stopped/);
  assert.deepEqual(errors, []);
});

// --- Languages: English and Japanese ---------------------------------------------------------

const EN = MESSAGES.en;
const JA = MESSAGES.ja;
const JAPANESE = /[\u3040-\u30ff\u4e00-\u9fff]/;

// What the page says: all text (hidden dialogs included), placeholders, titles and labels.
async function pageWords(page) {
  return page.evaluate(() => {
    const out = [document.body.textContent, document.title];
    for (const e of document.querySelectorAll('[placeholder], [title], [aria-label]')) {
      for (const a of ['placeholder', 'title', 'aria-label']) if (e.hasAttribute(a)) out.push(e.getAttribute(a));
    }
    return out.join('\n');
  });
}

// The labels a person sees first, read from the page (null for what is not there).
async function labels(page) {
  return page.evaluate(() => {
    const q = (id) => document.querySelector(`[data-testid=${id}]`);
    const text = (e) => (e ? e.textContent.trim() : null);
    return {
      lang: document.documentElement.lang,
      newChat: text(q('new-chat')),
      placeholder: q('input').getAttribute('placeholder'),
      thinking: text(q('thinking-label')),
      send: q('send').getAttribute('aria-label'),
      attach: q('attach').getAttribute('aria-label'),
      settings: q('settings-button').getAttribute('title'),
      hint: text(q('hint')),
      heading: text(document.querySelector('[data-testid=empty-state] h1')),
      title: text(q('conversation-title')),
    };
  });
}

const expected = (m) => ({
  newChat: m['chat.new'], placeholder: m['input.placeholder'], thinking: m.thinking, send: m.send,
  attach: m['attach.label'], settings: m['settings.open'], hint: m.hint, heading: m['empty.heading'], title: m['chat.new'],
});

test('languages: a ja-JP browser gets the Japanese page, an en-US one the English page', async () => {
  const ja = await open({ locale: 'ja-JP' });
  assert.deepEqual(await labels(ja.page), { lang: 'ja', ...expected(JA) });
  assert.equal(await ja.page.getByTestId('thinking-label').textContent(), '思考モード');
  assert.equal(await ja.page.getByTestId('send').getAttribute('aria-label'), '送信');
  assert.equal(await ja.page.getByTestId('language-select').inputValue(), 'ja');
  // Nothing of the English page is left: no English entry of the table shows anywhere.
  const words = await pageWords(ja.page);
  const leftover = Object.entries(EN).filter(([k, v]) => !v.includes('{') && v !== JA[k] && v.length > 2 && words.includes(v));
  assert.deepEqual(leftover, []);
  await ja.page.getByTestId('settings-button').click();
  assert.equal(await ja.page.locator('#settings-title').textContent(), '設定');
  assert.equal(await ja.page.getByTestId('settings-close').textContent(), '完了');
  await screenshot(ja.page, 'ja-settings');
  await ja.page.getByRole('button', { name: '設定を閉じる' }).click();
  await screenshot(ja.page, 'ja-empty');
  assert.deepEqual(ja.errors, []);

  const en = await open({ locale: 'en-US' });
  assert.deepEqual(await labels(en.page), { lang: 'en', ...expected(EN) });
  assert.ok(!JAPANESE.test(await pageWords(en.page).then((w) => w.replace('日本語', ''))), 'no Japanese but the language name');
  assert.equal(await en.page.getByTestId('language-select').inputValue(), 'en');
});

test('languages: the header switch changes the page at once and is remembered over the browser language', async () => {
  const { page, errors } = await open({ locale: 'en-US' });
  await setSettings(page, { maxTokens: 6, thinking: false });
  await sendMessage(page, 'Switch languages after this');
  const msg = await waitForAnswer(page);
  await msg.getByTestId('speed').waitFor();
  assert.match(await msg.getByTestId('speed').textContent(), /^prefill /);
  await page.getByTestId('language-select').selectOption('ja');
  assert.deepEqual(await labels(page), { lang: 'ja', ...expected(JA), heading: null, title: 'Switch languages after this' });
  // What was drawn before is drawn again in Japanese: the speed line, the sidebar's buttons.
  assert.match(await page.getByTestId('message-assistant').getByTestId('speed').textContent(), /^プリフィル /);
  assert.equal(await page.getByTestId('conversation-delete').getAttribute('title'), '削除');
  assert.equal(await page.evaluate(() => localStorage.getItem('qwen35.lang')), 'ja');
  await page.reload();
  await page.locator('[data-testid=model-name][data-state=ready]').waitFor();
  assert.equal((await labels(page)).lang, 'ja', 'kept over the browser language (en-US)');
  assert.equal(await page.getByTestId('thinking-label').textContent(), '思考モード');

  // A ja-JP browser that picked English stays English.
  const ja = await open({ locale: 'ja-JP' });
  assert.equal((await labels(ja.page)).lang, 'ja');
  await ja.page.getByTestId('language-select').selectOption('en');
  assert.deepEqual((await labels(ja.page)).placeholder, EN['input.placeholder']);
  await ja.page.reload();
  await ja.page.locator('[data-testid=model-name][data-state=ready]').waitFor();
  assert.deepEqual(await labels(ja.page), { lang: 'en', ...expected(EN) });
  assert.deepEqual([...errors, ...ja.errors], []);
});

const JA_PROMPT = '日本語で自己紹介をしてください。東京の天気は？ Mixed with English 🌸😀';

test('Japanese text: a prompt sent through the page renders with real glyphs', async () => {
  const { page, errors } = await open({ locale: 'ja-JP' });
  await setSettings(page, { maxTokens: 12, thinking: false });
  const requests = recordRequests(page);
  await sendMessage(page, JA_PROMPT);
  const bubble = page.getByTestId('user-text').filter({ hasText: JA_PROMPT });
  await bubble.waitFor();
  const answer = await waitForAnswer(page);
  assert.equal(await answer.getByTestId('error').count(), 0);
  await answer.getByTestId('speed').waitFor();
  assert.deepEqual(requests[0].messages, [{ role: 'user', content: JA_PROMPT }], 'sent exactly');
  assert.equal(await page.getByTestId('conversation-open').textContent(), JA_PROMPT, 'the sidebar title');
  const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('qwen35.conv.' + localStorage.getItem('qwen35.current'))));
  assert.equal(stored.messages[0].text, JA_PROMPT);

  // Glyphs: the rendered text has a width; in the bubble's font, Japanese characters are not the
  // box a font draws for a character it lacks (U+FFFF is in no font): not as wide as those boxes
  // (catches boxes that show the code point), and each character's pixels differ from the box's and
  // from each other (catches blank boxes, all alike). document.fonts.check() cannot tell: it says
  // true for '日本語' even when no installed font has these characters.
  const m = await bubble.evaluate((node) => {
    const range = document.createRange();
    range.selectNodeContents(node);
    const textWidth = range.getBoundingClientRect().width;
    const font = getComputedStyle(node).font;
    const span = (text) => {
      const s = document.createElement('span');
      s.style.font = font;
      s.style.whiteSpace = 'pre';
      s.textContent = text;
      node.append(s);
      const w = s.getBoundingClientRect().width;
      s.remove();
      return w;
    };
    const pixels = (ch) => {
      const c = document.createElement('canvas');
      c.width = 64;
      c.height = 64;
      const g = c.getContext('2d');
      g.font = font.replace(/\d+(\.\d+)?px/, '40px');
      g.fillStyle = '#000';
      g.textBaseline = 'top';
      g.fillText(ch, 4, 4);
      const data = g.getImageData(0, 0, 64, 64).data;
      let ink = 0;
      let bits = '';
      for (let k = 3; k < data.length; k += 4) {
        ink += data[k] > 0 ? 1 : 0;
        bits += data[k] > 127 ? '1' : '0';
      }
      return { ink, bits };
    };
    const missing = pixels('\uffff');
    const glyphs = ['日', '本', '語', 'あ', 'ア'].map(pixels);
    return {
      textWidth,
      japanese: span('日本語'),
      boxes: span('\uffff\uffff\uffff'),
      inked: glyphs.map((g) => g.ink),
      distinct: new Set(glyphs.map((g) => g.bits)).size,
      likeMissing: glyphs.filter((g) => g.bits === missing.bits).length,
      lang: node.closest('[lang]').lang,
    };
  });
  assert.ok(m.textWidth > 100, `rendered width ${m.textWidth}`);
  assert.ok(m.japanese > 0, JSON.stringify(m));
  assert.ok(Math.abs(m.japanese - m.boxes) > 1, `'日本語' is not as wide as three missing-glyph boxes: ${JSON.stringify(m)}`);
  assert.ok(m.inked.every((n) => n > 20), `every character draws ink: ${m.inked}`);
  assert.equal(m.distinct, 5, 'five characters, five different drawings');
  assert.equal(m.likeMissing, 0, 'none drawn as the missing-glyph box');
  assert.equal(m.lang, 'ja');
  await screenshot(page, 'ja-conversation');
  assert.deepEqual(errors, []);
});
