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

describe('HTTPS with fewer TLS contexts kept than hosts', () => {
  test('a client resumes its session on a host whose context was let go and built again', async () => {
    const pki = await createTestPki();
    const [a, b] = await Promise.all([pki.issue('a.example.com'), pki.issue('b.example.com')]);
    const store = await CertificateStore.create(undefined, undefined, undefined, undefined, { maxContexts: 1, eagerBuilds: 0 });
    store.update(
      new Map([
        ['a.example.com', { secret: 'ns/a', ...a }],
        ['b.example.com', { secret: 'ns/b', ...b }],
      ]),
    );
    const server = https.createServer(store.httpsServerOptions(), (_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    /** One request over a new connection; what the client saw of the handshake. */
    const connect = (servername: string, session?: Buffer, maxVersion?: tls.SecureVersion) =>
      new Promise<{ reused: boolean; subject: string | undefined; session: Buffer | undefined }>((resolve, reject) => {
        let ticket: Buffer | undefined;
        const socket = tls.connect({ host: '127.0.0.1', port, servername, ca: pki.ca, session, maxVersion }, () => {
          const subject = socket.getPeerX509Certificate()?.subject;
          socket.on('data', () => {});
          socket.on('end', () => resolve({ reused: socket.isSessionReused(), subject, session: ticket ?? socket.getSession() }));
          socket.write(`GET / HTTP/1.1\r\nhost: ${servername}\r\nconnection: close\r\n\r\n`);
        });
        socket.on('session', (s: Buffer) => (ticket = s));
        socket.on('error', reject);
      });
    try {
      for (const version of ['TLSv1.2', 'TLSv1.3'] as const) {
        const first = await connect('a.example.com', undefined, version);
        assert.match(first.subject ?? '', /CN=a\.example\.com/);
        assert.equal(first.reused, false);
        const other = await connect('b.example.com', undefined, version);
        assert.match(other.subject ?? '', /CN=b\.example\.com/);
        assert.equal(store.builtContexts, 1, "b's context took the place of a's");
        const again = await connect('a.example.com', first.session, version);
        assert.equal(again.reused, true, `${version}: the session is resumed`);
        const fresh = await connect('a.example.com', undefined, version);
        assert.match(fresh.subject ?? '', /CN=a\.example\.com/, 'a new session gets the certificate again');
      }
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
