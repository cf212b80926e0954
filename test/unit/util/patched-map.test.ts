import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PatchedMap } from '../../../src/util/patched-map.ts';

test('PatchedMap: each version keeps its own entries, as a copied Map would', () => {
  const plain = new Map<string, number>();
  for (let i = 0; i < 5000; i++) plain.set(`k${i}`, i);
  let patched = PatchedMap.of(new Map(plain));
  const versions: [PatchedMap<string, number>, Map<string, number>][] = [];
  for (let step = 0; step < 400; step++) {
    const changes: [string, number | undefined][] = [[`k${(step * 37) % 6000}`, step % 3 === 0 ? undefined : -step], [`new${step}`, step]];
    patched = patched.with(changes);
    for (const [key, value] of changes) {
      if (value === undefined) plain.delete(key);
      else plain.set(key, value);
    }
    if (step % 50 === 0) versions.push([patched, new Map(plain)]);
  }
  versions.push([patched, plain]);
  for (const [map, expected] of versions) {
    assert.equal(map.size, expected.size);
    assert.deepEqual(new Map(map), expected);
    for (const key of ['k0', 'k37', 'k5999', 'new3', 'missing']) {
      assert.equal(map.get(key), expected.get(key));
      assert.equal(map.has(key), expected.has(key));
    }
  }
});
