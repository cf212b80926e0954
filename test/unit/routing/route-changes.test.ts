import { test } from 'node:test';
import assert from 'node:assert/strict';
import { routeChanges } from '../../../src/routing/route-changes.ts';
import { createTranslator } from '../../../src/translate/index.ts';
import { OPTIONS, ingress, ingressClass, service, simpleIngress, slice, snapshotOf, svcBackend } from '../translate/fixtures.ts';
import type { KubeObject } from '../../../src/model/k8s.ts';

test('route changes from a delta: the routes of the changed hosts that came and went, and the default backend', () => {
  const translate = createTranslator();
  const objects: KubeObject[] = [
    ingressClass('portico'),
    service('a'),
    slice('a-1', 'a', [{ ip: '10.0.0.1' }]),
    simpleIngress('one', 'one.example.com', [['/', 'a'], ['/old', 'a']]),
    simpleIngress('two', 'two.example.com', [['/', 'a']]),
  ];
  const first = translate(snapshotOf(objects), OPTIONS);
  assert.equal(routeChanges(undefined, first), undefined, 'nothing to compare with');

  objects[3] = simpleIngress('one', 'one.example.com', [['/', 'a'], ['/new', 'a']]);
  objects.push(ingress('catch-all', { defaultBackend: svcBackend('a') }));
  const second = translate(snapshotOf(objects), OPTIONS, [
    { type: 'updated', kind: 'Ingress', key: 'default/one' },
    { type: 'added', kind: 'Ingress', key: 'default/catch-all' },
  ]);
  const changes = routeChanges(first, second)!;
  assert.deepEqual(changes.removed.map((r) => r.id), ['default/one|one.example.com|Prefix|/old']);
  assert.deepEqual(changes.added.map((r) => r.id).sort(), ['default/catch-all|default', 'default/one|one.example.com|Prefix|/new']);
  // A config that does not follow the one given is compared whole.
  assert.equal(routeChanges(second, second), undefined);
});
