// Versioned object storage, modelled on etcd as the API server uses it: one global
// revision (the resourceVersion) bumped by every write, an event history that watches
// replay from, and compaction that forgets old history (older resourceVersions then
// get 410 Expired). Every history entry keeps the previous object too, so the state at
// any retained revision can be rebuilt (consistent paginated lists) and selector-filtered
// watches can tell when an object stopped matching.
import { resourceId, type ResourceKind } from './kinds.ts';
import { errors } from './status.ts';

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [key: string]: unknown;
}

export interface KubeObj {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

export interface StoreEvent {
  rv: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  resource: ResourceKind;
  key: string;
  /** The new state; for DELETED the last state, carrying the deletion's resourceVersion. */
  object: KubeObj;
  /** The state before this write (absent for ADDED). */
  prev?: KubeObj;
}

export function objectKey(resource: ResourceKind, namespace: string | undefined, name: string): string {
  return resource.namespaced ? `${namespace ?? ''}/${name}` : name;
}

/** Stored objects are shared by the map, the history and watch fan-out, so they must never change. */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

function withResourceVersion(obj: KubeObj, rv: number): KubeObj {
  return { ...obj, metadata: { ...obj.metadata, resourceVersion: String(rv) } };
}

export class Store {
  private revision = 0;
  /** History holds every event with rv > compacted. */
  private compacted = 0;
  private history: StoreEvent[] = [];
  private readonly objects = new Map<string, Map<string, KubeObj>>();
  private readonly listeners = new Set<(event: StoreEvent) => void>();
  private readonly historyLimit: number;

  constructor(historyLimit: number) {
    this.historyLimit = historyLimit;
  }

  get resourceVersion(): number {
    return this.revision;
  }

  /** The newest revision whose history is gone: watching or paging from older revisions is 410. */
  get compactedRevision(): number {
    return this.compacted;
  }

  private bucket(resource: ResourceKind): Map<string, KubeObj> {
    const id = resourceId(resource);
    let m = this.objects.get(id);
    if (!m) this.objects.set(id, (m = new Map()));
    return m;
  }

  get(resource: ResourceKind, key: string): KubeObj | undefined {
    return this.bucket(resource).get(key);
  }

  /** Current objects of a resource, in key order (namespace, then name), as etcd ranges return them. */
  list(resource: ResourceKind): [string, KubeObj][] {
    return [...this.bucket(resource)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /** The objects of a resource as they were at revision rv (undoing newer history). */
  listAt(resource: ResourceKind, rv: number): [string, KubeObj][] {
    if (rv < this.compacted) throw errors.expired(`too old resource version: ${rv} (${this.compacted})`);
    const state = new Map(this.bucket(resource));
    const id = resourceId(resource);
    for (let i = this.history.length - 1; i >= 0 && this.history[i]!.rv > rv; i--) {
      const e = this.history[i]!;
      if (resourceId(e.resource) !== id) continue;
      if (e.prev) state.set(e.key, e.prev);
      else state.delete(e.key);
    }
    return [...state].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /** Events after rv, oldest first; throws 410 Expired when that history has been compacted. */
  eventsAfter(rv: number): StoreEvent[] {
    if (rv < this.compacted) throw errors.expired(`too old resource version: ${rv} (${this.compacted})`);
    let lo = 0;
    let hi = this.history.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.history[mid]!.rv > rv) hi = mid;
      else lo = mid + 1;
    }
    return this.history.slice(lo);
  }

  /** Creates or replaces; the object's resourceVersion is set to the new revision. */
  put(resource: ResourceKind, key: string, obj: KubeObj): StoreEvent {
    const rv = ++this.revision;
    const object = deepFreeze(withResourceVersion(obj, rv));
    const bucket = this.bucket(resource);
    const prev = bucket.get(key);
    bucket.set(key, object);
    return this.record({ rv, type: prev ? 'MODIFIED' : 'ADDED', resource, key, object, prev });
  }

  delete(resource: ResourceKind, key: string): StoreEvent | undefined {
    const bucket = this.bucket(resource);
    const prev = bucket.get(key);
    if (!prev) return undefined;
    const rv = ++this.revision;
    bucket.delete(key);
    return this.record({ rv, type: 'DELETED', resource, key, object: deepFreeze(withResourceVersion(prev, rv)), prev });
  }

  /** Forgets all history: any resourceVersion older than now gets 410 Expired. */
  compact(): void {
    this.history = [];
    this.compacted = this.revision;
  }

  /** Listeners run synchronously in revision order, so a watch never misses or reorders an event. */
  subscribe(listener: (event: StoreEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private record(event: StoreEvent): StoreEvent {
    this.history.push(event);
    if (this.history.length > this.historyLimit) {
      const dropped = this.history.splice(0, this.history.length - this.historyLimit);
      this.compacted = dropped[dropped.length - 1]!.rv;
    }
    for (const listener of this.listeners) listener(event);
    return event;
  }
}
