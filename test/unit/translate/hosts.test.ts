import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeHost, sampleHostFor, wildcardParent } from '../../../src/translate/hosts.ts';

describe('hosts', () => {
  test('valid hosts are lowercased', () => {
    for (const [raw, host] of [['Foo.Example.COM', 'foo.example.com'], ['*.Example.com', '*.example.com'], ['*.com', '*.com'], ['localhost', 'localhost'], ['a-1.b2.c', 'a-1.b2.c'], [undefined, ''], ['', '']] as const) {
      assert.deepEqual(normalizeHost(raw), { ok: true, host }, String(raw));
    }
  });

  test('invalid hosts are refused with a reason', () => {
    for (const raw of ['192.168.0.1', '[::1]', 'fe80::1', '*', '*.', 'a.*.com', 'a*.com', '**.com', '.a.com', 'a..com', 'a.com.', 'a b.com', 'é.com', 'a_b.com', 'a-.com', 'x'.repeat(254)]) {
      const result = normalizeHost(raw);
      assert.equal(result.ok, false, raw);
    }
  });

  test('wildcardParent and sampleHostFor', () => {
    assert.equal(wildcardParent('a.b.com'), '*.b.com');
    assert.equal(wildcardParent('com'), undefined);
    assert.equal(wildcardParent('*.b.com'), undefined);
    assert.equal(sampleHostFor('*.b.com'), 'portico-sample.b.com');
    assert.equal(sampleHostFor('a.b.com'), 'a.b.com');
  });
});
