// portico's HTTP/2 client for h2c/h2 pods (src/http2/client.ts) against real node:http2
// servers: what a caller of dispatch() sees (handler calls, bytes, trailers, the error
// codes src/proxy/forward.ts relies on) and what the pod sees (headers, resets, sessions).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { PassThrough } from 'node:stream';
import { Http2Pool, type Http2DispatchOptions, type Http2PoolOptions } from '../../src/http2/client.ts';
import { createTestPki } from './admin/fixtures.ts';
import { Recorder } from './dispatch-recorder.ts';
import { closedPort } from '../support/ports.ts';

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function options(o: Partial<Http2DispatchOptions> = {}): Http2DispatchOptions {
  return { path: '/', method: 'GET', headers: [], body: null, headersTimeout: 5_000, bodyTimeout: 5_000, ...o };
}

type StreamHandler = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, session: http2.Http2Session) => void;

/** An h2c server; `sessions` counts the connections it accepted. */
async function h2cServer(onStream: StreamHandler, settings: http2.Settings = {}) {
  const server = http2.createServer({ settings });
  let sessions = 0;
  server.on('session', () => sessions++);
  server.on('stream', (stream, headers) => onStream(stream, headers, stream.session!));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    get sessions() {
      return sessions;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function pool(port: number, o: Partial<Http2PoolOptions> = {}): Http2Pool {
  return new Http2Pool({ host: '127.0.0.1', port }, { connectTimeout: 2_000, keepAliveTimeout: 5_000, ...o });
}

test('a request and its answer: pseudo-headers from Host and the path, connection-specific headers dropped, te: trailers kept', async () => {
  let seen: http2.IncomingHttpHeaders = {};
  const server = await h2cServer((stream, headers) => {
    seen = headers;
    stream.respond({ ':status': 201, 'x-answer': 'yes', 'set-cookie': ['a=1', 'b=2'] });
    stream.end('hello');
  });
  const p = pool(server.port);
  const r = new Recorder();
  p.dispatch(options({ path: '/a?b=c', headers: ['Host', 'app.test', 'Connection', 'keep-alive', 'Keep-Alive', 'timeout=5', 'TE', 'trailers', 'X-Two', '1', 'x-two', '2'] }), r);
  await r.finished();
  assert.deepEqual(r.events, ['start', 'response 201', 'data', 'end']);
  assert.equal(r.body, 'hello');
  assert.equal(r.headers['x-answer'], 'yes');
  assert.deepEqual(r.headers['set-cookie'], ['a=1', 'b=2']);
  assert.equal(r.headers[':status'], undefined, 'no pseudo-header among the response headers');
  assert.equal(seen[':authority'], 'app.test');
  assert.equal(seen[':path'], '/a?b=c');
  assert.equal(seen[':scheme'], 'http');
  assert.equal(seen.connection, undefined);
  assert.equal(seen['keep-alive'], undefined);
  assert.equal(seen.te, 'trailers');
  assert.equal(seen['x-two'], '1, 2');
  await p.close();
  await server.close();
});

test('without a Host header the pod address is the :authority', async () => {
  let authority = '';
  const server = await h2cServer((stream, headers) => {
    authority = String(headers[':authority']);
    stream.respond({ ':status': 204 });
    stream.end();
  });
  const p = pool(server.port);
  const r = new Recorder();
  p.dispatch(options(), r);
  await r.finished();
  assert.equal(authority, `127.0.0.1:${server.port}`);
  await p.close();
  await server.close();
});

test('trailers arriving while the handler has paused the response: every DATA byte is delivered, then the trailers', async () => {
  // Several DATA frames within one flow-control window, so all of them and the trailers arrive while paused.
  const size = 4 * 8192;
  const server = await h2cServer((stream) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'x-trailing': 'kept' }));
    for (let i = 0; i < 3; i++) stream.write(Buffer.alloc(8192, 'z'));
    stream.end(Buffer.alloc(8192, 'z'));
  });
  const p = pool(server.port);
  const r = new Recorder();
  // Pause at the first chunk and stay paused until the pod has sent everything, trailers included.
  let paused = false;
  r.onData = (c) => {
    if (paused) return;
    paused = true;
    c.pause();
    setTimeout(() => c.resume(), 300);
  };
  p.dispatch(options({ method: 'POST', body: Buffer.from('x') }), r);
  await r.finished();
  assert.equal(r.events.at(-1), 'end');
  assert.equal(r.bytes, size);
  assert.equal(r.trailers['grpc-status'], '0');
  assert.equal(r.trailers['x-trailing'], 'kept');
  await p.close();
  await server.close();
});

