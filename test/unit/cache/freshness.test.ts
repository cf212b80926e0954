// The RFC 9111 rules as pure functions: storability, freshness lifetime, age, stale
// serving and conditional requests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCacheControl } from '../../../src/cache/cache-control.ts';
import { currentAge, freshnessLifetime, mayServeStale, notModified, notStorableReason, varyNames } from '../../../src/cache/freshness.ts';

const storable = (status: number, headers: Record<string, string>, opts: { auth?: boolean; ttl?: number } = {}) =>
  notStorableReason({ status, cc: parseCacheControl(headers['cache-control']), headers, requestHadAuthorization: opts.auth ?? false, defaultTtl: opts.ttl ?? 0 });

test('Cache-Control directives are parsed case-insensitively, with quoted and malformed numbers', () => {
  const cc = parseCacheControl(['Public, MAX-AGE=60', 's-maxage="30", stale-while-revalidate=5, stale-if-error=x']);
  assert.equal(cc.public, true);
  assert.equal(cc.maxAge, 60);
  assert.equal(cc.sMaxAge, 30);
  assert.equal(cc.staleWhileRevalidate, 5);
  assert.equal(cc.staleIfError, -1, 'a malformed number is absent');
  assert.equal(parseCacheControl('no-cache="set-cookie"').noCache, true);
  assert.equal(parseCacheControl(undefined).maxAge, -1);
});

test('what a shared cache may store', () => {
  assert.equal(storable(200, { 'cache-control': 'max-age=60' }), undefined);
  assert.equal(storable(200, { expires: new Date(Date.now() + 60_000).toUTCString() }), undefined);
  assert.equal(storable(200, { 'cache-control': 'no-store, max-age=60' }), 'no-store');
  assert.equal(storable(200, { 'cache-control': 'private, max-age=60' }), 'private');
  assert.equal(storable(200, { 'cache-control': 'max-age=60', 'set-cookie': 'a=b' }), 'set-cookie');
  assert.equal(storable(200, { 'cache-control': 'max-age=60', vary: 'Accept, *' }), 'vary *');
  assert.equal(storable(200, {}), 'no freshness information');
  assert.equal(storable(200, {}, { ttl: 30 }), undefined, 'the route default TTL');
  assert.equal(storable(500, {}, { ttl: 30 }), 'no freshness information', 'a default TTL only for statuses cacheable by default');
  assert.equal(storable(206, { 'cache-control': 'max-age=60' }), 'status 206');
  assert.equal(storable(200, { 'cache-control': 'no-cache' }), 'no-cache without a validator');
  assert.equal(storable(200, { 'cache-control': 'no-cache', etag: '"x"' }), undefined);
  // RFC 9111 section 3.5
  assert.equal(storable(200, { 'cache-control': 'max-age=60' }, { auth: true }), 'authorization');
  assert.equal(storable(200, { 'cache-control': 'public, max-age=60' }, { auth: true }), undefined);
  assert.equal(storable(200, { 'cache-control': 's-maxage=60' }, { auth: true }), undefined);
});

test('freshness lifetime: s-maxage, then max-age, then Expires - Date, then the default TTL', () => {
  const now = Date.parse('Fri, 27 Nov 2026 10:00:00 GMT');
  const life = (h: Record<string, string>, ttl = 0, status = 200) => freshnessLifetime(status, parseCacheControl(h['cache-control']), h, ttl, now);
  assert.equal(life({ 'cache-control': 'max-age=60, s-maxage=10' }), 10);
  assert.equal(life({ 'cache-control': 'max-age=60' }), 60);
  assert.equal(life({ date: 'Fri, 27 Nov 2026 10:00:00 GMT', expires: 'Fri, 27 Nov 2026 10:05:00 GMT' }), 300);
  assert.equal(life({ expires: 'Fri, 27 Nov 2026 10:01:00 GMT' }), 60, 'no Date: the response time');
  assert.equal(life({ expires: '0' }), 0, 'an invalid Expires is already expired');
  assert.equal(life({}, 30), 30);
  assert.equal(life({ 'cache-control': 'no-cache, max-age=60' }), 0);
});

test('current age: Age header, Date and the time in the cache (RFC 9111 section 4.2.3)', () => {
  const t = 1_000_000_000;
  assert.equal(currentAge({ requestTime: t, responseTime: t, dateValue: t, ageValue: 0 }, t + 5000), 5);
  assert.equal(currentAge({ requestTime: t, responseTime: t, dateValue: t, ageValue: 20 }, t + 5000), 25);
  // The origin's clock is 10 s behind: apparent age.
  assert.equal(currentAge({ requestTime: t, responseTime: t, dateValue: t - 10_000, ageValue: 0 }, t), 10);
  // A slow answer counts its delay.
  assert.equal(currentAge({ requestTime: t - 2000, responseTime: t, dateValue: NaN, ageValue: 3 }, t), 5);
});

test('stale copies may be served unless the response forbids it', () => {
  assert.equal(mayServeStale(parseCacheControl('max-age=1, stale-while-revalidate=60')), true);
  for (const cc of ['must-revalidate', 'proxy-revalidate', 's-maxage=1', 'no-cache']) assert.equal(mayServeStale(parseCacheControl(cc)), false, cc);
});

test('Vary names are normalised; conditional requests are compared weakly', () => {
  assert.equal(varyNames('Accept-Encoding, accept-language,accept-encoding'), 'accept-encoding,accept-language');
  assert.equal(varyNames(['accept', '*']), '*');
  const headers = { etag: 'W/"abc"', 'last-modified': 'Fri, 27 Nov 2026 09:00:00 GMT' };
  assert.equal(notModified('"abc"', undefined, headers), true);
  assert.equal(notModified('"x", W/"abc"', undefined, headers), true);
  assert.equal(notModified('"x"', 'Fri, 27 Nov 2026 10:00:00 GMT', headers), false, 'If-None-Match decides when present');
  assert.equal(notModified('*', undefined, headers), true);
  assert.equal(notModified(undefined, 'Fri, 27 Nov 2026 10:00:00 GMT', headers), true);
  assert.equal(notModified(undefined, 'Fri, 27 Nov 2026 08:00:00 GMT', headers), false);
  assert.equal(notModified(undefined, 'not a date', headers), false);
});
