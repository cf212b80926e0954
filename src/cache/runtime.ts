// The process' cache: one store per process (each worker has its own), the addresses
// allowed to send PURGE and BAN to the public listeners, and the Invalidate that reaches
// every cache of this replica (set by the data plane: local, or through the primary).
import { CidrSet, parseCidrList } from '../middleware/cidr.ts';
import { CacheStore } from './store.ts';
import { normaliseCacheHost, normaliseCachePath, validatingInvalidate, type Invalidate, type InvalidationRequest, type InvalidationResult } from './invalidation.ts';

export const DEFAULT_CACHE_BYTES = 128 * 1024 * 1024;

let store: CacheStore | undefined;
let purgeAllow: CidrSet | undefined;
let invalidateAll: Invalidate | undefined;

export interface CacheRuntimeOptions {
  /** --cache-size, bytes */
  readonly maxBytes: number;
  /** --cache-purge-allow, a CIDR list */
  readonly purgeAllow: string;
  /** Applies an invalidation to every cache of this replica; default: this process' store. */
  readonly invalidate?: Invalidate;
}

/** Set once at start by the data plane. */
export function configureCache(options: CacheRuntimeOptions): void {
  store = new CacheStore(options.maxBytes);
  const cidrs = parseCidrList(options.purgeAllow).valid;
  purgeAllow = cidrs.length > 0 ? new CidrSet(cidrs) : undefined;
  invalidateAll = options.invalidate;
}

export function cacheStore(): CacheStore {
  return (store ??= new CacheStore(DEFAULT_CACHE_BYTES));
}

/** The client may send PURGE and BAN to the public listeners (--cache-purge-allow). */
export function purgeAllowed(clientIp: string): boolean {
  return purgeAllow !== undefined && purgeAllow.has(clientIp);
}

/** Applies a (valid) invalidation to this process' store. */
export function invalidateLocal(request: InvalidationRequest): InvalidationResult {
  const host = normaliseCacheHost(request.host);
  const s = cacheStore();
  if (request.type === 'Purge') {
    const removed = s.purge(host, request.paths.map(normaliseCachePath));
    return { ok: true, message: `purged ${removed} entr${removed === 1 ? 'y' : 'ies'} of ${host}`, removed };
  }
  s.ban(host, new RegExp(request.pattern));
  return { ok: true, message: `banned ${request.pattern} on ${host} (applied lazily, on lookup)`, removed: 0 };
}

/** This process' store alone, validated. */
export const invalidateThisProcess: Invalidate = validatingInvalidate(async (request) => invalidateLocal(request));

/** The Invalidate of this replica: every worker's cache (PURGE/BAN on the listeners use it). */
export function invalidate(request: InvalidationRequest): Promise<InvalidationResult> {
  return (invalidateAll ?? invalidateThisProcess)(request);
}
