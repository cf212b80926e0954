import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Http1Request } from '../../../src/http1/request.ts';
import { ipAllowPolicy, ipDenyPolicy } from '../../../src/middleware/ip-filter.ts';
import { sharedCidrSet } from '../../../src/middleware/cidr.ts';
import { compose, parseWith, request, routeConfig, serve, type TestServer } from './support.ts';

/** The test sets the client address with a header, standing in for the socket peer. */
const fromHeader = (req: Http1Request) => String(req.header('x-test-client') ?? req.socket.remoteAddress);
const as = (ip: string) => ({ headers: { 'x-test-client': ip } });

describe('ip-allow: parse', () => {
  test('IPv4 and IPv6 CIDRs and single addresses, comma or whitespace separated', () => {
    const r = parseWith(ipAllowPolicy, { 'portico.dev/ip-allow': '10.0.0.0/8, 192.168.1.7\n2001:DB8::/32  ::1' });
    assert.deepEqual(r.config, { cidrs: ['10.0.0.0/8', '192.168.1.7/32', '2001:db8::/32', '::1/128'] });
    assert.deepEqual(r.lines, []);
  });

  test('absent: no policy, nothing reported', () => {
    const r = parseWith(ipAllowPolicy, { 'portico.dev/ip-deny': '10.0.0.0/8' });
    assert.equal(r.config, undefined);
    assert.deepEqual(r.lines, []);
  });

  test('an invalid entry is skipped with a warning; the rest applies', () => {
    const r = parseWith(ipAllowPolicy, { 'portico.dev/ip-allow': '10.0.0.0/8, 10.0.0.0/33, nonsense, 1.2.3.4/x' });
    assert.deepEqual(r.config, { cidrs: ['10.0.0.0/8'] });
    assert.equal(r.problems.length, 3);
    assert.ok(r.problems.every((p) => p.severity === 'warning' && p.reason === 'InvalidAnnotation'));
    assert.match(r.lines[0]!, /portico\.dev\/ip-allow: invalid value "10\.0\.0\.0\/33".*skipped/);
  });

  test('no valid entry at all fails closed: everyone refused, reported as an error', () => {
    for (const value of ['bogus, 300.1.1.1', '']) {
      const r = parseWith(ipAllowPolicy, { 'portico.dev/ip-allow': value });
      assert.deepEqual(r.config, { cidrs: [], refuseAll: true });
      assert.ok(r.problems.some((p) => p.severity === 'error' && /fails closed/.test(p.message)), value);
    }
  });
});

describe('ip-deny: parse', () => {
  test('valid list', () => {
    assert.deepEqual(parseWith(ipDenyPolicy, { 'portico.dev/ip-deny': '203.0.113.0/24' }).config, { cidrs: ['203.0.113.0/24'] });
  });

  test('no valid entry fails closed too', () => {
    const r = parseWith(ipDenyPolicy, { 'portico.dev/ip-deny': '203.0.113.0/240' });
    assert.deepEqual(r.config, { cidrs: [], refuseAll: true });
    assert.ok(r.problems.some((p) => p.severity === 'error'));
  });

  test('an empty list denies nobody, with a warning', () => {
    const r = parseWith(ipDenyPolicy, { 'portico.dev/ip-deny': '  ' });
    assert.equal(r.config, undefined);
    assert.equal(r.problems.length, 1);
    assert.equal(r.problems[0]!.severity, 'warning');
  });
});

describe('ip filters at runtime', () => {
  let allow: TestServer;
  let deny: TestServer;
  let both: TestServer;
  let closed: TestServer;

  before(async () => {
    const serveWith = (annotations: Record<string, string>) => {
      const policies = [ipDenyPolicy, ipAllowPolicy]
        .map((p) => ({ name: p.name, config: parseWith(p, annotations).config }))
        .filter((p) => p.config !== undefined);
      return serve(compose(policies, routeConfig({ policies })), routeConfig({ policies }), { clientIp: fromHeader });
    };
    allow = await serveWith({ 'portico.dev/ip-allow': '10.0.0.0/8, 2001:db8::/32' });
    deny = await serveWith({ 'portico.dev/ip-deny': '10.1.0.0/16 2001:db8:bad::/48' });
    both = await serveWith({ 'portico.dev/ip-allow': '10.0.0.0/8', 'portico.dev/ip-deny': '10.9.9.9' });
    closed = await serveWith({ 'portico.dev/ip-allow': 'not-an-ip' });
  });
  after(async () => {
    await Promise.all([allow, deny, both, closed].map((s) => s?.close()));
  });

  test('ip-allow: listed IPv4 and IPv6 clients pass, others get 403', async () => {
    assert.equal((await request(allow, '/', as('10.2.3.4'))).status, 200);
    assert.equal((await request(allow, '/', as('2001:db8::42'))).status, 200);
    const refused = await request(allow, '/', as('192.0.2.1'));
    assert.equal(refused.status, 403);
    assert.equal(refused.body, 'forbidden\n');
    assert.equal((await request(allow, '/', as('2001:db9::1'))).status, 403);
  });

  test('ip-allow: an IPv4-mapped IPv6 client matches IPv4 ranges', async () => {
    assert.equal((await request(allow, '/', as('::ffff:10.2.3.4'))).status, 200);
    assert.equal((await request(allow, '/', as('::ffff:192.0.2.1'))).status, 403);
  });

  test('ip-allow: an unknown client address is refused', async () => {
    assert.equal((await request(allow, '/', as(''))).status, 403);
  });

  test('ip-deny: listed clients get 403, others pass', async () => {
    assert.equal((await request(deny, '/', as('10.1.200.1'))).status, 403);
    assert.equal((await request(deny, '/', as('::ffff:10.1.200.1'))).status, 403);
    assert.equal((await request(deny, '/', as('2001:db8:bad::1'))).status, 403);
    assert.equal((await request(deny, '/', as('10.2.0.1'))).status, 200);
    assert.equal((await request(deny, '/', as('2001:db8:900d::1'))).status, 200);
  });

  test('both: deny wins inside an allowed range', async () => {
    assert.equal((await request(both, '/', as('10.9.9.9'))).status, 403);
    assert.equal((await request(both, '/', as('10.9.9.8'))).status, 200);
  });

  test('an all-invalid ip-allow refuses everyone', async () => {
    assert.equal((await request(closed, '/', as('10.2.3.4'))).status, 403);
    assert.equal((await request(closed, '/')).status, 403);
  });
});

describe('CIDR sets shared between routes', () => {
  test('routes naming the same list share one set; another list gets its own, and each matches its own ranges', () => {
    const a = sharedCidrSet(['10.0.0.0/8', '192.168.0.0/16']);
    const b = sharedCidrSet(['10.0.0.0/8', '192.168.0.0/16']);
    const c = sharedCidrSet(['10.0.0.0/8']);
    assert.equal(a, b);
    assert.notEqual(a, c);
    assert.equal(a.has('192.168.3.4'), true);
    assert.equal(c.has('192.168.3.4'), false);
    assert.equal(c.has('10.1.2.3'), true);
  });
});
