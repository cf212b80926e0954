import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SharedByValue } from '../../../src/util/shared-by-value.ts';

test('one object per value while held; another value gets its own', () => {
  const shared = new SharedByValue<{ n: number }>();
  let made = 0;
  const make = () => ({ n: ++made });
  const a = shared.get('{"origins":["https://a.test"]}', make);
  const b = shared.get('{"origins":["https://a.test"]}', make);
  const c = shared.get('{"origins":["https://c.test"]}', make);
  assert.equal(a, b);
  assert.notEqual(a, c);
  assert.equal(made, 2);
  assert.equal(shared.size, 2);
});
