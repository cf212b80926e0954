// WebSocket upgrades are tunnelled to the pod; h2c routes speak HTTP/2 to the pod.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import http2 from 'node:http2';
import { generate } from 'selfsigned';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { get, send } from '../support/http.ts';
import type { UpstreamProfile } from '../../src/proxy/context.ts';
import { backend, closedPort, route, routing, startBackend, startProxy, type Backend, type Proxy } from './proxy-harness.ts';

const H2C: UpstreamProfile = { key: 'h2c', protocol: 'h2c' };
const INSECURE: UpstreamProfile = { key: 'https-insecure', protocol: 'https', insecureSkipVerify: true };

describe('proxy: WebSocket and HTTP/2 upstreams', () => {
  let wsBackend: Backend;
  let wss: WebSocketServer;
  let h2: http2.Http2Server;
  let h2Port: number;
  let deadPort: number;
  let proxy: Proxy;
  let tlsServer: https.Server;
  let h2s: http2.Http2SecureServer;
  let profiles: Record<string, UpstreamProfile>;
  const upgradeHeaders: Record<string, string | string[] | undefined>[] = [];

  before(async () => {
    wsBackend = await startBackend('ws-http');
    wss = new WebSocketServer({ server: wsBackend.server });
    wss.on('connection', (socket, req) => {
      upgradeHeaders.push(req.headers);
      socket.on('message', (data) => socket.send(`echo: ${data.toString()}`));
    });
    h2 = http2.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ httpVersion: req.httpVersion, authority: req.headers[':authority'], path: req.headers[':path'], method: req.method, body: Buffer.concat(chunks).toString(), xff: req.headers['x-forwarded-for'] }));
      });
    });
    h2Port = await new Promise<number>((resolve) => h2.listen(0, '127.0.0.1', () => resolve((h2.address() as AddressInfo).port)));
    deadPort = await closedPort();

    // A pod with a certificate for its Service's cluster name, which portico sends as SNI.
    const pems = await generate([{ name: 'commonName', value: 'secure.default.svc' }], { keyType: 'ec' });
    const describeTls = (req: http2.Http2ServerRequest | import('node:http').IncomingMessage, res: { writeHead(s: number, h: Record<string, string>): unknown; end(b: string): unknown }) => {
      const socket = req.socket as import('node:tls').TLSSocket;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ httpVersion: req.httpVersion, servername: (socket as unknown as { servername?: string }).servername, host: req.headers.host ?? req.headers[':authority'] }));
    };
    tlsServer = https.createServer({ cert: pems.cert, key: pems.private }, describeTls);
    const tlsPort = await new Promise<number>((resolve) => tlsServer.listen(0, '127.0.0.1', () => resolve((tlsServer.address() as AddressInfo).port)));
    h2s = http2.createSecureServer({ cert: pems.cert, key: pems.private, allowHTTP1: true }, describeTls);
    const h2sPort = await new Promise<number>((resolve) => h2s.listen(0, '127.0.0.1', () => resolve((h2s.address() as AddressInfo).port)));
    profiles = {
      'tls.test': { key: 'https-ca', protocol: 'https', ca: pems.cert },
      'tls-wrong-name.test': { key: 'https-ca', protocol: 'https', ca: pems.cert },
      'tls-insecure.test': INSECURE,
      'tls-untrusted.test': { key: 'https-verify', protocol: 'https' },
      'h2.test': { key: 'h2-ca', protocol: 'h2', ca: pems.cert },
    };
    const tlsRoutes = [
      route('tls.test', '/', backend('secure', [tlsPort])),
      route('tls-wrong-name.test', '/', backend('other', [tlsPort])),
      route('tls-insecure.test', '/', backend('other', [tlsPort])),
      route('tls-untrusted.test', '/', backend('secure', [tlsPort])),
      route('h2.test', '/', backend('secure', [h2sPort])),
    ];

    proxy = await startProxy(
      routing([
        route('ws.test', '/', backend('ws', [wsBackend.port])),
        route('ws-dead.test', '/', backend('dead', [deadPort])),
        route('ws-none.test', '/', backend('none', [])),
        route('h2c.test', '/', backend('grpcish', [h2Port])),
        ...tlsRoutes,
      ]),
      {
        before: (ctx) => {
          if (ctx.host === 'h2c.test') ctx.upstream = H2C;
          const profile = profiles[ctx.host];
          if (profile) ctx.upstream = profile;
          if (ctx.path === '/forbidden') {
            ctx.res.writeHead(403, { 'content-type': 'text/plain' });
            ctx.res.end('no\n');
          }
        },
      },
    );
  });

  after(async () => {
    await proxy?.close();
    for (const c of wss?.clients ?? []) c.terminate();
    wss?.close();
    await wsBackend?.close();
    await new Promise<void>((resolve) => (h2 ? h2.close(() => resolve()) : resolve()));
    tlsServer?.closeAllConnections();
    await new Promise<void>((resolve) => (tlsServer ? tlsServer.close(() => resolve()) : resolve()));
    await new Promise<void>((resolve) => (h2s ? h2s.close(() => resolve()) : resolve()));
  });

  test('a WebSocket echo works through the proxy', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${proxy.port}/chat?room=1`, { headers: { host: 'ws.test' } });
    try {
      const replies: string[] = [];
      await new Promise<void>((resolve, reject) => {
        ws.on('open', () => ws.send('hello'));
        ws.on('message', (data) => {
          replies.push(data.toString());
          if (replies.length === 1) ws.send('again');
          else resolve();
        });
        ws.on('error', reject);
      });
      assert.deepEqual(replies, ['echo: hello', 'echo: again']);
      const h = upgradeHeaders.at(-1)!;
      assert.equal(h.host, 'ws.test');
      assert.equal(h['x-forwarded-for'], '127.0.0.1');
      assert.equal(h['x-forwarded-proto'], 'http');
    } finally {
      ws.close();
    }
  });

  test('an upgrade to a refusing pod gets a 502, one without endpoints a 503', async () => {
    const status = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(`ws://127.0.0.1:${proxy.port}/`, { headers: { host } });
        ws.on('unexpected-response', (_req, res) => {
          resolve(res.statusCode ?? 0);
          res.resume();
          ws.terminate();
        });
        ws.on('open', () => reject(new Error('unexpectedly opened')));
        ws.on('error', () => {});
      });
    assert.equal(await status('ws-dead.test'), 502);
    assert.equal(await status('ws-none.test'), 503);
    assert.equal(await status('nowhere.test'), 404);
  });

  test('policies run for upgrade requests too (a refusal reaches the client)', async () => {
    const code = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${proxy.port}/forbidden`, { headers: { host: 'ws.test' } });
      ws.on('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        res.resume();
      });
      ws.on('open', () => reject(new Error('unexpectedly opened')));
      ws.on('error', () => {});
    });
    assert.equal(code, 403);
  });

  test('an h2c route talks HTTP/2 to the pod, Host becomes :authority', async () => {
    const r = await send(proxy.port, { method: 'POST', host: 'h2c.test', path: '/svc/Method?x=1', body: 'ping' });
    assert.equal(r.status, 200);
    const body = r.json();
    assert.equal(body.httpVersion, '2.0');
    assert.equal(body.authority, 'h2c.test');
    assert.equal(body.path, '/svc/Method?x=1');
    assert.equal(body.method, 'POST');
    assert.equal(body.body, 'ping');
    assert.equal(body.xff, '127.0.0.1');
    assert.equal((await get(proxy.port, 'h2c.test', '/again')).json().httpVersion, '2.0');
  });

  test('https to a pod: SNI is the Service name, the certificate is checked against the CA', async () => {
    const ok = await get(proxy.port, 'tls.test', '/');
    assert.equal(ok.status, 200);
    assert.equal(ok.json().servername, 'secure.default.svc');
    assert.equal(ok.json().host, 'tls.test');

    const wrongName = await get(proxy.port, 'tls-wrong-name.test', '/');
    assert.equal(wrongName.status, 502, 'certificate is not for other.default.svc');
    const untrusted = await get(proxy.port, 'tls-untrusted.test', '/');
    assert.equal(untrusted.status, 502, 'no CA given: the self-signed certificate is not trusted');
    assert.equal(untrusted.text, 'the backend failed to answer\n', 'the case, not the address or the TLS error');

    const insecure = await get(proxy.port, 'tls-insecure.test', '/');
    assert.equal(insecure.status, 200, 'insecureSkipVerify accepts it');
  });

  test('h2 to a pod negotiates HTTP/2 over TLS', async () => {
    const r = await get(proxy.port, 'h2.test', '/');
    assert.equal(r.status, 200);
    assert.equal(r.json().httpVersion, '2.0');
  });
});
