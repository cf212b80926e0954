import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Problem } from '../../../src/model/config.ts';
import { parsePolicies } from '../../../src/middleware/registry.ts';
import { plainKey, sharedPolicyConfig } from '../../../src/middleware/shared-configs.ts';
import { INGRESS } from './support.ts';

const parse = (annotations: Record<string, string>) => parsePolicies(annotations, INGRESS, [] as Problem[]);

describe('shared policy configs', () => {
  test('Ingresses with the same policy values get equal configs; different values stay apart', () => {
    const a = parse({ 'portico.dev/rate-limit': '20', 'portico.dev/ip-allow': '10.0.0.0/8, 192.168.0.0/16', 'portico.dev/max-body-size': '8m' });
    const b = parse({ 'portico.dev/rate-limit': '20', 'portico.dev/ip-allow': '10.0.0.0/8,192.168.0.0/16', 'portico.dev/max-body-size': '8m' });
    const c = parse({ 'portico.dev/rate-limit': '21', 'portico.dev/ip-allow': '10.0.0.0/8', 'portico.dev/max-body-size': '9m' });
    assert.deepEqual(a, b);
    assert.deepEqual(
      c.map((p) => [p.name, p.config]),
      [
        ['ip-allow', { cidrs: ['10.0.0.0/8'] }],
        ['rate-limit', { rate: 21, burst: 21 }],
        ['max-body-size', { bytes: 9 * 1024 * 1024 }],
      ],
    );
    for (let i = 0; i < a.length; i++) assert.notDeepEqual(a[i], c[i]);
  });

  test('values that are not plain data are never taken for another', () => {
    const one = sharedPolicyConfig('x', { pattern: /a/ });
    const two = sharedPolicyConfig('x', { pattern: /b/ });
    assert.equal(two.config && (two.config as { pattern: RegExp }).pattern.source, 'b');
    assert.notEqual(one, two);
    assert.notEqual(sharedPolicyConfig('x', { a: undefined }), sharedPolicyConfig('x', {}));
    assert.notEqual(sharedPolicyConfig('x', { n: 0 }), sharedPolicyConfig('x', { n: -0 }));
    assert.notEqual(sharedPolicyConfig('x', { n: 1 }), sharedPolicyConfig('y', { n: 1 }));
  });

  test('equal values are one object while short; a long value (a CA bundle) is kept as given, not held by the table', () => {
    assert.equal(sharedPolicyConfig('z', { rate: 5 }), sharedPolicyConfig('z', { rate: 5 }));
    const ca = `-----BEGIN CERTIFICATE-----\n${'A'.repeat(2000)}\n-----END CERTIFICATE-----\n`;
    const one = sharedPolicyConfig('upstream-protocol', { protocol: 'https', ca });
    assert.notEqual(one, sharedPolicyConfig('upstream-protocol', { protocol: 'https', ca }));
    assert.deepEqual(one, { name: 'upstream-protocol', config: { protocol: 'https', ca } });
  });

  test('plainKey tells apart what JSON would confuse', () => {
    assert.equal(plainKey(new Map([[1, 2]])), undefined);
    assert.equal(plainKey([1, , 3]), undefined); // eslint-disable-line no-sparse-arrays
    assert.equal(plainKey(NaN), undefined);
    assert.notEqual(plainKey({ a: '1' }), plainKey({ a: 1 }));
    assert.notEqual(plainKey(['a,b']), plainKey(['a', 'b']));
    assert.equal(plainKey({ a: [1, 'x', true, null] }), '{"a":[1,"x",true,null]}');
  });
});
