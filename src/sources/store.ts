// The objects portico routes from, as sources report them (standalone files or the
// Kubernetes API). Translation reads the store directly as its Snapshot.
//
// Reading rules that make memoized translation correct:
// - stored objects are never mutated: a change replaces the object, and re-applying an
//   identical object keeps the stored one (same identity, no change event);
// - the per-Service EndpointSlice maps are replaced, never mutated, when one of their
//   slices changes, because translation memoizes backends by the identity of that map;
// - the top-level maps are mutated in place: translation runs synchronously within one
//   tick, so it never sees a half-applied change.
import type { Snapshot } from '../model/config.ts';
import { deepEqual } from '../util/deep-equal.ts';
import {
  SERVICE_NAME_LABEL,
  keyOf,
  objectKey,
  type EndpointSlice,
  type Gateway,
  type GatewayClass,
  type HTTPRoute,
  type GRPCRoute,
  type Ingress,
  type IngressClass,
  type KubeObject,
  type Namespace,
  type ReferenceGrant,
  type RoutingKind,
  type Secret,
  type Service,
} from '../model/k8s.ts';

export interface KindTypes {
  Ingress: Ingress;
  IngressClass: IngressClass;
  Service: Service;
  EndpointSlice: EndpointSlice;
  Secret: Secret;
  GatewayClass: GatewayClass;
  Gateway: Gateway;
  HTTPRoute: HTTPRoute;
  GRPCRoute: GRPCRoute;
  ReferenceGrant: ReferenceGrant;
  Namespace: Namespace;
}

export type ChangeType = 'added' | 'updated' | 'deleted';

export interface ObjectChange {
  readonly type: ChangeType;
  readonly kind: RoutingKind;
  /** objectKey() of the object. */
  readonly key: string;
  /**
   * Only the status (and resourceVersion) changed: most often portico's own status
   * write coming back through the watch. Nothing routing reads changed.
   */
  readonly statusOnly?: true;
}

export interface StoreChangeEvent {
  /** The store's version after the change. */
  readonly version: number;
  /** What changed: one entry for upsert/delete, any number for replaceAll. */
  readonly changes: readonly ObjectChange[];
}

export type StoreListener = (event: StoreChangeEvent) => void;

export class ObjectStore implements Snapshot {
  readonly ingressClasses = new Map<string, IngressClass>();
  readonly ingresses = new Map<string, Ingress>();
  readonly services = new Map<string, Service>();
  readonly endpointSlices = new Map<string, EndpointSlice>();
  readonly endpointSlicesByService = new Map<string, ReadonlyMap<string, EndpointSlice>>();
  readonly secrets = new Map<string, Secret>();
  readonly gatewayClasses = new Map<string, GatewayClass>();
  readonly gateways = new Map<string, Gateway>();
  readonly httpRoutes = new Map<string, HTTPRoute>();
  readonly grpcRoutes = new Map<string, GRPCRoute>();
  readonly referenceGrants = new Map<string, ReferenceGrant>();
  readonly namespaces = new Map<string, Namespace>();

  private readonly byKind: { readonly [K in RoutingKind]: Map<string, KindTypes[K]> } = {
    IngressClass: this.ingressClasses,
    Ingress: this.ingresses,
    Service: this.services,
    EndpointSlice: this.endpointSlices,
    Secret: this.secrets,
    GatewayClass: this.gatewayClasses,
    Gateway: this.gateways,
    HTTPRoute: this.httpRoutes,
    GRPCRoute: this.grpcRoutes,
    ReferenceGrant: this.referenceGrants,
    Namespace: this.namespaces,
  };
  private readonly listeners = new Set<StoreListener>();
  private currentVersion = 0;

  /** Increases by one with every effective change (an upsert, delete or replaceAll that changed something). */
  get version(): number {
    return this.currentVersion;
  }

  get<K extends RoutingKind>(kind: K, key: string): KindTypes[K] | undefined {
    return this.mapOf(kind).get(key);
  }

  /** All objects of one kind, keyed by objectKey(). */
  all<K extends RoutingKind>(kind: K): ReadonlyMap<string, KindTypes[K]> {
    return this.mapOf(kind);
  }

  /** Adds or replaces an object (sanitized: frozen, namespace set for namespaced kinds). Returns whether anything changed. */
  upsert(obj: KubeObject): boolean {
    const change = this.put(obj);
    if (change) this.emit([change]);
    return change !== undefined;
  }

  /** Removes an object by kind and objectKey(). Returns whether it existed. */
  delete(kind: RoutingKind, key: string): boolean {
    const change = this.remove(kind, key);
    if (change) this.emit([change]);
    return change !== undefined;
  }

  /**
   * Makes the objects of one kind exactly `objects` (after a re-list): adds, updates
   * and deletes what differs, then notifies once. Returns the changes made.
   */
  replaceAll(kind: RoutingKind, objects: readonly KubeObject[]): readonly ObjectChange[] {
    const changes: ObjectChange[] = [];
    const keep = new Set<string>();
    for (const obj of objects) {
      if (obj.kind !== kind) throw new TypeError(`replaceAll(${kind}): got a ${obj.kind}`);
      keep.add(keyOf(obj));
      const change = this.put(obj);
      if (change) changes.push(change);
    }
    for (const key of [...this.mapOf(kind).keys()]) {
      if (keep.has(key)) continue;
      const change = this.remove(kind, key);
      if (change) changes.push(change);
    }
    if (changes.length) this.emit(changes);
    return changes;
  }

