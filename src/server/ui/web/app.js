// The chat page: state, event wiring and the streaming loop. Rendering lives in messages.js,
// the protocol in api.js, persistence in storage.js, the words in i18n.js.
import { buildRequest, fetchModel, statsFrom, streamChat } from './api.js';
import { pastedImages, readImages, showsAsVideo, watchDrops } from './attachments.js';
import { el, icon } from './dom.js';
import { LANGUAGES, language, pickLanguage, setLanguage, t, translatePage } from './i18n.js';
import { assistantMessage, emptyState, updateAssistant, userMessage } from './messages.js';
import { Store, newId, titleOf } from './storage.js';
import { videoStrip } from './thumbnails.js';

const $ = (id) => document.getElementById(id);
const ui = {
  app: $('app'), sidebar: $('sidebar'), backdrop: $('backdrop'), menu: $('menu'), newChat: $('new-chat'),
  convList: $('conv-list'), convTitle: $('conv-title'), modelName: $('model-name'), messages: $('messages'),
  notice: $('notice'), composer: $('composer'), attachments: $('attachments'), attach: $('attach'),
  fileInput: $('file-input'), input: $('input'), send: $('send'), stop: $('stop'), thinking: $('thinking'),
  settings: $('settings'), settingsOpen: $('settings-open'), setSystem: $('set-system'),
  setTemperature: $('set-temperature'), setMaxTokens: $('set-max-tokens'), dropOverlay: $('drop-overlay'),
  setApiKey: $('set-api-key'), keyDialog: $('key-dialog'), keyForm: $('key-form'), keyInput: $('key-input'),
  keyMessage: $('key-message'), lang: $('lang'),
};

let storage;
try {
  storage = window.localStorage;
} catch {
  storage = null;
}
const store = new Store(storage || memoryStorage());

const state = {
  settings: store.loadSettings(),
  apiKey: store.apiKey(),  // for servers started with --api-key
  model: { id: '', contextSize: null, hasVision: null },
  modelStatus: 'connecting',  // until the model is known: a key of MODEL_STATUS
  keyMessage: null,     // the key dialog's text: [key, params]
  conv: null,           // the open conversation; null for a new, empty one
  pending: [],          // images to send with the next message: [{name, url}]
  busy: null,           // the running generation: {controller, conv, msg, node}
  droppedNoted: new Set(),
};

// ---------------------------------------------------------------------------------------------
// Model

// Retries every few seconds while the server is unreachable (when `retry` is set). A server that
// wants an API key (401) gets the key dialog instead.
async function loadModel({ retry = false } = {}) {
  try {
    state.model = await fetchModel(fetch, { apiKey: state.apiKey });
    state.modelStatus = 'none';
    renderModel();
    if (!state.conv) renderMessages();
  } catch (e) {
    if (e && e.status === 401) {
      state.modelStatus = 'key-needed';
      renderModel();
      askForKey(e.message);
      return;
    }
    state.modelStatus = 'unreachable';
    renderModel();
    if (retry) setTimeout(() => { if (!state.model.id) loadModel({ retry }); }, 3000);
  }
}

const MODEL_STATUS = { connecting: 'model.connecting', none: 'model.none', 'key-needed': 'model.keyNeeded', unreachable: 'model.unreachable' };

// The model's name (or what is known so far), its context size, whether images can be attached.
// data-state says the same in any language: ready or one of MODEL_STATUS.
function renderModel() {
  ui.modelName.textContent = state.model.id || t(MODEL_STATUS[state.modelStatus]);
  ui.modelName.dataset.state = state.model.id ? 'ready' : state.modelStatus;
  ui.modelName.title = state.model.contextSize ? t('model.context', { n: state.model.contextSize }) : '';
  ui.attach.disabled = state.model.hasVision === false;
  ui.attach.title = t(state.model.hasVision === false ? 'attach.noVision' : 'attach.label');
}

// The key dialog: asked once, then kept in this browser (and changeable in Settings).
function askForKey(serverMessage) {
  state.keyMessage = state.apiKey ? ['key.rejected', { error: serverMessage || t('key.incorrect') }] : ['key.needed', {}];
  ui.keyMessage.textContent = t(...state.keyMessage);
  ui.keyInput.value = '';
  if (!ui.keyDialog.open) ui.keyDialog.showModal();
  ui.keyInput.focus();
}

function setApiKey(key) {
  state.apiKey = key;
  store.saveApiKey(key);
}

// ---------------------------------------------------------------------------------------------
// Conversations

// A stored conversation, with turns that were cut off by a reload marked as stopped.
function loadConversation(id) {
  const conv = id ? store.get(id) : null;
  if (!conv) return null;
  for (const m of conv.messages) {
    if (m.role === 'assistant' && m.pending) {
      m.pending = false;
      m.stopped = true;
    }
  }
  return conv;
}

