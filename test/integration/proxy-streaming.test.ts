// Bodies stream through intact in both directions, with back-pressure; table swaps
// and graceful drain do not cut requests in flight.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { send } from '../support/http.ts';
import { backend, route, routing, startBackend, startProxy, type Backend, type Proxy } from './proxy-harness.ts';

const MiB = 1024 * 1024;
const BIG = 32 * MiB;

describe('proxy: streaming', () => {
  let echo: Backend;
  let big: Backend;
  let web: Backend;
  let proxy: Proxy;
  let bigWritten = 0;

  before(async () => {
    // Streams the request body straight back.
    echo = await startBackend('echo', (_req, res, body) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(body);
    });
    // 32 MiB in 64 KiB writes, as fast as back-pressure lets it.
    big = await startBackend('big', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(BIG) });
      const chunk = Buffer.alloc(64 * 1024, 97);
      let left = BIG / chunk.length;
      const pump = () => {
        while (left > 0) {
          left--;
          bigWritten += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    });
    web = await startBackend('web');
    proxy = await startProxy(
      routing([
        route('echo.test', '/', backend('echo', [echo.port])),
        route('big.test', '/', backend('big', [big.port])),
        route('web.test', '/', backend('web', [web.port])),
      ]),
    );
  });

  after(async () => {
    await proxy?.close();
    await Promise.all([echo?.close(), big?.close(), web?.close()]);
  });

  test('a 1 MiB POST is echoed back intact', async () => {
    const payload = randomBytes(MiB);
    const r = await send(proxy.port, { method: 'POST', host: 'echo.test', body: payload });
    assert.equal(r.status, 200);
    assert.equal(r.body.length, MiB);
    assert.ok(r.body.equals(payload));
  });

  test('a chunked 1 MiB POST is echoed back intact', async () => {
    const payload = randomBytes(MiB);
    const body = await new Promise<Buffer>((resolve, reject) => {
      const req = http.request({ hostname: '127.0.0.1', port: proxy.port, method: 'POST', path: '/', headers: { host: 'echo.test' }, agent: false });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks)));
      });
      req.on('error', reject);
      for (let at = 0; at < payload.length; at += 100_000) req.write(payload.subarray(at, at + 100_000));
      req.end();
    });
    assert.equal(createHash('sha256').update(body).digest('hex'), createHash('sha256').update(payload).digest('hex'));
  });

  test('a slow-reading client gets everything, and the pod is held back meanwhile', async () => {
    let podAheadBy = 0;
    const received = await new Promise<number>((resolve, reject) => {
      const req = http.get({ hostname: '127.0.0.1', port: proxy.port, path: '/', headers: { host: 'big.test' }, agent: false }, (res) => {
        let total = 0;
        res.pause();
        // Read in small sips: the proxy has to stop reading from the pod in between.
        const sip = () => {
          let chunk: Buffer | null;
          let taken = 0;
          while (taken < 1024 * 1024 && (chunk = res.read()) !== null) {
            total += chunk.length;
            taken += chunk.length;
          }
          if (res.readableEnded) return;
          if (total >= 4 * MiB && podAheadBy === 0) podAheadBy = bigWritten - total;
          setTimeout(sip, 5);
        };
        res.on('readable', () => {});
        res.on('end', () => resolve(total));
        res.on('error', reject);
        setTimeout(sip, 5);
      });
      req.on('error', reject);
    });
    assert.equal(received, BIG);
    // Without back-pressure the pod would have written all 32 MiB by then.
    assert.ok(podAheadBy < 16 * MiB, `the pod was held back (ahead of the client by ${podAheadBy} bytes)`);
  });

  test('swapping the route table while a slow request is in flight does not fail it', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = await startBackend('slow', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first half, ');
      void gate.then(() => res.end('second half'));
    });
    const p = await startProxy(routing([route('slow.test', '/', backend('slow', [slow.port]))]));
    try {
      const inflight = send(p.port, { host: 'slow.test' });
      while (slow.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
      // The new table no longer has the slow pod at all: its pool is retired, not cut.
      p.install(routing([route('slow.test', '/', backend('web', [web.port]))]));
      assert.equal((await send(p.port, { host: 'slow.test' })).json().service, 'web', 'new requests use the new table');
      await new Promise((r) => setTimeout(r, 300)); // past the pools' retire grace in the harness
      release();
      const r = await inflight;
      assert.equal(r.status, 200);
      assert.equal(r.text, 'first half, second half');
    } finally {
      release();
      await p.close();
      await slow.close();
    }
  });

  test('graceful drain lets an in-flight request finish, then closes', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = await startBackend('slow', (_req, res) => void gate.then(() => res.end('done')));
    const p = await startProxy(routing([route('slow.test', '/', backend('slow', [slow.port]))]));
    try {
      const inflight = send(p.port, { host: 'slow.test' });
      while (slow.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
      const drained = p.proxy.drain(5_000);
      let drainedYet = false;
      void drained.then(() => (drainedYet = true));
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(drainedYet, false, 'drain waits for the request');
      await assert.rejects(send(p.port, { host: 'slow.test' }), 'new connections are refused');
      release();
      const r = await inflight;
      assert.equal(r.status, 200);
      assert.equal(r.text, 'done');
      await drained;
    } finally {
      release();
      await p.close();
      await slow.close();
    }
  });

  test('drain cuts what is still running when the grace period ends', async () => {
    const hung: http.ServerResponse[] = [];
    const slow = await startBackend('hung', (_req, res) => void hung.push(res));
    const p = await startProxy(routing([route('hung.test', '/', backend('hung', [slow.port]))]));
    try {
      const inflight = send(p.port, { host: 'hung.test' }).then(
        () => 'answered',
        () => 'cut',
      );
      while (slow.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
      await p.proxy.drain(100);
      assert.equal(await inflight, 'cut');
    } finally {
      for (const res of hung) res.destroy();
      await p.close();
      await slow.close();
    }
  });
});
