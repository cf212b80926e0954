// The primary's workers: forks them, ships each routing config (as a delta when a
// worker has the previous one), replaces a worker that dies, gathers their metrics,
// and drains them all on stop. The primary serves no traffic itself: it owns the
// sources, translation, leader election, status and the admin listener.
import type { Cluster, Worker } from 'node:cluster';
import type { Logger } from 'pino';
import type { EndpointUpdate, RoutingConfig } from '../model/config.ts';
import { configMessage, type SleepMessage, type ToPrimary, type ToWorker } from './protocol.ts';
import type { InvalidationRequest, InvalidationResult } from '../cache/invalidation.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
// The module object itself is the cluster (its types describe an ES namespace with a default).
const cluster = process.getBuiltinModule('node:cluster') as unknown as Cluster;

/** How long the primary waits for every worker to apply an invalidation. */
const INVALIDATION_TIMEOUT_MS = 5000;

interface Member {
  readonly worker: Worker;
  /** It said hello: it listens for configs. */
  greeted: boolean;
  /** The config this worker was last sent (undefined: it needs a whole one). */
  shipped: RoutingConfig | undefined;
  /** The serial it last installed. */
  installed: number | undefined;
  ports: { http?: number; https?: number };
  bindFailures: ReadonlyMap<number, string>;
  readonly startedAt: number;
}

export interface WorkerPoolOptions {
  readonly count: number;
  readonly log: Logger;
  /** Called when every worker installed `serial` (the first time: portico is ready). */
  readonly onInstalled?: (serial: number) => void;
  /** Extra environment of the workers. */
  readonly env?: NodeJS.ProcessEnv;
  /** The under-attack signing key (base64), sent to each worker before its first config. */
  readonly challengeKey?: () => string | undefined;
  /** Every backend whose addresses moved without a rebuild, as now: a worker that (re)starts gets them before its config. */
  readonly endpoints?: () => EndpointUpdate[];
  /** Scale-to-zero messages of a worker (its id, and what it said). */
  readonly onSleepMessage?: (worker: number, message: SleepMessage) => void;
}

export class WorkerPool {
  private readonly o: WorkerPoolOptions;
  private readonly members = new Map<number, Member>();
  private current: RoutingConfig | undefined;
  private stopping = false;
  private restartDelayMs = 500;
  private nextMetricsId = 0;
  private readonly metricWaiters = new Map<number, { expected: number; got: unknown[]; resolve: (m: unknown[]) => void }>();
  private nextInvalidationId = 0;
  private readonly invalidationWaiters = new Map<number, { pending: Set<number>; got: InvalidationResult[]; resolve: (r: InvalidationResult) => void; timer: NodeJS.Timeout }>();

  constructor(options: WorkerPoolOptions) {
    this.o = options;
  }

  start(): void {
    // Maps (certificates, listeners, hosts) must survive the trip.
    cluster.setupPrimary({ serialization: 'advanced' });
    for (let i = 0; i < this.o.count; i++) this.fork();
    cluster.on('exit', (worker, code, signal) => {
      const member = this.members.get(worker.id);
      this.members.delete(worker.id);
      // An invalidation waiting for this worker waits no more: it failed there.
      for (const id of [...this.invalidationWaiters.keys()]) this.invalidationAnswered(worker.id, id, { ok: false, message: `worker ${worker.process.pid} exited before confirming`, removed: 0 });
      if (this.stopping || member === undefined) return;
      // A worker that keeps dying at start is restarted less and less often.
      const lived = Date.now() - member.startedAt;
      this.restartDelayMs = lived > 30_000 ? 500 : Math.min(this.restartDelayMs * 2, 30_000);
      this.o.log.error({ worker: worker.process.pid, code, signal }, `worker ${worker.process.pid} exited (${signal ?? `code ${code}`}); starting another in ${this.restartDelayMs} ms, the others keep serving`);
      setTimeout(() => {
        if (!this.stopping) this.fork();
      }, this.restartDelayMs).unref();
    });
  }