function openConversation(id) {
  const busy = state.busy;
  if (busy && busy.conv.id === id) {
    state.conv = busy.conv;  // the one being answered: its stored copy may be behind
  } else {
    if (busy) stopGeneration();
    state.conv = loadConversation(id);
  }
  store.setCurrent(state.conv ? state.conv.id : null);
  renderMessages();
  renderSidebar();
  closeDrawer();
}

function newChat() {
  openConversation(null);
  ui.input.focus();
}

function deleteConversation(id) {
  if (state.busy && state.busy.conv.id === id) {
    state.busy.conv.deleted = true;  // so the aborted generation does not save it again
    stopGeneration();
  }
  store.remove(id);
  if (state.conv && state.conv.id === id) openConversation(null);
  else renderSidebar();
}

function saveConversation(conv) {
  if (conv.deleted) return;
  conv.updated = Date.now();
  conv.title = titleOf(conv);
  const r = store.save(conv);
  if (!r.ok) {
    showNotice(t('notice.saveFailed', { error: (r.error && r.error.message) || t('notice.storageError') }));
  } else if (r.droppedImages && !state.droppedNoted.has(conv.id)) {
    state.droppedNoted.add(conv.id);
    showNotice(t('notice.imagesDropped'));
  }
}

function renderSidebar() {
  const items = store.list().map((entry) => {
    const active = state.conv && state.conv.id === entry.id;
    const del = el('button', {
      type: 'button', class: 'icon-btn conv-delete', 'data-testid': 'conversation-delete',
      'aria-label': t('chat.deleteLabel', { title: entry.title }), title: t('chat.delete'),
    }, icon('trash'));
    // Two clicks: the first arms the button, the second deletes.
    del.addEventListener('click', () => {
      if (del.dataset.armed) return deleteConversation(entry.id);
      del.dataset.armed = '1';
      del.classList.add('armed');
      del.setAttribute('aria-label', t('chat.confirmLabel', { title: entry.title }));
      del.textContent = t('chat.confirm');
      setTimeout(() => renderSidebar(), 4000);
    });
    return el('li', { class: 'conv-item' + (active ? ' active' : ''), 'data-testid': 'conversation-item' },
      el('button', {
        type: 'button', class: 'conv-open', 'data-testid': 'conversation-open', title: entry.title,
        'aria-current': active ? 'true' : null, onclick: () => openConversation(entry.id),
      }, entry.title || t('chat.new')),
      del);
  });
  ui.convList.replaceChildren(...items);
  if (!items.length) ui.convList.append(el('li', { class: 'conv-empty', text: t('chat.none') }));
  ui.convTitle.textContent = state.conv ? titleOf(state.conv) : t('chat.new');
  document.title = state.conv ? t('page.titleOf', { title: titleOf(state.conv) }) : t('page.title');
}

// ---------------------------------------------------------------------------------------------
// Messages

function renderMessages() {
  const conv = state.conv;
  if (!conv || conv.messages.length === 0) {
    ui.messages.replaceChildren(emptyState(state.model.id));
    return;
  }
  const nodes = conv.messages.map((m) => {
    const node = m.role === 'user' ? userMessage(m) : assistantMessage(m);
    if (state.busy && state.busy.msg === m) state.busy.node = node;
    return node;
  });
  ui.messages.replaceChildren(...nodes);
  scrollToBottom(true);
}

function nearBottom() {
  const m = ui.messages;
  return m.scrollHeight - m.scrollTop - m.clientHeight < 80;
}

function scrollToBottom(force) {
  if (force || nearBottom()) ui.messages.scrollTop = ui.messages.scrollHeight;
}

let frame = 0;
let lastSave = 0;
function scheduleUpdate() {
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    const b = state.busy;
    if (!b) return;
    if (Date.now() - lastSave > 2000) {  // keep the partial answer if the page goes away
      lastSave = Date.now();
      saveConversation(b.conv);
    }
    if (!b.node || !b.node.isConnected) return;
    const stick = nearBottom();
    updateAssistant(b.node, b.msg);
    if (stick) scrollToBottom(true);
  });
}

// ---------------------------------------------------------------------------------------------
// Sending and streaming

