// The problems of a change: the translator says which appeared and which went (delta.problems),
// in proportion to what it translated again, and makes the whole sorted list only when read.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { problemKey, type Problem, type RoutingConfig } from '../../../src/model/config.ts';
import type { KubeObject } from '../../../src/model/k8s.ts';
import { createTranslator, translate } from '../../../src/translate/index.ts';
import { OPTIONS, applyStep, ingress, ingressClass, service, simpleIngress, slice, snapshotOf, svcBackend, testCerts, tlsSecret, type TestCerts } from './fixtures.ts';
import { assertProblemDelta, sameOutput } from './same-output.ts';

let certs: TestCerts;
before(async () => {
  certs = await testCerts();
});

const line = (p: Problem) => `${p.object.kind} ${p.object.namespace}/${p.object.name} ${p.severity} ${p.reason}`;
const lines = (problems: readonly Problem[]) => problems.map(line).sort();

/** Ingresses with a problem each (a missing Service), two on one path (a conflict), and one fine. */
function world(): Map<string, KubeObject> {
  const objects: KubeObject[] = [
    ingressClass('portico'),
    service('a'),
    slice('a-1', 'a', [{ ip: '10.0.0.1' }]),
    tlsSecret('foo-tls', certs.foo.cert, certs.foo.key),
    simpleIngress('ok', 'ok.example.com', [['/', 'a']], { created: '2024-01-01T00:00:00Z' }),
    simpleIngress('one', 'one.example.com', [['/', 'missing1']], { created: '2024-01-02T00:00:00Z' }),
    simpleIngress('two', 'two.example.com', [['/', 'missing2']], { created: '2024-01-03T00:00:00Z' }),
    simpleIngress('old', 'shared.example.com', [['/', 'a']], { created: '2023-01-01T00:00:00Z' }),
    simpleIngress('new', 'shared.example.com', [['/', 'a']], { created: '2025-01-01T00:00:00Z' }),
  ];
  return new Map(objects.map((o) => [`${o.kind}/${o.metadata.name}`, o]));
}

