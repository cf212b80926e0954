// Cluster mode: every replica watches CacheInvalidation objects (portico.dev/v1alpha1),
// applies each one to its own cache once, and records its result in
// status.replicas[]. The leader deletes finished objects once their TTL has passed.
//
// - Once per replica: the uid and generation applied are remembered, so re-lists,
//   resyncs and status writes (which come back as MODIFIED) apply nothing again; after
//   a restart, this replica's entry for the current generation in status.replicas[]
//   says it was applied already (a restarted replica's cache is empty anyway).
// - Writing status (src/status/cache-invalidation-status.ts): a PUT of the whole status
//   with the resourceVersion read, retried on 409, so two replicas writing at once keep
//   both entries.
// - How many replicas exist: with --publish-service (the Helm chart sets it to its own
//   Service), the ready pods in that Service's EndpointSlices are the replicas that
//   must apply an object before it is Complete. Without it, Complete means every
//   replica that ran it succeeded. The leader re-evaluates Pending objects as pods come
//   and go, so a replica that left does not keep one Pending.
import type { Logger } from 'pino';
import type { KubeObject } from '../model/k8s.ts';
import { KubeApiError, type KubeClient } from '../kube/client.ts';
import type { ApiOutageLog } from '../kube/api-outage-log.ts';
import { Reflector } from '../sources/kube/reflector.ts';
import type { EventRecorder } from '../status/events.ts';
import { CACHE_INVALIDATIONS } from '../kube/resources.ts';
import { CacheInvalidationStatusWriter } from '../status/cache-invalidation-status.ts';
import type { Invalidate, InvalidationResult } from './invalidation.ts';
import {
  CACHE_INVALIDATION_API_VERSION,
  CACHE_INVALIDATION_KIND,
  appliedBy,
  describeInvalidation,
  entryFor,
  expired,
  isCacheInvalidation,
  overallPhase,
  requestOf,
  ttlOf,
  type CacheInvalidation,
  type ReplicaEntry,
} from './invalidation-resource.ts';

type Kind = typeof CACHE_INVALIDATION_KIND;

export interface InvalidationControllerOptions {
  client: KubeClient;
  log: Logger;
  /** This replica's name in status.replicas[]: the pod name. */
  replica: string;
  invalidate: Invalidate;
  /** Only this namespace (--watch-namespace). */
  namespace?: string;
  resyncMs: number;
  /** --cache-invalidation-ttl: how long a finished object stays without spec.ttl. */
  defaultTtlMs: number;
  isLeader: () => boolean;
  /** ns/name of portico's own Service (--publish-service): its ready pods are the replicas. */
  replicasService?: string;
  events?: EventRecorder;
  /** ms between discovery attempts while the CRD is missing (default 60 s). */
  discoveryMs?: number;
  /** Where the watch tells failures, to be logged once per API outage (ClusterSource.outage). */
  outage?: ApiOutageLog;
}

export class InvalidationController {
  private readonly o: InvalidationControllerOptions;
  private readonly status: CacheInvalidationStatusWriter;
  private readonly objects = new Map<string, CacheInvalidation>();
  /** uid -> generation applied by this replica. */
  private readonly applied = new Map<string, number | undefined>();
  /** Entries applied but not yet written (the write failed): key -> entry. */
  private readonly unwritten = new Map<string, ReplicaEntry>();
  private readonly queue = new Set<string>();
  private working: Promise<void> | undefined;
  private reflector: Reflector<Kind> | undefined;
  private discoveryTimer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private sweeping = false;

  constructor(options: InvalidationControllerOptions) {
    this.o = options;
    this.status = new CacheInvalidationStatusWriter(options.client, options.log, options.replicasService);
  }

