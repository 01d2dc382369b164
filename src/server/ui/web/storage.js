// Conversations and settings in localStorage (any object with getItem/setItem/removeItem, so
// tests can pass a fake). Layout: "qwen35.index" lists {id, title, updated}; each conversation is
// "qwen35.conv.<id>"; settings are "qwen35.settings"; the open one is "qwen35.current"; the API
// key of a server started with --api-key is "qwen35.apiKey" (this origin's storage only); the
// language the user picked, if any, is "qwen35.lang".
//
// Thinking is on by default (as for the model, the API and the CLI). Settings saved before that
// default changed hold thinking: false whether or not the user ever touched the toggle, so only a
// setting marked thinkingChosen (set when the user flips the toggle) overrides the default.
//
// Images are stored as data: URLs and can fill the quota. When a write hits the quota, the
// conversation is stored again without image data (each such image keeps {dropped: true} so the
// page can say so), then other conversations' images are dropped too; only if even that fails
// does saving report an error. Nothing throws to the caller.
import { t } from './i18n.js';

const INDEX = 'qwen35.index';
const CONV = 'qwen35.conv.';
const SETTINGS = 'qwen35.settings';
const CURRENT = 'qwen35.current';
const API_KEY = 'qwen35.apiKey';
const LANG = 'qwen35.lang';

export const DEFAULT_SETTINGS = Object.freeze({
  systemPrompt: '',
  temperature: 0.7,
  maxTokens: 1024,
  thinking: true,
});

export function isQuotaError(e) {
  return !!e && (e.name === 'QuotaExceededError' || e.name === 'NS_ERROR_DOM_QUOTA_REACHED' || e.code === 22 || e.code === 1014);
}

export function newId() {
  return Date.now().toString(36) + Math.random().toString(36).slice(2, 8);
}

// A copy of the conversation without image bytes.
export function withoutImages(conv) {
  let dropped = false;
  const messages = conv.messages.map((m) => {
    if (!m.images || !m.images.some((im) => im.url)) return m;
    dropped = true;
    return { ...m, images: m.images.map((im) => (im.url ? { name: im.name, dropped: true } : im)) };
  });
  return { conv: { ...conv, messages }, dropped };
}

export function titleOf(conv) {
  const first = conv.messages.find((m) => m.role === 'user');
  if (!first) return t('chat.new');
  const text = (first.text || '').replace(/\s+/g, ' ').trim();
  const chars = [...text];  // code points: an emoji is not cut in half
  if (text) return chars.length > 60 ? chars.slice(0, 57).join('') + '...' : text;
  return first.images && first.images.length ? t('chat.image') : t('chat.new');
}

export class Store {
  constructor(storage) {
    this.storage = storage;
  }

  readJson(key, fallback) {
    try {
      const text = this.storage.getItem(key);
      return text ? JSON.parse(text) : fallback;
    } catch {
      return fallback;
    }
  }

  // Newest first.
  list() {
    const index = this.readJson(INDEX, []);
    return Array.isArray(index) ? index.filter((e) => e && e.id).sort((a, b) => (b.updated || 0) - (a.updated || 0)) : [];
  }

  get(id) {
    const c = this.readJson(CONV + id, null);
    return c && Array.isArray(c.messages) ? c : null;
  }

  // Saves a conversation and its index entry: {ok, droppedImages, error}.
  save(conv) {
    const entry = { id: conv.id, title: conv.title || titleOf(conv), updated: conv.updated || Date.now() };
    const index = this.list().filter((e) => e.id !== conv.id);
    index.unshift(entry);
    const attempt = (c) => {
      this.storage.setItem(CONV + c.id, JSON.stringify(c));
      this.storage.setItem(INDEX, JSON.stringify(index));
    };
    try {
      attempt(conv);
      return { ok: true, droppedImages: false };
    } catch (e) {
      if (!isQuotaError(e)) return { ok: false, droppedImages: false, error: e };
    }
    const lean = withoutImages(conv).conv;
    try {
      attempt(lean);
      return { ok: true, droppedImages: true };
    } catch (e) {
      if (!isQuotaError(e)) return { ok: false, droppedImages: true, error: e };
    }
    // Still full: drop the images of every other stored conversation, then try once more.
    for (const other of index) {
      if (other.id === conv.id) continue;
      const c = this.get(other.id);
      if (!c) continue;
      const r = withoutImages(c);
      if (r.dropped) {
        try { this.storage.setItem(CONV + c.id, JSON.stringify(r.conv)); } catch { /* keep going */ }
      }
    }
    try {
      attempt(lean);
      return { ok: true, droppedImages: true };
    } catch (e) {
      return { ok: false, droppedImages: true, error: e };
    }
  }

  remove(id) {
    try {
      this.storage.removeItem(CONV + id);
      this.storage.setItem(INDEX, JSON.stringify(this.list().filter((e) => e.id !== id)));
    } catch { /* nothing more to do */ }
  }

  // The conversation that was open last, so a reload comes back to it.
  current() {
    try { return this.storage.getItem(CURRENT) || null; } catch { return null; }
  }

  setCurrent(id) {
    try {
      if (id) this.storage.setItem(CURRENT, id);
      else this.storage.removeItem(CURRENT);
    } catch { /* not important enough to report */ }
  }

  loadSettings() {
    const stored = this.readJson(SETTINGS, {});
    const s = { ...DEFAULT_SETTINGS, ...(stored && typeof stored === 'object' ? stored : {}) };
    if (!s.thinkingChosen || typeof s.thinking !== 'boolean') {
      s.thinking = DEFAULT_SETTINGS.thinking;
      delete s.thinkingChosen;
    }
    return s;
  }

  saveSettings(settings) {
    try {
      this.storage.setItem(SETTINGS, JSON.stringify(settings));
      return true;
    } catch {
      return false;
    }
  }

  // '' when none is stored.
  apiKey() {
    try {
      return this.storage.getItem(API_KEY) || '';
    } catch {
      return '';
    }
  }

  // The language the user picked ('' when none: the browser's languages decide).
  language() {
    try {
      return this.storage.getItem(LANG) || '';
    } catch {
      return '';
    }
  }

  saveLanguage(lang) {
    try {
      if (lang) this.storage.setItem(LANG, lang);
      else this.storage.removeItem(LANG);
      return true;
    } catch {
      return false;
    }
  }

  // Stores the key ('' removes it); false when storage refuses.
  saveApiKey(key) {
    try {
      if (key) this.storage.setItem(API_KEY, key);
      else this.storage.removeItem(API_KEY);
      return true;
    } catch {
      return false;
    }
  }
}
