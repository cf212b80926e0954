// Black-box, through the real CLI: what 0 means for the duration flags that accept it
// with a meaning of their own (the others refuse it: test/unit/config/flags.test.ts).
// - --upstream-keepalive 0: no idle connection to pods is kept. An HTTP/1.1 pod sees a
//   new connection for each request, closed once its response is done; an h2c pod a new
//   HTTP/2 session each time, closed the same way. The requests still succeed.
// - --shutdown-grace 0: on SIGTERM portico does not wait for requests in flight; it cuts
//   them, closes its connections to pods and exits 0 at once.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import http2 from 'node:http2';
import { startPortico, eventually, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints } from '../support/objects.ts';
import { get } from '../support/http.ts';

/** An HTTP/1.1 pod that keeps connections alive and counts them. /hang is never answered. */
async function countingPod() {
  const sockets: net.Socket[] = [];
  let closed = 0;
  let requests = 0;
  const server = net.createServer((socket) => {
    sockets.push(socket);
    socket.on('close', () => closed++);
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      for (let end = buffered.indexOf('\r\n\r\n'); end !== -1; end = buffered.indexOf('\r\n\r\n')) {
        const head = buffered.slice(0, end);
        buffered = buffered.slice(end + 4);
        requests++;
        if (head.startsWith('GET /hang ')) continue;
        socket.write(`HTTP/1.1 200 OK\r\ncontent-length: 2\r\nkeep-alive: timeout=60\r\n\r\nok`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    get connections() {
      return sockets.length;
    },
    get closed() {
      return closed;
    },
    get requests() {
      return requests;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** An h2c pod that counts its HTTP/2 sessions. */
async function countingH2cPod() {
  let sessions = 0;
  let closed = 0;
  const server = http2.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('h2');
  });
  server.on('session', (session) => {
    sessions++;
    session.on('close', () => closed++);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    get sessions() {
      return sessions;
    },
    get closed() {
      return closed;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('--upstream-keepalive 0: no idle connection to a pod is kept', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  let pod: Awaited<ReturnType<typeof countingPod>>;
  let h2c: Awaited<ReturnType<typeof countingH2cPod>>;

  before(async () => {
    pod = await countingPod();
    h2c = await countingH2cPod();
    dir.write('all.yaml', [
      ingressClass('portico'),
      ingress('h1', { rules: [{ host: 'h1.test', paths: [{ path: '/', service: 'h1' }] }] }),
      ingress('h2c', { rules: [{ host: 'h2c.test', paths: [{ path: '/', service: 'h2c' }] }] }, { annotations: { 'portico.dev/upstream-protocol': 'h2c' } }),
      ...serviceWithEndpoints('h1', [pod.port]),
      ...serviceWithEndpoints('h2c', [h2c.port]),
    ]);
    portico = await startPortico(['--manifests', dir.path, '--upstream-keepalive', '0']);
  });

  after(async () => {
    await portico?.stop();
    await pod?.close();
    await h2c?.close();
    dir.cleanup();
  });

  test('an HTTP/1.1 pod sees a new connection per request, each closed once its response is done', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await get(portico.http, 'h1.test', `/r${i}`);
      assert.equal(r.status, 200);
      assert.equal(r.text, 'ok');
    }
    assert.equal(pod.requests, 3);
    // The pod offered keep-alive each time; with the default (60s) the three would share one connection.
    assert.equal(pod.connections, 3);
    await eventually(async () => pod.closed === 3, 2000, 'every connection to the pod closed');
  });

  test('an h2c pod sees a new HTTP/2 session per request, each closed once its response is done', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await get(portico.http, 'h2c.test', `/r${i}`);
      assert.equal(r.status, 200);
      assert.equal(r.text, 'h2');
    }
    assert.equal(h2c.sessions, 3);
    await eventually(async () => h2c.closed === 3, 2000, 'every HTTP/2 session to the pod closed');
  });
});

describe('--shutdown-grace 0: SIGTERM does not wait for requests in flight', () => {
  const dir = new ManifestDir();
  let pod: Awaited<ReturnType<typeof countingPod>>;

  before(async () => {
    pod = await countingPod();
    dir.write('all.yaml', [ingressClass('portico'), ingress('slow', { rules: [{ host: 'slow.test', paths: [{ path: '/', service: 'slow' }] }] }), ...serviceWithEndpoints('slow', [pod.port])]);
  });

  after(async () => {
    await pod?.close();
    dir.cleanup();
  });

  for (const workers of ['1', '2']) {
    test(`--workers ${workers}: a request the pod never answers is cut, the pod's connection closed, and portico exits 0 at once`, async () => {
      const portico = await startPortico(['--manifests', dir.path, '--shutdown-grace', '0', '--workers', workers]);
      const closedBefore = pod.closed;
      const requestsBefore = pod.requests;
      const inFlight = get(portico.http, 'slow.test', '/hang', { timeoutMs: 30_000 }).then(
        (r) => `answered ${r.status}`,
        (err: Error) => `cut: ${err.message}`,
      );
      await eventually(async () => pod.requests === requestsBefore + 1, 5000, 'the request reached the pod');
      const signalled = Date.now();
      const code = await portico.stop();
      const took = Date.now() - signalled;
      assert.equal(code, 0);
      // The default grace (25 s) or "wait for ever" would hold it; 0 is at once (2 s: a loaded machine).
      assert.ok(took < 2000, `exited ${took} ms after SIGTERM`);
      assert.match(await inFlight, /^cut: /);
      await eventually(async () => pod.closed === closedBefore + 1, 2000, "portico's connection to the pod closed");
      const shutdown = portico.logs.find((l) => l.msg === 'shutting down: no new connections, finishing requests in flight');
      assert.equal(shutdown?.graceMs, 0);
    });
  }
});
