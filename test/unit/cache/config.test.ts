// Turning the cache on: the annotations (bad values reported, never fatal) and the flags.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Problem } from '../../../src/model/config.ts';
import { parsePolicies } from '../../../src/middleware/registry.ts';
import { FlagError, parseOptions } from '../../../src/config/flags.ts';

const INGRESS = { kind: 'Ingress' as const, namespace: 'default', name: 'web' };

function parse(annotations: Record<string, string>) {
  const problems: Problem[] = [];
  const policies = parsePolicies(annotations, INGRESS, problems);
  return { cache: policies.find((p) => p.name === 'cache')?.config, problems: problems.map((p) => `${p.severity}: ${p.message}`) };
}

test('portico.dev/cache and portico.dev/cache-ttl', () => {
  assert.deepEqual(parse({ 'portico.dev/cache': 'true' }), { cache: { defaultTtl: 0 }, problems: [] });
  assert.deepEqual(parse({ 'portico.dev/cache': 'yes', 'portico.dev/cache-ttl': '5m' }), { cache: { defaultTtl: 300 }, problems: [] });
  assert.deepEqual(parse({ 'portico.dev/cache': 'false', 'portico.dev/cache-ttl': '5m' }).cache, undefined);
  assert.deepEqual(parse({ 'portico.dev/cache': 'sometimes' }), {
    cache: undefined,
    problems: ['error: annotation portico.dev/cache: invalid value "sometimes": expected true or false; the route is not cached'],
  });
  const badTtl = parse({ 'portico.dev/cache': 'true', 'portico.dev/cache-ttl': 'forever' });
  assert.deepEqual(badTtl.cache, { defaultTtl: 0 });
  assert.match(badTtl.problems[0]!, /^warning: annotation portico.dev\/cache-ttl: invalid value "forever"/);
  assert.deepEqual(parse({ 'portico.dev/cache-ttl': '5m' }).problems, ['warning: annotation portico.dev/cache-ttl: has no effect without portico.dev/cache']);
});

test('--cache-size takes MiB-style sizes, --cache-purge-allow a CIDR list', () => {
  assert.equal(parseOptions([], {}).cacheSize, 128 * 1024 * 1024);
  assert.equal(parseOptions(['--cache-size', '256MiB'], {}).cacheSize, 256 * 1024 * 1024);
  assert.equal(parseOptions(['--cache-size=1g'], {}).cacheSize, 1024 ** 3);
  assert.equal(parseOptions([], { PORTICO_CACHE_SIZE: '64Mi' }).cacheSize, 64 * 1024 * 1024);
  assert.throws(() => parseOptions(['--cache-size', 'lots'], {}), (err: unknown) => err instanceof FlagError && err.message === '--cache-size: invalid value "lots": expected a size above 0 such as 64MiB, 512m or 1g');
  assert.equal(parseOptions(['--cache-purge-allow', '10.0.0.0/8, ::1'], {}).cachePurgeAllow, '10.0.0.0/8, ::1');
  assert.throws(() => parseOptions(['--cache-purge-allow', '10.0.0.0/99'], {}), /--cache-purge-allow: invalid value/);
});
