// The scale-to-zero annotations of a Service: defaults, every value, and bad values
// that turn the whole thing off with one message each.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sleepPolicyOf } from '../../../src/scale-to-zero/policy.ts';
import type { Service } from '../../../src/model/k8s.ts';

function service(annotations?: Record<string, string>, name = 'web'): Service {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default', ...(annotations ? { annotations } : {}) }, spec: { ports: [{ port: 80 }] } } as Service;
}

test('without the annotation, or with it false, a Service has no policy and no problem', () => {
  assert.deepEqual(sleepPolicyOf(service()), { problems: [] });
  assert.deepEqual(sleepPolicyOf(service({ 'portico.dev/scale-to-zero': 'false', 'portico.dev/sleep-after': 'soon' })), { problems: [] });
});

test('defaults: 15 minutes, 2 minutes, 1000 held, the Deployment named like the Service', () => {
  const { policy, problems } = sleepPolicyOf(service({ 'portico.dev/scale-to-zero': 'true' }, 'shop'));
  assert.deepEqual(problems, []);
  assert.deepEqual(policy, { sleepAfterMs: 900_000, wakeTimeoutMs: 120_000, maxHeld: 1000, target: { kind: 'Deployment', name: 'shop' } });
});

test('every annotation is read', () => {
  const { policy } = sleepPolicyOf(service({
    'portico.dev/scale-to-zero': 'true',
    'portico.dev/sleep-after': '1h30m',
    'portico.dev/wake-timeout': '45s',
    'portico.dev/max-held-requests': '20',
    'portico.dev/scale-target': 'statefulset/db-0',
  }));
  assert.deepEqual(policy, { sleepAfterMs: 5_400_000, wakeTimeoutMs: 45_000, maxHeld: 20, target: { kind: 'StatefulSet', name: 'db-0' } });
});

test('equal annotations give the same policy object (backends compare policies by identity)', () => {
  const a = sleepPolicyOf(service({ 'portico.dev/scale-to-zero': 'true', 'portico.dev/sleep-after': '5m' }, 'x')).policy;
  const b = sleepPolicyOf(service({ 'portico.dev/scale-to-zero': 'true', 'portico.dev/sleep-after': '300s' }, 'x')).policy;
  assert.ok(a !== undefined && a === b);
});

test('each bad value is named, and the Service gets no policy: never asleep by accident', () => {
  const { policy, problems } = sleepPolicyOf(service({
    'portico.dev/scale-to-zero': 'true',
    'portico.dev/sleep-after': 'soon',
    'portico.dev/wake-timeout': '0',
    'portico.dev/max-held-requests': '-3',
    'portico.dev/scale-target': 'pod/x',
  }));
  assert.equal(policy, undefined);
  assert.equal(problems.length, 4);
  assert.match(problems[0]!, /portico\.dev\/sleep-after: "soon"/);
  assert.match(problems[1]!, /portico\.dev\/wake-timeout: "0"/);
  assert.match(problems[2]!, /portico\.dev\/max-held-requests: "-3"/);
  assert.match(problems[3]!, /portico\.dev\/scale-target: "pod\/x" is not deployment\/<name> or statefulset\/<name>/);
});

test('a scale-to-zero value that is not a boolean is a problem too', () => {
  const { policy, problems } = sleepPolicyOf(service({ 'portico.dev/scale-to-zero': 'sure' }));
  assert.equal(policy, undefined);
  assert.match(problems[0]!, /portico\.dev\/scale-to-zero: "sure" is not true or false/);
});