  start(): void {
    void this.discover(true);
    // Often enough that a short TTL is honoured within a quarter of it (at most every 10 s).
    const sweepMs = Math.max(200, Math.min(10_000, this.o.defaultTtlMs / 4));
    this.sweepTimer = setInterval(() => {
      if (this.sweeping) return;
      this.sweeping = true;
      void this.sweep().finally(() => (this.sweeping = false));
    }, sweepMs);
    this.sweepTimer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.discoveryTimer);
    clearInterval(this.sweepTimer);
    this.reflector?.stop();
  }

  /** Watches once the API serves the CRD; until then asks again every minute. */
  private async discover(first: boolean): Promise<void> {
    if (this.stopped) return;
    let installed = false;
    try {
      const list = await this.o.client.request<{ resources?: { name?: string }[] }>('GET', CACHE_INVALIDATIONS.base);
      installed = (list?.resources ?? []).some((r) => r.name === CACHE_INVALIDATIONS.plural);
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 404)) {
        this.discoveryTimer = setTimeout(() => void this.discover(first), 5_000);
        return;
      }
    }
    if (this.stopped) return;
    if (!installed) {
      if (first) this.o.log.info({ crd: 'cacheinvalidations.portico.dev' }, 'the CacheInvalidation CRD is not installed: cache invalidation through the API is off (checked again every minute)');
      this.discoveryTimer = setTimeout(() => void this.discover(false), this.o.discoveryMs ?? 60_000);
      return;
    }
    if (!first) this.o.log.info({ crd: 'cacheinvalidations.portico.dev' }, 'the CacheInvalidation CRD is installed: watching CacheInvalidations');
    this.reflector = new Reflector<Kind>({
      client: this.o.client,
      resource: CACHE_INVALIDATIONS,
      log: this.o.log,
      namespace: this.o.namespace,
      resyncMs: this.o.resyncMs,
      outage: this.o.outage,
      sanitize: (raw) => (isCacheInvalidation(raw) ? keep(raw) : undefined),
      sink: {
        replaceAll: (_kind, objects) => {
          const keys = new Set(objects.map((o) => keyOf(o as CacheInvalidation)));
          for (const key of this.objects.keys()) if (!keys.has(key)) this.forget(key);
          for (const o of objects) this.changed(o as CacheInvalidation);
        },
        upsert: (o) => this.changed(o as CacheInvalidation),
        delete: (_kind, key) => this.forget(key),
      },
    });
    this.reflector.start();
  }

  private changed(obj: CacheInvalidation): void {
    const key = keyOf(obj);
    const before = this.objects.get(key);
    // Deleted and made again while the watch was away: the old one's memory goes.
    if (before?.metadata.uid && before.metadata.uid !== obj.metadata.uid) this.applied.delete(before.metadata.uid);
    this.objects.set(key, obj);
    this.queue.add(key);
    this.kick();
  }

  private forget(key: string): void {
    const obj = this.objects.get(key);
    if (obj?.metadata.uid) this.applied.delete(obj.metadata.uid);
    this.objects.delete(key);
    this.unwritten.delete(key);
    this.queue.delete(key);
  }

  /** One object at a time, in arrival order: invalidations are rare and each is quick. */
  private kick(): void {
    if (this.working || this.stopped) return;
    this.working = (async () => {
      while (this.queue.size > 0 && !this.stopped) {
        const key = this.queue.values().next().value!;
        this.queue.delete(key);
        const obj = this.objects.get(key);
        if (obj) await this.process(key, obj);
      }
    })().finally(() => {
      this.working = undefined;
      if (this.queue.size > 0) this.kick();
    });
  }

  private async process(key: string, obj: CacheInvalidation): Promise<void> {
    const { uid, generation } = obj.metadata;
    const id = uid ?? key;
    if (this.applied.has(id) && this.applied.get(id) === generation) {
      const pending = this.unwritten.get(key);
      if (pending) await this.writeEntry(key, obj, pending);
      return;
    }
    if (appliedBy(obj, this.o.replica)) {
      this.applied.set(id, generation);
      return;
    }
    const result = await this.apply(obj);
    this.applied.set(id, generation);
    const entry = entryFor(this.o.replica, generation, result);
    const what = describeInvalidation(obj);
    if (result.ok) this.o.log.info({ object: what, removed: result.removed }, `${what} applied: ${result.message}`);
    else {
      this.o.log.warn({ object: what }, `${what} failed: ${result.message}`);
      void this.o.events?.recordAction(
        { kind: CACHE_INVALIDATION_KIND, namespace: obj.metadata.namespace, name: obj.metadata.name },
        'Warning',
        'InvalidationFailed',
        `${this.o.replica}: ${result.message}`,
        { apiVersion: CACHE_INVALIDATION_API_VERSION, uid: obj.metadata.uid, resourceVersion: obj.metadata.resourceVersion },
      );
    }
    await this.writeEntry(key, obj, entry);
  }

  /** Validates, then asks the cache. Never throws. */
  private async apply(obj: CacheInvalidation): Promise<InvalidationResult> {
    const read = requestOf(obj);
    if ('error' in read) return { ok: false, message: read.error };
    const ttl = ttlOf(obj);
    if (ttl.error) return { ok: false, message: ttl.error };
    try {
      return await this.o.invalidate(read.request);
    } catch (err) {
      return { ok: false, message: `the cache could not apply it: ${(err as Error).message}` };
    }
  }

  /** Writes this replica's entry; kept until written, so the sweep tries again. */
  private async writeEntry(key: string, obj: CacheInvalidation, entry: ReplicaEntry): Promise<void> {
    this.unwritten.set(key, entry);
    if ((await this.status.writeEntry(obj, entry)) === 'done') this.unwritten.delete(key);
  }

  /** The leader: re-evaluates phases as replicas come and go, and deletes finished objects past their TTL. */
  private async sweep(): Promise<void> {
    if (this.stopped) return;
    // Entries whose write failed (the API was away): try again.
    for (const key of this.unwritten.keys()) this.queue.add(key);
    if (this.unwritten.size > 0) this.kick();
    if (!this.o.isLeader() || this.objects.size === 0) return;
    let expected: ReadonlySet<string> | undefined | null = null;
    for (const obj of [...this.objects.values()]) {
      if (this.stopped) return;
      const what = describeInvalidation(obj);
      try {
        if (expired(obj, this.o.defaultTtlMs)) {
          await this.status.delete(obj);
          this.o.log.info({ object: what, phase: obj.status?.phase }, `${what} deleted: ${obj.status?.phase} and past its TTL`);
          continue;
        }
        if ((obj.status?.replicas ?? []).length === 0) {
          // Not applied anywhere yet (a replica may be slow, or not watching yet): say so.
          if (obj.status?.phase === undefined) await this.status.setPhase(obj, 'Pending');
          continue;
        }
        // Only Pending moves here (a replica left): a finished object stays finished (a pod
        // that joins later starts with an empty cache), so its TTL runs.
        if (obj.status?.phase !== 'Pending') continue;
        if (expected === null) expected = await this.status.expectedReplicas();
        const phase = overallPhase(obj, expected);
        if (phase !== obj.status?.phase) await this.status.setPhase(obj, phase);
      } catch (err) {
        // 404: gone already; 409: written meanwhile, the watch brings the new version.
        if (err instanceof KubeApiError && (err.status === 404 || err.status === 409)) continue;
        this.o.log.warn({ object: what, err: (err as Error).message }, `cannot clean up ${what}; trying again`);
      }
    }
  }
}

function keyOf(obj: CacheInvalidation): string {
  return `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
}

/** What the controller needs: no managedFields or annotations held for nothing. */
function keep(raw: CacheInvalidation): KubeObject {
  const m = raw.metadata;
  const obj: CacheInvalidation = {
    apiVersion: raw.apiVersion,
    kind: raw.kind,
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, generation: m.generation, creationTimestamp: m.creationTimestamp },
    spec: raw.spec,
    status: raw.status,
  };
  return obj;
}
