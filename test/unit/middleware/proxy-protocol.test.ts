import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import selfsigned from 'selfsigned';
import { configureClientIp, resolveClientIp } from '../../../src/proxy/client-ip.ts';
import { acceptProxyProtocol, parseProxyHeader } from '../../../src/proxy/proxy-protocol.ts';

const SIG = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');

function v2(command: number, familyTransport: number, addresses: Buffer, tlvs = Buffer.alloc(0)): Buffer {
  const len = Buffer.alloc(2);
  len.writeUInt16BE(addresses.length + tlvs.length);
  return Buffer.concat([SIG, Buffer.from([0x20 | command, familyTransport]), len, addresses, tlvs]);
}

function v2Tcp4(src: number[], sport: number): Buffer {
  const a = Buffer.alloc(12);
  Buffer.from(src).copy(a, 0);
  Buffer.from([10, 0, 0, 1]).copy(a, 4);
  a.writeUInt16BE(sport, 8);
  a.writeUInt16BE(443, 10);
  return v2(1, 0x11, a);
}

describe('parseProxyHeader', () => {
  test('v1 TCP4 and TCP6', () => {
    const line = 'PROXY TCP4 203.0.113.7 10.0.0.1 56324 80\r\n';
    assert.deepEqual(parseProxyHeader(Buffer.from(line + 'GET / HTTP/1.1\r\n')), { status: 'ok', length: line.length, source: { address: '203.0.113.7', port: 56324 } });
    const six = 'PROXY TCP6 2001:db8::7 2001:db8::1 4000 443\r\n';
    assert.deepEqual(parseProxyHeader(Buffer.from(six)), { status: 'ok', length: six.length, source: { address: '2001:db8::7', port: 4000 } });
  });

  test('v1 UNKNOWN: no source', () => {
    assert.deepEqual(parseProxyHeader(Buffer.from('PROXY UNKNOWN\r\n')), { status: 'ok', length: 15 });
    assert.deepEqual(parseProxyHeader(Buffer.from('PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n')), { status: 'ok', length: 35 });
  });

  test('incomplete until the end of the header', () => {
    for (const part of ['', 'P', 'PROXY', 'PROXY TCP4 1.2.3.4 5.6.7.8 1 2', 'PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r']) {
      assert.deepEqual(parseProxyHeader(Buffer.from(part)), { status: 'incomplete' }, JSON.stringify(part));
    }
    const full = v2Tcp4([1, 2, 3, 4], 1);
    for (const n of [1, 12, 15, full.length - 1]) assert.equal(parseProxyHeader(full.subarray(0, n)).status, 'incomplete', String(n));
  });

  test('malformed headers are invalid', () => {
    const bad = [
      'GET / HTTP/1.1\r\n',
      'PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n',
      'PROXY TCP4 2001:db8::1 5.6.7.8 1 2\r\n',
      'PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n',
      'PROXY TCP4 1.2.3.4 5.6.7.8 1 65536\r\n',
      'PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n',
      'PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n',
      'PROXY ' + 'x'.repeat(110),
    ];
    for (const text of bad) assert.equal(parseProxyHeader(Buffer.from(text)).status, 'invalid', JSON.stringify(text));
  });

  test('v2 PROXY over TCP4 and TCP6, TLVs skipped', () => {
    const h4 = v2Tcp4([198, 51, 100, 9], 1234);
    assert.deepEqual(parseProxyHeader(Buffer.concat([h4, Buffer.from('GET')])), { status: 'ok', length: 28, source: { address: '198.51.100.9', port: 1234 } });
    const a6 = Buffer.alloc(36);
    Buffer.from('20010db8000000000000000000000007', 'hex').copy(a6, 0);
    a6.writeUInt16BE(999, 32);
    const tlv = Buffer.from([0x04, 0x00, 0x02, 0xab, 0xcd]);
    const r = parseProxyHeader(v2(1, 0x21, a6, tlv));
    assert.equal(r.status, 'ok');
    if (r.status === 'ok') {
      assert.equal(r.length, 16 + 36 + 5);
      assert.equal(net.isIP(r.source!.address), 6);
      assert.equal(new net.SocketAddress({ address: r.source!.address, family: 'ipv6' }).address, '2001:db8::7');
      assert.equal(r.source!.port, 999);
    }
  });

  test('v2 LOCAL and UNSPEC: no source', () => {
    assert.deepEqual(parseProxyHeader(v2(0, 0x00, Buffer.alloc(0))), { status: 'ok', length: 16 });
    assert.deepEqual(parseProxyHeader(v2(1, 0x00, Buffer.alloc(4))), { status: 'ok', length: 20 });
  });

  test('v2 with a bad version, command or length is invalid', () => {
    const good = v2Tcp4([1, 2, 3, 4], 1);
    const badVersion = Buffer.from(good);
    badVersion[12] = 0x11;
    const badCommand = Buffer.from(good);
    badCommand[12] = 0x2f;
    assert.equal(parseProxyHeader(badVersion).status, 'invalid');
    assert.equal(parseProxyHeader(badCommand).status, 'invalid');
    assert.equal(parseProxyHeader(v2(1, 0x11, Buffer.alloc(4))).status, 'invalid', 'too short for IPv4');
    assert.equal(parseProxyHeader(Buffer.concat([SIG.subarray(0, 5), Buffer.from('xxxxxxxxxxx')])).status, 'invalid');
  });
});

