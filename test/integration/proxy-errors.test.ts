// What the client sees when pods refuse, hang or are too many: 502/504, retries, 413, balance.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { get, send } from '../support/http.ts';
import { backend, closedPort, route, routing, startBackend, startProxy, type Backend, type Proxy } from './proxy-harness.ts';

describe('proxy: upstream failures', () => {
  const backends: Backend[] = [];
  let proxy: Proxy;
  let deadPort: number;
  let web: Backend;
  let slow: Backend;
  const pending: http.ServerResponse[] = [];
  /** The access log's error field per host: the detail the client is not shown. */
  const errors = new Map<string, string>();
  const loggedBytes = new Map<string, number>();

  before(async () => {
    web = await startBackend('web');
    // Never answers: the headers timeout fires.
    slow = await startBackend('slow', (_req, res) => {
      pending.push(res);
    });
    backends.push(web, slow);
    for (const name of ['a', 'b', 'c']) backends.push(await startBackend(name));
    deadPort = await closedPort();
    proxy = await startProxy(
      routing([
        route('refused.test', '/', backend('dead', [deadPort])),
        route('retry.test', '/', backend('retry', [deadPort, web.port])),
        route('slow.test', '/', backend('slow', [slow.port])),
        route('spread.test', '/', backend('spread', backends.slice(2).map((b) => b.port))),
        route('limited.test', '/', backend('web', [web.port])),
      ]),
      {
        accessLog: (ctx, _status, bytes) => {
          if (ctx.error !== '') errors.set(ctx.host, ctx.error);
          loggedBytes.set(ctx.host, bytes);
        },
        timeouts: { connect: 2_000, responseHeaders: 300, idle: 2_000 },
        before: (ctx) => {
          if (ctx.host === 'limited.test') ctx.maxBodyBytes = 1024;
        },
      },
    );
  });

  after(async () => {
    for (const res of pending) res.destroy();
    await proxy?.close();
    await Promise.all(backends.map((b) => b.close()));
  });

  test('502 with a short text body when the only pod refuses connections', async () => {
    const r = await get(proxy.port, 'refused.test');
    assert.equal(r.status, 502);
    assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(r.text, 'the backend failed to answer\n', 'the case, no internals');
    assert.ok(!r.text.includes(String(deadPort)), 'no internal address for the client');
    assert.equal(errors.get('refused.test'), 'connection refused by the pod', 'the detail is in the access log');
    assert.equal(loggedBytes.get('refused.test'), r.body.length, 'the access log counts portico\'s own body');
    assert.doesNotMatch(r.text, /\n\s+at /);
    assert.match(await proxy.registry.metrics(), /portico_upstream_errors_total\{[^}]*service="dead",kind="connect"\} [1-9]/);
  });

  test('a refused connection is retried once on another endpoint, body included', async () => {
    for (let i = 0; i < 4; i++) {
      const r = await send(proxy.port, { method: 'POST', host: 'retry.test', path: '/up', body: 'payload-' + i });
      assert.equal(r.status, 200, `request ${i}`);
      assert.equal(r.json().service, 'web');
      assert.equal(r.json().bodyLength, ('payload-' + i).length);
    }
    assert.match(await proxy.registry.metrics(), /portico_upstream_errors_total\{[^}]*service="retry",kind="connect"\} [1-9]/, 'the dead endpoint was tried');
  });

  test('504 when the pod does not answer in time', async () => {
    const r = await get(proxy.port, 'slow.test');
    assert.equal(r.status, 504);
    assert.equal(r.text, 'the backend did not answer in time\n');
    assert.match(errors.get('slow.test') ?? '', /did not answer within 300 ms/);
    assert.match(await proxy.registry.metrics(), /portico_upstream_errors_total\{[^}]*service="slow",kind="timeout"\} [1-9]/);
  });

  test('load is spread over three endpoints', async () => {
    const counts: Record<string, number> = {};
    for (let i = 0; i < 30; i++) {
      const service = (await get(proxy.port, 'spread.test')).json().service as string;
      counts[service] = (counts[service] ?? 0) + 1;
    }
    assert.deepEqual(Object.keys(counts).sort(), ['a', 'b', 'c']);
    for (const [name, n] of Object.entries(counts)) assert.ok(n >= 5, `${name} got ${n} of 30`);
  });

  test('concurrent load is spread too', async () => {
    const replies = await Promise.all(Array.from({ length: 30 }, () => get(proxy.port, 'spread.test')));
    const services = new Set(replies.map((r) => r.json().service));
    assert.equal(services.size, 3);
  });

  test('413 for a Content-Length over the limit, before anything reaches the pod', async () => {
    const before = web.seen.length;
    const r = await send(proxy.port, { method: 'POST', host: 'limited.test', body: Buffer.alloc(2048) });
    assert.equal(r.status, 413);
    assert.match(r.text, /larger than the limit of 1024 bytes/);
    assert.equal(web.seen.length, before, 'the pod saw nothing');
    const small = await send(proxy.port, { method: 'POST', host: 'limited.test', body: Buffer.alloc(1000) });
    assert.equal(small.status, 200);
    assert.equal(small.json().bodyLength, 1000);
  });

  test('413 for a chunked body that streams past the limit', async () => {
    const r = await chunkedPost(proxy.port, 'limited.test', 20, 256);
    assert.equal(r.status, 413);
    assert.match(r.text, /larger than the limit of 1024 bytes/);
    const ok = await chunkedPost(proxy.port, 'limited.test', 3, 256);
    assert.equal(ok.status, 200);
    assert.equal(JSON.parse(ok.text).bodyLength, 768);
  });
});

