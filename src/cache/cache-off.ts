// The Invalidate of a replica that caches nothing (no route has portico.dev/cache): an
// invalidation succeeds there, removes nothing, and says why, so a CacheInvalidation
// does not stay Pending or turn Failed because one replica has no cache.
import type { Invalidate } from './invalidation.ts';

export const invalidateWithoutCache: Invalidate = async () => ({ ok: true, removed: 0, message: 'the cache is off in this replica: nothing to remove' });
