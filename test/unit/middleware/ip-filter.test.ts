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

  test('one invalid entry: one error naming the annotation, the entry and the consequence; the list fails closed', () => {
    const r = parseWith(ipAllowPolicy, { 'portico.dev/ip-allow': 'nonsense' });
    assert.deepEqual(r.config, { cidrs: [], refuseAll: true });
    assert.deepEqual(r.lines, [
      'error InvalidAnnotation: annotation portico.dev/ip-allow: invalid entry "nonsense": expected IPv4 or IPv6 addresses or CIDRs such as 10.0.0.0/8 or 2001:db8::/32; ' +
        'ip-allow is not applied and every client gets 403 until it is fixed (an IP list with a mistake fails closed)',
    ]);
  });

  test('several invalid entries among valid ones: still one line, naming each; the valid ones are not applied alone', () => {
    const r = parseWith(ipAllowPolicy, { 'portico.dev/ip-allow': '10.0.0.0/8, 10.0.0.0/33, nonsense, 1.2.3.4/x' });
    assert.deepEqual(r.config, { cidrs: [], refuseAll: true });
    assert.equal(r.lines.length, 1);
    assert.match(r.lines[0]!, /^error InvalidAnnotation: annotation portico\.dev\/ip-allow: invalid entries "10\.0\.0\.0\/33", "nonsense", "1\.2\.3\.4\/x": .*every client gets 403/);
  });

  test('an empty list allows nobody: one error, fails closed', () => {
    const r = parseWith(ipAllowPolicy, { 'portico.dev/ip-allow': ' , ' });
    assert.deepEqual(r.config, { cidrs: [], refuseAll: true });
    assert.deepEqual(r.lines, ['error InvalidAnnotation: annotation portico.dev/ip-allow: empty list; nobody is allowed: every client gets 403']);
  });
});

describe('ip-deny: parse', () => {
  test('valid list', () => {
    assert.deepEqual(parseWith(ipDenyPolicy, { 'portico.dev/ip-deny': '203.0.113.0/24' }).config, { cidrs: ['203.0.113.0/24'] });
  });

  test('an invalid entry fails closed too, even beside valid ones (skipping it would let in what it meant to deny): one line', () => {
    for (const value of ['203.0.113.0/240', '198.51.100.0/24, 203.0.113.0/240']) {
      const r = parseWith(ipDenyPolicy, { 'portico.dev/ip-deny': value });
      assert.deepEqual(r.config, { cidrs: [], refuseAll: true }, value);
      assert.deepEqual(r.lines, [
        'error InvalidAnnotation: annotation portico.dev/ip-deny: invalid entry "203.0.113.0/240": expected IPv4 or IPv6 addresses or CIDRs such as 10.0.0.0/8 or 2001:db8::/32; ' +
          'ip-deny is not applied and every client gets 403 until it is fixed (an IP list with a mistake fails closed)',
      ]);
    }
  });

  test('an empty list denies nobody, with a warning', () => {
    const r = parseWith(ipDenyPolicy, { 'portico.dev/ip-deny': '  ' });
    assert.equal(r.config, undefined);
    assert.deepEqual(r.lines, ['warning InvalidAnnotation: annotation portico.dev/ip-deny: empty list; nobody is denied']);
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
    closed = await serveWith({ 'portico.dev/ip-allow': '10.0.0.0/8, not-an-ip' });
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

  test('an ip-allow with an invalid entry refuses everyone, in its valid ranges too', async () => {
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
