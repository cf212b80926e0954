// The control plane's side of scale-to-zero: which Services sleep when idle (from
// their annotations), when each was last used (this process' traffic, its workers',
// and the other replicas' through activity Leases), putting idle ones to sleep (the
// leader only) and waking them when a request waits (any replica). In standalone mode
// nothing is scaled: held requests wait for endpoints to appear in the manifests.
import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from '../util/prom.ts';
import type { Problem, SleepPolicy } from '../model/config.ts';
import { SERVICE_NAME_LABEL, type EndpointSlice, type ObjectRef } from '../model/k8s.ts';
import type { ObjectStore } from '../sources/store.ts';
import type { ActivityEntry } from './gates.ts';
import type { ActivityLeases, ActivityRecord } from './activity-leases.ts';
import { describeTarget, sleepPolicyOf } from './policy.ts';
import type { Workloads } from './workloads.ts';

export type SleepState = 'awake' | 'sleeping' | 'waking';

/** What /routes shows of a sleepable Service. */
export interface SleepView {
  readonly service: string;
  readonly state: SleepState;
  /** ISO time of the last request through any replica, as far as this one knows. */
  readonly lastActivity: string;
  readonly sleepAfterSeconds: number;
  readonly target: string;
  readonly inflight: number;
  readonly held: number;
}

export interface SleepEvents {
  /** A Normal or Warning Event on the Service (written by whichever replica acted). */
  (service: ObjectRef, type: 'Normal' | 'Warning', reason: string, message: string): void;
}

export interface SleepManagerOptions {
  store: ObjectStore;
  log: Logger;
  registry: Registry;
  /** Cluster mode: the API calls; absent in standalone mode (nothing is scaled). */
  workloads?: Workloads;
  leases?: ActivityLeases;
  events?: SleepEvents;
  /** Only the leader puts Services to sleep. */
  isLeader: () => boolean;
  /** This process' own data plane activity (single mode), read at each check. */
  localActivity?: () => readonly ActivityEntry[];
  /** Called when the problems of sleepable Services change (they go with the route table's). */
  onProblems?: () => void;
  /** ms between checks (default 1 s, or less for short sleep-after values). */
  tickMs?: number;
}

/** How long a process' report of requests in flight counts without a newer one (workers report every 500 ms while busy). */
const INFLIGHT_VALID_MS = 3_000;
/** After a failed API call, the Service is left alone this long. */
const BACKOFF_MS = 5_000;

interface Reported {
  lastActive: number;
  inflight: number;
  held: number;
  at: number;
}

class Entry {
  readonly service: string;
  readonly namespace: string;
  readonly name: string;
  policy: SleepPolicy;
  /** Activity by reporting process ("local" or a worker id). */
  readonly reports = new Map<string, Reported>();
  /** Last activity seen from other replicas (the Lease). */
  sharedActive = 0;
  /** The activity time this replica last wrote to the Lease. */
  written = 0;
  writing = false;
  /** An API operation (sleep or wake) is under way. */
  busy = false;
  /** performance.now() of the first wake signal of the current wake; undefined when not waking. */
  wakeStartedAt: number | undefined = undefined;
  /** Date.now() before which no sleep is tried (a failed call, or a fresh record from another replica). */
  notBefore = 0;
  /** Problems found through the API (a missing workload), beside the annotation ones. */
  apiProblem: string | undefined = undefined;
  /** Date.now() when this replica started tracking the Service: a new one gets its whole sleep-after first. */
  readonly since = Date.now();

  constructor(service: string, policy: SleepPolicy) {
    this.service = service;
    const slash = service.indexOf('/');
    this.namespace = service.slice(0, slash);
    this.name = service.slice(slash + 1);
    this.policy = policy;
  }

  get lastActive(): number {
    let last = this.sharedActive;
    for (const r of this.reports.values()) if (r.lastActive > last) last = r.lastActive;
    return last;
  }

  inflight(now: number): number {
    let n = 0;
    for (const r of this.reports.values()) if (now - r.at < INFLIGHT_VALID_MS || r.inflight === 0) n += r.inflight;
    return n;
  }

  get held(): number {
    let n = 0;
    for (const r of this.reports.values()) n += r.held;
    return n;
  }
}

