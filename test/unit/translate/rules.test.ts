import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { HTTPIngressPath } from '../../../src/model/k8s.ts';
import { ingress, ingressClass, problemLines, routeLines, run, service, simpleIngress, slice, svcBackend } from './fixtures.ts';

const base = [ingressClass('portico'), service('web'), slice('web-1', 'web', [{ ip: '10.0.0.1' }])];

function paths(...list: Partial<HTTPIngressPath>[]): { paths: HTTPIngressPath[] } {
  return { paths: list.map((p) => ({ backend: svcBackend('web'), ...p })) };
}

describe('rules -> routes', () => {
  test('a route carries its id, Ingress, host, path, type, backend, policies and tls flag', () => {
    const config = run([...base, simpleIngress('site', 'Foo.Example.COM', [['/api', 'web', 80, 'Exact']])]);
    assert.deepEqual(config.routes, [
      {
        id: 'default/site|foo.example.com|Exact|/api',
        source: { kind: 'Ingress', namespace: 'default', name: 'site' },
        host: 'foo.example.com',
        path: '/api',
        pathType: 'Exact',
        backend: { key: 'default/web:80', namespace: 'default', service: 'web', port: '80', addresses: [{ host: '10.0.0.1', port: 8080 }] },
        policies: [],
        tls: false,
      },
    ]);
    assert.deepEqual(config.problems, []);
  });

  test('hosts are lowercased; a wildcard stays "*.suffix"; a rule without host has host ""', () => {
    const config = run([
      ...base,
      ingress('site', {
        rules: [{ host: '*.Example.com', http: paths({ path: '/', pathType: 'Prefix' }) }, { http: paths({ path: '/x', pathType: 'Prefix' }) }],
      }),
    ]);
    assert.deepEqual(routeLines(config), ['|Prefix|/x -> default/web:80', '*.example.com|Prefix|/ -> default/web:80']);
    assert.deepEqual(config.problems, []);
  });

  test('invalid hosts are reported and their rule skipped', () => {
    const bad = ['10.0.0.1', '::1', 'foo.*.com', '*', '*foo.com', 'foo..com', 'foo.com.', 'foo_bar.com', '-foo.com', 'a'.repeat(250) + '.com'];
    const config = run([...base, ingress('site', { rules: [...bad.map((host) => ({ host, http: paths({ path: '/', pathType: 'Prefix' }) })), { host: 'ok.com', http: paths({ path: '/', pathType: 'Prefix' }) }] })]);
    assert.deepEqual(routeLines(config), ['ok.com|Prefix|/ -> default/web:80']);
    const long = JSON.stringify('a'.repeat(250) + '.com');
    assert.deepEqual(problemLines(config), [
      'Ingress default/site error InvalidHost: spec.rules[0].host: "10.0.0.1" is an IP address; Ingress hosts must be DNS names; the rule is ignored',
      'Ingress default/site error InvalidHost: spec.rules[1].host: "::1" is an IP address; Ingress hosts must be DNS names; the rule is ignored',
      'Ingress default/site error InvalidHost: spec.rules[2].host: "foo.*.com": a wildcard must be the whole first label of a longer name, as in "*.example.com"; the rule is ignored',
      'Ingress default/site error InvalidHost: spec.rules[3].host: "*": a wildcard must be the whole first label of a longer name, as in "*.example.com"; the rule is ignored',
      'Ingress default/site error InvalidHost: spec.rules[4].host: "*foo.com": a wildcard must be the whole first label of a longer name, as in "*.example.com"; the rule is ignored',
      'Ingress default/site error InvalidHost: spec.rules[5].host: "foo..com" has an empty label; the rule is ignored',
      'Ingress default/site error InvalidHost: spec.rules[6].host: "foo.com." has an empty label; the rule is ignored',
      'Ingress default/site error InvalidHost: spec.rules[7].host: "foo_bar.com" is not a valid DNS name: labels are letters, digits and \'-\', and start and end with a letter or digit; the rule is ignored',
      'Ingress default/site error InvalidHost: spec.rules[8].host: "-foo.com" is not a valid DNS name: labels are letters, digits and \'-\', and start and end with a letter or digit; the rule is ignored',
      `Ingress default/site error InvalidHost: spec.rules[9].host: ${long} is longer than 253 characters; the rule is ignored`,
    ]);
  });

  test('Exact and Prefix are served as written; ImplementationSpecific is served as Prefix', () => {
    const config = run([
      ...base,
      ingress('site', {
        rules: [{ host: 'a.com', http: paths({ path: '/e', pathType: 'Exact' }, { path: '/p', pathType: 'Prefix' }, { path: '/i', pathType: 'ImplementationSpecific' }) }],
      }),
    ]);
    assert.deepEqual(routeLines(config), ['a.com|Exact|/e -> default/web:80', 'a.com|Prefix|/i -> default/web:80', 'a.com|Prefix|/p -> default/web:80']);
    assert.deepEqual(
      config.routes.map((r) => r.id),
      ['default/site|a.com|Exact|/e', 'default/site|a.com|Prefix|/i', 'default/site|a.com|Prefix|/p'],
    );
  });

  test('a missing pathType is reported and treated as ImplementationSpecific; an unknown one skips the path', () => {
    const config = run([
      ...base,
      ingress('site', { rules: [{ host: 'a.com', http: paths({ path: '/m' }, { path: '/r', pathType: 'Regex' as 'Exact' }) }] }),
    ]);
    assert.deepEqual(routeLines(config), ['a.com|Prefix|/m -> default/web:80']);
    assert.deepEqual(problemLines(config), [
      'Ingress default/site warning MissingPathType: spec.rules[0].http.paths[0].pathType: not set; treated as ImplementationSpecific (served as Prefix)',
      'Ingress default/site error InvalidPathType: spec.rules[0].http.paths[1].pathType: "Regex" is not Exact, Prefix or ImplementationSpecific; the path is ignored',
    ]);
  });

  test('a path must start with "/"; a missing path is "/"', () => {
    const config = run([...base, ingress('site', { rules: [{ host: 'a.com', http: paths({ path: 'api', pathType: 'Prefix' }, { pathType: 'Prefix' }) }] })]);
    assert.deepEqual(routeLines(config), ['a.com|Prefix|/ -> default/web:80']);
    assert.deepEqual(problemLines(config), [
      'Ingress default/site error InvalidPath: spec.rules[0].http.paths[0].path: "api" must start with \'/\'; the path is ignored',
    ]);
  });

  test('duplicates inside one Ingress: the first wins and the others are reported', () => {
    const config = run([
      ...base,
      service('other'),
      slice('other-1', 'other', [{ ip: '10.0.0.2' }]),
      ingress('site', {
        rules: [
          { host: 'a.com', http: paths({ path: '/x', pathType: 'Prefix' }, { path: '/x', pathType: 'ImplementationSpecific', backend: svcBackend('other') }) },
          { host: 'A.com', http: paths({ path: '/x/', pathType: 'Prefix', backend: svcBackend('other') }, { path: '/x', pathType: 'Exact' }) },
        ],
      }),
    ]);
    assert.deepEqual(routeLines(config), ['a.com|Exact|/x -> default/web:80', 'a.com|Prefix|/x -> default/web:80']);
    assert.deepEqual(problemLines(config), [
      'Ingress default/site warning DuplicatePath: spec.rules[0].http.paths[1]: same host, path and type as spec.rules[0].http.paths[0] of this Ingress, which is used instead',
      'Ingress default/site warning DuplicatePath: spec.rules[1].http.paths[0]: same host, path and type as spec.rules[0].http.paths[0] of this Ingress, which is used instead',
    ]);
  });

  test('a rule without http and an Ingress without rules serve nothing but are still served', () => {
    const config = run([...base, ingress('a', { rules: [{ host: 'a.com' }] }), ingress('b', {})]);
    assert.deepEqual(config.routes, []);
    assert.deepEqual(config.servedIngresses, ['default/a', 'default/b']);
    assert.deepEqual(config.problems, []);
  });

  test('routes are sorted by host, path and type whatever the Ingress order', () => {
    const config = run([
      ...base,
      simpleIngress('z', 'b.com', [['/b', 'web'], ['/a', 'web']]),
      simpleIngress('y', 'a.com', [['/z', 'web', 80, 'Exact'], ['/z', 'web']]),
      simpleIngress('x', undefined, [['/', 'web']]),
    ]);
    assert.deepEqual(routeLines(config), [
      '|Prefix|/ -> default/web:80',
      'a.com|Exact|/z -> default/web:80',
      'a.com|Prefix|/z -> default/web:80',
      'b.com|Prefix|/a -> default/web:80',
      'b.com|Prefix|/b -> default/web:80',
    ]);
  });

  test('policies: unknown portico.dev annotations are reported through the registry, others ignored', () => {
    const config = run([
      ...base,
      simpleIngress('site', 'a.com', [['/', 'web']], { annotations: { 'portico.dev/no-such-thing': 'x', 'example.com/other': 'y' } }),
    ]);
    assert.deepEqual(config.routes[0]!.policies, []);
    assert.deepEqual(problemLines(config), [
      'Ingress default/site warning UnknownAnnotation: annotation portico.dev/no-such-thing is not a portico annotation and is ignored',
    ]);
  });

  test('problems are grouped by object in a stable order', () => {
    const config = run([
      ...base,
      simpleIngress('b', 'a.com', [['x', 'web'], ['/', 'missing']]),
      simpleIngress('a', '1.2.3.4', [['/', 'web']], { namespace: 'ns' }),
      simpleIngress('a', 'b.com', [['/', 'missing']]),
    ]);
    assert.deepEqual(
      config.problems.map((p) => `${p.object.namespace}/${p.object.name} ${p.reason}`),
      ['default/a ServiceNotFound', 'default/b InvalidPath', 'default/b ServiceNotFound', 'ns/a InvalidHost'],
    );
  });
});
