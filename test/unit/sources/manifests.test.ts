import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isManifestFile, parseManifestFile } from '../../../src/sources/manifests.ts';
import type { Ingress, Secret, Service } from '../../../src/model/k8s.ts';

const names = (objects: { kind: string; metadata: { namespace?: string; name: string } }[]) =>
  objects.map((o) => `${o.kind} ${o.metadata.namespace ? o.metadata.namespace + '/' : ''}${o.metadata.name}`);

describe('parseManifestFile: YAML', () => {
  test('multi-document YAML: every routing object, with the line it starts on; other kinds ignored; empty documents skipped', () => {
    const text = [
      '# services',
      'apiVersion: v1',
      'kind: Service',
      'metadata:',
      '  name: web',
      'spec:',
      '  ports: [{name: http, port: 80}]',
      '---',
      '---',
      '# nothing but a comment',
      '---',
      'apiVersion: apps/v1',
      'kind: Deployment',
      'metadata: {name: web}',
      '---',
      'apiVersion: networking.k8s.io/v1',
      'kind: Ingress',
      'metadata:',
      '  name: web',
      '  namespace: shop',
      'spec:',
      '  rules:',
      '  - host: web.local',
      '',
    ].join('\n');
    const parsed = parseManifestFile('apps/web.yaml', text);
    assert.deepEqual(parsed.errors, []);
    assert.equal(parsed.failed, false);
    assert.deepEqual(names(parsed.objects), ['Service default/web', 'Ingress shop/web']);
    assert.deepEqual(parsed.lines, [2, 16]);
    assert.equal(parsed.ignored, 1);
    assert.equal((parsed.objects[1] as Ingress).spec!.rules![0]!.host, 'web.local');
  });

  test('an invalid object is reported with file, line and reason; the others are kept', () => {
    const text = [
      'apiVersion: v1',
      'kind: Service',
      'metadata: {name: good}',
      '---',
      'apiVersion: networking.k8s.io/v1',
      'kind: Ingress',
      'metadata: {name: bad}',
      'spec:',
      '  rules: "not a list"',
      '---',
      'apiVersion: v1',
      'kind: Service',
      'metadata: {name: also-good}',
    ].join('\n');
    const parsed = parseManifestFile('mixed.yaml', text);
    assert.deepEqual(names(parsed.objects), ['Service default/good', 'Service default/also-good']);
    assert.equal(parsed.failed, false);
    assert.equal(parsed.errors.length, 1);
    assert.deepEqual(
      { ...parsed.errors[0] },
      { file: 'mixed.yaml', line: 5, message: 'spec.rules: must be a list', ref: { kind: 'Ingress', namespace: 'default', name: 'bad' } },
    );
  });

  test('a YAML syntax error marks the file failed, with the line and the reason', () => {
    const text = ['apiVersion: v1', 'kind: Service', 'metadata: {name: fine}', '---', 'apiVersion: v1', 'kind: Service', 'metadata:', '  name: broken', '  labels: [unclosed', ''].join('\n');
    const parsed = parseManifestFile('broken.yaml', text);
    assert.equal(parsed.failed, true);
    assert.equal(parsed.errors.length, 1);
    assert.equal(parsed.errors[0]!.file, 'broken.yaml');
    assert.equal(parsed.errors[0]!.line, 9);
    assert.match(parsed.errors[0]!.message, /Flow sequence/);
    assert.doesNotMatch(parsed.errors[0]!.message, /\n/, 'one line, no excerpt');
    assert.deepEqual(names(parsed.objects), ['Service default/fine'], 'the documents that parsed are still returned');
  });

  test('one misindented line: one error, its cause, not the cascade the parser reports after it', () => {
    const text = ['apiVersion: v1', 'kind: Service', 'metadata:', '  name: web', '   labels: {a: b}', 'spec:', '  ports: [{port: 80}', ''].join('\n');
    const parsed = parseManifestFile('web.yaml', text);
    assert.equal(parsed.errors.length, 1);
    assert.equal(parsed.errors[0]!.line, 4);
    assert.match(parsed.errors[0]!.message, /\(\d+ more errors? after it in this document\)$/);
  });

  test('duplicate keys and unresolved aliases are errors too', () => {
    const dup = parseManifestFile('dup.yaml', 'apiVersion: v1\nkind: Service\nkind: Service\nmetadata: {name: x}\n');
    assert.equal(dup.failed, true);
    assert.equal(dup.errors[0]!.line, 3);
    assert.match(dup.errors[0]!.message, /unique/);
    const alias = parseManifestFile('alias.yaml', 'apiVersion: v1\nkind: Service\nmetadata: *nowhere\n');
    assert.equal(alias.failed, true);
    assert.match(alias.errors[0]!.message, /alias/i);
  });

  test('a YAML List is read item by item, with the line of each item', () => {
    const text = [
      'apiVersion: v1',
      'kind: List',
      'items:',
      '- apiVersion: v1',
      '  kind: Secret',
      '  type: kubernetes.io/tls',
      '  metadata: {name: cert}',
      '  stringData: {tls.crt: CERT, tls.key: KEY}',
      '- apiVersion: v1',
      '  kind: Service',
      '  metadata: {}',
    ].join('\n');
    const parsed = parseManifestFile('list.yml', text);
    assert.deepEqual(names(parsed.objects), ['Secret default/cert']);
    assert.deepEqual(parsed.lines, [4]);
    assert.equal((parsed.objects[0] as Secret).stringData!['tls.key'], 'KEY');
    assert.deepEqual(parsed.errors.map((e) => [e.line, e.message]), [[9, 'metadata.name: is required']]);
  });

  test('an empty file holds nothing and is not an error', () => {
    assert.deepEqual(parseManifestFile('empty.yaml', ''), { objects: [], lines: [], errors: [], ignored: 0, invalidations: [], failed: false });
  });

  test('CacheInvalidation objects are kept apart from routing objects, with their line; one without a name is an error', () => {
    const text = [
      'apiVersion: portico.dev/v1alpha1',
      'kind: CacheInvalidation',
      'metadata: {name: purge}',
      'spec: {host: shop.local, type: Purge, paths: [/a]}',
      '---',
      'apiVersion: portico.dev/v1alpha1',
      'kind: CacheInvalidation',
      'spec: {host: shop.local, type: Ban, pattern: .}',
    ].join('\n');
    const parsed = parseManifestFile('inv.yaml', text);
    assert.deepEqual(parsed.objects, []);
    assert.deepEqual(parsed.invalidations.map((i) => [i.object.metadata.name, i.line]), [['purge', 1]]);
    assert.deepEqual(parsed.errors, [{ file: 'inv.yaml', line: 6, message: 'CacheInvalidation: metadata.name is required' }]);
  });
});

