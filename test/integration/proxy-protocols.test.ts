// WebSocket upgrades are tunnelled to the pod; h2c routes speak HTTP/2 to the pod.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { get, send } from '../support/http.ts';
import type { UpstreamProfile } from '../../src/proxy/context.ts';
import { backend, closedPort, route, routing, startBackend, startProxy, type Backend, type Proxy } from './proxy-harness.ts';

const H2C: UpstreamProfile = { key: 'h2c', protocol: 'h2c' };

describe('proxy: WebSocket and HTTP/2 upstreams', () => {
  let wsBackend: Backend;
  let wss: WebSocketServer;
  let h2: http2.Http2Server;
  let h2Port: number;
  let deadPort: number;
  let proxy: Proxy;
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
    proxy = await startProxy(
      routing([
        route('ws.test', '/', backend('ws', [wsBackend.port])),
        route('ws-dead.test', '/', backend('dead', [deadPort])),
        route('ws-none.test', '/', backend('none', [])),
        route('h2c.test', '/', backend('grpcish', [h2Port])),
      ]),
      {
        before: (ctx) => {
          if (ctx.host === 'h2c.test') ctx.upstream = H2C;
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
});
