import { normalizeHost, normalizePath } from '../routing/request-target.ts';

// The invalidation API shared by the admin endpoints, the PURGE/BAN methods on the public
// listeners and the CacheInvalidation resource: one request shape, one validation, one
// function that applies it everywhere (every worker's cache when there are several).

export type InvalidationRequest =
  | { readonly type: 'Purge'; readonly host: string; readonly paths: readonly string[] }
  | { readonly type: 'Ban'; readonly host: string; readonly pattern: string };

export interface InvalidationResult {
  readonly ok: boolean;
  readonly message: string;
  /** Entries removed (purge) or matched so far (ban: 0, it is applied lazily on lookup). */
  readonly removed?: number;
}

/** Validates (bad regex, empty host → ok:false with a clear message) and applies to every worker's cache. */
export type Invalidate = (request: InvalidationRequest) => Promise<InvalidationResult>;

/** Longest ban pattern accepted: a ban is tested against every entry it may cover. */
export const MAX_BAN_PATTERN_LENGTH = 1024;

/** Why `request` cannot be applied, or undefined when it is valid. Needs no cache. */
export function validateInvalidation(request: unknown): string | undefined {
  if (request === null || typeof request !== 'object') return 'an invalidation must be an object with type, host and paths or pattern';
  const r = request as Record<string, unknown>;
  if (r.type !== 'Purge' && r.type !== 'Ban') return `type must be "Purge" or "Ban", got ${JSON.stringify(r.type)}`;
  if (typeof r.host !== 'string' || r.host.trim() === '') return 'host must be a non-empty string';
  if (/[\s/]/.test(r.host)) return `host ${JSON.stringify(r.host)} must be a bare host name (no spaces or slashes)`;
  if (r.type === 'Purge') {
    if (!Array.isArray(r.paths) || r.paths.length === 0) return 'paths must be a non-empty array of paths starting with "/"';
    for (const p of r.paths) {
      if (typeof p !== 'string' || !p.startsWith('/')) return `path ${JSON.stringify(p)} must be a string starting with "/"`;
    }
    return undefined;
  }
  if (typeof r.pattern !== 'string' || r.pattern === '') return 'pattern must be a non-empty regular expression on the path';
  if (r.pattern.length > MAX_BAN_PATTERN_LENGTH) return `pattern is longer than ${MAX_BAN_PATTERN_LENGTH} characters`;
  try {
    new RegExp(r.pattern);
  } catch (err) {
    return `pattern ${JSON.stringify(r.pattern)} is not a valid regular expression: ${(err as Error).message}`;
  }
  return undefined;
}

/** Host as the cache keys it (as the proxy normalises Host): lower case, without a port or trailing dot. */
export function normaliseCacheHost(host: string): string {
  return normalizeHost(host.trim());
}

/** A path (with its query) as the proxy normalises request paths, so "/%61" purges what "/a" stored. */
export function normaliseCachePath(path: string): string {
  const q = path.indexOf('?');
  const p = q === -1 ? path : path.slice(0, q);
  return (normalizePath(p) ?? p) + (q === -1 ? '' : path.slice(q));
}

/** An Invalidate that validates first, then calls `apply` (one cache, or the worker fan-out). */
export function validatingInvalidate(apply: Invalidate): Invalidate {
  return async (request) => {
    const problem = validateInvalidation(request);
    if (problem !== undefined) return { ok: false, message: problem };
    return apply(request);
  };
}