describe('parseManifestFile: JSON', () => {
  test('one object', () => {
    const parsed = parseManifestFile('svc.json', JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { ports: [{ port: 80 }] } }));
    assert.deepEqual(names(parsed.objects), ['Service default/web']);
    assert.equal((parsed.objects[0] as Service).spec!.ports![0]!.port, 80);
  });

  test('a v1 List, with unknown kinds ignored and invalid items reported at their line', () => {
    const list = {
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: 'v1', kind: 'Service', metadata: { name: 'a' } },
        { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' } },
        { apiVersion: 'v1', kind: 'Service', metadata: { name: 'b' }, spec: { ports: 'eighty' } },
        { apiVersion: 'v1', kind: 'Service', metadata: { name: 'c' } },
      ],
    };
    const text = JSON.stringify(list, null, 2);
    const parsed = parseManifestFile('list.json', text);
    assert.deepEqual(names(parsed.objects), ['Service default/a', 'Service default/c']);
    assert.equal(parsed.ignored, 1);
    const lineOfB = text.split('\n').findIndex((l) => l.includes('"b"')) + 1;
    assert.equal(parsed.errors.length, 1);
    assert.equal(parsed.errors[0]!.message, 'spec.ports: must be a list');
    assert.ok(parsed.errors[0]!.line! > 1 && parsed.errors[0]!.line! < lineOfB, `line ${parsed.errors[0]!.line} is where item b starts`);
  });

  test('an API list (IngressClassList) gives its items their kind and apiVersion', () => {
    const text = JSON.stringify({ apiVersion: 'networking.k8s.io/v1', kind: 'IngressClassList', metadata: {}, items: [{ metadata: { name: 'portico' }, spec: { controller: 'x' } }] });
    const parsed = parseManifestFile('classes.json', text);
    assert.deepEqual(names(parsed.objects), ['IngressClass portico']);
  });

  test('a JSON syntax error marks the file failed, with the line', () => {
    const parsed = parseManifestFile('bad.json', '{\n  "apiVersion": "v1",\n  "kind": "Service"\n  "metadata": {}\n}\n');
    assert.equal(parsed.failed, true);
    assert.equal(parsed.errors.length, 1);
    assert.equal(parsed.errors[0]!.line, 4);
    assert.match(parsed.errors[0]!.message, /Expected/);
  });
});

test('only .yaml, .yml and .json are manifest files', () => {
  assert.deepEqual(['a.yaml', 'b.YML', 'c.json', 'd.txt', 'e.yaml~', 'f.yaml.swp'].map(isManifestFile), [true, true, true, false, false, false]);
  const parsed = parseManifestFile('notes.txt', 'hello');
  assert.equal(parsed.failed, true);
  assert.match(parsed.errors[0]!.message, /not a manifest file/);
});
