// TLS Secrets checked ahead of translation, in short-lived child processes. At start,
// 10,000 Secrets cost about 1.2 s of OpenSSL parsing (checkPems); checked here as the
// sources load them, that work runs on another core while the main thread reads the rest,
// and the first translation finds it done (createTranslator(checks.known)). And the
// malloc memory OpenSSL's parses leave goes back with the process: in portico's own main
// arena they left about 40 MB resident at 10,000 (freed, in holes), and in a worker
// thread's arena 15-40 MB, kept after the thread ended (bench/secret-checks.ts).
// Translation stays a function of its input: a Secret not checked here is checked there,
// with the same result (the same checkPems), so tests need none of this.
import type { ChildProcess } from 'node:child_process';
import { TLS_SECRET_TYPE, type Secret } from '../model/k8s.ts';
import { secretValue } from '../translate/tls.ts';
import type { PemCheck } from './pem-check.ts';
import type { CheckBatch, CheckedBatch } from './secret-check-process.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { fork } = process.getBuiltinModule('node:child_process');
const { availableParallelism } = process.getBuiltinModule('node:os');
const { fileURLToPath } = process.getBuiltinModule('node:url');

export interface SecretChecksOptions {
  /** Processes at most (default: the cores, up to 2). */
  readonly processes?: number;
  /** Secrets sent to a process at once. */
  readonly batch?: number;
  /** A process with nothing to do for this long ends. */
  readonly idleMs?: number;
}

/** Batches in flight on every process before another starts. */
const BACKLOG = 2;

interface Checker {
  readonly child: ChildProcess;
  /** Batches sent and not answered, by id. */
  readonly inFlight: Map<number, readonly Secret[]>;
  idleTimer: NodeJS.Timeout | undefined;
  /** It has answered a batch: it is up (a backlog while it starts says nothing of its pace). */
  answered: boolean;
}

export class SecretChecks {
  private results = new WeakMap<Secret, PemCheck>();
  private readonly queued = new Set<Secret>();
  private readonly checkers: Checker[] = [];
  private readonly maxProcesses: number;
  private readonly batch: number;
  private readonly idleMs: number;
  private nextId = 0;
  private flushScheduled = false;
  private waiters: (() => void)[] = [];
  /** Why a process failed, once one did (its Secrets are then checked by translation, and no other starts). */
  failure: string | undefined = undefined;

  constructor(options: SecretChecksOptions = {}) {
    this.maxProcesses = Math.max(1, options.processes ?? Math.min(2, availableParallelism()));
    this.batch = options.batch ?? 250;
    this.idleMs = options.idleMs ?? 1000;
    this.known = this.known.bind(this);
  }

  /** The check of this Secret object, if it was made here (for createTranslator). */
  known(secret: Secret): PemCheck | undefined {
    return this.results.get(secret);
  }

  /** Checks a Secret soon, if it is a TLS Secret not checked yet. */
  add(secret: Secret): void {
    if (secret.type !== TLS_SECRET_TYPE || this.results.has(secret) || this.queued.has(secret)) return;
    this.queued.add(secret);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      // Gathers what one source callback adds into batches.
      setImmediate(() => this.flush());
    }
  }

  /** Resolves when every Secret added so far is checked, or given up on; or after `withinMs` at the latest. */
  settled(withinMs = Infinity): Promise<void> {
    if (!this.busy()) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = Number.isFinite(withinMs) ? setTimeout(resolve, withinMs) : undefined;
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Lets go of the results: once translation has parsed these Secrets, it remembers them itself. */
  forget(): void {
    this.results = new WeakMap();
  }

  /** Processes alive (for tests and diagnostics). */
  get processCount(): number {
    return this.checkers.length;
  }

  /** Ends every process now; what they had is left to translation. */
  stop(): void {
    for (const checker of [...this.checkers]) this.end(checker);
    this.queued.clear();
    this.wake();
  }

  private busy(): boolean {
    return this.queued.size > 0 || this.flushScheduled || this.checkers.some((c) => c.inFlight.size > 0);
  }

  private flush(): void {
    this.flushScheduled = false;
    const secrets = [...this.queued];
    this.queued.clear();
    for (let i = 0; i < secrets.length; i += this.batch) this.send(secrets.slice(i, i + this.batch));
    this.wake();
  }

  private send(secrets: readonly Secret[]): void {
    const pems: [string, string][] = [];
    const sent: Secret[] = [];
    for (const secret of secrets) {
      const cert = secretValue(secret, 'tls.crt');
      const key = secretValue(secret, 'tls.key');
      // A missing value is translation's to report; nothing to parse.
      if (!cert || !key) continue;
      pems.push([cert, key]);
      sent.push(secret);
    }
    const checker = sent.length > 0 ? this.pick() : undefined;
    if (checker === undefined) return;
    const id = this.nextId++;
    checker.inFlight.set(id, sent);
    clearTimeout(checker.idleTimer);
    checker.idleTimer = undefined;
    checker.child.send({ id, pems } satisfies CheckBatch);
  }

  /**
   * The least busy process; a new one while fewer than the most are alive and each, once
   * up, has a backlog. Secrets that come a file at a time (standalone) keep one process, and a core
   * for the main thread's reading; a list of thousands at once (cluster) gets them all.
   */
  private pick(): Checker | undefined {
    let best: Checker | undefined;
    for (const checker of this.checkers) if (best === undefined || checker.inFlight.size < best.inFlight.size) best = checker;
    const behind = best === undefined || (best.answered && best.inFlight.size >= BACKLOG);
    if (behind && this.checkers.length < this.maxProcesses && this.failure === undefined) best = this.start() ?? best;
    return best;
  }

  private start(): Checker | undefined {
    // The sources in development (type stripping), the compiled file in dist/.
    const file = fileURLToPath(new URL(`./secret-check-process.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url));
    let child: ChildProcess;
    try {
      child = fork(file, [], { serialization: 'advanced', execArgv: [], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    } catch (err) {
      this.failure = err instanceof Error ? err.message : String(err);
      return undefined;
    }
    const checker: Checker = { child, inFlight: new Map(), idleTimer: undefined, answered: false };
    child.on('message', (answer: CheckedBatch) => this.answered(checker, answer));
    child.on('error', (err) => {
      this.failure ??= err.message;
      this.end(checker);
    });
    child.on('exit', (code, signal) => {
      if (checker.inFlight.size > 0) this.failure ??= `a checking process exited (${signal ?? `code ${code}`})`;
      this.end(checker);
    });
    this.checkers.push(checker);
    return checker;
  }

  private answered(checker: Checker, answer: CheckedBatch): void {
    const secrets = checker.inFlight.get(answer.id);
    if (secrets === undefined) return;
    checker.inFlight.delete(answer.id);
    checker.answered = true;
    secrets.forEach((secret, i) => this.results.set(secret, answer.checks[i]!));
    if (checker.inFlight.size === 0) {
      checker.idleTimer = setTimeout(() => this.end(checker), this.idleMs);
      checker.idleTimer.unref();
    }
    this.wake();
  }

  /** Ends a process; its unanswered Secrets are left to translation. */
  private end(checker: Checker): void {
    const at = this.checkers.indexOf(checker);
    if (at === -1) return;
    this.checkers.splice(at, 1);
    clearTimeout(checker.idleTimer);
    checker.inFlight.clear();
    if (checker.child.exitCode === null && checker.child.signalCode === null) checker.child.kill();
    this.wake();
  }

  private wake(): void {
    if (this.busy()) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}
