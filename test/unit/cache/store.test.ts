// The store: byte bound with least-recently-used eviction, variants, purge and lazy bans.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CacheStore } from '../../../src/cache/store.ts';
import { CacheEntry } from '../../../src/cache/entry.ts';
import { parseCacheControl } from '../../../src/cache/cache-control.ts';
import { validateInvalidation } from '../../../src/cache/invalidation.ts';

function entry(host: string, path: string, bodyBytes: number, variant = ''): CacheEntry {
  const primary = `${host} ${path}`;
  return new CacheEntry({
    host, path, primary, key: `${primary}\nroute${variant}`, status: 200, reason: '', headers: { 'content-length': String(bodyBytes) }, body: Buffer.alloc(bodyBytes),
    cc: parseCacheControl('max-age=60'), requestTime: 0, responseTime: 0, dateValue: NaN, ageValue: 0, lifetime: 60, authorizedOk: false, headersChecked: true,
  });
}

test('the store stays within its byte bound, evicting the least recently used first', () => {
  const store = new CacheStore(10_000, 5_000);
  const a = entry('h', '/a', 2000);
  const b = entry('h', '/b', 2000);
  const c = entry('h', '/c', 2000);
  const d = entry('h', '/d', 2000);
  for (const e of [a, b, c]) assert.equal(store.put(e, e.key, ''), true);
  assert.equal(store.bytes, a.size + b.size + c.size);
  assert.ok(store.get(a.key), 'a is now the most recently used');
  store.put(d, d.key, '');
  assert.ok(store.put(entry('h', '/e', 2000), 'e', ''));
  assert.ok(store.bytes <= 10_000);
  assert.equal(store.get(b.key), undefined, 'b was the least recently used');
  assert.ok(store.get(a.key));
  assert.equal(store.counters.evictions, 1);
  assert.equal(store.put(entry('h', '/big', 6000), 'big', ''), false, 'over the per-object cap');
});

test('purge removes every variant of a URL; the Vary names go with the last one', () => {
  const store = new CacheStore(1_000_000);
  store.put(entry('h', '/p', 10, '\naccept-encoding=gzip'), 'h /p\nroute', 'accept-encoding');
  store.put(entry('h', '/p', 10, '\naccept-encoding=br'), 'h /p\nroute', 'accept-encoding');
  store.put(entry('h', '/q', 10), 'q', '');
  assert.equal(store.varyNames('h /p\nroute'), 'accept-encoding');
  assert.equal(store.purge('h', ['/p', '/nothing']), 2);
  assert.equal(store.size, 1);
  assert.equal(store.varyNames('h /p\nroute'), '');
  assert.equal(store.purge('other', ['/q']), 0);
});

test('bans are lazy: matching entries stored before the ban go when looked up; later ones stay', () => {
  const store = new CacheStore(1_000_000);
  const img = entry('h', '/img/1', 10);
  const page = entry('h', '/page', 10);
  const otherHost = entry('o', '/img/1', 10);
  for (const e of [img, page, otherHost]) store.put(e, e.key, '');
  store.ban('h', /^\/img\//);
  assert.equal(store.size, 3, 'nothing removed yet');
  assert.equal(store.get(img.key), undefined);
  assert.ok(store.get(page.key));
  assert.ok(store.get(otherHost.key));
  const fresh = entry('h', '/img/1', 10);
  store.put(fresh, fresh.key, '');
  assert.equal(store.get(fresh.key), fresh, 'stored after the ban');
});

test('bans older than every entry are trimmed, and a long list is applied at once', () => {
  const store = new CacheStore(1_000_000);
  const a = entry('h', '/a', 10);
  store.put(a, a.key, '');
  store.ban('h', /^\/zzz/);
  assert.equal(store.pendingBans, 1);
  store.remove(a);
  store.put(entry('h', '/b', 10), 'b', '');
  store.ban('h', /^\/yyy/);
  assert.equal(store.pendingBans, 1, 'the first ban is older than every entry');
  for (let i = 0; i < 200; i++) store.ban('h', /^\/b/);
  assert.ok(store.pendingBans < 130);
  assert.equal(store.size, 0, 'applied to every entry when the list grew long');
});

test('validateInvalidation says what is wrong, without a cache', () => {
  assert.equal(validateInvalidation({ type: 'Purge', host: 'a.com', paths: ['/x'] }), undefined);
  assert.equal(validateInvalidation({ type: 'Ban', host: 'a.com', pattern: '^/img/' }), undefined);
  assert.match(validateInvalidation({ type: 'Ban', host: 'a.com', pattern: '(' })!, /not a valid regular expression/);
  assert.match(validateInvalidation({ type: 'Purge', host: '', paths: ['/x'] })!, /host must be a non-empty string/);
  assert.match(validateInvalidation({ type: 'Purge', host: 'a.com', paths: [] })!, /paths must be a non-empty array/);
  assert.match(validateInvalidation({ type: 'Purge', host: 'a.com', paths: ['x'] })!, /starting with "\/"/);
  assert.match(validateInvalidation({ type: 'Refresh', host: 'a.com' })!, /type must be "Purge" or "Ban"/);
  assert.match(validateInvalidation(null)!, /must be an object/);
});
