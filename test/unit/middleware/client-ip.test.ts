import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { configureClientIp, isTrustedProxy, resolveClientIp } from '../../../src/proxy/client-ip.ts';

describe('resolveClientIp over real sockets', () => {
  let server: http.Server;
  let port = 0;

  before(async () => {
    server = http.createServer((req, res) => res.end(resolveClientIp(req)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    configureClientIp({ trustedProxies: '' });
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const clientIp = (xff?: string | string[]): Promise<string> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string | string[]> = xff === undefined ? {} : { 'x-forwarded-for': xff };
      http
        .get({ host: '127.0.0.1', port, path: '/', headers, agent: false }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve(body));
        })
        .on('error', reject);
    });

  test('no trusted proxies: the socket peer, whatever X-Forwarded-For says', async () => {
    configureClientIp({ trustedProxies: '' });
    assert.equal(await clientIp(), '127.0.0.1');
    assert.equal(await clientIp('203.0.113.5'), '127.0.0.1');
  });

  test('a peer outside --trusted-proxies is not believed', async () => {
    configureClientIp({ trustedProxies: '10.0.0.0/8, 2001:db8::/32' });
    assert.equal(await clientIp('203.0.113.5'), '127.0.0.1');
  });

  test('a trusted peer: the rightmost address that is not a trusted hop', async () => {
    configureClientIp({ trustedProxies: '127.0.0.1 10.0.0.0/8' });
    assert.equal(await clientIp(), '127.0.0.1', 'no header: the peer itself');
    assert.equal(await clientIp('203.0.113.5'), '203.0.113.5');
    assert.equal(await clientIp('198.51.100.1, 203.0.113.5, 10.0.0.2'), '203.0.113.5', 'trusted hops skipped');
    assert.equal(await clientIp('6.6.6.6, 203.0.113.5'), '203.0.113.5', 'what the client itself wrote is not believed');
    assert.equal(await clientIp('10.0.0.3, 10.0.0.2'), '10.0.0.3', 'all trusted: the leftmost');
    assert.equal(await clientIp(['198.51.100.1', '203.0.113.5, 10.1.1.1']), '203.0.113.5', 'repeated headers are one list');
  });

  test('entry forms: ports, brackets, IPv4-mapped, blanks', async () => {
    configureClientIp({ trustedProxies: '127.0.0.1' });
    assert.equal(await clientIp('203.0.113.5:4711'), '203.0.113.5');
    assert.equal(await clientIp('[2001:db8::7]:443'), '2001:db8::7');
    assert.equal(await clientIp('2001:db8::7'), '2001:db8::7');
    assert.equal(await clientIp('::ffff:203.0.113.5'), '203.0.113.5');
    assert.equal(await clientIp('203.0.113.5, '), '203.0.113.5');
  });

  test('garbage from a trusted hop: the last verified address', async () => {
    configureClientIp({ trustedProxies: '127.0.0.1, 10.0.0.0/8' });
    assert.equal(await clientIp('203.0.113.5, unknown'), '127.0.0.1');
    assert.equal(await clientIp('203.0.113.5, garbage, 10.0.0.9'), '10.0.0.9');
  });

  test('invalid --trusted-proxies entries are skipped with a warning', () => {
    const warnings: string[] = [];
    const parsed = configureClientIp({ trustedProxies: '10.0.0.0/8, 10.0.0.0/99, localhost', log: { warn: (m) => warnings.push(m) } });
    assert.deepEqual(parsed, { valid: ['10.0.0.0/8'], invalid: ['10.0.0.0/99', 'localhost'] });
    assert.equal(warnings.length, 2);
    assert.match(warnings[0]!, /--trusted-proxies: "10\.0\.0\.0\/99" is not an IP address or CIDR; skipped/);
    assert.equal(isTrustedProxy('10.9.9.9'), true);
    assert.equal(isTrustedProxy('::ffff:10.9.9.9'), true);
    assert.equal(isTrustedProxy('11.0.0.1'), false);
  });
});
