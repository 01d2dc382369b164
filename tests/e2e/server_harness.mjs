// Starts `qwen35 serve` for the end-to-end tests and reads its /metrics.
//
// QWEN35_BIN   the qwen35 binary (default <repo>/build/bin/qwen35; CTest sets it)
//
// startServer() runs the binary with the bundled tiny model on a free port (--port 0: the port
// is read from the "listening on http://..." line it prints; model: null starts it without -m;
// env adds environment variables), waits until /health answers 200
// and returns {url, baseURL, stop(), log()}: url ends with "/", baseURL is url + "v1" (what the
// openai client wants).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const E2E_DIR = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(E2E_DIR, '../..');
export const BIN = process.env.QWEN35_BIN || join(REPO, 'build/bin/qwen35');
export const TINY_MODEL = join(REPO, 'tests/data/tiny-qwen35');
export const MODEL_ID = 'tiny-qwen35';
export const CAT_PNG = join(TINY_MODEL, 'chelsea.png');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function startServer({ args = [], model = TINY_MODEL, env = {}, timeoutMs = 120_000 } = {}) {
  if (!existsSync(BIN)) throw new Error(`no qwen35 binary at ${BIN}: build the qwen35_cli target or set QWEN35_BIN`);
  const modelArgs = model ? ['-m', model] : [];
  const child = spawn(BIN, ['serve', ...modelArgs, '--host', '127.0.0.1', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let output = '';
  let exited = null;
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  const exitedPromise = new Promise((r) => child.on('exit', (code, signal) => { exited = { code, signal }; r(exited); }));
  const stop = async () => {
    if (!exited) child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const result = await exitedPromise;
    clearTimeout(t);
    return result;
  };
  try {
    const deadline = Date.now() + timeoutMs;
    let url = null;
    while (!url) {
      const m = /listening on (http:\/\/\S+?)\/?\s/.exec(output);
      if (m) url = m[1] + '/';
      else if (exited) throw new Error(`qwen35 serve exited (${JSON.stringify(exited)}) before listening:\n${output}`);
      else if (Date.now() > deadline) throw new Error(`qwen35 serve did not print its address in time:\n${output}`);
      else await sleep(20);
    }
    let last = '';
    for (;;) {
      if (exited) throw new Error(`qwen35 serve exited while loading:\n${output}`);
      if (Date.now() > deadline) throw new Error(`${url}health was not 200 in time (${last}):\n${output}`);
      try {
        const res = await fetch(url + 'health');
        if (res.status === 200) break;
        last = `HTTP ${res.status}`;
      } catch (e) {
        last = String(e.message || e);
      }
      await sleep(50);
    }
    return { url, baseURL: url + 'v1', stop, log: () => output, child };
  } catch (e) {
    await stop();
    throw e;
  }
}

// The value of one Prometheus series ("name" or 'name{label="x"}') from /metrics; 0 when absent.
export async function metric(url, series) {
  const text = await (await fetch(url + 'metrics')).text();
  for (const line of text.split('\n')) {
    if (line.startsWith(series + ' ')) return Number(line.slice(series.length + 1));
  }
  return 0;
}

// Polls `check` (async, returns truthy when done) until it holds or `timeoutMs` passes.
export async function waitFor(check, timeoutMs = 10_000, what = 'condition') {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}