export class SleepManager {
  private readonly o: SleepManagerOptions;
  private readonly entries = new Map<string, Entry>();
  /** Services with bad annotations: "ns/name" -> messages. */
  private readonly invalid = new Map<string, readonly string[]>();
  private problemList: readonly Problem[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly metrics: { wakes: Counter; wakeSeconds: Histogram; sleeps: Counter; leaseWrites: Counter };
  private readonly loggedStandaloneWait = new Set<string>();

  constructor(options: SleepManagerOptions) {
    this.o = options;
    const registers = [options.registry];
    this.metrics = {
      wakes: new Counter({ name: 'portico_scale_to_zero_wakes_total', help: 'Sleeping Services woken by a request (counted when their first endpoint is ready)', labelNames: ['service'], registers }),
      wakeSeconds: new Histogram({
        name: 'portico_scale_to_zero_wake_duration_seconds',
        help: 'From the first held request of a sleeping Service to its first ready endpoint',
        buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120],
        registers,
      }),
      sleeps: new Counter({ name: 'portico_scale_to_zero_sleeps_total', help: 'Services this replica scaled to zero after sleep-after without a request', labelNames: ['service'], registers }),
      leaseWrites: new Counter({ name: 'portico_scale_to_zero_activity_writes_total', help: 'Writes of activity Leases (at most one per Service per sleep-after/4 while active)', registers }),
    };
  }

