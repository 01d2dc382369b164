// Images the user is about to send: reading files as data: URLs, and the files in a paste or a
// drop. Several images per message are allowed.
import { t } from './i18n.js';

export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;  // the server's limit for one image

export function imageFiles(list) {
  return Array.from(list || []).filter((f) => f && /^image\//.test(f.type));
}

export function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result));
    r.onerror = () => reject(r.error || new Error('could not read ' + file.name));
    r.readAsDataURL(file);
  });
}

// Files -> [{name, url}]; files that are too big or unreadable are reported through onError.
export async function readImages(files, onError) {
  const out = [];
  for (const f of imageFiles(files)) {
    if (f.size > MAX_IMAGE_BYTES) {
      onError(t('attach.tooBig', { name: f.name, mb: MAX_IMAGE_BYTES >> 20 }));
      continue;
    }
    try {
      out.push({ name: f.name || 'image', url: await readAsDataUrl(f) });
    } catch (e) {
      onError(String(e.message || e));
    }
  }
  return out;
}

// Image files on the clipboard of a paste event.
export function pastedImages(event) {
  const items = (event.clipboardData && event.clipboardData.items) || [];
  return Array.from(items).filter((it) => it.kind === 'file' && /^image\//.test(it.type)).map((it) => it.getAsFile()).filter(Boolean);
}

// Calls onFiles with the images dropped anywhere on the page; shows `overlay` while dragging.
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
