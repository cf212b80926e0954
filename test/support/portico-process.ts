// Runs the real `portico` CLI as a child process, as a user would, and reads the
// ports it bound from its "portico ready" log line.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/portico.js', import.meta.url));

/** Started and not yet exited. */
const running = new Set<ChildProcess>();
// A test file that ends (or is ended) with portico still running, because a test failed
// before stop(), must not leave it (and its workers) behind.
process.once('exit', () => {
  for (const child of running) child.kill('SIGTERM');
});

export interface PorticoProcess {
  child: ChildProcess;
  http: number;
  https: number;
  admin: number;
  /** Every stdout line so far, parsed when JSON. */
  logs: Record<string, unknown>[];
  stderr: string[];
  /** Resolves with the first log line (past or future) that satisfies the predicate. */
  waitForLog(pred: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** SIGTERM, then resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * `readyTimeoutMs`: how long to wait for "portico ready" (benches at 10,000 Ingresses on a
 * loaded machine take longer). `nodeArgs`: Node's own flags, before bin/portico.js.
 */
export async function startPortico(args: string[], env: NodeJS.ProcessEnv = {}, readyTimeoutMs = 40_000, nodeArgs: readonly string[] = []): Promise<PorticoProcess> {
  const child = spawn(process.execPath, [...nodeArgs, BIN, '--workers', '1', '--http-port', '0', '--https-port', '0', '--admin-port', '0', '--bind', '127.0.0.1', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  const stderr: string[] = [];
  const waiters: { pred: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(line) as Record<string, unknown>;
    } catch {
      parsed = { msg: line };
    }
    logs.push(parsed);
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i]!.pred(parsed)) {
        waiters[i]!.resolve(parsed);
        waiters.splice(i, 1);
      }
    }
  });
  createInterface({ input: child.stderr! }).on('line', (line) => stderr.push(line));

  running.add(child);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      running.delete(child);
      resolve(code);
    }),
  );

  const waitForLog = (pred: (l: Record<string, unknown>) => boolean, timeoutMs = 15_000) => {
    const past = logs.find(pred);
    if (past) return Promise.resolve(past);
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching log line within ${timeoutMs} ms; stderr: ${stderr.join('\n')}`)), timeoutMs);
      waiters.push({
        pred,
        resolve: (l) => {
          clearTimeout(timer);
          resolve(l);
        },
      });
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`portico exited with ${code}: ${stderr.join('\n')}`));
      });
    });
  };

  let ready: Record<string, unknown>;
  try {
    ready = await waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('portico ready'), readyTimeoutMs);
  } catch (err) {
    // Never ready: do not leave it (and its workers) running after the test.
    child.kill('SIGKILL');
    throw err;
  }
  return {
    child,
    http: ready.http as number,
    https: ready.https as number,
    admin: ready.admin as number,
    logs,
    stderr,
    waitForLog,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Polls `probe` until it returns true (bounded), for changes that apply asynchronously. */
export async function eventually(probe: () => Promise<boolean>, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * `count()` once it has not changed for `quietMs` (bounded): for a baseline of log lines,
 * which arrive over a pipe after what they report, and may trail a request the change
 * already serves.
 */
export async function settledCount(count: () => number, quietMs = 500, timeoutMs = 10_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last = count();
  let since = Date.now();
  for (;;) {
    await new Promise((r) => setTimeout(r, 50));
    const now = count();
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) {
      return now;
    }
    if (Date.now() > deadline) throw new Error(`the count kept changing for ${timeoutMs} ms (last ${now})`);
  }
}