  private fork(): void {
    const worker = cluster.fork(this.o.env);
    const member: Member = { worker, greeted: false, shipped: undefined, installed: undefined, ports: {}, bindFailures: new Map(), startedAt: Date.now() };
    this.members.set(worker.id, member);
    worker.on('message', (message: ToPrimary) => this.receive(member, message));
    // A send to a worker that is going away fails; its exit is handled above.
    worker.on('error', (err: Error) => this.o.log.debug({ worker: worker.process.pid, err: err.message }, 'worker channel error'));
  }

  private receive(member: Member, message: ToPrimary): void {
    switch (message.t) {
      case 'hello':
        // A new worker, or one that missed a delta: it gets the whole config.
        member.greeted = true;
        member.shipped = undefined;
        const key = this.o.challengeKey?.();
        if (key !== undefined && member.worker.isConnected()) member.worker.send({ t: 'challenge-key', key } satisfies ToWorker);
        if (member.worker.isConnected()) member.worker.send({ t: 'endpoints', updates: this.o.endpoints?.() ?? [], replace: true } satisfies ToWorker);
        if (this.current !== undefined) this.send(member, this.current);
        break;
      case 'installed':
        member.installed = message.serial;
        member.ports = message.ports;
        member.bindFailures = message.bindFailures;
        if (this.allInstalled(message.serial)) this.o.onInstalled?.(message.serial);
        break;
      case 'activity':
      case 'wake':
      case 'wake-timeout':
        this.o.onSleepMessage?.(member.worker.id, message);
        break;
      case 'invalidated':
        this.invalidationAnswered(member.worker.id, message.id, message.result);
        break;
      case 'invalidate-all':
        // PURGE/BAN on one worker's listener: every worker applies it, then that worker answers its client.
        void this.invalidate(message.request).then((result) => {
          if (member.worker.isConnected()) member.worker.send({ t: 'invalidated-all', id: message.id, result } satisfies ToWorker);
        });
        break;
      case 'metrics': {
        const waiter = this.metricWaiters.get(message.id);
        if (waiter === undefined) return;
        waiter.got.push(message.metrics);
        if (waiter.got.length >= waiter.expected) {
          this.metricWaiters.delete(message.id);
          waiter.resolve(waiter.got);
        }
        break;
      }
    }
  }

  private send(member: Member, config: RoutingConfig): void {
    const message: ToWorker = configMessage(config, member.shipped);
    member.shipped = config;
    if (member.worker.isConnected()) member.worker.send(message);
  }

  /** Ships a new config to every worker that said hello (the others get it when they do). */
  ship(config: RoutingConfig): void {
    this.current = config;
    for (const member of this.members.values()) if (member.greeted) this.send(member, config);
  }

  /**
   * Ships backends' new addresses to every worker that said hello, in order with the
   * configs: no route is rebuilt there, only the balancers of the backends' routes.
   */
  shipEndpoints(updates: readonly EndpointUpdate[]): void {
    const message: ToWorker = { t: 'endpoints', updates };
    for (const member of this.members.values()) if (member.greeted && member.worker.isConnected()) member.worker.send(message);
  }

  /** Every live worker installed `serial` (or a later one). */
  allInstalled(serial = this.current?.serial): boolean {
    if (serial === undefined || this.members.size === 0) return false;
    for (const m of this.members.values()) if (m.installed === undefined || m.installed < serial) return false;
    return true;
  }

  /** The ports the workers serve on (the same for all). */
  get ports(): { http?: number; https?: number } {
    for (const m of this.members.values()) if (m.installed !== undefined) return m.ports;
    return {};
  }

  /** Gateway ports some worker could not bind. */
  bindFailures(): ReadonlyMap<number, string> {
    const all = new Map<number, string>();
    for (const m of this.members.values()) for (const [port, why] of m.bindFailures) all.set(port, why);
    return all;
  }

  get size(): number {
    return this.members.size;
  }