  /** Reads every Service of the store; then call serviceChanged() for each change. */
  start(): void {
    for (const key of this.o.store.services.keys()) this.refresh(key, false);
    this.publishProblems();
    this.schedule();
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** A Service was added, changed or deleted. */
  serviceChanged(key: string): void {
    if (this.refresh(key, true)) this.publishProblems();
  }

  /** Problems of the sleepable Services (bad annotations, a missing workload), for logs, Events and /routes. */
  problems(): readonly Problem[] {
    return this.problemList;
  }

  /** Activity from a data plane: this process' ("local") or a worker's. */
  activity(source: string, entries: readonly ActivityEntry[]): void {
    const now = Date.now();
    for (const [service, lastActive, inflight, held] of entries) {
      const entry = this.entries.get(service);
      if (entry === undefined) continue;
      entry.reports.set(source, { lastActive, inflight, held, at: now });
    }
  }

  /** A data plane holds requests for `service`: make it ready. */
  wake(service: string): void {
    const entry = this.entries.get(service);
    if (entry === undefined || this.hasReadyEndpoints(service)) return;
    entry.wakeStartedAt ??= performance.now();
    const workloads = this.o.workloads;
    if (workloads === undefined) {
      if (!this.loggedStandaloneWait.has(service)) {
        this.loggedStandaloneWait.add(service);
        this.o.log.info({ service }, `Service ${service} has no ready endpoints: requests wait for them to appear in the manifests (standalone mode scales nothing)`);
      }
      return;
    }
    if (entry.busy) return;
    entry.busy = true;
    void this.scaleUp(entry, workloads).finally(() => {
      entry.busy = false;
    });
  }

  /** Held requests of `service` got 503 at the wake timeout. */
  timedOut(service: string, count: number): void {
    const entry = this.entries.get(service);
    if (entry === undefined) return;
    const message = `${count} request${count === 1 ? '' : 's'} waited ${entry.policy.wakeTimeoutMs / 1000} s (portico.dev/wake-timeout) without a ready endpoint and got 503`;
    this.o.log.warn({ service }, `Service ${service}: ${message}`);
    this.event(entry, 'Warning', 'WakeTimeout', message);
  }

  /** After each route table: a waking Service whose endpoints are ready has woken. */
  rebuilt(): void {
    for (const entry of this.entries.values()) {
      if (entry.wakeStartedAt === undefined || !this.hasReadyEndpoints(entry.service)) continue;
      const seconds = (performance.now() - entry.wakeStartedAt) / 1000;
      entry.wakeStartedAt = undefined;
      this.metrics.wakes.inc({ service: entry.service });
      this.metrics.wakeSeconds.observe(seconds);
      this.o.log.info({ service: entry.service, wakeMs: Math.round(seconds * 1000) }, `Service ${entry.service} is awake: its first endpoint is ready`);
    }
  }

  /** Each sleepable Service's state, for /routes. */
  view(): SleepView[] {
    const now = Date.now();
    const out: SleepView[] = [];
    for (const entry of this.entries.values()) {
      const ready = this.hasReadyEndpoints(entry.service);
      const lastActive = entry.lastActive;
      out.push({
        service: entry.service,
        state: ready ? 'awake' : entry.wakeStartedAt !== undefined || entry.held > 0 ? 'waking' : 'sleeping',
        lastActivity: new Date(lastActive > 0 ? lastActive : entry.since).toISOString(),
        sleepAfterSeconds: entry.policy.sleepAfterMs / 1000,
        target: describeTarget(entry.policy.target),
        inflight: entry.inflight(now),
        held: entry.held,
      });
    }
    return out.sort((a, b) => (a.service < b.service ? -1 : 1));
  }

  // ---- policies from the store ----

  /** Re-reads one Service; returns whether its problems changed. */
  private refresh(key: string, announce: boolean): boolean {
    const service = this.o.store.services.get(key);
    const result = service === undefined ? { problems: [] as string[] } : sleepPolicyOf(service);
    if (result.policy !== undefined) {
      const entry = this.entries.get(key);
      if (entry === undefined) {
        this.entries.set(key, new Entry(key, result.policy));
        if (announce) this.o.log.info({ service: key }, `Service ${key} sleeps after ${result.policy.sleepAfterMs / 1000} s without requests`);
      } else {
        entry.policy = result.policy;
      }
    } else {
      this.entries.delete(key);
    }
    const before = this.invalid.get(key);
    if (result.problems.length > 0) this.invalid.set(key, result.problems);
    else this.invalid.delete(key);
    return before?.join() !== (result.problems.length > 0 ? result.problems.join() : undefined);
  }

  private publishProblems(): void {
    const list: Problem[] = [];
    for (const [key, messages] of this.invalid) {
      const slash = key.indexOf('/');
      const object: ObjectRef = { kind: 'Service', namespace: key.slice(0, slash), name: key.slice(slash + 1) };
      for (const message of messages) list.push({ object, severity: 'warning', reason: 'InvalidAnnotation', message: `${message}; the Service is kept awake` });
    }
    for (const entry of this.entries.values()) {
      if (entry.apiProblem === undefined) continue;
      list.push({ object: { kind: 'Service', namespace: entry.namespace, name: entry.name }, severity: 'warning', reason: 'ScaleTargetNotFound', message: entry.apiProblem });
    }
    this.problemList = list;
    this.o.onProblems?.();
  }

  private setApiProblem(entry: Entry, problem: string | undefined): void {
    if (entry.apiProblem === problem) return;
    entry.apiProblem = problem;
    this.publishProblems();
  }

  /** Any ready endpoint in the Service's EndpointSlices. */
  private hasReadyEndpoints(service: string): boolean {
    const slices = this.o.store.endpointSlicesByService.get(service);
    if (slices === undefined) return false;
    for (const slice of slices.values()) if (sliceHasReady(slice)) return true;
    return false;
  }

  // ---- the periodic check: share activity, put idle Services to sleep ----

  private schedule(): void {
    let tick = this.o.tickMs ?? 1000;
    for (const entry of this.entries.values()) tick = Math.min(tick, Math.max(50, entry.policy.sleepAfterMs / 8));
    this.timer = setTimeout(() => {
      this.check();
      this.schedule();
    }, tick);
    this.timer.unref();
  }

  private check(): void {
    const local = this.o.localActivity?.();
    if (local !== undefined && local.length > 0) this.activity('local', local);
    const now = Date.now();
    const leader = this.o.isLeader();
    for (const entry of this.entries.values()) {
      const lastActive = entry.lastActive;
      this.share(entry);
      if (!leader || entry.busy || now < entry.notBefore || this.o.workloads === undefined) continue;
      // A Service never seen used counts from when this process learned of it: neither a
      // restart nor a new annotation puts anything to sleep at once.
      const idleSince = Math.max(lastActive, entry.since);
      if (now - idleSince < entry.policy.sleepAfterMs || entry.inflight(now) > 0 || entry.held > 0) continue;
      if (!this.hasReadyEndpoints(entry.service)) continue;
      entry.busy = true;
      void this.sleep(entry, this.o.workloads, idleSince).finally(() => {
        entry.busy = false;
      });
    }
  }

  /** Writes this replica's activity to the Lease, at most once per sleep-after/4. */
  private share(entry: Entry): void {
    const leases = this.o.leases;
    if (leases === undefined || entry.writing) return;
    // A request in flight (reported lately) is activity now, not as of its last report.
    const now = Date.now();
    let local = 0;
    for (const r of entry.reports.values()) {
      const at = r.inflight > 0 && now - r.at < INFLIGHT_VALID_MS ? now : r.lastActive;
      if (at > local) local = at;
    }
    if (local <= entry.written || local <= entry.sharedActive) return;
    if (local - entry.written < entry.policy.sleepAfterMs / 4 && entry.written !== 0) return;
    entry.writing = true;
    void leases
      .touch(entry.namespace, entry.name, local)
      .then(() => {
        entry.written = local;
        this.metrics.leaseWrites.inc();
      })
      .catch((err: unknown) => this.o.log.warn({ service: entry.service, err: (err as Error).message }, 'could not record activity in its Lease'))
      .finally(() => {
        entry.writing = false;
      });
  }

  private async sleep(entry: Entry, workloads: Workloads, idleSince: number): Promise<void> {
    const { namespace, name, policy } = entry;
    const target = describeTarget(policy.target);
    try {
      let record: ActivityRecord | undefined;
      if (this.o.leases !== undefined) {
        record = await this.o.leases.read(namespace, name);
        if (record !== undefined && record.lastActive > entry.sharedActive) entry.sharedActive = record.lastActive;
        if (record !== undefined && Date.now() - record.lastActive < policy.sleepAfterMs) return; // used through another replica
      }
      const state = await workloads.read(namespace, policy.target);
      if (state === undefined) {
        this.setApiProblem(entry, `portico.dev/scale-target: ${target} does not exist in namespace ${namespace}; the Service is kept awake`);
        entry.notBefore = Date.now() + BACKOFF_MS * 6;
        return;
      }
      this.setApiProblem(entry, undefined);
      if (state.replicas === 0) return;
      // Last check, atomic: no replica may have written activity since the Lease was read.
      if (this.o.leases !== undefined && !(await this.o.leases.claimSleep(namespace, name, record, idleSince))) return;
      const rv = await workloads.noteReplicas(namespace, policy.target, state.replicas, state.resourceVersion);
      await workloads.scale(namespace, policy.target, 0, rv);
      this.metrics.sleeps.inc({ service: entry.service });
      const idle = Math.round((Date.now() - idleSince) / 1000);
      const message = `no request through any portico replica for ${idle} s (sleep-after ${policy.sleepAfterMs / 1000} s): scaled ${target} from ${state.replicas} to 0`;
      this.o.log.info({ service: entry.service }, `Service ${entry.service}: ${message}`);
      this.event(entry, 'Normal', 'Sleeping', message);
    } catch (err) {
      entry.notBefore = Date.now() + BACKOFF_MS;
      if (isConflict(err)) this.o.log.debug({ service: entry.service }, 'sleep abandoned: the workload or its activity changed meanwhile');
      else this.o.log.warn({ service: entry.service, err: (err as Error).message }, `could not put Service ${entry.service} to sleep`);
    }
  }

  private async scaleUp(entry: Entry, workloads: Workloads): Promise<void> {
    const { namespace, policy } = entry;
    const target = describeTarget(policy.target);
    // A conflict means someone else changed the workload meanwhile (another replica woke it): read again.
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const state = await workloads.read(namespace, policy.target);
        if (state === undefined) {
          this.setApiProblem(entry, `portico.dev/scale-target: ${target} does not exist in namespace ${namespace}; requests wait until their wake timeout`);
          return;
        }
        this.setApiProblem(entry, undefined);
        if (state.replicas > 0) return; // already scaled up: its endpoints are on their way
        const replicas = Math.max(1, state.before ?? 1);
        await workloads.scale(namespace, policy.target, replicas, state.resourceVersion);
        const message = `a request is waiting: scaled ${target} from 0 to ${replicas}`;
        this.o.log.info({ service: entry.service }, `Service ${entry.service}: ${message}`);
        this.event(entry, 'Normal', 'Waking', message);
        return;
      } catch (err) {
        if (isConflict(err)) continue;
        if (isNotFound(err)) return;
        this.o.log.warn({ service: entry.service, err: (err as Error).message }, `could not wake Service ${entry.service}; trying again while requests wait`);
        return;
      }
    }
  }

  private event(entry: Entry, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.o.events?.({ kind: 'Service', namespace: entry.namespace, name: entry.name }, type, reason, message);
  }
}

// By status, not class: the manager must not load the Kubernetes client (standalone mode never does).
function isConflict(err: unknown): boolean {
  return (err as { status?: number } | undefined)?.status === 409;
}

function isNotFound(err: unknown): boolean {
  return (err as { status?: number } | undefined)?.status === 404;
}

function sliceHasReady(slice: EndpointSlice): boolean {
  if (slice.metadata.labels?.[SERVICE_NAME_LABEL] === undefined) return false;
  for (const e of slice.endpoints ?? []) if (e.conditions?.ready !== false && e.addresses.length > 0) return true;
  return false;
}
