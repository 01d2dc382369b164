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

// Whether a GIF or WebP file holds more than one frame (read from its block and chunk headers,
// nothing decoded): such a file is sent as a short video, a still one as an image.
export function isAnimatedImage(bytes) {
  const at = (p, text) => [...text].every((c, i) => bytes[p + i] === c.charCodeAt(0));
  if (at(0, 'GIF8')) return gifFrames(bytes) > 1;
  if (at(0, 'RIFF') && at(8, 'WEBP')) return webpFrames(bytes) > 1;
  return false;
}

// Image descriptors up to 2; a block cut short ends the count.
function gifFrames(b) {
  if (b.length < 13) return 0;
  const table = (flags) => (flags & 0x80 ? 3 << ((flags & 7) + 1) : 0);
  // Past a run of sub-blocks and its empty terminator; -1 when the file ends first.
  const skipBlocks = (p) => {
    while (p < b.length) {
      const n = b[p];
      p += 1 + n;
      if (n === 0) return p;
    }
    return -1;
  };
  let p = 13 + table(b[10]);
  let frames = 0;
  while (p >= 0 && p < b.length && frames < 2) {
    if (b[p] === 0x21) {
      p = skipBlocks(p + 2);  // introducer, label, then the extension's sub-blocks
    } else if (b[p] === 0x2c) {
      if (p + 11 > b.length) break;
      p = skipBlocks(p + 10 + table(b[p + 9]) + 1);  // descriptor, local table, LZW code size, data
      if (p >= 0) frames++;
    } else {
      break;
    }
  }
  return frames;
}

// ANMF chunks of a WebP file.
function webpFrames(b) {
  let frames = 0;
  for (let p = 12; p + 8 <= b.length;) {
    const size = (b[p + 4] | (b[p + 5] << 8) | (b[p + 6] << 16) | (b[p + 7] << 24)) >>> 0;
    if (String.fromCharCode(b[p], b[p + 1], b[p + 2], b[p + 3]) === 'ANMF') frames++;
    p += 8 + size + (size & 1);
  }
  return frames;
}

// What a preview shows an attachment in: a video element for videos, an image for images and
// animated GIF/WebP (browsers animate those in <img>).
export function showsAsVideo(item) {
  return item.kind === 'video' && !/^data:image\//.test(item.url || '');
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

// Files -> [{name, url, kind}] (kind 'image' or 'video'; an animated GIF or WebP is a video); files
// that are too big or unreadable are reported through onError.
export async function readImages(files, onError) {
  const out = [];
  for (const f of imageFiles(files)) {
    let kind = isVideo(f) ? 'video' : 'image';
    if (/^image\/(gif|webp)$/.test(f.type) && f.size <= MAX_VIDEO_BYTES) {
      try {
        if (isAnimatedImage(new Uint8Array(await f.arrayBuffer()))) kind = 'video';
      } catch (e) {
        // unreadable here: reading it as a data: URL below reports the problem
      }
    }
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
