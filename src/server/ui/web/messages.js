// Drawing the conversation: user turns as plain text with their images, assistant turns as
// Markdown with a collapsible reasoning block, an inline error and the speed line. Model text only
// reaches the page as text nodes (markdown.js + dom.js), never as HTML.
import { el, toDom } from './dom.js';
import { parseMarkdown } from './markdown.js';
import { formatStats } from './api.js';
import { showsAsVideo } from './attachments.js';
import { t } from './i18n.js';

const rendered = new WeakMap();  // content element -> the Markdown source it shows

export function emptyState(modelName) {
  return el('div', { class: 'empty', 'data-testid': 'empty-state' },
    el('h1', { text: t('empty.heading') }),
    el('p', { text: modelName ? t('empty.withModel', { model: modelName }) : t('empty.noModel') }));
}

export function userMessage(msg) {
  const images = (msg.images || []).map((im, k) => im.url && showsAsVideo(im)
    ? el('video', { class: 'msg-image', src: im.url, controls: '', preload: 'metadata', title: im.name || t('message.videoAlt', { n: k + 1 }), 'data-testid': 'message-video' })
    : im.url
    ? el('img', { class: 'msg-image', src: im.url, alt: im.name || t('message.imageAlt', { n: k + 1 }), 'data-testid': 'message-image', loading: 'lazy' })
    : el('div', { class: 'msg-image dropped', 'data-testid': 'message-image-dropped', title: im.name || '' }, t('message.imageDropped')));
  return el('article', { class: 'msg user', 'data-testid': 'message-user' },
    images.length ? el('div', { class: 'msg-images' }, images) : null,
    msg.text ? el('div', { class: 'bubble', 'data-testid': 'user-text' }, msg.text) : null);
}

// An assistant turn; update it in place with updateAssistant while it streams.
export function assistantMessage(msg) {
  const node = el('article', { class: 'msg assistant', 'data-testid': 'message-assistant' });
  updateAssistant(node, msg);
  return node;
}

export function updateAssistant(node, msg) {
  node.classList.toggle('pending', !!msg.pending);
  // Reasoning: open while the model thinks, closed once the answer starts (unless reopened).
  let details = node.querySelector(':scope > details.reasoning');
  if (msg.reasoning && !details) {
    details = el('details', { class: 'reasoning', 'data-testid': 'reasoning' },
      el('summary', { 'data-testid': 'reasoning-toggle' }, ''),
      el('div', { class: 'reasoning-text', 'data-testid': 'reasoning-text' }));
    details.open = !!msg.pending && !msg.content;
    node.prepend(details);
  }
  if (details) {
    if (msg.content && details.dataset.closed !== '1') {
      details.dataset.closed = '1';
      details.open = false;
    }
    const thinking = msg.pending && !msg.content;
    details.querySelector('summary').textContent = thinking ? t('reasoning.thinking')
      : t('reasoning.done', { words: wordCount(msg.reasoning), chars: charCount(msg.reasoning) });
    const body = details.querySelector('.reasoning-text');
    if (body.textContent !== msg.reasoning) body.textContent = msg.reasoning;
  }

  let content = node.querySelector(':scope > .content');
  if (!content) {
    content = el('div', { class: 'content markdown', 'data-testid': 'assistant-content' });
    node.append(content);
  }
  if (rendered.get(content) !== (msg.content || '')) {
    rendered.set(content, msg.content || '');
    content.replaceChildren(toDom(parseMarkdown(msg.content || '')));
  }
  content.classList.toggle('typing', !!msg.pending && !msg.content && !msg.reasoning);

  let error = node.querySelector(':scope > .error');
  if (msg.error && !error) {
    error = el('div', { class: 'error', role: 'alert', 'data-testid': 'error' });
    node.append(error);
  }
  if (error) {
    error.hidden = !msg.error;
    error.textContent = msg.error || '';
  }

  let meta = node.querySelector(':scope > .meta');
  const stats = formatStats(msg.stats);
  const notes = [];
  if (msg.stopped) notes.push(t('note.stopped'));
  else if (msg.finish === 'length') notes.push(t('note.length'));
  if (!meta && (stats || notes.length)) {
    meta = el('div', { class: 'meta' },
      el('span', { class: 'speed', 'data-testid': 'speed' }),
      el('span', { class: 'note', 'data-testid': 'message-note' }));
    node.append(meta);
  }
  if (meta) {
    meta.querySelector('.speed').textContent = stats;
    meta.querySelector('.speed').hidden = !stats;
    meta.querySelector('.note').textContent = notes.join(t('note.separator'));
  }
}

function wordCount(text) {
  const m = String(text || '').trim().match(/\S+/g);
  return m ? m.length : 0;
}

// Japanese has no spaces between words: its summary counts characters (code points, blanks left out).
function charCount(text) {
  return [...String(text || '').replace(/\s+/g, '')].length;
}
