// Thumbnail strips of attached videos: a few frames, evenly spread over the clip, drawn by the
// browser itself (seek a hidden <video>, copy the frame to a canvas), so the user sees what they are
// about to send. A clip the browser cannot decode simply gets no strip; the server decodes it anyway.
import { el } from './dom.js';

export const STRIP_FRAMES = 6;
const STRIP_HEIGHT = 64;
const SEEK_TIMEOUT_MS = 5000;

// The middles of n equal parts of a clip of `duration` seconds; [0] when the duration is unknown.
export function stripTimes(duration, n = STRIP_FRAMES) {
  if (!(duration > 0) || !Number.isFinite(duration)) return [0];
  return Array.from({ length: n }, (_, k) => (duration * (k + 0.5)) / n);
}

function seek(video, time) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('seek timed out')), SEEK_TIMEOUT_MS);
    video.addEventListener('seeked', () => { clearTimeout(timer); resolve(); }, { once: true });
    video.currentTime = time;
  });
}

// A strip element that fills with canvases (data-testid video-thumb) as the frames are drawn.
export function videoStrip(url) {
  const strip = el('div', { class: 'thumb-strip', 'data-testid': 'video-strip' });
  const video = document.createElement('video');
  video.muted = true;
  video.preload = 'auto';
  const done = () => { video.removeAttribute('src'); video.load(); };
  video.addEventListener('error', done, { once: true });
  video.addEventListener('loadeddata', async () => {
    const height = STRIP_HEIGHT;
    const width = Math.max(1, Math.round((height * video.videoWidth) / Math.max(1, video.videoHeight)));
    try {
      for (const time of stripTimes(video.duration)) {
        await seek(video, time);
        const canvas = el('canvas', { class: 'thumb', width, height, 'data-testid': 'video-thumb' });
        canvas.getContext('2d').drawImage(video, 0, 0, width, height);
        strip.append(canvas);
      }
    } catch (e) {
      // a frame that does not come: the strip keeps what it has
    }
    done();
  }, { once: true });
  video.src = url;
  return strip;
}
