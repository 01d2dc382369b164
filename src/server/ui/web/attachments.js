// Images and videos the user is about to send: reading files as data: URLs, and the files in a
// paste or a drop. Several per message are allowed; a video is sent whole and the server samples
// its frames.
import { t } from './i18n.js';

export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;  // the server's limit for one image
// A video travels as base64 inside the request body (32 MiB by default): 4/3 of this, plus the rest.
export const MAX_VIDEO_BYTES = 20 * 1024 * 1024;

const MEDIA = /^(image|video)\//;

export function isVideo(file) {
  return /^video\//.test(file.type);
}

export function imageFiles(list) {
  return Array.from(list || []).filter((f) => f && MEDIA.test(f.type));
}

export function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result));
    r.onerror = () => reject(r.error || new Error('could not read ' + file.name));
    r.readAsDataURL(file);
  });
}

// Files -> [{name, url, kind}] (kind 'image' or 'video'); files that are too big or unreadable
// are reported through onError.
export async function readImages(files, onError) {
  const out = [];
  for (const f of imageFiles(files)) {
    const kind = isVideo(f) ? 'video' : 'image';
    const limit = kind === 'video' ? MAX_VIDEO_BYTES : MAX_IMAGE_BYTES;
    if (f.size > limit) {
      onError(t('attach.tooBig', { name: f.name, mb: limit >> 20 }));
      continue;
    }
    try {
      out.push({ name: f.name || kind, url: await readAsDataUrl(f), kind });
    } catch (e) {
      onError(String(e.message || e));
    }
  }
  return out;
}

// Image and video files on the clipboard of a paste event.
export function pastedImages(event) {
  const items = (event.clipboardData && event.clipboardData.items) || [];
  return Array.from(items).filter((it) => it.kind === 'file' && MEDIA.test(it.type)).map((it) => it.getAsFile()).filter(Boolean);
}

// Calls onFiles with the files dropped anywhere on the page; shows `overlay` while dragging.
export function watchDrops(target, overlay, onFiles) {
  let depth = 0;
  const hasFiles = (e) => e.dataTransfer && Array.from(e.dataTransfer.types || []).includes('Files');
  target.addEventListener('dragenter', (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    depth++;
    overlay.hidden = false;
  });
  target.addEventListener('dragover', (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = 'copy';
  });
  target.addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) overlay.hidden = true;
  });
  target.addEventListener('drop', (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    depth = 0;
    overlay.hidden = true;
    onFiles(e.dataTransfer.files);
  });
}
