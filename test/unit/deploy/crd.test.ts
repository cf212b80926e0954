// The CacheInvalidation CRD the chart ships (crds/) says what the code reads and writes:
// the spec fields and their checks, the status subresource each replica writes, and the
// printer columns `kubectl get cacheinvalidations` shows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { parseDuration } from '../../../src/util/units.ts';

const FILE = fileURLToPath(new URL('../../../deploy/helm/portico/crds/cacheinvalidations.portico.dev.yaml', import.meta.url));

interface Schema {
  type?: string;
  required?: string[];
  enum?: string[];
  pattern?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  'x-kubernetes-validations'?: { rule: string; message: string }[];
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
}

const crd = parse(readFileSync(FILE, 'utf8')) as {
  metadata: { name: string };
  spec: {
    group: string;
    scope: string;
    names: { kind: string; plural: string };
    versions: { name: string; served: boolean; storage: boolean; subresources: { status?: object }; additionalPrinterColumns: { name: string; jsonPath: string }[]; schema: { openAPIV3Schema: Schema } }[];
  };
};
const version = crd.spec.versions[0]!;
const schema = version.schema.openAPIV3Schema;

test('cacheinvalidations.portico.dev v1alpha1, namespaced, with a status subresource and the printer columns', () => {
  assert.equal(crd.metadata.name, 'cacheinvalidations.portico.dev');
  assert.deepEqual([crd.spec.group, crd.spec.scope, crd.spec.names.kind, crd.spec.names.plural], ['portico.dev', 'Namespaced', 'CacheInvalidation', 'cacheinvalidations']);
  assert.equal(crd.spec.versions.length, 1);
  assert.deepEqual([version.name, version.served, version.storage], ['v1alpha1', true, true]);
  assert.deepEqual(version.subresources.status, {});
  assert.deepEqual(version.additionalPrinterColumns.map((c) => [c.name, c.jsonPath]), [
    ['Host', '.spec.host'],
    ['Type', '.spec.type'],
    ['Phase', '.status.phase'],
    ['Age', '.metadata.creationTimestamp'],
  ]);
});

test('structural: every field has a type; spec needs host and type (Purge or Ban), with CEL rules for paths and pattern', () => {
  const untyped: string[] = [];
  const walk = (s: Schema, at: string) => {
    if (!s.type) untyped.push(at);
    for (const [k, v] of Object.entries(s.properties ?? {})) walk(v, `${at}.${k}`);
    if (s.items) walk(s.items, `${at}[]`);
  };
  walk(schema, '');
  assert.deepEqual(untyped, []);
  const spec = schema.properties!.spec!;
  assert.deepEqual(spec.required, ['host', 'type']);
  assert.deepEqual(spec.properties!.type!.enum, ['Purge', 'Ban']);
  assert.deepEqual(Object.keys(spec.properties!).sort(), ['host', 'paths', 'pattern', 'ttl', 'type']);
  assert.deepEqual(spec['x-kubernetes-validations']!.map((v) => v.rule), [
    "self.type != 'Purge' || (has(self.paths) && size(self.paths) > 0)",
    "self.type != 'Ban' || (has(self.pattern) && size(self.pattern) > 0)",
  ]);
});

test('spec.ttl accepts exactly the durations portico reads', () => {
  const ttl = new RegExp(schema.properties!.spec!.properties!.ttl!.pattern!);
  for (const ok of ['10m', '1h30m', '90s', '1.5h', '500ms']) {
    assert.ok(ttl.test(ok), ok);
    assert.notEqual(parseDuration(ok), undefined, ok);
  }
  for (const bad of ['10', '1d', 'soon', '-5m', '']) assert.ok(!ttl.test(bad), bad);
});

test('status: the phase, and one entry per replica keyed by name', () => {
  const status = schema.properties!.status!;
  assert.deepEqual(status.properties!.phase!.enum, ['Pending', 'Complete', 'Failed']);
  const replicas = status.properties!.replicas!;
  assert.equal(replicas['x-kubernetes-list-type'], 'map');
  assert.deepEqual(replicas['x-kubernetes-list-map-keys'], ['name']);
  assert.deepEqual(Object.keys(replicas.items!.properties!).sort(), ['message', 'name', 'observedGeneration', 'phase', 'removed', 'time']);
});
