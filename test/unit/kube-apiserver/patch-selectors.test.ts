// The patch formats and selector grammar on their own.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyPatch, mergePatch } from '../../support/kube-apiserver/patch.ts';
import { parseFieldSelector, parseLabelSelector } from '../../support/kube-apiserver/selectors.ts';
import { findByKind } from '../../support/kube-apiserver/kinds.ts';
import { ApiError } from '../../support/kube-apiserver/status.ts';

const doc = { a: { b: 1, c: [1, 2, 3] }, 'x/y': 'slash', 't~': 'tilde' };
const jsonPatch = (ops: unknown[]) => applyPatch(doc, 'application/json-patch+json', ops);
const code = (n: number) => (err: unknown) => err instanceof ApiError && err.code === n;

describe('JSON Patch (RFC 6902)', () => {
  test('add, remove, replace, move, copy, test, array "-" and escaped keys', () => {
    assert.deepEqual(jsonPatch([{ op: 'add', path: '/a/c/-', value: 4 }]), { ...doc, a: { b: 1, c: [1, 2, 3, 4] } });
    assert.deepEqual(jsonPatch([{ op: 'add', path: '/a/c/0', value: 0 }]), { ...doc, a: { b: 1, c: [0, 1, 2, 3] } });
    assert.deepEqual(jsonPatch([{ op: 'remove', path: '/a/c/1' }]), { ...doc, a: { b: 1, c: [1, 3] } });
    assert.deepEqual(jsonPatch([{ op: 'replace', path: '/x~1y', value: 'r' }, { op: 'remove', path: '/t~0' }]), { a: doc.a, 'x/y': 'r' });
    assert.deepEqual(jsonPatch([{ op: 'move', from: '/a/b', path: '/b' }]), { ...doc, a: { c: [1, 2, 3] }, b: 1 });
    assert.deepEqual(jsonPatch([{ op: 'copy', from: '/a/c', path: '/d' }, { op: 'test', path: '/d/2', value: 3 }]), { ...doc, d: [1, 2, 3] });
    assert.deepEqual(doc.a.c, [1, 2, 3], 'the target is not modified');
  });

  test('failures: a failed test or a missing path is 422, a malformed patch 400', () => {
    assert.throws(() => jsonPatch([{ op: 'test', path: '/a/b', value: 2 }]), code(422));
    assert.throws(() => jsonPatch([{ op: 'replace', path: '/nope/x', value: 1 }]), code(422));
    assert.throws(() => jsonPatch([{ op: 'remove', path: '/a/c/3' }]), code(422));
    assert.throws(() => jsonPatch([{ op: 'frobnicate', path: '/a' }]), code(400));
    assert.throws(() => applyPatch(doc, 'application/json-patch+json', { op: 'add' }), code(400));
  });
});

describe('merge patch (RFC 7386)', () => {
  test('merges objects, deletes on null, replaces arrays and scalars', () => {
    assert.deepEqual(mergePatch({ a: { b: 1, c: 2 }, l: [1, 2] }, { a: { b: null, d: 3 }, l: [9] }), { a: { c: 2, d: 3 }, l: [9] });
    assert.deepEqual(mergePatch({ a: 1 }, { a: { b: 2 } }), { a: { b: 2 } });
    assert.deepEqual(applyPatch({ a: 1 }, 'application/strategic-merge-patch+json', { $patch: 'x', b: 2 }), { a: 1, b: 2 });
  });
});

describe('selectors', () => {
  const obj = (labels: Record<string, string>) => ({ metadata: { name: 'n', namespace: 'ns', labels } });
  test('label selector grammar', () => {
    assert.equal(parseLabelSelector('a in (x, y),b notin (z),!c,d,e!=f,g==h,gen>3')(obj({ a: 'y', b: 'q', d: '', g: 'h', gen: '4' })), true);
    assert.equal(parseLabelSelector('gen<3')(obj({ gen: '4' })), false);
    assert.equal(parseLabelSelector('prefix.io/key=v')(obj({ 'prefix.io/key': 'v' })), true);
    assert.equal(parseLabelSelector('')(obj({})), true);
    for (const bad of ['a in x', 'a=b c', '=x', 'a==(b)']) assert.throws(() => parseLabelSelector(bad), code(400), bad);
  });
  test('field selectors: supported fields only, escapes', () => {
    const secret = findByKind('Secret')!;
    const s = { metadata: { name: 'a,b', namespace: 'ns' }, type: 'kubernetes.io/tls' };
    assert.equal(parseFieldSelector('metadata.name=a\\,b,type=kubernetes.io/tls', secret)(s), true);
    assert.equal(parseFieldSelector('metadata.namespace!=ns', secret)(s), false);
    assert.throws(() => parseFieldSelector('type=x', findByKind('Ingress')!), code(400));
  });
});
