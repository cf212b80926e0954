import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deepEqual } from '../../../src/util/deep-equal.ts';

test('plain data is compared by content', () => {
  assert.ok(deepEqual({ a: [1, { b: 'x' }], c: null }, { c: null, a: [1, { b: 'x' }] }));
  assert.ok(deepEqual(Object.assign(Object.create(null), { a: 1 }), { a: 1 }), 'a null-prototype record is plain');
  assert.ok(!deepEqual({ a: [1, 2] }, { a: [1, 3] }));
  assert.ok(!deepEqual({ a: 1 }, { a: 1, b: undefined }), 'a key more');
  assert.ok(!deepEqual([1], { 0: 1, length: 1 }), 'an array is not an object with the same keys');
  assert.ok(!deepEqual({ 0: 1, length: 1 }, [1]));
});

test('a Map, a Set or a RegExp is equal only to itself: their contents are no enumerable keys', () => {
  const m = new Map([['a', 1]]);
  assert.ok(deepEqual({ m }, { m }));
  assert.ok(!deepEqual({ m }, { m: new Map([['a', 2]]) }), 'two Maps with different entries');
  assert.ok(!deepEqual(new Set([1]), new Set([2])));
  assert.ok(!deepEqual(/a/, /b/));
});