async function send() {
  if (state.busy) return;
  const text = ui.input.value.trim();
  if (!text && state.pending.length === 0) return;
  if (!state.conv) state.conv = { id: newId(), created: Date.now(), messages: [] };
  const conv = state.conv;
  conv.messages.push({ role: 'user', text, images: state.pending });
  const msg = { role: 'assistant', content: '', reasoning: '', pending: true };
  conv.messages.push(msg);
  ui.input.value = '';
  autoGrow();
  state.pending = [];
  renderAttachments();
  hideNotice();

  const body = buildRequest(conv, state.settings, state.model.id);
  const controller = new AbortController();
  state.busy = { controller, conv, msg, node: null };
  store.setCurrent(conv.id);
  saveConversation(conv);
  renderMessages();
  renderSidebar();
  setBusy(true);

  try {
    if (!state.model.id) await loadModel();
    if (!body.model && state.model.id) body.model = state.model.id;
    for await (const chunk of streamChat(body, { signal: controller.signal, apiKey: state.apiKey })) {
      const choice = chunk.choices && chunk.choices[0];
      const delta = (choice && choice.delta) || {};
      if (typeof delta.reasoning_content === 'string') msg.reasoning += delta.reasoning_content;
      if (typeof delta.content === 'string') msg.content += delta.content;
      if (choice && choice.finish_reason) msg.finish = choice.finish_reason;
      if (chunk.usage || chunk.timings) msg.stats = statsFrom(chunk.usage, chunk.timings);
      scheduleUpdate();
    }
  } catch (e) {
    if (e && e.name === 'AbortError') msg.stopped = true;
    else if (e instanceof TypeError) msg.error = t('error.unreachable', { error: e.message });
    else msg.error = (e && e.message) || String(e);
    if (e && e.status === 401) {
      msg.error = t('error.enterKey', { error: msg.error });
      askForKey(e.message);
    }
  } finally {
    msg.pending = false;
    if (state.busy && state.busy.msg === msg) {
      const node = state.busy.node;
      state.busy = null;
      if (node && node.isConnected) updateAssistant(node, msg);
    }
    saveConversation(conv);
    setBusy(false);
    const ctx = state.model.contextSize;
    const used = msg.stats ? (msg.stats.promptTokens || 0) + (msg.stats.completionTokens || 0) : 0;
    if (ctx && used > 0.85 * ctx && state.conv === conv) {
      showNotice(t('notice.contextFull', { used, ctx }));
    }
    if (state.conv === conv) {
      renderSidebar();
      scrollToBottom(false);
    }
  }
}

function stopGeneration() {
  if (state.busy) state.busy.controller.abort();
}

function setBusy(busy) {
  ui.send.hidden = busy;
  ui.stop.hidden = !busy;
  ui.app.classList.toggle('busy', busy);
  if (!busy && document.activeElement === document.body) ui.input.focus();
}

// ---------------------------------------------------------------------------------------------
// Attachments

async function addFiles(files) {
  if (state.model.hasVision === false) return showNotice(t('attach.cannotSee'));
  const images = await readImages(files, (err) => showNotice(t('attach.failed', { error: err })));
  if (!images.length) return;
  state.pending.push(...images);
  renderAttachments();
}

// One thumbnail strip per attached video, kept across re-renders (drawing one seeks the clip).
const strips = new WeakMap();
function stripOf(im) {
  if (!strips.has(im)) strips.set(im, videoStrip(im.url));
  return strips.get(im);
}

function renderAttachments() {
  ui.attachments.hidden = state.pending.length === 0;
  ui.attachments.replaceChildren(...state.pending.map((im, k) =>
    el('div', { class: 'attachment', 'data-testid': 'attachment' },
      showsAsVideo(im)
        ? el('video', { src: im.url, title: im.name, muted: '', preload: 'metadata', 'data-testid': 'attachment-preview' })
        : el('img', { src: im.url, alt: im.name, 'data-testid': 'attachment-preview' }),
      showsAsVideo(im) ? stripOf(im) : null,
      el('button', {
        type: 'button', class: 'attachment-remove', 'data-testid': 'attachment-remove',
        'aria-label': t('attach.remove', { name: im.name }),
        onclick: () => { state.pending.splice(k, 1); renderAttachments(); },
      }, '\u00d7'))));
}

// ---------------------------------------------------------------------------------------------
// Settings, notices, drawer, input

function loadSettingsIntoForm() {
  const s = state.settings;
  ui.thinking.checked = !!s.thinking;
  ui.setSystem.value = s.systemPrompt || '';
  ui.setTemperature.value = s.temperature ?? '';
  ui.setMaxTokens.value = s.maxTokens ?? '';
  ui.setApiKey.value = state.apiKey;
}

// `thinkingChosen`: the user flipped the toggle, so the stored choice wins over the default.
function readSettingsForm({ thinkingChosen = false } = {}) {
  const num = (v) => (v.trim() === '' ? '' : Number(v));
  state.settings = {
    ...state.settings,
    thinking: ui.thinking.checked,
    ...(thinkingChosen ? { thinkingChosen: true } : {}),
    systemPrompt: ui.setSystem.value,
    temperature: num(ui.setTemperature.value),
    maxTokens: num(ui.setMaxTokens.value),
  };
  store.saveSettings(state.settings);
}

