import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rewritePath, rewriteTargetPolicy } from '../../../src/middleware/rewrite-target.ts';
import type { MatchType } from '../../../src/model/config.ts';
import { SharedStateMap } from '../../../src/middleware/registry.ts';
import { compose, parseWith, request, routeConfig, serve, terminal, type TestServer } from './support.ts';

describe('rewrite-target: parse', () => {
  test('a path', () => {
    assert.deepEqual(parseWith(rewriteTargetPolicy, { 'portico.dev/rewrite-target': ' /v2/ ' }).config, { target: '/v2/' });
    assert.deepEqual(parseWith(rewriteTargetPolicy, { 'portico.dev/rewrite-target': '/a%20b/@x' }).config, { target: '/a%20b/@x' });
  });

  test('invalid targets are reported; paths are then forwarded unchanged', () => {
    for (const target of ['v2', '/a?b=1', '/a#x', '/a b', '/%zz', '/a/../b', '', '/$1', '/api/$2']) {
      const r = parseWith(rewriteTargetPolicy, { 'portico.dev/rewrite-target': target });
      assert.equal(r.config, undefined, target);
      assert.equal(r.problems.length, 1, target);
      assert.equal(r.problems[0]!.severity, 'error');
      assert.match(r.problems[0]!.message, /forwarded unchanged/);
    }
    assert.match(parseWith(rewriteTargetPolicy, { 'portico.dev/rewrite-target': '/$1' }).lines[0]!, /regex captures/);
  });
});

describe('rewritePath', () => {
  const cases: [string, MatchType, string, string, string][] = [
    // route path, type, target, request path, upstream path
    ['/api', 'Prefix', '/', '/api/v1/x', '/v1/x'],
    ['/api', 'Prefix', '/', '/api', '/'],
    ['/api', 'Prefix', '/', '/api/', '/'],
    ['/api/', 'Prefix', '/', '/api/v1', '/v1'],
    ['/api/', 'Prefix', '/', '/api', '/'],
    ['/api', 'Prefix', '/internal', '/api/v1/x', '/internal/v1/x'],
    ['/api', 'Prefix', '/internal', '/api', '/internal'],
    ['/api', 'Prefix', '/internal/', '/api/v1', '/internal/v1'],
    ['/api', 'Prefix', '/internal', '/api/', '/internal/'],
    ['/', 'Prefix', '/app', '/x/y', '/app/x/y'],
    ['/', 'Prefix', '/', '/x', '/x'],
    ['/a/b', 'Prefix', '/c', '/a/b/c%2Fd', '/c/c%2Fd'],
    ['/exact', 'Exact', '/other', '/exact', '/other'],
  ];
  for (const [path, pathType, target, from, to] of cases) {
    test(`${pathType} ${path} -> ${target}: ${from} becomes ${to}`, () => {
      assert.equal(rewritePath(from, { path, pathType }, target), to);
    });
  }
});

describe('rewrite-target at runtime', () => {
  let prefix: TestServer;
  let exact: TestServer;
  let noRoute: TestServer;

  before(async () => {
    const policies = [{ name: 'rewrite-target', config: { target: '/' } }];
    const prefixRoute = routeConfig({ policies, path: '/api', pathType: 'Prefix' });
    prefix = await serve(compose(policies, prefixRoute), prefixRoute);
    const exactRoute = routeConfig({ policies, path: '/login', pathType: 'Exact' });
    exact = await serve(compose(policies, exactRoute), exactRoute);
    noRoute = await serve(rewriteTargetPolicy.create({ target: '/' }, new SharedStateMap(), 'default/site')(terminal), prefixRoute);
  });
  after(async () => {
    await Promise.all([prefix, exact, noRoute].map((s) => s?.close()));
  });

  test('replaces the matched prefix and keeps the query', async () => {
    assert.equal((await request(prefix, '/api/v1/x?a=1&b=%20')).json().upstreamPath, '/v1/x?a=1&b=%20');
    assert.equal((await request(prefix, '/api')).json().upstreamPath, '/');
  });

  test('an Exact route sends the target itself, with the query', async () => {
    assert.equal((await request(exact, '/login?next=/home')).json().upstreamPath, '/?next=/home');
  });

  test('without the route (not passed by the compiler) the path is left alone', async () => {
    assert.equal((await request(noRoute, '/api/v1')).json().upstreamPath, '/api/v1');
  });
});
