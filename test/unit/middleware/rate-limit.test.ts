import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Http1Request } from '../../../src/http1/request.ts';
import { SharedStateMap } from '../../../src/middleware/registry.ts';
import { configureRateLimitWorkers, rateLimitPolicy, SWEEP_INTERVAL_MS, TokenBuckets } from '../../../src/middleware/rate-limit.ts';
import { compose, parseWith, request, routeConfig, serve, type TestServer } from './support.ts';

describe('rate-limit: parse', () => {
  test('rate and burst', () => {
    const r = parseWith(rateLimitPolicy, { 'portico.dev/rate-limit': '5', 'portico.dev/rate-limit-burst': '20' });
    assert.deepEqual(r.config, { rate: 5, burst: 20 });
    assert.deepEqual(r.lines, []);
  });

  test('the burst defaults to the rate', () => {
    assert.deepEqual(parseWith(rateLimitPolicy, { 'portico.dev/rate-limit': ' 7 ' }).config, { rate: 7, burst: 7 });
  });

  test('0 turns it off without a problem', () => {
    const r = parseWith(rateLimitPolicy, { 'portico.dev/rate-limit': '0' });
    assert.equal(r.config, undefined);
    assert.deepEqual(r.lines, []);
  });

  test('an invalid rate is an error and the limit is off', () => {
    for (const value of ['-1', '1.5', 'ten', '', '99999999']) {
      const r = parseWith(rateLimitPolicy, { 'portico.dev/rate-limit': value });
      assert.equal(r.config, undefined, value);
      assert.equal(r.problems.length, 1, value);
      assert.equal(r.problems[0]!.severity, 'error');
      assert.match(r.problems[0]!.message, /portico\.dev\/rate-limit: invalid value.*not rate limited/);
    }
  });

  test('an invalid burst is a warning and the rate is used as burst', () => {
    for (const value of ['0', 'lots', '-3']) {
      const r = parseWith(rateLimitPolicy, { 'portico.dev/rate-limit': '4', 'portico.dev/rate-limit-burst': value });
      assert.deepEqual(r.config, { rate: 4, burst: 4 });
      assert.equal(r.problems.length, 1);
      assert.equal(r.problems[0]!.severity, 'warning');
    }
  });

  test('a burst without a rate is reported as having no effect', () => {
    const r = parseWith(rateLimitPolicy, { 'portico.dev/rate-limit-burst': '10' });
    assert.equal(r.config, undefined);
    assert.match(r.lines[0]!, /rate-limit-burst: has no effect without portico\.dev\/rate-limit/);
  });
});

describe('token buckets', () => {
  test('a client gets the burst at once, then the rate; others are independent', () => {
    const b = new TokenBuckets();
    b.configure(2, 3);
    const t = 1_000_000;
    assert.deepEqual([b.take('a', t), b.take('a', t), b.take('a', t)], [0, 0, 0]);
    assert.equal(b.take('a', t), 1, 'over the burst: retry after 1 s');
    assert.equal(b.take('b', t), 0, 'another client has its own bucket');
    assert.equal(b.take('a', t + 499), 1, 'not yet a whole token after 499 ms at 2/s');
    assert.equal(b.take('a', t + 1000), 0, 'a token after 500 ms');
  });

  test('Retry-After is the whole seconds until the next token', () => {
    const b = new TokenBuckets();
    b.configure(0.1, 1); // a slow refill to see seconds add up (annotations give integers; the buckets take any rate)
    assert.equal(b.take('a', 0), 0);
    assert.equal(b.take('a', 0), 10);
    assert.equal(b.take('a', 5000), 5);
  });

  test('refilled buckets are swept: memory returns to zero after a burst of clients', () => {
    const b = new TokenBuckets();
    b.configure(10, 10);
    for (let i = 0; i < 1000; i++) b.take(`10.0.${i >> 8}.${i & 255}`, 0);
    assert.equal(b.size, 1000);
    b.take('192.0.2.1', SWEEP_INTERVAL_MS + 1);
    assert.equal(b.size, 1, 'only the newest client is left');
  });

  test('a flood of distinct addresses never grows past the cap', () => {
    const b = new TokenBuckets(100);
    b.configure(1, 1);
    for (let i = 0; i < 10_000; i++) b.take(`2001:db8::${i.toString(16)}`, i / 1000);
    assert.equal(b.size, 100);
  });

  test('at the cap the oldest bucket goes, the active ones stay', () => {
    const b = new TokenBuckets(2);
    b.configure(1, 1);
    b.take('old', 0);
    b.take('recent', 0);
    b.take('new', 0);
    assert.equal(b.take('recent', 0), 1, 'recent is still limited');
    assert.equal(b.take('new', 0), 1, 'new is still limited');
    assert.equal(b.take('old', 0), 0, 'old was evicted and starts over');
  });
});