function showNotice(text) {
  ui.notice.replaceChildren(el('span', {}, text),
    el('button', { type: 'button', class: 'icon-btn', 'aria-label': t('notice.dismiss'), onclick: hideNotice }, '\u00d7'));
  ui.notice.hidden = false;
}

function hideNotice() {
  ui.notice.hidden = true;
}

function openDrawer() {
  ui.app.classList.add('drawer-open');
  ui.menu.setAttribute('aria-expanded', 'true');
}

function closeDrawer() {
  ui.app.classList.remove('drawer-open');
  ui.menu.setAttribute('aria-expanded', 'false');
}

function autoGrow() {
  ui.input.style.height = 'auto';
  ui.input.style.height = Math.min(ui.input.scrollHeight, 200) + 'px';
}

async function copyCode(button) {
  const block = button.closest('.code-block');
  const code = block && block.querySelector('pre');
  if (!code) return;
  const text = code.textContent;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const ta = el('textarea', { class: 'offscreen' });
    ta.value = text;
    document.body.append(ta);
    ta.select();
    document.execCommand('copy');
    ta.remove();
  }
  button.textContent = t('code.copied');
  setTimeout(() => { button.textContent = t('code.copy'); }, 1500);
}

// Shows the page in `lang` (everything drawn so far is drawn again); `remember` keeps the pick.
function applyLanguage(lang, { remember = false } = {}) {
  setLanguage(lang);
  if (remember) store.saveLanguage(language());
  translatePage(document);
  ui.lang.value = language();
  renderModel();
  if (state.keyMessage) ui.keyMessage.textContent = t(...state.keyMessage);
  renderSidebar();
  renderMessages();
  renderAttachments();
}

function memoryStorage() {
  const m = new Map();
  return {
    getItem: (k) => (m.has(k) ? m.get(k) : null),
    setItem: (k, v) => m.set(k, String(v)),
    removeItem: (k) => m.delete(k),
  };
}

// ---------------------------------------------------------------------------------------------
// Wiring

ui.composer.addEventListener('submit', (e) => {
  e.preventDefault();
  send();
});
ui.input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
});
ui.input.addEventListener('input', autoGrow);
ui.input.addEventListener('paste', (e) => {
  const files = pastedImages(e);
  if (!files.length) return;
  if (!e.clipboardData.types.includes('text/plain')) e.preventDefault();
  addFiles(files);
});
ui.stop.addEventListener('click', stopGeneration);
ui.attach.addEventListener('click', () => ui.fileInput.click());
ui.fileInput.addEventListener('change', () => {
  addFiles(ui.fileInput.files);
  ui.fileInput.value = '';
});
watchDrops(window, ui.dropOverlay, addFiles);

ui.newChat.addEventListener('click', newChat);
ui.menu.addEventListener('click', () => (ui.app.classList.contains('drawer-open') ? closeDrawer() : openDrawer()));
ui.backdrop.addEventListener('click', closeDrawer);
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && ui.app.classList.contains('drawer-open')) closeDrawer();
});

ui.thinking.addEventListener('change', () => readSettingsForm({ thinkingChosen: true }));
ui.lang.addEventListener('change', () => applyLanguage(ui.lang.value, { remember: true }));
ui.settingsOpen.addEventListener('click', () => {
  loadSettingsIntoForm();
  ui.settings.showModal();
});
for (const input of [ui.setSystem, ui.setTemperature, ui.setMaxTokens]) input.addEventListener('input', () => readSettingsForm());
ui.setApiKey.addEventListener('change', () => {
  setApiKey(ui.setApiKey.value.trim());
  state.model.id = '';
  loadModel();
});
ui.keyForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const key = ui.keyInput.value.trim();
  if (!key) return;
  setApiKey(key);
  ui.keyDialog.close();
  state.model.id = '';
  loadModel();
});
ui.settings.addEventListener('click', (e) => {
  if (e.target === ui.settings) ui.settings.close();  // a click on the backdrop
});

ui.messages.addEventListener('click', (e) => {
  const copy = e.target.closest('.copy-code');
  if (copy) return copyCode(copy);
  const img = e.target.closest('img.msg-image');
  if (img) img.classList.toggle('zoomed');
});

// Start: the language, settings, the last open conversation, the model.
ui.lang.replaceChildren(...Object.entries(LANGUAGES).map(([code, name]) => el('option', { value: code, lang: code }, name)));
loadSettingsIntoForm();
state.conv = loadConversation(store.current());
applyLanguage(pickLanguage(store.language(), navigator.languages || [navigator.language]));
loadModel({ retry: true });
if (matchMedia('(pointer: fine)').matches) ui.input.focus();  // no keyboard popping up on phones
