// The page's words in English and Japanese. t(key, params) looks a key up in the current language
// (English when the key is missing there) and fills {name} placeholders from params. The language
// is the one the user picked (kept by storage.js), else the first of the browser's languages that
// has a table, else English. index.html marks its static text with data-i18n (text) and
// data-i18n-placeholder / -title / -aria-label (attributes); translatePage() fills them.

export const LANGUAGES = Object.freeze({ en: 'English', ja: '日本語' });

export const MESSAGES = Object.freeze({
  en: {
    'page.title': 'qwen35 chat',
    'page.titleOf': '{title} - qwen35',
    'lang.label': 'Language',
    'sidebar.label': 'Conversations',
    'chat.new': 'New chat',
    'chat.image': 'Image',
    'chat.none': 'No conversations yet',
    'chat.delete': 'Delete',
    'chat.deleteLabel': 'Delete conversation: {title}',
    'chat.confirm': 'Delete?',
    'chat.confirmLabel': 'Confirm delete: {title}',
    'menu.open': 'Open conversations',
    'model.connecting': 'connecting...',
    'model.none': 'no model',
    'model.context': 'context {n} tokens',
    'model.keyNeeded': 'API key needed',
    'model.unreachable': 'server unreachable',
    'settings.open': 'Settings',
    'messages.label': 'Messages',
    'attach.label': 'Attach images or videos',
    'attach.choose': 'Choose images or videos',
    'attach.noVision': 'This model has no vision tower',
    'attach.cannotSee': 'This model cannot see images or videos.',
    'attach.failed': 'Could not attach: {error}',
    'attach.tooBig': '{name} is larger than {mb} MB',
    'attach.remove': 'Remove {name}',
    'attach.drop': 'Drop images or videos to attach',
    'input.placeholder': 'Message qwen35',
    'input.label': 'Message',
    'send': 'Send',
    'stop': 'Stop',
    'thinking': 'Thinking',
    'thinking.title': 'The model reasons before it answers',
    'hint': 'Enter to send, Shift+Enter for a new line',
    'settings.title': 'Settings',
    'settings.system': 'System prompt',
    'settings.systemPlaceholder': 'You are a helpful assistant.',
    'settings.temperature': 'Temperature',
    'settings.maxTokens': 'Max tokens',
    'settings.apiKey': 'API key',
    'settings.apiKeyPlaceholder': 'only for servers started with --api-key',
    'settings.help': "Saved in this browser. Empty fields use the server's defaults.",
    'settings.done': 'Done',
    'settings.close': 'Close settings',
    'key.title': 'API key',
    'key.needed': 'This server needs an API key.',
    'key.rejected': 'The server did not accept the stored key ({error}). Enter the right one.',
    'key.incorrect': 'incorrect API key',
    'key.labelBefore': 'Key (as given to ',
    'key.labelAfter': ')',
    'key.kept': 'Kept in this browser and sent with every request.',
    'key.use': 'Use key',
    'key.useLabel': 'Use this key',
    'notice.dismiss': 'Dismiss notice',
    'notice.saveFailed': 'Could not save this conversation in the browser: {error}',
    'notice.storageError': 'storage error',
    'notice.imagesDropped': 'Browser storage is full: images of this conversation were not saved; they stay visible until you reload.',
    'notice.contextFull': 'This conversation uses {used} of {ctx} context tokens: start a new chat soon.',
    'error.unreachable': 'Could not reach the server: {error}',
    'error.enterKey': '{error} (enter the API key, then send again)',
    'error.noBody': 'The server sent no response body.',
    'error.malformed': 'The server sent a malformed event: {event}',
    'empty.heading': 'What can I help with?',
    'empty.withModel': 'Chatting with {model}. Attach, paste or drop images or videos to ask about them.',
    'empty.noModel': 'Attach, paste or drop images or videos to ask about them.',
    'message.imageAlt': 'image {n}',
    'message.videoAlt': 'video {n}',
    'message.imageDropped': 'image not saved (browser storage was full)',
    'reasoning.thinking': 'Thinking...',
    'reasoning.done': 'Reasoning ({words} words)',
    'note.stopped': 'stopped',
    'note.length': 'max tokens reached',
    'note.separator': ', ',
    'stats.prefill': 'prefill {rate} tok/s',
    'stats.decode': 'decode {rate} tok/s',
    'stats.cached': 'cached {n} tok',
    'stats.tokens': '{in} in, {out} out',
    'stats.vision': 'vision {ms} ms',
    'code.copy': 'Copy',
    'code.copyLabel': 'Copy code',
    'code.copied': 'Copied',
  },
  ja: {
    'page.title': 'qwen35 チャット',
    'page.titleOf': '{title} - qwen35',
    'lang.label': '表示言語',
    'sidebar.label': '会話一覧',
    'chat.new': '新しい会話',
    'chat.image': '画像',
    'chat.none': 'まだ会話はありません',
    'chat.delete': '削除',
    'chat.deleteLabel': '会話を削除: {title}',
    'chat.confirm': '削除しますか？',
    'chat.confirmLabel': '削除を確定: {title}',
    'menu.open': '会話一覧を開く',
    'model.connecting': '接続中...',
    'model.none': 'モデルなし',
    'model.context': 'コンテキスト {n} トークン',
    'model.keyNeeded': 'APIキーが必要です',
    'model.unreachable': 'サーバーに接続できません',
    'settings.open': '設定',
    'messages.label': 'メッセージ',
    'attach.label': '画像または動画を添付',
    'attach.choose': '画像または動画を選択',
    'attach.noVision': 'このモデルには画像認識機能がありません',
    'attach.cannotSee': 'このモデルは画像や動画を扱えません。',
    'attach.failed': '添付できませんでした: {error}',
    'attach.tooBig': '{name} は {mb} MB を超えています',
    'attach.remove': '{name} を削除',
    'attach.drop': 'ドロップして画像または動画を添付',
    'input.placeholder': 'qwen35 にメッセージを送信',
    'input.label': 'メッセージ',
    'send': '送信',
    'stop': '停止',
    'thinking': '思考モード',
    'thinking.title': 'モデルが回答の前に考えます',
    'hint': 'Enter で送信、Shift+Enter で改行',
    'settings.title': '設定',
    'settings.system': 'システムプロンプト',
    'settings.systemPlaceholder': 'あなたは親切なアシスタントです。',
    'settings.temperature': '温度（temperature）',
    'settings.maxTokens': '最大トークン数',
    'settings.apiKey': 'APIキー',
    'settings.apiKeyPlaceholder': '--api-key 付きで起動したサーバーのみ',
    'settings.help': 'このブラウザーに保存されます。空欄の項目はサーバーの既定値を使います。',
    'settings.done': '完了',
    'settings.close': '設定を閉じる',
    'key.title': 'APIキー',
    'key.needed': 'このサーバーにはAPIキーが必要です。',
    'key.rejected': '保存されているキーはサーバーに受け付けられませんでした（{error}）。正しいキーを入力してください。',
    'key.incorrect': 'APIキーが正しくありません',
    'key.labelBefore': 'キー（',
    'key.labelAfter': ' で指定したもの）',
    'key.kept': 'このブラウザーに保存され、すべてのリクエストに付けて送信されます。',
    'key.use': 'このキーを使う',
    'key.useLabel': 'このキーを使う',
    'notice.dismiss': 'お知らせを閉じる',
    'notice.saveFailed': 'この会話をブラウザーに保存できませんでした: {error}',
    'notice.storageError': 'ストレージのエラー',
    'notice.imagesDropped': 'ブラウザーの保存領域がいっぱいです。この会話の画像は保存されませんでした（再読み込みするまでは表示されます）。',
    'notice.contextFull': 'この会話はコンテキスト {ctx} トークンのうち {used} トークンを使っています。そろそろ新しい会話を始めてください。',
    'error.unreachable': 'サーバーに接続できませんでした: {error}',
    'error.enterKey': '{error}（APIキーを入力してから、もう一度送信してください）',
    'error.noBody': 'サーバーから応答本文が返されませんでした。',
    'error.malformed': 'サーバーから不正なイベントが届きました: {event}',
    'empty.heading': '何かお手伝いできることはありますか？',
    'empty.withModel': '{model} と会話中です。画像や動画を添付・貼り付け・ドロップして質問することもできます。',
    'empty.noModel': '画像や動画を添付・貼り付け・ドロップして質問することもできます。',
    'message.imageAlt': '画像 {n}',
    'message.videoAlt': '動画 {n}',
    'message.imageDropped': '画像は保存されていません（ブラウザーの保存領域がいっぱいでした）',
    'reasoning.thinking': '考え中...',
    'reasoning.done': '思考過程（{chars} 文字）',
    'note.stopped': '停止しました',
    'note.length': '最大トークン数に達しました',
    'note.separator': '、',
    'stats.prefill': 'プリフィル {rate} tok/s',
    'stats.decode': 'デコード {rate} tok/s',
    'stats.cached': 'キャッシュ {n} tok',
    'stats.tokens': '入力 {in}、出力 {out}',
    'stats.vision': '画像処理 {ms} ms',
    'code.copy': 'コピー',
    'code.copyLabel': 'コードをコピー',
    'code.copied': 'コピーしました',
  },
});