  /** Calls `listener` after each effective change. Returns a function that unsubscribes. */
  onChange(listener: StoreListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private mapOf<K extends RoutingKind>(kind: K): Map<string, KindTypes[K]> {
    const map = this.byKind[kind] as Map<string, KindTypes[K]> | undefined;
    if (!map) throw new TypeError(`the object store does not keep ${kind} objects`);
    return map;
  }

  private put(given: KubeObject): ObjectChange | undefined {
    let obj = given;
    const kind = obj.kind as RoutingKind;
    const map = this.mapOf(kind) as Map<string, KubeObject>;
    const key = keyOf(obj);
    const previous = map.get(key);
    if (previous !== undefined && sameObject(previous, obj)) return undefined;
    // Objects from the API server (with a resourceVersion) are held by nothing but the
    // store. A manifest file's object is also held by its file's entry in the standalone
    // source, and a copy here would be a second tree.
    if (previous !== undefined && obj.metadata.resourceVersion !== undefined) obj = shareUnchanged(previous, obj);
    map.set(key, obj);
    if (kind === 'EndpointSlice') this.reindexSlice(key, previous as EndpointSlice | undefined, obj as EndpointSlice);
    if (previous !== undefined && STATUS_KINDS.has(kind) && sameExceptStatus(previous, obj)) return { type: 'updated', kind, key, statusOnly: true };
    return { type: previous === undefined ? 'added' : 'updated', kind, key };
  }

  private remove(kind: RoutingKind, key: string): ObjectChange | undefined {
    const map = this.mapOf(kind) as Map<string, KubeObject>;
    const previous = map.get(key);
    if (previous === undefined) return undefined;
    map.delete(key);
    if (kind === 'EndpointSlice') this.reindexSlice(key, previous as EndpointSlice, undefined);
    return { type: 'deleted', kind, key };
  }

  /** Moves a slice between per-Service maps, replacing each map it touches (see the header). */
  private reindexSlice(key: string, before: EndpointSlice | undefined, after: EndpointSlice | undefined): void {
    const from = before && serviceOf(before);
    const to = after && serviceOf(after);
    if (from !== undefined && from !== to) {
      const next = new Map(this.endpointSlicesByService.get(from));
      next.delete(key);
      if (next.size) this.endpointSlicesByService.set(from, next);
      else this.endpointSlicesByService.delete(from);
    }
    if (to !== undefined) {
      const next = new Map(this.endpointSlicesByService.get(to));
      next.set(key, after!);
      this.endpointSlicesByService.set(to, next);
    }
  }

  private emit(changes: readonly ObjectChange[]): void {
    const event: StoreChangeEvent = { version: ++this.currentVersion, changes };
    for (const listener of this.listeners) listener(event);
  }
}

/** "ns/service" of the Service an EndpointSlice belongs to, from its kubernetes.io/service-name label. */
export function serviceOf(slice: EndpointSlice): string | undefined {
  const service = slice.metadata.labels?.[SERVICE_NAME_LABEL];
  return service ? objectKey(slice.metadata.namespace ?? 'default', service) : undefined;
}

/** Kinds whose status portico writes (its writes come back as watch events). */
const STATUS_KINDS: ReadonlySet<RoutingKind> = new Set<RoutingKind>(['Ingress', 'Gateway', 'GatewayClass', 'HTTPRoute', 'GRPCRoute']);

/** Everything but status and metadata.resourceVersion is the same (spec, generation, annotations, labels...). */
function sameExceptStatus(a: KubeObject, b: KubeObject): boolean {
  const x = a as unknown as Record<string, unknown>;
  const y = b as unknown as Record<string, unknown>;
  for (const key of new Set([...Object.keys(x), ...Object.keys(y)])) {
    if (key === 'status') continue;
    if (key === 'metadata') {
      const { resourceVersion: _a, ...ma } = a.metadata;
      const { resourceVersion: _b, ...mb } = b.metadata;
      if (!deepEqual(ma, mb)) return false;
    } else if (!deepEqual(x[key], y[key])) {
      return false;
    }
  }
  return true;
}

/**
 * `next`, with every part equal to the same part of `previous` taken from `previous`.
 * An update most often changes little: portico's own status write comes back as a whole
 * new object with the same spec. Translation's per-Ingress entries compare the parts they
 * read (spec, annotations) by identity, so after a status write they are still current and
 * hold nothing of the previous version; before this sharing, whoever held a version held a
 * copy of everything (10 MB at 10,000 Ingresses after the first status writes). Both
 * versions are frozen, so sharing is safe. Keys keep `next`'s order.
 */
export function shareUnchanged<T>(previous: unknown, next: T): T {
  if (previous === next || typeof next !== 'object' || next === null) return (previous === next ? previous : next) as T;
  if (deepEqual(previous, next)) return previous as T;
  if (typeof previous !== 'object' || previous === null || Array.isArray(previous) !== Array.isArray(next)) return next;
  let out: unknown;
  if (Array.isArray(next)) {
    const before = previous as unknown[];
    out = next.map((item, i) => (i < before.length ? shareUnchanged(before[i], item) : item));
  } else {
    const before = previous as Record<string, unknown>;
    const fields: Record<string, unknown> = {};
    for (const key of Object.keys(next)) {
      const value = (next as Record<string, unknown>)[key];
      fields[key] = Object.hasOwn(before, key) ? shareUnchanged(before[key], value) : value;
    }
    out = fields;
  }
  return (Object.isFrozen(next) ? Object.freeze(out) : out) as T;
}

/** Same content: by resourceVersion when both come from the API server, else field by field. */
function sameObject(a: KubeObject, b: KubeObject): boolean {
  if (a === b) return true;
  const va = a.metadata.resourceVersion;
  const vb = b.metadata.resourceVersion;
  if (va !== undefined && vb !== undefined) return va === vb;
  return deepEqual(a, b);
}

