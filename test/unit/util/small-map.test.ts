import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SmallMap } from '../../../src/util/small-map.ts';

test('SmallMap answers as a Map would, below and above the size where it becomes one', () => {
  for (const n of [0, 1, 2, 7, 8, 9, 40]) {
    const keys = new SmallMap<number>();
    const map = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      // The same text as different string objects: lookups compare values, not identity.
      keys.set(`/p${i}`, i);
      map.set(`/p${i}`, i);
    }
    if (n > 0) {
      keys.set('/p0', -1); // replacing keeps one entry
      map.set('/p0', -1);
    }
    assert.equal(keys.size, map.size);
    for (let i = 0; i < n + 3; i++) assert.equal(keys.get(['/p', String(i)].join('')), map.get(`/p${i}`), `n=${n} i=${i}`);
    assert.equal(keys.get(''), undefined);
    assert.deepEqual([...keys.entries()], [...map.entries()], `n=${n}: the same pairs in the same order`);
  }
});
