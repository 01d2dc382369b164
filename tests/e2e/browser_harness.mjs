// Shared pieces of the browser tests: start `qwen35 serve` with the tiny model, launch Debian's
// chromium through playwright-core, and keep screenshots under tests/e2e/artifacts/.
//
// QWEN35_BIN     the qwen35 binary (default <repo>/build/bin/qwen35)
// QWEN35_E2E_URL use a server that is already running instead of starting one (development)
// CHROMIUM       the browser (default /usr/bin/chromium)
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const E2E_DIR = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(E2E_DIR, '../..');
export const BIN = process.env.QWEN35_BIN || join(REPO, 'build/bin/qwen35');
export const TINY_MODEL = join(REPO, 'tests/data/tiny-qwen35');
export const CAT_PNG = join(TINY_MODEL, 'chelsea.png');
export const ARTIFACTS = join(E2E_DIR, 'artifacts');

// Starts the server on a free port (--port 0; the port is read from its "listening on" line) and
// waits until /health answers 200. Returns {url, stop(), log()}; url ends with "/".
export async function startServer({ args = [], timeoutMs = 120_000 } = {}) {
  if (process.env.QWEN35_E2E_URL) {
    const url = process.env.QWEN35_E2E_URL.replace(/\/?$/, '/');
    await waitForHealth(url, timeoutMs, () => false);
    return { url, stop: async () => {}, log: () => '' };
  }
  if (!existsSync(BIN)) throw new Error(`no qwen35 binary at ${BIN}: build the qwen35_cli target or set QWEN35_BIN`);
  const child = spawn(BIN, ['serve', '-m', TINY_MODEL, '--host', '127.0.0.1', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let exited = null;
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  child.on('exit', (code, signal) => { exited = { code, signal }; });
  const stop = async () => {
    if (exited) return;
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await new Promise((r) => (exited ? r() : child.once('exit', r)));
    clearTimeout(t);
  };
  try {
    const deadline = Date.now() + timeoutMs;
    let url = null;
    while (!url) {
      const m = /listening on (http:\/\/\S+?)\/?\s/.exec(output);
      if (m) url = m[1] + '/';
      else if (exited) throw new Error(`qwen35 serve exited (${JSON.stringify(exited)}) before listening:\n${output}`);
      else if (Date.now() > deadline) throw new Error(`qwen35 serve did not print its address in time:\n${output}`);
      else await sleep(50);
    }
    await waitForHealth(url, deadline - Date.now(), () => exited, () => output);
    return { url, stop, log: () => output };
  } catch (e) {
    await stop();
    throw e;
  }
}

async function waitForHealth(url, timeoutMs, exited, output = () => '') {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    if (exited()) throw new Error(`qwen35 serve exited while loading:\n${output()}`);
    try {
      const res = await fetch(url + 'health');
      if (res.status === 200) return;
      last = `HTTP ${res.status}`;
    } catch (e) {
      last = String(e.message || e);
    }
    await sleep(100);
  }
  throw new Error(`${url}health was not ready in time (${last})\n${output()}`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

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

// A page in a new context that records console errors and uncaught exceptions.
export async function openPage(browser, url, { viewport = { width: 1200, height: 800 }, context = null } = {}) {
  const ctx = context || (await browser.newContext({ viewport }));
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
