// A replica where no route has portico.dev/cache still applies an invalidation (entries
// left from a route that cached before are removed too) and it succeeds, but its result
// says the cache is off, so a CacheInvalidation's status does not suggest more.
import type { Invalidate } from './invalidation.ts';

export function sayingWhenCacheOff(invalidate: Invalidate, anyRouteCaches: () => boolean): Invalidate {
  return async (request) => {
    const result = await invalidate(request);
    if (!result.ok || anyRouteCaches()) return result;
    return { ...result, message: `the cache is off in this replica (no route has portico.dev/cache): ${result.message}` };
  };
}
