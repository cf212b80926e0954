// Black-box: a policy on a path cannot be bypassed by spelling the path another way.
// /app is restricted with portico.dev/ip-allow (loopback is not allowed), / is open;
// every spelling a pod would read as /app... must meet the /app rule (403) or be
// refused (400), and what the pod receives is the normalised path.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startEchoServer } from '../../examples/echo-server.ts';
import { startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints } from '../support/objects.ts';
import { get } from '../support/http.ts';
import { startBackend, type Backend } from './proxy-harness.ts';

/** Sends a raw request head (paths that http.request would refuse or rewrite) and returns the status and body. */
function raw(port: number, head: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(head));
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (data += chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0);
      resolve({ status, body: data.slice(data.indexOf('\r\n\r\n') + 4) });
    });
  });
}

const request = (path: string, host = 'app.test') => `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;

describe('path normalisation: per-path policies hold whatever the spelling', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  let open: Awaited<ReturnType<typeof startEchoServer>>;
  let restricted: Awaited<ReturnType<typeof startEchoServer>>;

  before(async () => {
    open = await startEchoServer({ name: 'open' });
    restricted = await startEchoServer({ name: 'restricted' });
    dir.write('all.yaml', [
      ingressClass('portico'),
      ingress('open', { rules: [{ host: 'app.test', paths: [{ path: '/', service: 'open' }] }] }),
      ingress('restricted', { rules: [{ host: 'app.test', paths: [{ path: '/app', service: 'restricted' }] }] }, { annotations: { 'portico.dev/ip-allow': '192.0.2.0/24' } }),
      ...serviceWithEndpoints('open', [open.port]),
      ...serviceWithEndpoints('restricted', [restricted.port]),
    ]);
    portico = await startPortico(['--manifests', dir.path]);
  });
  after(async () => {
    await portico?.stop();
    await Promise.all([open?.close(), restricted?.close()]);
    dir.cleanup();
  });

  test('the plain path is restricted, the rest is open', async () => {
    assert.equal((await get(portico.http, 'app.test', '/app/')).status, 403);
    assert.equal((await get(portico.http, 'app.test', '/other')).json().service, 'open');
  });

  for (const path of ['/%61pp/', '/%61%70%70', '//app/', '///app//x', '/app;jsessionid=1/x', '/ap%70/', '/%2561pp'.replace('%25', '%')]) {
    test(`${path} meets the /app rule`, async () => {
      const r = await raw(portico.http, request(path));
      assert.equal(r.status, 403, r.body);
    });
  }

  for (const path of ['/app%2F..', '/x%2Fapp', '/x%5capp', '/x\\app', '/app%00', '/%zz', '/%4', '/./app', '/x/%2e%2e/app']) {
    test(`${JSON.stringify(path)} is refused with 400`, async () => {
      const r = await raw(portico.http, request(path));
      assert.equal(r.status, 400, r.body);
    });
  }

  test('the pod receives the normalised path, query untouched', async () => {
    const r = await raw(portico.http, request('//other//%7Euser/%3f/a%2a?q=%61'));
    assert.equal(r.status, 200);
    const echoed = JSON.parse(r.body) as { path: string; query: string };
    assert.equal(echoed.path, '/other/~user/%3F/a%2A');
    assert.equal(echoed.query, 'q=%61');
  });
});

describe('Host header validation', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  let echo: Backend;

  before(async () => {
    echo = await startBackend('echo');
    dir.write('all.yaml', [
      ingressClass('portico'),
      ingress('echo', { rules: [{ host: 'echo.test', paths: [{ path: '/', service: 'echo' }] }] }),
      ...serviceWithEndpoints('echo', [echo.port]),
    ]);
    portico = await startPortico(['--manifests', dir.path]);
  });
  after(async () => {
    await portico?.stop();
    await echo?.close();
    dir.cleanup();
  });

  for (const host of ['echo.test:@evil.com', 'echo.test:80x', 'echo.test:80:81', 'echo.test/x', '[::1', 'echo test']) {
    test(`${JSON.stringify(host)} gets 400 and never reaches the pod`, async () => {
      const before = echo.seen.length;
      const r = await raw(portico.http, request('/', host));
      assert.equal(r.status, 400, r.body);
      assert.equal(echo.seen.length, before);
    });
  }

  for (const host of ['echo.test:8080', 'ECHO.test.', 'echo.test:']) {
    test(`${JSON.stringify(host)} is served`, async () => {
      const r = await raw(portico.http, request('/', host));
      assert.equal(r.status, 200, r.body);
    });
  }
});
