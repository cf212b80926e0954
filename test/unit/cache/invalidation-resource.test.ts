// The CacheInvalidation rules every replica shares: what a spec asks for (and the
// message for each mistake), the overall phase from the replicas' entries, and when a
// finished object has outlived its TTL.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  appliedBy,
  entryFor,
  expired,
  ttlOf,
  isCacheInvalidation,
  overallPhase,
  requestOf,
  withEntry,
  type CacheInvalidation,
  type ReplicaEntry,
} from '../../../src/cache/invalidation-resource.ts';

function object(spec: CacheInvalidation['spec'], replicas?: ReplicaEntry[], generation = 1): CacheInvalidation {
  return {
    apiVersion: 'portico.dev/v1alpha1',
    kind: 'CacheInvalidation',
    metadata: { name: 'x', namespace: 'default', uid: 'u1', generation },
    spec,
    ...(replicas ? { status: { replicas } } : {}),
  };
}

const entry = (name: string, phase: 'Complete' | 'Failed', time = '2026-01-01T00:00:00.000Z', observedGeneration = 1): ReplicaEntry => ({ name, phase, message: '', time, observedGeneration });

describe('CacheInvalidation spec', () => {
  test('a Purge with paths and a Ban with a pattern are read as requests', () => {
    assert.deepEqual(requestOf(object({ host: 'shop.local', type: 'Purge', paths: ['/a', '/b?x=1'] })), { request: { type: 'Purge', host: 'shop.local', paths: ['/a', '/b?x=1'] } });
    assert.deepEqual(requestOf(object({ host: ' shop.local ', type: 'Ban', pattern: '^/img/' })), { request: { type: 'Ban', host: 'shop.local', pattern: '^/img/' } });
  });

  test('each mistake gets one message naming the field', () => {
    const error = (spec: CacheInvalidation['spec']) => {
      const read = requestOf(object(spec));
      assert.ok('error' in read, `refused: ${JSON.stringify(spec)}`);
      return read.error;
    };
    assert.match(error(undefined), /^spec is required/);
    assert.match(error({ type: 'Purge', paths: ['/a'] }), /^spec\.host is required/);
    assert.match(error({ host: '', type: 'Purge', paths: ['/a'] }), /^spec\.host is required/);
    assert.match(error({ host: 'h', type: 'Delete', paths: ['/a'] }), /^spec\.type must be Purge or Ban, not "Delete"/);
    assert.match(error({ host: 'h', type: 'Purge' }), /^spec\.paths: a Purge needs at least one path/);
    assert.match(error({ host: 'h', type: 'Purge', paths: ['/a', 'b'] }), /^spec\.paths\[1\]: must be a path starting with \/ \(got "b"\)/);
    assert.match(error({ host: 'h', type: 'Ban' }), /^spec\.pattern: a Ban needs a regular expression/);
    assert.equal(error({ host: 'h', type: 'Ban', pattern: '/img/(' }), 'spec.pattern: "/img/(" is not a valid regular expression: Invalid regular expression: //img/(/: Unterminated group');
  });

  test('only portico.dev/v1alpha1 CacheInvalidation objects are recognised', () => {
    assert.ok(isCacheInvalidation(object({ host: 'h', type: 'Ban', pattern: '.' })));
    assert.ok(!isCacheInvalidation({ ...object({}), apiVersion: 'portico.dev/v1' }));
    assert.ok(!isCacheInvalidation({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'x' } }));
  });
});