describe('rate-limit at runtime', () => {
  const fromHeader = (req: Http1Request) => String(req.header('x-test-client') ?? req.socket.remoteAddress);
  const as = (ip: string) => ({ headers: { 'x-test-client': ip } });
  let server: TestServer;
  let other: TestServer;
  let sameIngress: TestServer;
  const shared = new SharedStateMap();

  before(async () => {
    // A rate so low that no token comes back during the test, however slow the machine.
    const policies = [{ name: 'rate-limit', config: { rate: 0.01, burst: 2 } }];
    const route = routeConfig({ policies });
    server = await serve(compose(policies, route, shared), route, { clientIp: fromHeader });
    // Another path of the same Ingress shares the buckets; another Ingress does not.
    const route2 = routeConfig({ policies, id: 'default/site|example.com|Prefix|/two', path: '/two' });
    sameIngress = await serve(compose(policies, route2, shared), route2, { clientIp: fromHeader });
    const route3 = routeConfig({ policies, source: { kind: 'Ingress', namespace: 'default', name: 'other' } });
    other = await serve(compose(policies, route3, shared), route3, { clientIp: fromHeader });
  });
  after(async () => {
    await Promise.all([server, other, sameIngress].map((s) => s?.close()));
  });

  test('over the limit: 429 with Retry-After; per client address; per Ingress', async () => {
    assert.equal((await request(server, '/', as('198.51.100.1'))).status, 200);
    assert.equal((await request(sameIngress, '/two', as('198.51.100.1'))).status, 200);
    const limited = await request(server, '/', as('198.51.100.1'));
    assert.equal(limited.status, 429);
    const retryAfter = Number(limited.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter > 90 && retryAfter <= 100, `Retry-After ${limited.headers['retry-after']}: whole seconds until the next token`);
    assert.match(limited.body, /rate limit of 0\.01 requests per second exceeded/);
    assert.equal((await request(sameIngress, '/two', as('198.51.100.1'))).status, 429, 'the same Ingress shares the bucket');
    assert.equal((await request(other, '/', as('198.51.100.1'))).status, 200, 'another Ingress has its own buckets');
    assert.equal((await request(server, '/', as('198.51.100.2'))).status, 200, 'another client has its own bucket');
    assert.equal((await request(server, '/', as('::ffff:198.51.100.1'))).status, 429, 'an IPv4-mapped address is the same client');
  });

  test('buckets survive a route-table rebuild (same shared state)', async () => {
    const policies = [{ name: 'rate-limit', config: { rate: 0.01, burst: 1 } }];
    const route = routeConfig({ policies, source: { kind: 'Ingress', namespace: 'default', name: 'rebuilt' } });
    const first = await serve(compose(policies, route, shared), route, { clientIp: fromHeader });
    const second = await serve(compose(policies, route, shared), route, { clientIp: fromHeader });
    try {
      assert.equal((await request(first, '/', as('203.0.113.9'))).status, 200);
      assert.equal((await request(second, '/', as('203.0.113.9'))).status, 429);
    } finally {
      await first.close();
      await second.close();
    }
  });
});

describe('rate limits split between workers', () => {
  test('with --workers 2, each worker lets a client through for half the burst', async () => {
    configureRateLimitWorkers(2);
    const policies = [{ name: 'rate-limit', config: { rate: 0.01, burst: 4 } }];
    const route = routeConfig({ policies, source: { kind: 'Ingress', namespace: 'default', name: 'split' } });
    const server = await serve(compose(policies, route, new SharedStateMap()), route);
    try {
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await request(server, '/')).status);
      assert.deepEqual(statuses, [200, 200, 429]);
    } finally {
      configureRateLimitWorkers(1);
      await server.close();
    }
  });
});
