// A replica where no route caches still applies an invalidation and succeeds, and its
// result says the cache is off there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sayingWhenCacheOff } from '../../../src/cache/cache-off.ts';
import type { Invalidate } from '../../../src/cache/invalidation.ts';

const purged: Invalidate = async () => ({ ok: true, message: 'purged 0 entries of shop.local', removed: 0 });
const refused: Invalidate = async () => ({ ok: false, message: 'host must be a non-empty string' });

test('with no route caching, a successful invalidation says the cache is off; with one, the cache\'s message is kept', async () => {
  assert.deepEqual(await sayingWhenCacheOff(purged, () => false)({ type: 'Purge', host: 'shop.local', paths: ['/'] }), {
    ok: true,
    removed: 0,
    message: 'the cache is off in this replica (no route has portico.dev/cache): purged 0 entries of shop.local',
  });
  assert.deepEqual(await sayingWhenCacheOff(purged, () => true)({ type: 'Purge', host: 'shop.local', paths: ['/'] }), { ok: true, message: 'purged 0 entries of shop.local', removed: 0 });
});

test('a failure stays a failure, with its own message', async () => {
  assert.deepEqual(await sayingWhenCacheOff(refused, () => false)({ type: 'Ban', host: '', pattern: '.' }), { ok: false, message: 'host must be a non-empty string' });
});