describe('CacheInvalidation phase', () => {
  const spec = { host: 'h', type: 'Ban', pattern: '.' };

  test('Pending until a replica applied it; without the replica list, Complete once every replica that ran it succeeded', () => {
    assert.equal(overallPhase(object(spec)), 'Pending');
    assert.equal(overallPhase(object(spec, [entry('a', 'Complete')])), 'Complete');
    assert.equal(overallPhase(object(spec, [entry('a', 'Complete'), entry('b', 'Complete')])), 'Complete');
  });

  test('with the replicas behind the Service known, Complete only once each of them applied it', () => {
    const expected = new Set(['a', 'b']);
    assert.equal(overallPhase(object(spec, [entry('a', 'Complete')]), expected), 'Pending');
    assert.equal(overallPhase(object(spec, [entry('a', 'Complete'), entry('b', 'Complete')]), expected), 'Complete');
    // A replica that left the Service (scaled down) no longer holds it Pending.
    assert.equal(overallPhase(object(spec, [entry('a', 'Complete')]), new Set(['a'])), 'Complete');
    // An empty list (no pod ready yet) says nothing: every replica that ran it succeeded.
    assert.equal(overallPhase(object(spec, [entry('a', 'Complete')]), new Set()), 'Complete');
  });

  test('Failed as soon as one replica failed, whatever the others did', () => {
    assert.equal(overallPhase(object(spec, [entry('a', 'Failed')]), new Set(['a', 'b'])), 'Failed');
    assert.equal(overallPhase(object(spec, [entry('a', 'Complete'), entry('b', 'Failed')])), 'Failed');
  });

  test('entries for an older generation of the spec do not count: an edited spec is applied again', () => {
    const edited = object(spec, [entry('a', 'Failed', undefined, 1)], 2);
    assert.equal(overallPhase(edited), 'Pending');
    assert.equal(appliedBy(edited, 'a'), undefined);
    assert.deepEqual(appliedBy(object(spec, [entry('a', 'Complete')]), 'a')?.phase, 'Complete');
  });

  test('a replica replaces its own entry and keeps the others; the phase is computed from the same list', () => {
    const before = object(spec, [entry('b', 'Complete'), entry('a', 'Failed', undefined, 0)]);
    const mine = entryFor('a', 1, { ok: true, message: 'banned', removed: 3 }, new Date('2026-01-01T00:00:01Z'));
    const status = withEntry(before, mine, new Set(['a', 'b']));
    assert.deepEqual(status.replicas, [
      { name: 'a', phase: 'Complete', message: 'banned', removed: 3, time: '2026-01-01T00:00:01.000Z', observedGeneration: 1 },
      entry('b', 'Complete'),
    ]);
    assert.equal(status.phase, 'Complete');
  });
});

describe('CacheInvalidation TTL', () => {
  const at = Date.parse('2026-01-01T00:00:10Z');
  const done = (ttl?: string): CacheInvalidation => ({
    ...object({ host: 'h', type: 'Ban', pattern: '.', ...(ttl ? { ttl } : {}) }),
    status: { phase: 'Complete', replicas: [entry('a', 'Complete', '2026-01-01T00:00:05Z'), entry('b', 'Complete', '2026-01-01T00:00:10Z')] },
  });

  test('a finished object expires the TTL after its last replica finished; spec.ttl wins over the default', () => {
    assert.equal(expired(done(), 60_000, at + 59_999), false);
    assert.equal(expired(done(), 60_000, at + 60_000), true);
    assert.equal(expired(done('5s'), 60_000, at + 5_000), true);
    assert.equal(expired(done('5s'), 60_000, at + 4_999), false);
  });

  test('a spec.ttl under 1s is refused with its reason, and the object expires after the default TTL', () => {
    for (const ttl of ['0s', '0', '999ms']) {
      const obj = done(ttl);
      assert.match(ttlOf(obj).error ?? '', /^spec\.ttl: ".+" is under 1s/, ttl);
      assert.equal(ttlOf(obj).ms, undefined);
      assert.equal(expired(obj, 60_000, at + 59_999), false, ttl);
      assert.equal(expired(obj, 60_000, at + 60_000), true, ttl);
    }
    assert.deepEqual(ttlOf(done('1s')), { ms: 1000 });
    assert.match(ttlOf(done('soon')).error ?? '', /is not a duration/);
  });

  test('a Pending object never expires (it waits for its replicas)', () => {
    const pending: CacheInvalidation = { ...done(), status: { phase: 'Pending', replicas: [entry('a', 'Complete')] } };
    assert.equal(expired(pending, 1, at + 3_600_000), false);
  });
});