let current = 'en';

// The language for `stored` (the user's pick, if any) and the browser's list (navigator.languages):
// the pick when there is a table for it, else the first listed language with one ("ja-JP" -> "ja").
export function pickLanguage(stored, preferred = []) {
  if (stored && Object.hasOwn(MESSAGES, stored)) return stored;
  for (const tag of preferred || []) {
    const base = String(tag || '').toLowerCase().split(/[-_]/)[0];
    if (Object.hasOwn(MESSAGES, base)) return base;
  }
  return 'en';
}

export function language() {
  return current;
}

// Unknown languages are English.
export function setLanguage(lang) {
  current = Object.hasOwn(MESSAGES, lang) ? lang : 'en';
  return current;
}

export function t(key, params = {}) {
  const text = MESSAGES[current][key] ?? MESSAGES.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (m, name) => (Object.hasOwn(params, name) ? String(params[name]) : m));
}

const ATTRIBUTES = [['data-i18n-placeholder', 'placeholder'], ['data-i18n-title', 'title'], ['data-i18n-aria-label', 'aria-label']];

// Fills the marked elements under `root` (a document or an element) in the current language,
// and sets <html lang> and the title when `root` is the document.
export function translatePage(root = document) {
  for (const e of root.querySelectorAll('[data-i18n]')) e.textContent = t(e.dataset.i18n);
  for (const [data, attr] of ATTRIBUTES) {
    for (const e of root.querySelectorAll(`[${data}]`)) e.setAttribute(attr, t(e.getAttribute(data)));
  }
  if (root.documentElement) root.documentElement.lang = current;
}
