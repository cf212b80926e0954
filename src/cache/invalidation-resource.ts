// The CacheInvalidation custom resource (portico.dev/v1alpha1): reading its spec into an
// InvalidationRequest (with one clear message per mistake), and the status rules every
// replica and the leader share: each replica's entry in status.replicas[], the overall
// phase, and when a finished object has outlived its TTL. Pure: no I/O.
import type { ObjectMeta } from '../model/k8s.ts';
import { parseDuration } from '../util/units.ts';
import type { InvalidationRequest, InvalidationResult } from './invalidation.ts';

export const CACHE_INVALIDATION_GROUP = 'portico.dev';
export const CACHE_INVALIDATION_API_VERSION = 'portico.dev/v1alpha1';
export const CACHE_INVALIDATION_KIND = 'CacheInvalidation';

export type Phase = 'Pending' | 'Complete' | 'Failed';

/** One replica's result, written by that replica only. */
export interface ReplicaEntry {
  name: string;
  phase: 'Complete' | 'Failed';
  message: string;
  removed?: number;
  /** RFC 3339: when the replica applied it. */
  time: string;
  /** The metadata.generation applied: an edited spec is applied again. */
  observedGeneration?: number;
}

export interface CacheInvalidationStatus {
  phase?: Phase;
  replicas?: ReplicaEntry[];
}

export interface CacheInvalidation {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: { host?: unknown; type?: unknown; paths?: unknown; pattern?: unknown; ttl?: unknown };
  status?: CacheInvalidationStatus;
}

export function isCacheInvalidation(raw: unknown): raw is CacheInvalidation {
  if (!raw || typeof raw !== 'object') return false;
  const o = raw as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown } };
  return o.apiVersion === CACHE_INVALIDATION_API_VERSION && o.kind === CACHE_INVALIDATION_KIND && typeof o.metadata?.name === 'string';
}

/** "CacheInvalidation ns/name": how logs, Events and messages name one. */
export function describeInvalidation(obj: CacheInvalidation): string {
  const { namespace, name } = obj.metadata;
  return `CacheInvalidation ${namespace ? `${namespace}/` : ''}${name}`;
}

/**
 * The request an object asks for, or what is wrong with it (the field and why). The API
 * server's schema refuses most of these already; manifests and servers without CEL do not.
 */
export function requestOf(obj: CacheInvalidation): { request: InvalidationRequest } | { error: string } {
  const spec = obj.spec;
  if (!spec || typeof spec !== 'object') return { error: 'spec is required (host, type, and paths or pattern)' };
  const host = typeof spec.host === 'string' ? spec.host.trim() : '';
  if (host === '') return { error: 'spec.host is required: the Host the cached responses were served for' };
  if (spec.type === 'Purge') {
    const paths = spec.paths;
    if (!Array.isArray(paths) || paths.length === 0) return { error: 'spec.paths: a Purge needs at least one path (or use type Ban with a pattern)' };
    for (const [i, path] of paths.entries()) {
      if (typeof path !== 'string' || !path.startsWith('/')) return { error: `spec.paths[${i}]: must be a path starting with / (got ${JSON.stringify(path)})` };
    }
    return { request: { type: 'Purge', host, paths: paths as string[] } };
  }
  if (spec.type === 'Ban') {
    const pattern = spec.pattern;
    if (typeof pattern !== 'string' || pattern === '') return { error: 'spec.pattern: a Ban needs a regular expression on the path' };
    try {
      new RegExp(pattern);
    } catch (err) {
      return { error: `spec.pattern: ${JSON.stringify(pattern)} is not a valid regular expression: ${(err as Error).message}` };
    }
    return { request: { type: 'Ban', host, pattern } };
  }
  return { error: `spec.type must be Purge or Ban, not ${JSON.stringify(spec.type ?? null)}` };
}

/**
 * The shortest spec.ttl, as for --cache-invalidation-ttl (config/flags.ts says why): with
 * less, the leader could delete an object once one replica applied it, before the others
 * reached it, and they kept their stale entries.
 */
const MIN_TTL_MS = 1000;

