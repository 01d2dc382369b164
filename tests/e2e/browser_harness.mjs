// Shared pieces of the browser tests: the server from server_harness.mjs (`qwen35 serve` with
// the tiny model on a free port), Debian's chromium through playwright-core, and screenshots under
// tests/e2e/artifacts/.
//
// QWEN35_BIN     the qwen35 binary (default <repo>/build/bin/qwen35; CTest sets it)
// QWEN35_E2E_URL use a server that is already running instead of starting one (development)
// CHROMIUM       the browser (default /usr/bin/chromium)
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { CAT_PNG, E2E_DIR, startServer as startQwen35 } from './server_harness.mjs';

export { CAT_PNG };
export const ARTIFACTS = join(E2E_DIR, 'artifacts');

// {url, stop()}; url ends with "/". `options` go to server_harness.mjs' startServer (args, env).
export async function startServer(options = {}) {
  const url = process.env.QWEN35_E2E_URL;
  if (url && !options.args) return { url: url.replace(/\/?$/, '/'), stop: async () => {} };
  return startQwen35(options);
}

// Chromium from Debian, headless. Each launch gets a fresh temporary profile (user-data dir),
// and each test a fresh context inside it.
export async function launchBrowser() {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

// A page in a new context that records console errors and uncaught exceptions. The browser's
// language is `locale` (the page follows it: English unless a test asks for another).
export async function openPage(browser, url, { viewport = { width: 1200, height: 800 }, locale = 'en-US', context = null } = {}) {
  const ctx = context || (await browser.newContext({ viewport, locale }));
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push('pageerror: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
  await page.goto(url);
  return { context: ctx, page, errors };
}

export async function screenshot(page, name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, name + '.png');
  await page.screenshot({ path });
  return path;
}