describe('problem delta', () => {
  test('one changed Ingress: the delta names exactly the problems it added and removed', () => {
    const memo = createTranslator();
    let objects: ReadonlyMap<string, KubeObject> = world();
    let previous = memo(snapshotOf([...objects.values()]), OPTIONS);
    assert.deepEqual(lines(previous.problems), [
      'Ingress default/new error PathConflict',
      'Ingress default/one error ServiceNotFound',
      'Ingress default/two error ServiceNotFound',
    ]);
    // [what, change, problems added, problems removed]
    const steps: [string, (o: Map<string, KubeObject>) => void, string[], string[]][] = [
      ['Ingress one points at a Service that exists', (o) => o.set('Ingress/one', simpleIngress('one', 'one.example.com', [['/', 'a']], { created: '2024-01-02T00:00:00Z' })), [], ['Ingress default/one error ServiceNotFound']],
      ['Ingress two changes, keeping its problem (a new object of the same problem)', (o) => o.set('Ingress/two', simpleIngress('two', 'two.example.com', [['/', 'missing2'], ['/x', 'a']], { created: '2024-01-03T00:00:00Z' })), [], []],
      ['Ingress ok gets a path with no pathType', (o) => o.set('Ingress/ok', simpleIngress('ok', 'ok.example.com', [['/', 'a'], ['/y', 'a', 80, '']], { created: '2024-01-01T00:00:00Z' })), ['Ingress default/ok error InvalidPathType'], []],
      ['a new Ingress, fine', (o) => o.set('Ingress/three', simpleIngress('three', 'three.example.com', [['/', 'a']])), [], []],
      ['a new Ingress with a problem', (o) => o.set('Ingress/four', simpleIngress('four', 'four.example.com', [['/', 'missing4']])), ['Ingress default/four error ServiceNotFound'], []],
      ['the older of the two on one path goes: the conflict goes with it', (o) => o.delete('Ingress/old'), [], ['Ingress default/new error PathConflict']],
      ['it comes back: the conflict is back', (o) => o.set('Ingress/old', simpleIngress('old', 'shared.example.com', [['/', 'a']], { created: '2023-01-01T00:00:00Z' })), ['Ingress default/new error PathConflict'], []],
      ['the missing Service of two appears, without endpoints', (o) => o.set('Service/missing2', service('missing2')), ['Ingress default/two warning NoEndpoints'], ['Ingress default/two error ServiceNotFound']],
      ['a TLS Secret that does not cover the host', (o) => o.set('Ingress/three', ingress('three', { tls: [{ hosts: ['three.example.com'], secretName: 'foo-tls' }], rules: simpleIngress('x', 'three.example.com', [['/', 'a']]).spec!.rules! })), ['Ingress default/three warning CertificateHostMismatch'], []],
      ['Ingress four is no longer portico\'s', (o) => o.set('Ingress/four', simpleIngress('four', 'four.example.com', [['/', 'missing4']], { noClass: true })), [], ['Ingress default/four error ServiceNotFound']],
    ];
    for (const [name, change, added, removed] of steps) {
      const step = applyStep(objects, change);
      objects = step.next;
      const config = memo(step.snapshot, OPTIONS, step.changes);
      assert.deepEqual(sameOutput(config), sameOutput(translate(step.snapshot, OPTIONS)), `${name}: the same output as a fresh translation`);
      assert.deepEqual(lines(config.delta!.problems!.added), added, `${name}: added`);
      assert.deepEqual(lines(config.delta!.problems!.removed), removed, `${name}: removed`);
      assertProblemDelta(previous, config, name);
      previous = config;
    }
  });

  test('through changes of every kind, each delta takes the previous list to the new one', () => {
    const memo = createTranslator();
    let objects: ReadonlyMap<string, KubeObject> = world();
    let previous = memo(snapshotOf([...objects.values()]), OPTIONS);
    const steps: [string, (o: Map<string, KubeObject>) => void][] = [
      ['a Secret becomes invalid under an Ingress that uses it', (o) => {
        o.set('Ingress/tls', ingress('tls', { tls: [{ hosts: ['foo.example.com'], secretName: 'foo-tls' }], rules: simpleIngress('x', 'foo.example.com', [['/', 'a']]).spec!.rules! }));
        o.set('Secret/foo-tls', tlsSecret('foo-tls', certs.foo.cert, certs.bar.key));
      }],
      ['the Secret is fixed', (o) => o.set('Secret/foo-tls', tlsSecret('foo-tls', certs.foo.cert, certs.foo.key))],
      ['a second Ingress claims the host with another Secret: a TLS conflict', (o) => {
        o.set('Secret/bar-tls', tlsSecret('bar-tls', certs.wildcard.cert, certs.wildcard.key));
        o.set('Ingress/tls2', ingress('tls2', { tls: [{ hosts: ['foo.example.com'], secretName: 'bar-tls' }], rules: simpleIngress('x', 'foo.example.com', [['/z', 'a']]).spec!.rules! }, { created: '2026-01-01T00:00:00Z' }));
      }],
      ['two default backends: a conflict', (o) => {
        o.set('Ingress/d1', ingress('d1', { defaultBackend: svcBackend('a') }, { created: '2024-01-01T00:00:00Z' }));
        o.set('Ingress/d2', ingress('d2', { defaultBackend: svcBackend('a') }, { created: '2025-01-01T00:00:00Z' }));
      }],
      ['the first default backend goes', (o) => o.delete('Ingress/d1')],
      ['a Service goes: every Ingress on it has a problem', (o) => o.delete('Service/a')],
      ['it comes back', (o) => o.set('Service/a', service('a'))],
      ['the class goes: nothing is served, no Ingress problem is left', (o) => o.delete('IngressClass/portico')],
      ['the class comes back', (o) => o.set('IngressClass/portico', ingressClass('portico'))],
      ['a class of portico\'s with a problem (two defaults)', (o) => {
        o.set('IngressClass/portico', ingressClass('portico', { isDefault: true }));
        o.set('IngressClass/other', ingressClass('other', { isDefault: true }));
      }],
      ['an unrelated slice moves', (o) => o.set('EndpointSlice/a-1', slice('a-1', 'a', [{ ip: '10.0.0.9' }]))],
    ];
    let moved = 0;
    for (const [name, change] of steps) {
      const step = applyStep(objects, change);
      objects = step.next;
      const config = memo(step.snapshot, OPTIONS, step.changes);
      assert.deepEqual(sameOutput(config), sameOutput(translate(step.snapshot, OPTIONS)), `${name}: the same output as a fresh translation`);
      assertProblemDelta(previous, config, name);
      if (config !== previous) moved += config.delta!.problems!.added.length + config.delta!.problems!.removed.length;
      previous = config;
    }
    assert.ok(moved >= 10, `the steps moved problems (${moved})`);
  });

  test('the sorted list is made when read, and a full re-check hands no delta (the lists are compared)', () => {
    const memo = createTranslator();
    let objects: ReadonlyMap<string, KubeObject> = world();
    memo(snapshotOf([...objects.values()]), OPTIONS);
    const step = applyStep(objects, (o) => o.set('Ingress/five', simpleIngress('five', 'five.example.com', [['/', 'missing5']])));
    objects = step.next;
    const config = memo(step.snapshot, OPTIONS, step.changes);
    const descriptor = Object.getOwnPropertyDescriptor(config, 'problems')!;
    assert.equal(typeof descriptor.get, 'function', 'a getter');
    assert.equal(config.problems, config.problems, 'made once');
    assert.deepEqual(config.problems.map(problemKey), translate(step.snapshot, OPTIONS).problems.map(problemKey), 'in the order of a fresh translation');
    const full: RoutingConfig = memo(step.snapshot, OPTIONS);
    assert.ok(full.delta !== undefined && full.delta.problems === undefined);
  });
});