test('a streamed request body reaches the pod whole, and onBodySent counts it', async () => {
  let received = 0;
  const server = await h2cServer((stream) => {
    stream.on('data', (c: Buffer) => (received += c.length));
    stream.on('end', () => {
      stream.respond({ ':status': 200 });
      stream.end(String(received));
    });
  });
  const p = pool(server.port);
  const body = new PassThrough();
  const r = new Recorder();
  p.dispatch(options({ method: 'POST', body }), r);
  const chunk = Buffer.alloc(64 * 1024, 'b');
  for (let i = 0; i < 64; i++) if (!body.write(chunk)) await new Promise((resolve) => body.once('drain', resolve));
  body.end();
  await r.finished();
  assert.equal(r.body, String(64 * chunk.length));
  assert.equal(r.bodySent, 64 * chunk.length);
  await p.close();
  await server.close();
});

test('abort: the pod sees the stream cancelled, the handler hears the reason once', async () => {
  let rstCode = -1;
  const closed = Promise.withResolvers<void>();
  const server = await h2cServer((stream) => {
    stream.respond({ ':status': 200 });
    stream.write('partial');
    stream.on('close', () => {
      rstCode = stream.rstCode ?? -1;
      closed.resolve();
    });
  });
  const p = pool(server.port);
  const r = new Recorder();
  const reason = new Error('client gone');
  r.onData = (c) => c.abort(reason);
  p.dispatch(options(), r);
  await r.finished();
  assert.equal(r.error, reason);
  await closed.promise;
  assert.equal(rstCode, http2.constants.NGHTTP2_CANCEL);
  await p.close();
  await server.close();
});

test('a refused connection fails before onRequestStart (nothing was sent), with the system code', async () => {
  const p = pool(await closedPort());
  const r = new Recorder();
  p.dispatch(options(), r);
  await r.finished();
  assert.deepEqual(r.events, ['error']);
  assert.equal(r.error?.code, 'ECONNREFUSED');
  await p.close();
});

test('timeouts: no response head in time is UND_ERR_HEADERS_TIMEOUT, a stalled body UND_ERR_BODY_TIMEOUT; the pod sees a cancel', async () => {
  const server = await h2cServer((stream, headers) => {
    if (headers[':path'] === '/body') {
      stream.respond({ ':status': 200 });
      stream.write('first');
    }
  });
  const p = pool(server.port);
  const head = new Recorder();
  p.dispatch(options({ path: '/head', headersTimeout: 150 }), head);
  const body = new Recorder();
  p.dispatch(options({ path: '/body', bodyTimeout: 150 }), body);
  await Promise.all([head.finished(), body.finished()]);
  assert.equal(head.error?.code, 'UND_ERR_HEADERS_TIMEOUT');
  assert.deepEqual(head.events, ['start', 'error']);
  assert.equal(body.error?.code, 'UND_ERR_BODY_TIMEOUT');
  assert.equal(body.body, 'first');
  await p.close();
  await server.close();
});

test('the pod resetting a stream is UND_ERR_SOCKET for that request only; the session serves the next', async () => {
  const server = await h2cServer((stream, headers) => {
    if (headers[':path'] === '/reset') {
      stream.on('error', () => {}); // the server's side of the reset
      stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      return;
    }
    stream.respond({ ':status': 200 });
    stream.end('ok');
  });
  const p = pool(server.port);
  const bad = new Recorder();
  p.dispatch(options({ path: '/reset' }), bad);
  await bad.finished();
  assert.equal(bad.error?.code, 'UND_ERR_SOCKET');
  const good = new Recorder();
  p.dispatch(options(), good);
  await good.finished();
  assert.equal(good.body, 'ok');
  assert.equal(server.sessions, 1);
  await p.close();
  await server.close();
});

test('streams share one session up to the pod\'s MAX_CONCURRENT_STREAMS; past it another session opens', async () => {
  const held: http2.ServerHttp2Stream[] = [];
  const server = await h2cServer((stream) => {
    held.push(stream);
  }, { maxConcurrentStreams: 2 });
  const p = pool(server.port);
  // The first request lets the session learn the pod's settings.
  const first = new Recorder();
  p.dispatch(options(), first);
  while (held.length < 1) await delay(10);
  const rest = [1, 2, 3].map(() => new Recorder());
  for (const r of rest) p.dispatch(options(), r);
  while (held.length < 4) await delay(10);
  for (const s of held) {
    s.respond({ ':status': 200 });
    s.end('done');
  }
  await Promise.all([first, ...rest].map((r) => r.finished()));
  for (const r of [first, ...rest]) assert.equal(r.body, 'done');
  assert.equal(server.sessions, 2);
  await p.close();
  await server.close();
});

