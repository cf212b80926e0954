// Cluster mode: every replica watches CacheInvalidation objects (portico.dev/v1alpha1),
// applies each one to its own cache once, and records its result in
// status.replicas[]. The leader deletes finished objects once their TTL has passed.
//
// - Once per replica: the uid and generation applied are remembered, so re-lists,
//   resyncs and status writes (which come back as MODIFIED) apply nothing again; after
//   a restart, this replica's entry for the current generation in status.replicas[]
//   says it was applied already (a restarted replica's cache is empty anyway).
// - Writing status: two replicas write the same object at about the same time. A JSON
//   merge patch replaces a list as a whole (a custom resource has no strategic merge),
//   so it could drop the other replica's entry; instead each write is a PUT of the
//   whole status with the resourceVersion read (optimistic concurrency): a 409 means
//   another replica wrote in between, so the object is read again and this replica's
//   entry put into the fresh list. The phase is computed in the same write, from the
//   same list, so it never disagrees with the entries.
// - How many replicas exist: with --publish-service (the Helm chart sets it to its own
//   Service), the ready pods in that Service's EndpointSlices are the replicas that
//   must apply an object before it is Complete. Without it, Complete means every
//   replica that ran it succeeded. The leader re-evaluates Pending objects as pods come
//   and go, so a replica that left does not keep one Pending.
import type { Logger } from 'pino';
import type { KubeObject } from '../model/k8s.ts';
import { KubeApiError, type KubeClient } from '../kube/client.ts';
import { objectPath, type ResourceInfo } from '../kube/resources.ts';
import { Reflector } from '../sources/kube/reflector.ts';
import type { EventRecorder } from '../status/events.ts';
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
  withEntry,
  type CacheInvalidation,
  type CacheInvalidationStatus,
  type ReplicaEntry,
} from './invalidation-resource.ts';

type Kind = typeof CACHE_INVALIDATION_KIND;

export const CACHE_INVALIDATIONS: ResourceInfo<Kind> = {
  kind: CACHE_INVALIDATION_KIND,
  base: `/apis/${CACHE_INVALIDATION_API_VERSION}`,
  plural: 'cacheinvalidations',
  namespaced: true,
};

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
}

/** Attempts at a status write that keeps meeting other replicas' writes (409). */
const WRITE_ATTEMPTS = 8;

export class InvalidationController {
  private readonly o: InvalidationControllerOptions;
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

  /** Waits for the work queued so far (tests). */
  async idle(): Promise<void> {
    while (this.working) await this.working;
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

  /** Puts this replica's entry into status.replicas[] (see the top of the file for why a PUT). */
  private async writeEntry(key: string, cached: CacheInvalidation, entry: ReplicaEntry): Promise<void> {
    this.unwritten.set(key, entry);
    const expected = await this.expectedReplicas();
    let obj: CacheInvalidation | undefined = cached;
    for (let attempt = 0; attempt < WRITE_ATTEMPTS && obj && !this.stopped; attempt++) {
      if (obj.metadata.uid !== cached.metadata.uid) break; // deleted and made again: that one gets its own turn
      try {
        await this.putStatus(obj, withEntry(obj, entry, expected));
        this.unwritten.delete(key);
        return;
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 404) {
          this.unwritten.delete(key);
          return;
        }
        if (!(err instanceof KubeApiError && err.status === 409)) {
          this.o.log.warn({ object: describeInvalidation(cached), err: (err as Error).message }, 'could not write CacheInvalidation status; trying again shortly');
          return;
        }
        await new Promise((r) => setTimeout(r, Math.random() * 50 * (attempt + 1)));
        obj = await this.read(cached).catch(() => undefined);
      }
    }
  }

  private async read(obj: CacheInvalidation): Promise<CacheInvalidation | undefined> {
    try {
      return await this.o.client.request<CacheInvalidation>('GET', objectPath(CACHE_INVALIDATIONS, obj.metadata.namespace, obj.metadata.name));
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  private async putStatus(obj: CacheInvalidation, status: CacheInvalidationStatus): Promise<void> {
    await this.o.client.request('PUT', objectPath(CACHE_INVALIDATIONS, obj.metadata.namespace, obj.metadata.name, 'status'), {
      body: { apiVersion: CACHE_INVALIDATION_API_VERSION, kind: CACHE_INVALIDATION_KIND, metadata: obj.metadata, spec: obj.spec, status },
    });
  }

  /**
   * The ready pods behind --publish-service, by name; undefined when not configured or
   * not readable (then Complete means: every replica that ran it succeeded).
   */
  private async expectedReplicas(): Promise<ReadonlySet<string> | undefined> {
    const ref = this.o.replicasService;
    if (!ref || !ref.includes('/')) return undefined;
    const [namespace, name] = ref.split('/') as [string, string];
    try {
      const list = await this.o.client.request<{ items?: SliceLike[] }>('GET', `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`, {
        query: { labelSelector: `kubernetes.io/service-name=${name}` },
      });
      const names = new Set<string>();
      for (const slice of list.items ?? []) {
        for (const ep of slice.endpoints ?? []) {
          if (ep.conditions?.ready === false || ep.targetRef?.kind !== 'Pod' || !ep.targetRef.name) continue;
          names.add(ep.targetRef.name);
        }
      }
      return names.size > 0 ? names : undefined;
    } catch (err) {
      this.o.log.debug({ service: ref, err: (err as Error).message }, 'cannot read the replicas of the portico Service; a CacheInvalidation is Complete once every replica that ran it succeeded');
      return undefined;
    }
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
          await this.o.client.request('DELETE', objectPath(CACHE_INVALIDATIONS, obj.metadata.namespace, obj.metadata.name), {
            body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: obj.metadata.uid } },
          });
          this.o.log.info({ object: what, phase: obj.status?.phase }, `${what} deleted: ${obj.status?.phase} and past its TTL`);
          continue;
        }
        if ((obj.status?.replicas ?? []).length === 0) {
          // Not applied anywhere yet (a replica may be slow, or not watching yet): say so.
          if (obj.status?.phase === undefined) await this.putStatus(obj, { ...obj.status, phase: 'Pending' });
          continue;
        }
        // Only Pending moves here (a replica left): a finished object stays finished (a pod
        // that joins later starts with an empty cache), so its TTL runs.
        if (obj.status?.phase !== 'Pending') continue;
        if (expected === null) expected = await this.expectedReplicas();
        const phase = overallPhase(obj, expected);
        if (phase !== obj.status?.phase) await this.putStatus(obj, { ...obj.status, phase });
      } catch (err) {
        // 404: gone already; 409: written meanwhile, the watch brings the new version.
        if (err instanceof KubeApiError && (err.status === 404 || err.status === 409)) continue;
        this.o.log.warn({ object: what, err: (err as Error).message }, `cannot clean up ${what}; trying again`);
      }
    }
  }
}

interface SliceLike {
  endpoints?: { conditions?: { ready?: boolean }; targetRef?: { kind?: string; name?: string } }[];
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
