// portico.dev/cache: "true" caches the route's GET and HEAD answers at the edge, as a
// shared cache (RFC 9111); portico.dev/cache-ttl is the freshness of cacheable answers
// that carry none (default 0: only what the response's headers allow). The cache itself
// is src/cache/; this module reads the annotations and puts it in the chain. Routes
// without the annotation do not have it in their chain at all.
import { parseAnnotationDuration, parseBool } from '../util/units.ts';
import { cacheHandler, type CachePolicyConfig } from '../cache/handler.ts';
import { annotation, reportIgnored, reportInvalid } from './annotations.ts';
import type { Middleware, PolicyDefinition } from './types.ts';

export const CACHE = 'portico.dev/cache';
export const CACHE_TTL = 'portico.dev/cache-ttl';

export const cachePolicy: PolicyDefinition<CachePolicyConfig> = {
  name: 'cache',
  annotations: [CACHE, CACHE_TTL],
  // Last: every filter, redirect and challenge runs before a cached answer is given, and
  // the request the cache sends to the pod is the rewritten one with its timeouts.
  order: 95,
  parse(input) {
    const on = annotation(input, CACHE);
    const ttlText = annotation(input, CACHE_TTL);
    if (on === undefined) {
      if (ttlText !== undefined) reportIgnored(input, CACHE_TTL, `has no effect without ${CACHE}`);
      return undefined;
    }
    const enabled = parseBool(on);
    if (enabled === undefined) {
      reportInvalid(input, CACHE, on, 'true or false', 'the route is not cached');
      return undefined;
    }
    if (!enabled) return undefined;
    let defaultTtl = 0;
    if (ttlText !== undefined) {
      const ms = parseAnnotationDuration(ttlText);
      if (ms !== undefined) defaultTtl = Math.floor(ms / 1000);
      else reportInvalid(input, CACHE_TTL, ttlText, 'a duration such as 30s, 5m or 1h (0: only what the response headers allow)', 'only responses with their own freshness (max-age, s-maxage, Expires) are cached', 'warning');
    }
    return { defaultTtl };
  },
  create(config): Middleware {
    return (next) => cacheHandler(config, next);
  },
};
