import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../../src/model/k8s.ts';
import { ingress, ingressClass, problemLines, routeLines, run, service, simpleIngress, slice, svcBackend } from './fixtures.ts';

const base: KubeObject[] = [
  ingressClass('portico'),
  service('old-svc'),
  slice('old-1', 'old-svc', [{ ip: '10.0.0.1' }]),
  service('new-svc'),
  slice('new-1', 'new-svc', [{ ip: '10.0.0.2' }]),
];

describe('conflicts between Ingresses', () => {
  test('the same host, type and path: the oldest Ingress wins, the loser is told who won', () => {
    const config = run([
      ...base,
      simpleIngress('newer', 'a.com', [['/keep', 'new-svc'], ['/api', 'new-svc']], { created: '2024-03-01T00:00:00Z' }),
      simpleIngress('older', 'A.com', [['/api', 'old-svc']], { created: '2024-01-01T00:00:00Z' }),
    ]);
    assert.deepEqual(routeLines(config), ['a.com|Prefix|/api -> default/old-svc:80', 'a.com|Prefix|/keep -> default/new-svc:80']);
    assert.deepEqual(problemLines(config), [
      'Ingress default/newer error PathConflict: spec.rules[0].http.paths[1]: host "a.com" Prefix path "/api" is already served by Ingress default/older (spec.rules[0].http.paths[0]), which is older; this path is ignored',
    ]);
    assert.deepEqual(config.servedIngresses, ['default/newer', 'default/older']);
  });

  test('same age: namespace/name decides; without creationTimestamp an Ingress counts as the newest', () => {
    const sameAge = run([
      ...base,
      simpleIngress('b', 'a.com', [['/', 'new-svc']], { created: '2024-01-01T00:00:00Z' }),
      simpleIngress('a', 'a.com', [['/', 'old-svc']], { created: '2024-01-01T00:00:00Z' }),
    ]);
    assert.deepEqual(routeLines(sameAge), ['a.com|Prefix|/ -> default/old-svc:80']);
    assert.equal(sameAge.problems[0]!.object.name, 'b');

    const noTimestamp = run([
      ...base,
      simpleIngress('a', 'a.com', [['/', 'new-svc']]),
      simpleIngress('z', 'a.com', [['/', 'old-svc']], { namespace: 'default', created: '2030-01-01T00:00:00Z' }),
    ]);
    assert.deepEqual(routeLines(noTimestamp), ['a.com|Prefix|/ -> default/old-svc:80']);
    assert.equal(noTimestamp.problems[0]!.object.name, 'a');
  });

  test('ImplementationSpecific conflicts with Prefix (as served); a trailing slash does not make a Prefix path different; Exact does not conflict with Prefix', () => {
    const config = run([
      ...base,
      simpleIngress('older', 'a.com', [['/x', 'old-svc', 80, 'ImplementationSpecific'], ['/y/', 'old-svc']], { created: '2024-01-01T00:00:00Z' }),
      simpleIngress('newer', 'a.com', [['/x', 'new-svc'], ['/y', 'new-svc'], ['/x', 'new-svc', 80, 'Exact']], { created: '2024-02-01T00:00:00Z' }),
    ]);
    assert.deepEqual(routeLines(config), ['a.com|Exact|/x -> default/new-svc:80', 'a.com|Prefix|/x -> default/old-svc:80', 'a.com|Prefix|/y/ -> default/old-svc:80']);
    assert.deepEqual(config.problems.map((p) => [p.object.name, p.reason]), [['newer', 'PathConflict'], ['newer', 'PathConflict']]);
  });

  test('different hosts, a wildcard and its subdomain, and the empty host do not conflict', () => {
    const config = run([
      ...base,
      simpleIngress('a', 'a.com', [['/', 'old-svc']]),
      simpleIngress('b', 'b.com', [['/', 'new-svc']]),
      simpleIngress('c', '*.a.com', [['/', 'new-svc']]),
      simpleIngress('d', 'x.a.com', [['/', 'new-svc']]),
      simpleIngress('e', undefined, [['/', 'new-svc']]),
    ]);
    assert.equal(config.routes.length, 5);
    assert.deepEqual(config.problems, []);
  });

  test('default backend: the oldest Ingress with one wins, the others get DefaultBackendConflict', () => {
    const config = run([
      ...base,
      ingress('second', { defaultBackend: svcBackend('new-svc') }, { created: '2024-02-01T00:00:00Z' }),
      ingress('first', { defaultBackend: svcBackend('old-svc') }, { created: '2024-01-01T00:00:00Z', namespace: 'zzz' }),
      ingress('rules-only', { rules: [] }, { created: '2023-01-01T00:00:00Z' }),
    ]);
    assert.deepEqual(config.defaultBackend, {
      id: 'zzz/first|default',
      source: { kind: 'Ingress', namespace: 'zzz', name: 'first' },
      host: '',
      path: '/',
      pathType: 'Prefix',
      backend: { key: 'zzz/old-svc:80', namespace: 'zzz', service: 'old-svc', port: '80', addresses: [], error: 'ServiceNotFound' },
      policies: [],
      tls: false,
    });
    assert.deepEqual(config.routes, []);
    assert.deepEqual(problemLines(config), [
      'Ingress default/second error DefaultBackendConflict: spec.defaultBackend: Ingress zzz/first, which is older, already provides the default backend; this one is ignored',
      'Ingress zzz/first error ServiceNotFound: spec.defaultBackend.service.name: Service zzz/old-svc not found',
    ]);
  });

  test('no Ingress with a default backend: none in the config', () => {
    const config = run([...base, simpleIngress('a', 'a.com', [['/', 'old-svc']])]);
    assert.equal(config.defaultBackend, undefined);
    assert.equal('defaultBackend' in config, false);
  });

  test('an Ingress of another controller never wins a conflict', () => {
    const config = run([
      ...base,
      ingressClass('nginx', { controller: 'k8s.io/ingress-nginx' }),
      ingress('theirs', { ingressClassName: 'nginx', defaultBackend: svcBackend('new-svc'), rules: simpleIngress('x', 'a.com', [['/', 'new-svc']]).spec!.rules! }, { created: '2020-01-01T00:00:00Z' }),
      simpleIngress('ours', 'a.com', [['/', 'old-svc']], { created: '2024-01-01T00:00:00Z' }),
    ]);
    assert.deepEqual(routeLines(config), ['a.com|Prefix|/ -> default/old-svc:80']);
    assert.equal(config.defaultBackend, undefined);
    assert.deepEqual(config.problems, []);
  });
});