  /** Each worker's metrics (prom-client JSON), within a second. */
  metrics(): Promise<unknown[]> {
    const live = [...this.members.values()].filter((m) => m.worker.isConnected());
    if (live.length === 0) return Promise.resolve([]);
    const id = ++this.nextMetricsId;
    return new Promise((resolve) => {
      const waiter = { expected: live.length, got: [] as unknown[], resolve };
      this.metricWaiters.set(id, waiter);
      for (const m of live) m.worker.send({ t: 'metrics', id } satisfies ToWorker);
      setTimeout(() => {
        if (this.metricWaiters.delete(id)) resolve(waiter.got);
      }, 1000).unref();
    });
  }

  /**
   * Applies a (validated) invalidation to every live worker's cache; resolves when all
   * answered (removed: the sum), or after 5 s with ok false naming the workers that did not.
   */
  invalidate(request: InvalidationRequest): Promise<InvalidationResult> {
    const live = [...this.members.values()].filter((m) => m.greeted && m.worker.isConnected());
    if (live.length === 0) return Promise.resolve({ ok: false, message: 'no worker is running to apply the invalidation', removed: 0 });
    const id = ++this.nextInvalidationId;
    return new Promise((resolve) => {
      const pending = new Set(live.map((m) => m.worker.id));
      const timer = setTimeout(() => {
        const waiter = this.invalidationWaiters.get(id);
        if (waiter === undefined) return;
        this.invalidationWaiters.delete(id);
        resolve({ ok: false, message: `${waiter.pending.size} of ${live.length} workers did not confirm the invalidation within ${INVALIDATION_TIMEOUT_MS} ms`, removed: sumRemoved(waiter.got) });
      }, INVALIDATION_TIMEOUT_MS);
      timer.unref();
      this.invalidationWaiters.set(id, { pending, got: [], resolve, timer });
      for (const m of live) m.worker.send({ t: 'invalidate', id, request } satisfies ToWorker);
    });
  }

  private invalidationAnswered(worker: number, id: number, result: InvalidationResult): void {
    const waiter = this.invalidationWaiters.get(id);
    if (waiter === undefined || !waiter.pending.delete(worker)) return;
    waiter.got.push(result);
    if (waiter.pending.size > 0) return;
    this.invalidationWaiters.delete(id);
    clearTimeout(waiter.timer);
    const failed = waiter.got.filter((r) => !r.ok);
    const removed = sumRemoved(waiter.got);
    waiter.resolve(failed.length > 0
      ? { ok: false, message: failed.map((r) => r.message).join('; '), removed }
      : { ok: true, message: `${waiter.got[0]!.message.replace(/^purged \d+ entr(y|ies)/, `purged ${removed} entr${removed === 1 ? 'y' : 'ies'}`)} in ${waiter.got.length} workers`, removed });
  }

  /**
   * Start-up failed (say a --manifests directory that does not exist): ends every worker
   * at once, before the primary exits. Left to find their primary gone, workers still
   * setting up their IPC channel died of an EPIPE stack trace under the one-line error.
   */
  abort(): void {
    this.stopping = true;
    for (const m of this.members.values()) if (!m.worker.isDead()) m.worker.process.kill('SIGKILL');
  }

  /** Tells every worker to drain within graceMs and waits for them to exit. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    const exits = [...this.members.values()].map(
      (m) =>
        new Promise<void>((resolve) => {
          if (m.worker.isDead()) return resolve();
          m.worker.once('exit', () => resolve());
          if (m.worker.isConnected()) m.worker.send({ t: 'stop', graceMs } satisfies ToWorker);
          // A worker that does not finish in time is ended.
          setTimeout(() => m.worker.process.kill('SIGKILL'), graceMs + 5000).unref();
        }),
    );
    await Promise.all(exits);
  }
}

function sumRemoved(results: readonly InvalidationResult[]): number {
  return results.reduce((n, r) => n + (r.removed ?? 0), 0);
}