/** spec.ttl in ms; undefined when absent. A ttl that is not a duration of at least 1s is reported and the default used. */
export function ttlOf(obj: CacheInvalidation): { ms?: number; error?: string } {
  const ttl = obj.spec?.ttl;
  if (ttl === undefined || ttl === null || ttl === '') return {};
  const ms = typeof ttl === 'string' ? parseDuration(ttl) : undefined;
  if (ms === undefined) return { error: `spec.ttl: ${JSON.stringify(ttl)} is not a duration such as 10m or 1h30m` };
  if (ms < MIN_TTL_MS) return { error: `spec.ttl: ${JSON.stringify(ttl)} is under 1s: the other replicas could miss the object before it is deleted` };
  return { ms };
}

/** The entry a replica writes for a result (or for an object it could not read). */
export function entryFor(replica: string, generation: number | undefined, result: InvalidationResult, now = new Date()): ReplicaEntry {
  const entry: ReplicaEntry = { name: replica, phase: result.ok ? 'Complete' : 'Failed', message: result.message, time: now.toISOString() };
  if (result.removed !== undefined) entry.removed = result.removed;
  if (generation !== undefined) entry.observedGeneration = generation;
  return entry;
}

/** The entries that speak of this generation of the spec (older ones were for another spec). */
function currentEntries(obj: CacheInvalidation): ReplicaEntry[] {
  const generation = obj.metadata.generation;
  return (obj.status?.replicas ?? []).filter((e) => e.observedGeneration === undefined || generation === undefined || e.observedGeneration === generation);
}

/** This replica's entry for the current generation: it applied this spec already (before a restart, say). */
export function appliedBy(obj: CacheInvalidation, replica: string): ReplicaEntry | undefined {
  return currentEntries(obj).find((e) => e.name === replica);
}

/**
 * The overall phase:
 * - Failed as soon as one replica failed;
 * - with `expected` (the replicas known to serve: the ready pods behind portico's
 *   Service), Complete once each of them has a Complete entry, else Pending;
 * - without it (unknown, or no ready pod listed), Complete once at least one replica
 *   applied it and none failed: every replica that ran it succeeded.
 */
export function overallPhase(obj: CacheInvalidation, expected?: ReadonlySet<string>): Phase {
  const entries = currentEntries(obj);
  if (entries.some((e) => e.phase === 'Failed')) return 'Failed';
  if (expected !== undefined && expected.size > 0) {
    const done = new Set(entries.filter((e) => e.phase === 'Complete').map((e) => e.name));
    for (const name of expected) if (!done.has(name)) return 'Pending';
    return 'Complete';
  }
  return entries.length > 0 ? 'Complete' : 'Pending';
}

/** The status with this replica's entry put in (replacing its previous one) and the phase recomputed. */
export function withEntry(obj: CacheInvalidation, entry: ReplicaEntry, expected?: ReadonlySet<string>): CacheInvalidationStatus {
  const replicas = [...(obj.status?.replicas ?? []).filter((e) => e.name !== entry.name), entry].sort((a, b) => a.name.localeCompare(b.name));
  const next: CacheInvalidation = { ...obj, status: { ...obj.status, replicas } };
  return { ...obj.status, replicas, phase: overallPhase(next, expected) };
}

/** When a finished object finished: its latest current entry. */
export function finishedAt(obj: CacheInvalidation): number | undefined {
  const phase = obj.status?.phase;
  if (phase !== 'Complete' && phase !== 'Failed') return undefined;
  let latest: number | undefined;
  for (const e of currentEntries(obj)) {
    const t = Date.parse(e.time);
    if (Number.isFinite(t) && (latest === undefined || t > latest)) latest = t;
  }
  return latest;
}

/** Finished, and its TTL (spec.ttl, else the default) has passed since. */
export function expired(obj: CacheInvalidation, defaultTtlMs: number, now = Date.now()): boolean {
  const at = finishedAt(obj);
  if (at === undefined) return false;
  return now >= at + (ttlOf(obj).ms ?? defaultTtlMs);
}