/** Writes `parts` one by one (separate packets, in practice) and collects everything until the server closes. */
function exchange(port: number, parts: (string | Buffer)[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => (data += c));
    socket.on('close', () => resolve(data));
    socket.on('error', reject);
    socket.on('connect', async () => {
      for (const part of parts) {
        socket.write(part);
        await new Promise((r) => setTimeout(r, 5));
      }
    });
  });
}

const GET = 'GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n';
const GET_KEEPALIVE = 'GET / HTTP/1.1\r\nHost: example.com\r\n\r\n';
const bodyOf = (response: string) => response.slice(response.indexOf('\r\n\r\n') + 4);

describe('acceptProxyProtocol on an HTTP server', () => {
  let trusted: http.Server;
  let untrusted: http.Server;
  let trustedPort = 0;
  let untrustedPort = 0;
  const rejected: string[] = [];

  before(async () => {
    configureClientIp({ trustedProxies: '127.0.0.1' });
    trusted = http.createServer((req, res) => res.end(resolveClientIp(req)));
    acceptProxyProtocol(trusted, { onRejected: (peer, reason) => rejected.push(`${peer}: ${reason}`), headerTimeout: 2000 });
    untrusted = http.createServer((req, res) => res.end(resolveClientIp(req)));
    acceptProxyProtocol(untrusted, { isTrusted: () => false });
    await new Promise<void>((r) => trusted.listen(0, '127.0.0.1', r));
    await new Promise<void>((r) => untrusted.listen(0, '127.0.0.1', r));
    trustedPort = (trusted.address() as AddressInfo).port;
    untrustedPort = (untrusted.address() as AddressInfo).port;
  });
  after(async () => {
    configureClientIp({ trustedProxies: '' });
    for (const s of [trusted, untrusted]) s.closeAllConnections();
    await Promise.all([trusted, untrusted].map((s) => new Promise((r) => s.close(r))));
  });

  test('v1 header and request in one packet: the client address is the PROXY source', async () => {
    const response = await exchange(trustedPort, ['PROXY TCP4 203.0.113.7 10.0.0.1 56324 80\r\n' + GET]);
    assert.match(response, /^HTTP\/1\.1 200/);
    assert.equal(bodyOf(response), '203.0.113.7');
  });

  test('header split across packets, request in another', async () => {
    const response = await exchange(trustedPort, ['PROXY TCP6 2001:db8', '::7 2001:db8::1 4000 443\r', '\n', GET]);
    assert.equal(bodyOf(response), '2001:db8::7');
  });

  test('v2 header', async () => {
    const response = await exchange(trustedPort, [Buffer.concat([v2Tcp4([198, 51, 100, 9], 1234), Buffer.from(GET)])]);
    assert.equal(bodyOf(response), '198.51.100.9');
  });

  test('every request of a keep-alive connection gets the address', async () => {
    const response = await exchange(trustedPort, ['PROXY TCP4 203.0.113.8 10.0.0.1 1 80\r\n', GET_KEEPALIVE, GET]);
    assert.equal(response.match(/203\.0\.113\.8/g)?.length, 2);
  });

  test('LOCAL (a health check): the peer itself', async () => {
    const response = await exchange(trustedPort, [Buffer.concat([v2(0, 0, Buffer.alloc(0)), Buffer.from(GET)])]);
    assert.equal(bodyOf(response), '127.0.0.1');
  });

  test('a malformed or missing header closes the connection without an answer', async () => {
    rejected.length = 0;
    assert.equal(await exchange(trustedPort, ['PROXY TCP4 nonsense\r\n' + GET]), '');
    assert.equal(await exchange(trustedPort, [GET]), '', 'a trusted peer must send the header');
    assert.equal(rejected.length, 2);
    assert.match(rejected[0]!, /^127\.0\.0\.1: /);
  });

  test('from an untrusted peer the header is not read: it is bad HTTP', async () => {
    const response = await exchange(untrustedPort, ['PROXY TCP4 203.0.113.7 10.0.0.1 56324 80\r\n' + GET]);
    assert.match(response, /^HTTP\/1\.1 400/);
    assert.doesNotMatch(response, /203\.0\.113\.7/);
    assert.equal(bodyOf(await exchange(untrustedPort, [GET])), '127.0.0.1', 'plain HTTP still works');
  });

  test('a header that never completes is cut off', async () => {
    const server = http.createServer((req, res) => res.end(resolveClientIp(req)));
    acceptProxyProtocol(server, { isTrusted: () => true, headerTimeout: 50 });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      assert.equal(await exchange((server.address() as AddressInfo).port, ['PROXY TCP4 ']), '');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  test('server.close() does not wait for connections still owing their header', async () => {
    const server = http.createServer((req, res) => res.end('x'));
    acceptProxyProtocol(server, { isTrusted: () => true, headerTimeout: 60_000 });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
    const closed = new Promise((r) => socket.on('close', r));
    socket.on('error', () => {});
    await new Promise((r) => socket.on('connect', r));
    await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => server.close(r));
    await closed;
  });
});

describe('acceptProxyProtocol on an HTTPS server', () => {
  let server: https.Server;
  let port = 0;

  before(async () => {
    configureClientIp({ trustedProxies: '127.0.0.1' });
    const cert = await selfsigned.generate([{ name: 'commonName', value: 'example.com' }], { keyType: 'ec', algorithm: 'sha256' });
    server = https.createServer({ cert: cert.cert, key: cert.private }, (req, res) => res.end(resolveClientIp(req)));
    acceptProxyProtocol(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    configureClientIp({ trustedProxies: '' });
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const viaTls = async (raw: net.Socket): Promise<string> => {
    const secure = tls.connect({ socket: raw, servername: 'example.com', rejectUnauthorized: false });
    try {
      return await new Promise<string>((resolve, reject) => {
        let data = '';
        secure.on('secureConnect', () => secure.write(GET));
        secure.setEncoding('latin1');
        secure.on('data', (c: string) => (data += c));
        secure.on('end', () => resolve(bodyOf(data)));
        secure.on('error', reject);
      });
    } finally {
      secure.destroy();
    }
  };

  test('the header comes before the TLS handshake; the request over TLS gets the address', async () => {
    const raw = net.connect(port, '127.0.0.1');
    await new Promise((r) => raw.on('connect', r));
    raw.write('PROXY TCP4 203.0.113.9 10.0.0.1 1000 443\r\n');
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(await viaTls(raw), '203.0.113.9');
  });

  test('header and ClientHello in one packet', async () => {
    const raw = net.connect(port, '127.0.0.1');
    await new Promise((r) => raw.on('connect', r));
    raw.cork();
    raw.write('PROXY TCP4 203.0.113.10 10.0.0.1 1000 443\r\n');
    setTimeout(() => raw.uncork(), 10); // after tls.connect queued its ClientHello
    assert.equal(await viaTls(raw), '203.0.113.10');
  });
});
