import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { CertificateStore, DEFAULT_CERTIFICATE_CN } from '../../src/tls/certificates.ts';
import type { CertificateConfig } from '../../src/model/config.ts';
import { createTestPki, type TestPki } from '../unit/admin/fixtures.ts';

interface Handshake {
  subject: string;
  subjectAltName: string;
  alpn: string | false | null;
  protocol: string | null;
}

describe('HTTPS with the certificate store', () => {
  let pki: TestPki;
  let foo: { cert: string; key: string };
  let fooRenewed: { cert: string; key: string };
  let wild: { cert: string; key: string };
  let store: CertificateStore;
  let server: https.Server;
  let port = 0;

  before(async () => {
    pki = await createTestPki();
    [foo, fooRenewed, wild] = await Promise.all([
      pki.issue('foo.example.com'),
      pki.issue('foo.example.com', ['foo.example.com', 'renewed.example.com']),
      pki.issue('*.example.com'),
    ]);
    store = await CertificateStore.create();
    server = https.createServer(store.httpsServerOptions(), (req, res) => res.end(`hello ${req.headers.host}`));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  function install(entries: [string, CertificateConfig][]) {
    return store.update(new Map(entries));
  }

  /** Connects with SNI servername, verifying the chain against the test CA (unless verify is false). */
  function handshake(servername: string, verify = true): Promise<Handshake> {
    return new Promise((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, servername, ca: pki.ca, rejectUnauthorized: verify, ALPNProtocols: ['h2', 'http/1.1'] }, () => {
        const peer = socket.getPeerX509Certificate()!;
        resolve({ subject: peer.subject, subjectAltName: peer.subjectAltName ?? '', alpn: socket.alpnProtocol, protocol: socket.getProtocol() });
        socket.end();
      });
      socket.on('error', reject);
    });
  }

  test('serves the host certificate for its name, verified by the client', async () => {
    install([
      ['foo.example.com', { secret: 'ns/foo', ...foo }],
      ['*.example.com', { secret: 'ns/wild', ...wild }],
    ]);
    const peer = await handshake('foo.example.com');
    assert.match(peer.subject, /CN=foo\.example\.com/);
    assert.match(peer.subjectAltName, /DNS:foo\.example\.com/);
    assert.equal(peer.alpn, 'http/1.1', 'only HTTP/1.1 is offered');
    assert.ok(peer.protocol === 'TLSv1.3' || peer.protocol === 'TLSv1.2');
  });

  test('matches a name case-insensitively', async () => {
    const peer = await handshake('FOO.example.COM');
    assert.match(peer.subject, /CN=foo\.example\.com/);
  });

  test('serves the wildcard certificate for another name under the parent', async () => {
    const peer = await handshake('bar.example.com');
    assert.match(peer.subject, /CN=\*\.example\.com/);
  });

  test('serves the default certificate for an unknown name', async () => {
    const peer = await handshake('unknown.test', false);
    assert.match(peer.subject, new RegExp(`CN=${DEFAULT_CERTIFICATE_CN}`));
    await assert.rejects(handshake('unknown.test'), 'a client that verifies refuses the default certificate');
  });

  test('an HTTPS request goes through with the host certificate', async () => {
    const body = await new Promise<string>((resolve, reject) => {
      const req = https.get({ host: '127.0.0.1', port, servername: 'foo.example.com', headers: { host: 'foo.example.com' }, ca: pki.ca, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
    });
    assert.equal(body, 'hello foo.example.com');
  });

  test('an update swaps the served certificate without restarting the server', async () => {
    install([
      ['foo.example.com', { secret: 'ns/foo', ...fooRenewed }],
      ['*.example.com', { secret: 'ns/wild', ...wild }],
    ]);
    const peer = await handshake('foo.example.com');
    assert.match(peer.subjectAltName, /DNS:renewed\.example\.com/);
  });

  test('a removed host falls back to the wildcard', async () => {
    install([['*.example.com', { secret: 'ns/wild', ...wild }]]);
    const peer = await handshake('foo.example.com');
    assert.match(peer.subject, /CN=\*\.example\.com/);
  });

  test('a broken Secret is skipped while other hosts keep their certificate', async () => {
    const problems = install([
      ['foo.example.com', { secret: 'ns/foo', ...foo }],
      ['broken.test', { secret: 'ns/broken', cert: '-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n', key: foo.key }],
    ]);
    assert.equal(problems.length, 1);
    assert.equal(problems[0]!.object.name, 'broken');
    assert.match((await handshake('foo.example.com')).subject, /CN=foo\.example\.com/);
    assert.match((await handshake('broken.test', false)).subject, new RegExp(`CN=${DEFAULT_CERTIFICATE_CN}`));
  });

  test('a start-up with more certificates than it builds at once serves each host its own at the first handshake', async () => {
    const names = Array.from({ length: 24 }, (_, i) => `site${i}.example.org`);
    const issued = await Promise.all(names.map((name) => pki.issue(name)));
    install(names.map((name, i): [string, CertificateConfig] => [name, { secret: `ns/site${i}`, ...issued[i]! }]));
    assert.equal(store.builtContexts, 0, 'none built before a handshake needs it');
    for (const i of [23, 0, 11]) {
      const peer = await handshake(names[i]!);
      assert.match(peer.subject, new RegExp(`CN=site${i}\\.example\\.org`));
    }
    assert.equal(store.builtContexts, 3);
  });
});