test('after GOAWAY new requests go to a new session while the old one finishes its stream', async (t) => {
  let count = 0;
  const server = await h2cServer((stream, _headers, session) => {
    count++;
    if (count === 1) {
      session.goaway(http2.constants.NGHTTP2_NO_ERROR, 1);
      setTimeout(() => {
        stream.respond({ ':status': 200 });
        stream.end('old');
      }, 500);
      return;
    }
    stream.respond({ ':status': 200 });
    stream.end('new');
  });
  const p = pool(server.port);
  // Also when an assertion fails: an open session would keep the test file running.
  t.after(() => p.close().then(() => server.close()));
  const a = new Recorder();
  p.dispatch(options(), a);
  // The GOAWAY goes out once the server has the first stream; give it time to arrive
  // (a loaded machine), well before the old stream is answered.
  while (count === 0) await delay(5);
  await delay(150);
  const b = new Recorder();
  p.dispatch(options(), b);
  await Promise.all([a.finished(), b.finished()]);
  assert.equal(a.body, 'old');
  assert.equal(b.body, 'new');
  assert.equal(server.sessions, 2);
});

test('h2 over TLS: ALPN h2, the certificate checked against the CA and the request\'s server name', async () => {
  const pki = await createTestPki();
  const leaf = await pki.issue('pod.svc');
  const server = http2.createSecureServer({ key: leaf.key, cert: leaf.cert, allowHTTP1: false });
  let scheme = '';
  server.on('stream', (stream, headers) => {
    scheme = String(headers[':scheme']);
    stream.respond({ ':status': 200 });
    stream.end('secure');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const p = pool(port, { tls: { ca: pki.ca, rejectUnauthorized: true } });
  const ok = new Recorder();
  p.dispatch(options({ servername: 'pod.svc' }), ok);
  await ok.finished();
  assert.equal(ok.body, 'secure');
  assert.equal(scheme, 'https');
  const wrongName = new Recorder();
  p.dispatch(options({ servername: 'other.svc' }), wrongName);
  await wrongName.finished();
  assert.deepEqual(wrongName.events, ['error'], 'a certificate for another name fails while connecting');
  assert.equal(wrongName.error?.code, 'ERR_TLS_CERT_ALTNAME_INVALID');
  await p.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

test('close() lets streams in flight finish and refuses new requests', async () => {
  const server = await h2cServer((stream) => {
    setTimeout(() => {
      stream.respond({ ':status': 200 });
      stream.end('finished');
    }, 100);
  });
  const p = pool(server.port);
  const inflight = new Recorder();
  p.dispatch(options(), inflight);
  await delay(30);
  const closed = p.close();
  const late = new Recorder();
  assert.equal(p.dispatch(options(), late), false);
  await Promise.all([inflight.finished(), late.finished(), closed]);
  assert.equal(inflight.body, 'finished');
  assert.equal(late.error?.code, 'UND_ERR_CLOSED');
  assert.equal(p.size, 0);
  await server.close();
});

test('a request head HTTP/2 cannot carry fails as the request\'s fault (UND_ERR_INVALID_ARG) and never reaches the pod; a good one after it does', async () => {
  let streams = 0;
  const server = await h2cServer((stream) => {
    streams++;
    stream.respond({ ':status': 200 });
    stream.end();
  });
  const p = pool(server.port);
  const bad: [string, Partial<Http2DispatchOptions>][] = [
    ['a method that is no token', { method: 'GE T' }],
    ['a path with a space', { path: '/a b' }],
    ['a path with a control character', { path: '/a\x01' }],
    ['a header name that is no token', { headers: ['X-Bad Name', 'v'] }],
    ['a header value with LF', { headers: ['x-v', 'a\nb'] }],
    ['a header value above latin1', { headers: ['x-v', 'a\u010ab'] }],
    ['a host with DEL', { headers: ['host', 'a\x7fb'] }],
  ];
  for (const [what, o] of bad) {
    const r = new Recorder();
    p.dispatch(options(o), r);
    await r.finished();
    assert.equal(r.error?.code, 'UND_ERR_INVALID_ARG', what);
  }
  const good = new Recorder();
  p.dispatch(options({ method: 'PATCH', path: '/a?b=%20', headers: ['X-Ok', 'tab\there é'] }), good);
  await good.finished();
  assert.deepEqual(good.events, ['start', 'response 200', 'end']);
  assert.equal(streams, 1, 'only the good request reached the pod');
  await p.close();
  await server.close();
});
