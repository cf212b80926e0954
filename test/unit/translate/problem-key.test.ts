// problemKey: what makes two reports the same problem (logged once). The object, the
// reason and the message all count, however many messages have been keyed before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { problemKey, type Problem } from '../../../src/model/config.ts';

const problem = (name: string, reason: string, message: string): Problem => ({ object: { kind: 'Ingress', namespace: 'default', name }, severity: 'warning', reason, message });

test('reports are the same problem only for the same object, reason and message', () => {
  const key = problemKey(problem('a', 'ServiceNotFound', 'Service default/x not found'));
  assert.equal(problemKey(problem('a', 'ServiceNotFound', 'Service default/x not found')), key, 'found again, in a new object');
  assert.notEqual(problemKey(problem('b', 'ServiceNotFound', 'Service default/x not found')), key, 'another Ingress');
  assert.notEqual(problemKey(problem('a', 'ServiceNotFound', 'Service default/y not found')), key, 'another message');
  assert.notEqual(problemKey(problem('a', 'PortNotFound', 'Service default/x not found')), key, 'another reason');
  assert.notEqual(problemKey({ ...problem('a', 'ServiceNotFound', 'Service default/x not found'), object: { kind: 'HTTPRoute', namespace: 'default', name: 'a' } }), key, 'another kind');
});

test('keys stay exact and short past the remembered messages', () => {
  const message = (i: number) => `spec.rules[${i}].host: "${'x'.repeat(200)}${i}" is not a valid host name`;
  const keys = new Set<string>();
  for (let i = 0; i < 2_500; i++) keys.add(problemKey(problem('a', 'InvalidHost', message(i))));
  assert.equal(keys.size, 2_500, 'every message its own key');
  assert.equal(problemKey(problem('a', 'InvalidHost', message(7))), [...keys][7], 'the same key after the memo was cleared');
  for (const key of keys) assert.ok(key.length < 60, `a key does not carry its message (${key.length} characters)`);
});