describe('proxy: connections closing under the request', () => {
  test('a GET that meets a closed keep-alive connection is retried; a POST is not', async () => {
    // Answers the first GET on each connection, then drops the connection on the next
    // request without answering: what a pod closing an idle connection looks like to the
    // proxy. POSTs are always dropped.
    let posts = 0;
    const flaky = await startBackend('flaky', (req, res) => {
      const socket = req.socket as typeof req.socket & { served?: boolean };
      if (req.method === 'POST') posts++;
      if (socket.served || req.method === 'POST') return void socket.destroy();
      socket.served = true;
      res.end('ok');
    });
    const flakyErrors: string[] = [];
    const p = await startProxy(routing([route('flaky.test', '/', backend('flaky', [flaky.port]))]), { accessLog: (ctx) => void (ctx.error !== '' && flakyErrors.push(ctx.error)) });
    try {
      assert.equal((await get(p.port, 'flaky.test')).text, 'ok');
      assert.equal((await get(p.port, 'flaky.test')).text, 'ok', 'retried on a new connection');
      const post = await send(p.port, { method: 'POST', host: 'flaky.test', body: 'x' });
      assert.equal(post.status, 502);
      assert.equal(post.text, 'the backend failed to answer\n');
      assert.match(flakyErrors.join('|'), /closed the connection before answering/);
      assert.equal(posts, 1, 'a request with a body is not replayed');
    } finally {
      await p.close();
      await flaky.close();
    }
  });

  test('a client that goes away aborts the request to the pod', async () => {
    let podSawClose!: () => void;
    const closed = new Promise<void>((resolve) => (podSawClose = resolve));
    let arrived!: () => void;
    const started = new Promise<void>((resolve) => (arrived = resolve));
    const hang = await startBackend('hang', (_req, res) => {
      res.on('close', () => podSawClose());
      arrived();
    });
    const p = await startProxy(routing([route('hang.test', '/', backend('hang', [hang.port]))]));
    try {
      const req = http.get({ hostname: '127.0.0.1', port: p.port, path: '/', headers: { host: 'hang.test' }, agent: false });
      req.on('error', () => {});
      await started;
      req.destroy();
      await closed;
      assert.ok(true, 'the pod saw its request closed');
    } finally {
      await p.close();
      await hang.close();
    }
  });

  test('pools of addresses that left the table are closed after the grace period', async () => {
    const one = await startBackend('one');
    const two = await startBackend('two');
    const p = await startProxy(routing([route('pool.test', '/', backend('one', [one.port]))]));
    try {
      assert.equal((await get(p.port, 'pool.test')).json().service, 'one');
      assert.equal(p.pools.size, 1);
      p.install(routing([route('pool.test', '/', backend('two', [two.port]))]));
      assert.equal((await get(p.port, 'pool.test')).json().service, 'two');
      assert.equal(p.pools.size, 2);
      await new Promise((r) => setTimeout(r, 400)); // harness grace: 200 ms
      assert.equal(p.pools.size, 1);
      assert.equal((await get(p.port, 'pool.test')).json().service, 'two');
    } finally {
      await p.close();
      await one.close();
      await two.close();
    }
  });

  test('with a delta (only the changed hosts named), the pool of an address that left is closed too', async () => {
    const one = await startBackend('one');
    const two = await startBackend('two');
    const stay = await startBackend('stay');
    const r1 = route('pool.test', '/', backend('one', [one.port]));
    const kept = route('kept.test', '/', backend('stay', [stay.port]));
    const first = { ...routing([kept, r1]), serial: 1, ingressHosts: new Map([['kept.test', [kept]], ['pool.test', [r1]]]) };
    const p = await startProxy(first);
    try {
      p.pools.retain(first);
      assert.equal((await get(p.port, 'pool.test')).json().service, 'one');
      assert.equal((await get(p.port, 'kept.test')).json().service, 'stay');
      const r2 = route('pool.test', '/', backend('two', [two.port]));
      p.install({
        ...routing([kept, r2]),
        serial: 2,
        ingressHosts: new Map([['kept.test', [kept]], ['pool.test', [r2]]]),
        delta: { base: 1, hosts: new Set(['pool.test']), gateway: false },
      });
      assert.equal((await get(p.port, 'pool.test')).json().service, 'two');
      assert.equal(p.pools.size, 3);
      await new Promise((r) => setTimeout(r, 400)); // harness grace: 200 ms
      assert.equal(p.pools.size, 2, 'the pool of "one" is closed; "stay" and "two" are kept');
      assert.equal((await get(p.port, 'kept.test')).json().service, 'stay');
    } finally {
      await p.close();
      for (const b of [one, two, stay]) await b.close();
    }
  });
});

/** POSTs `chunks` chunks of `size` bytes with Transfer-Encoding: chunked, a few ms apart. */
function chunkedPost(port: number, host: string, chunks: number, size: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ hostname: '127.0.0.1', port, method: 'POST', path: '/', headers: { host }, agent: false });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
      res.on('error', reject);
    });
    // Once answered, a write error (the proxy closed the connection) is expected.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    let sent = 0;
    const next = () => {
      if (answered || req.destroyed) return;
      if (sent === chunks) return void req.end();
      sent++;
      req.write(Buffer.alloc(size, 120));
      setTimeout(next, 5);
    };
    next();
  });
}
