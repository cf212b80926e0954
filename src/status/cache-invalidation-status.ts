// Writes a CacheInvalidation's status: this replica's entry in status.replicas[], the
// leader's phase changes, and the leader's deletion of finished objects.
//
// Two replicas write the same object at about the same time. A JSON merge patch
// replaces a list as a whole (a custom resource has no strategic merge), so it could drop
// the other replica's entry; instead each write is a PUT of the whole status with the
// resourceVersion read (optimistic concurrency): a 409 means another replica wrote in
// between, so the object is read again and this replica's entry put into the fresh list.
// The phase is computed in the same write, from the same list, so it never disagrees
// with the entries.
import type { Logger } from 'pino';
import { KubeApiError, type KubeClient } from '../kube/client.ts';
import { CACHE_INVALIDATIONS, objectPath } from '../kube/resources.ts';
import { readyPodsOf } from '../kube/service-pods.ts';
import {
  CACHE_INVALIDATION_API_VERSION,
  CACHE_INVALIDATION_KIND,
  describeInvalidation,
  withEntry,
  type CacheInvalidation,
  type CacheInvalidationStatus,
  type ReplicaEntry,
} from '../cache/invalidation-resource.ts';

/** Attempts at a write that keeps meeting other replicas' writes (409). */
const WRITE_ATTEMPTS = 8;

export class CacheInvalidationStatusWriter {
  private readonly client: KubeClient;
  private readonly log: Logger;
  private readonly replicasService: string | undefined;

  /** replicasService: ns/name of portico's own Service (--publish-service); its ready pods are the replicas. */
  constructor(client: KubeClient, log: Logger, replicasService: string | undefined) {
    this.client = client;
    this.log = log;
    this.replicasService = replicasService?.includes('/') ? replicasService : undefined;
  }

  /**
   * Puts this replica's entry into status.replicas[]. 'done': written, or the object is
   * gone; 'retry': the API refused or kept conflicting (try again later).
   */
  async writeEntry(cached: CacheInvalidation, entry: ReplicaEntry): Promise<'done' | 'retry'> {
    const expected = await this.expectedReplicas();
    let obj: CacheInvalidation | undefined = cached;
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      // Gone, or deleted and made again (that one gets its own turn).
      if (obj === undefined || obj.metadata.uid !== cached.metadata.uid) return 'done';
      try {
        await this.putStatus(obj, withEntry(obj, entry, expected));
        return 'done';
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 404) return 'done';
        if (!(err instanceof KubeApiError && err.status === 409)) {
          this.log.warn({ object: describeInvalidation(cached), err: (err as Error).message }, 'could not write CacheInvalidation status; trying again shortly');
          return 'retry';
        }
        await new Promise((r) => setTimeout(r, Math.random() * 50 * (attempt + 1)));
        obj = await this.read(cached).catch(() => cached);
      }
    }
    return 'retry';
  }

  /** The leader's phase change, on the version it has (a 409 means someone wrote meanwhile: the watch brings it). */
  async setPhase(obj: CacheInvalidation, phase: NonNullable<CacheInvalidationStatus['phase']>): Promise<void> {
    await this.putStatus(obj, { ...obj.status, phase });
  }

  /** Deletes this very object (not one made again under its name since). */
  async delete(obj: CacheInvalidation): Promise<void> {
    await this.client.request('DELETE', objectPath(CACHE_INVALIDATIONS, obj.metadata.namespace, obj.metadata.name), {
      body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: obj.metadata.uid } },
    });
  }

  /**
   * The ready pods behind --publish-service, by name; undefined when not configured or
   * not readable (then Complete means: every replica that ran it succeeded).
   */
  async expectedReplicas(): Promise<ReadonlySet<string> | undefined> {
    if (this.replicasService === undefined) return undefined;
    try {
      const pods = await readyPodsOf(this.client, this.replicasService);
      return pods.size > 0 ? pods : undefined;
    } catch (err) {
      this.log.debug({ service: this.replicasService, err: (err as Error).message }, 'cannot read the pods of the portico Service; a CacheInvalidation is Complete once every replica that ran it succeeded');
      return undefined;
    }
  }

  private async read(obj: CacheInvalidation): Promise<CacheInvalidation | undefined> {
    try {
      return await this.client.request<CacheInvalidation>('GET', objectPath(CACHE_INVALIDATIONS, obj.metadata.namespace, obj.metadata.name));
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  private async putStatus(obj: CacheInvalidation, status: CacheInvalidationStatus): Promise<void> {
    await this.client.request('PUT', objectPath(CACHE_INVALIDATIONS, obj.metadata.namespace, obj.metadata.name, 'status'), {
      body: { apiVersion: CACHE_INVALIDATION_API_VERSION, kind: CACHE_INVALIDATION_KIND, metadata: obj.metadata, spec: obj.spec, status },
    });
  }
}
