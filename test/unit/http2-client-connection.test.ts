// portico's own HTTP/2 client engine (src/http2/wire/client-connection.ts) through the
// pool that drives it (src/http2/client.ts): against node:http2 servers as the reference
// pod, and against a fake pod of raw frames for what a well-behaved server never sends
// (oversized heads, CONTINUATION floods, malformed answers, GOAWAY at a chosen stream).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import { PassThrough } from 'node:stream';
import { Http2Pool, type Http2DispatchOptions, type Http2PoolOptions } from '../../src/http2/client.ts';
import { createTestPki } from './admin/fixtures.ts';
import { Recorder } from './dispatch-recorder.ts';
import { FLAG, FRAME, RawH2, frame, hpack, type RawFrame } from '../support/h2.ts';

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const ENHANCE_YOUR_CALM = 0xb;
const PROTOCOL_ERROR = 0x1;
const REFUSED_STREAM = 0x7;

function options(o: Partial<Http2DispatchOptions> = {}): Http2DispatchOptions {
  return { path: '/', method: 'GET', headers: [], body: null, headersTimeout: 5_000, bodyTimeout: 5_000, ...o };
}

function pool(port: number, o: Partial<Http2PoolOptions> = {}): Http2Pool {
  return new Http2Pool({ host: '127.0.0.1', port }, { connectTimeout: 2_000, keepAliveTimeout: 5_000, ...o });
}

async function h2cServer(onStream: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void, settings: http2.Settings = {}) {
  const server = http2.createServer({ settings });
  let sessions = 0;
  server.on('session', () => sessions++);
  server.on('stream', onStream);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    get sessions() {
      return sessions;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type Frame = RawFrame;
type PodConnection = RawH2;

/** A pod of raw frames: `onFrame` sees every frame portico sends on every connection. */
async function fakePod(onFrame: (c: PodConnection, f: Frame) => void) {
  const connections: PodConnection[] = [];
  const server = net.createServer((socket) => connections.push(RawH2.accept(socket, onFrame)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections,
    close: () => {
      for (const c of connections) c.socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const isRequestHead = (f: Frame) => f.type === FRAME.HEADERS;
/** A 200 head and a body, END_STREAM on the body. */
const answer = (id: number, body: string) => [frame(FRAME.HEADERS, FLAG.END_HEADERS, id, hpack([[':status', '200']])), frame(FRAME.DATA, FLAG.END_STREAM, id, Buffer.from(body))];

test('many requests at once share one connection, each answer on its own stream', async (t) => {
  const server = await h2cServer((stream, headers) => {
    // Answered out of order: the longest path waits least.
    setTimeout(() => {
      stream.respond({ ':status': 200 });
      stream.end(`answer to ${headers[':path']}`);
    }, 50 - String(headers[':path']).length);
  });
  const p = pool(server.port);
  t.after(() => p.close().then(() => server.close()));
  const recorders = Array.from({ length: 30 }, () => new Recorder());
  recorders.forEach((r, i) => p.dispatch(options({ path: `/${'x'.repeat(i)}` }), r));
  await Promise.all(recorders.map((r) => r.finished()));
  recorders.forEach((r, i) => assert.equal(r.body, `answer to /${'x'.repeat(i)}`));
  assert.equal(server.sessions, 1);
});

test('a paused consumer: no WINDOW_UPDATE while paused, so at most one stream window is held; then 1 MiB arrives whole', async (t) => {
  const body = randomBytes(1024 * 1024);
  // A pod that sends exactly as far as the stream window lets it.
  let window = 65_535;
  let sent = 0;
  let updates = 0;
  const pump = (c: PodConnection) => {
    while (sent < body.length && window > 0) {
      const n = Math.min(16_384, window, body.length - sent);
      c.write(frame(FRAME.DATA, sent + n === body.length ? FLAG.END_STREAM : 0, 1, body.subarray(sent, sent + n)));
      sent += n;
      window -= n;
    }
  };
  const pod = await fakePod((c, f) => {
    if (isRequestHead(f)) {
      c.write(frame(FRAME.HEADERS, FLAG.END_HEADERS, 1, hpack([[':status', '200']])));
      pump(c);
    } else if (f.type === FRAME.WINDOW_UPDATE && f.streamId === 1) {
      updates++;
      window += f.payload.readUInt32BE(0);
      pump(c);
    }
  });
  const p = pool(pod.port);
  t.after(() => p.close().then(() => pod.close()));
  const r = new Recorder();
  let pausedOnce = false;
  r.onData = (c) => {
    if (pausedOnce) return;
    pausedOnce = true;
    c.pause();
  };
  p.dispatch(options(), r);
  while (!pausedOnce) await delay(10);
  await delay(300);
  const delivered = r.bytes;
  const updatesWhilePaused = updates;
  await delay(200);
  assert.equal(r.bytes, delivered, 'nothing delivered while paused');
  assert.equal(updates, updatesWhilePaused, 'no WINDOW_UPDATE for the stream while paused');
  assert.equal(window, 0, 'the pod is out of window');
  assert.ok(sent - delivered <= 65_535, `held ${sent - delivered} bytes`);
  r.controller!.resume();
  await r.finished();
  assert.equal(r.bytes, body.length);
  assert.equal(sha256(Buffer.concat(r.chunks)), sha256(body));
});

test('a 10 MiB streamed request body and a 4 MiB gRPC message with trailers cross intact', async (t) => {
  const upload = randomBytes(10 * 1024 * 1024);
  const message = randomBytes(4 * 1024 * 1024);
  const server = await h2cServer((stream) => {
    const hash = createHash('sha256');
    let length = 0;
    stream.on('data', (c: Buffer) => {
      hash.update(c);
      length += c.length;
    });
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'x-upload': `${length} ${hash.digest('hex')}` }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'x-checksum-bin': 'AAEC' }));
      stream.end(message);
    });
  });
  const p = pool(server.port);
  t.after(() => p.close().then(() => server.close()));
  const source = new PassThrough();
  const r = new Recorder();
  p.dispatch(options({ method: 'POST', body: source, bodyTimeout: 30_000, headersTimeout: 30_000 }), r);
  for (let at = 0; at < upload.length; at += 256 * 1024) source.write(upload.subarray(at, at + 256 * 1024));
  source.end();
  await r.finished();
  assert.equal(r.headers['x-upload'], `${upload.length} ${sha256(upload)}`);
  assert.equal(r.bodySent, upload.length);
  assert.equal(r.bytes, message.length);
  assert.equal(sha256(Buffer.concat(r.chunks)), sha256(message));
  assert.equal(r.trailers['grpc-status'], '0');
  assert.equal(r.trailers['x-checksum-bin'], 'AAEC');
});

test('a trailers-only answer (grpc-status in the head, END_STREAM) and repeated trailing metadata', async (t) => {
  const server = await h2cServer((stream, headers) => {
    if (headers[':path'] === '/only') {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '5', 'grpc-message': 'not%20found' }, { endStream: true });
      return;
    }
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'x-meta': ['one', 'two'] }));
    stream.end(Buffer.from([0, 0, 0, 0, 1, 42]));
  });
  const p = pool(server.port);
  t.after(() => p.close().then(() => server.close()));
  const only = new Recorder();
  p.dispatch(options({ path: '/only', method: 'POST', body: Buffer.from([0, 0, 0, 0, 0]) }), only);
  const full = new Recorder();
  p.dispatch(options({ path: '/full', method: 'POST', body: Buffer.from([0, 0, 0, 0, 0]) }), full);
  await Promise.all([only.finished(), full.finished()]);
  assert.deepEqual(only.events, ['start', 'response 200', 'end']);
  assert.equal(only.headers['grpc-status'], '5');
  assert.equal(only.headers['grpc-message'], 'not%20found');
  assert.deepEqual(only.trailers, {});
  assert.equal(full.bytes, 6);
  assert.equal(full.trailers['grpc-status'], '0');
  assert.deepEqual(full.trailers['x-meta'], ['one', 'two']);
});

test('GOAWAY: a stream at or below its last stream id finishes; those above are sent again on a new connection', async (t) => {
  const pod = await fakePod((c, f) => {
    if (!isRequestHead(f)) return;
    const index = pod.connections.indexOf(c);
    if (index === 0 && c.frames.filter(isRequestHead).length === 3) {
      // Three streams (1, 3, 5) on the first connection: only 1 will be processed.
      c.write(frame(FRAME.GOAWAY, 0, 0, Buffer.from([0, 0, 0, 1, 0, 0, 0, 0])));
      setTimeout(() => c.write(...answer(1, 'first connection')), 100);
    } else if (index > 0) {
      c.write(...answer(f.streamId, 'second connection'));
    }
  });
  const p = pool(pod.port);
  t.after(() => p.close().then(() => pod.close()));
  const rs = [new Recorder(), new Recorder(), new Recorder()];
  for (const r of rs) p.dispatch(options(), r);
  await Promise.all(rs.map((r) => r.finished()));
  assert.deepEqual(rs.map((r) => r.body), ['first connection', 'second connection', 'second connection']);
  assert.equal(pod.connections.length, 2);
});

test('GOAWAY above a stream whose body cannot be replayed, and a connection lost under a stream: UND_ERR_SOCKET', async (t) => {
  const pod = await fakePod((c, f) => {
    if (isRequestHead(f) && c.frames.filter(isRequestHead).length === 2) {
      c.write(frame(FRAME.GOAWAY, 0, 0, Buffer.from([0, 0, 0, 1, 0, 0, 0, 0])));
      setTimeout(() => c.socket.destroy(), 100);
    }
  });
  const p = pool(pod.port);
  t.after(() => p.close().then(() => pod.close()));
  const processed = new Recorder();
  p.dispatch(options(), processed);
  const streamed = new PassThrough();
  const refused = new Recorder();
  p.dispatch(options({ method: 'POST', body: streamed }), refused);
  streamed.write('part of a body');
  await Promise.all([processed.finished(), refused.finished()]);
  assert.equal(refused.error?.code, 'UND_ERR_SOCKET');
  assert.match(refused.error!.message, /GOAWAY/);
  assert.equal(processed.error?.code, 'UND_ERR_SOCKET');
  assert.deepEqual(processed.events, ['start', 'error']);
});

test('REFUSED_STREAM from the pod: the request is sent again once; a second refusal is UND_ERR_SOCKET', async (t) => {
  let refusals = 0;
  const pod = await fakePod((c, f) => {
    if (!isRequestHead(f)) return;
    const fields = f.payload.toString('latin1');
    if (fields.includes('/always') || refusals++ === 0) c.write(frame(FRAME.RST_STREAM, 0, f.streamId, Buffer.from([0, 0, 0, REFUSED_STREAM])));
    else c.write(...answer(f.streamId, 'second try'));
  });
  const p = pool(pod.port);
  t.after(() => p.close().then(() => pod.close()));
  const once = new Recorder();
  p.dispatch(options(), once);
  await once.finished();
  assert.equal(once.body, 'second try');
  const always = new Recorder();
  p.dispatch(options({ path: '/always' }), always);
  await always.finished();
  assert.equal(always.error?.code, 'UND_ERR_SOCKET');
});

test('a response head over the header list limit fails that stream (RST ENHANCE_YOUR_CALM); the connection serves the next', async (t) => {
  const pod = await fakePod((c, f) => {
    if (!isRequestHead(f)) return;
    if (c.frames.filter(isRequestHead).length === 1) {
      // 700 fields of about 120 bytes: over 64 KiB, in HEADERS and CONTINUATION frames.
      const fields: [string, string][] = [[':status', '200']];
      for (let i = 0; i < 700; i++) fields.push([`x-big-${i}`, 'v'.repeat(100)]);
      const block = hpack(fields);
      const parts: Buffer[] = [];
      for (let at = 0; at < block.length; at += 16_384) parts.push(block.subarray(at, at + 16_384));
      c.write(...parts.map((part, i) => frame(i === 0 ? FRAME.HEADERS : FRAME.CONTINUATION, i === parts.length - 1 ? FLAG.END_HEADERS : 0, f.streamId, part)));
    } else {
      c.write(...answer(f.streamId, 'small'));
    }
  });
  const p = pool(pod.port);
  t.after(() => p.close().then(() => pod.close()));
  const big = new Recorder();
  p.dispatch(options(), big);
  await big.finished();
  assert.equal(big.error?.code, 'UND_ERR_SOCKET');
  assert.match(big.error!.message, /header list/);
  const rst = await pod.connections[0]!.waitFor((f) => f.type === FRAME.RST_STREAM && f.streamId === 1);
  assert.equal(rst?.payload.readUInt32BE(0), ENHANCE_YOUR_CALM);
  const next = new Recorder();
  p.dispatch(options(), next);
  await next.finished();
  assert.equal(next.body, 'small');
  assert.equal(pod.connections.length, 1);
});

test('1xx heads: a few are passed on (103 Early Hints), more than eight on one stream reset it (ENHANCE_YOUR_CALM)', async (t) => {
  const pod = await fakePod((c, f) => {
    if (!isRequestHead(f)) return;
    // The first request gets three 103s then its answer; the second an endless-looking run of them.
    const count = c.frames.filter(isRequestHead).length === 1 ? 3 : 20;
    const hints = Array.from({ length: count }, () => frame(FRAME.HEADERS, FLAG.END_HEADERS, f.streamId, hpack([[':status', '103'], ['link', '</a.css>; rel=preload']])));
    c.write(...hints, ...answer(f.streamId, 'after hints'));
  });
  const p = pool(pod.port);
  t.after(() => p.close().then(() => pod.close()));
  const few = new Recorder();
  p.dispatch(options(), few);
  await few.finished();
  assert.equal(few.error, undefined);
  assert.deepEqual(few.informational.map((i) => i.status), [103, 103, 103]);
  assert.equal(few.body, 'after hints');
  const many = new Recorder();
  p.dispatch(options(), many);
  await many.finished();
  assert.equal(many.error?.code, 'UND_ERR_SOCKET');
  assert.match(many.error!.message, /1xx heads/);
  assert.equal(many.informational.length, 8);
  const rst = await pod.connections[0]!.waitFor((f) => f.type === FRAME.RST_STREAM && f.streamId === 3);
  assert.equal(rst?.payload.readUInt32BE(0), ENHANCE_YOUR_CALM);
});

test('a CONTINUATION flood ends the connection with GOAWAY ENHANCE_YOUR_CALM; the request fails, a new connection serves the next', async (t) => {
  const pod = await fakePod((c, f) => {
    if (!isRequestHead(f)) return;
    if (pod.connections.indexOf(c) === 0) {
      const flood = [frame(FRAME.HEADERS, 0, f.streamId, hpack([[':status', '200']]))];
      for (let i = 0; i < 500; i++) flood.push(frame(FRAME.CONTINUATION, 0, f.streamId, hpack([['x', 'y']])));
      c.write(...flood);
    } else {
      c.write(...answer(f.streamId, 'fresh'));
    }
  });
  const p = pool(pod.port);
  t.after(() => p.close().then(() => pod.close()));
  const flooded = new Recorder();
  p.dispatch(options(), flooded);
  await flooded.finished();
  assert.equal(flooded.error?.code, 'UND_ERR_SOCKET');
  const goaway = await pod.connections[0]!.waitFor((f) => f.type === FRAME.GOAWAY);
  assert.equal(goaway?.payload.readUInt32BE(4), ENHANCE_YOUR_CALM);
  const next = new Recorder();
  p.dispatch(options(), next);
  await next.finished();
  assert.equal(next.body, 'fresh');
});

test('malformed answers never reach the handler: no :status, a connection-specific field, an uppercase name (RST PROTOCOL_ERROR each)', async (t) => {
  const heads: Record<string, [string, string][]> = {
    '/no-status': [['content-type', 'text/plain']],
    '/connection': [[':status', '200'], ['connection', 'close']],
    '/uppercase': [[':status', '200'], ['X-Upper', 'a']],
    '/request-pseudo': [[':status', '200'], [':path', '/']],
  };
  const pod = await fakePod((c, f) => {
    if (!isRequestHead(f)) return;
    const path = Object.keys(heads).find((p) => f.payload.includes(Buffer.from(p)))!;
    c.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, f.streamId, hpack(heads[path]!)));
  });
  const p = pool(pod.port);
  t.after(() => p.close().then(() => pod.close()));
  for (const path of Object.keys(heads)) {
    const r = new Recorder();
    p.dispatch(options({ path }), r);
    await r.finished();
    assert.deepEqual(r.events, ['start', 'error'], path);
    assert.equal(r.error?.code, 'UND_ERR_SOCKET', path);
    assert.match(r.error!.message, /malformed response head/, path);
  }
  const resets = pod.connections[0]!.frames.filter((f) => f.type === FRAME.RST_STREAM);
  assert.equal(resets.length, 4);
  for (const rst of resets) assert.equal(rst.payload.readUInt32BE(0), PROTOCOL_ERROR);
});

test('the pod\'s SETTINGS are acknowledged and its PING answered with the same payload', async (t) => {
  const pod = await fakePod((c, f) => {
    if (isRequestHead(f)) {
      c.write(frame(FRAME.PING, 0, 0, Buffer.from('12345678')));
      c.write(...answer(f.streamId, 'pong'));
    }
  });
  const p = pool(pod.port);
  t.after(() => p.close().then(() => pod.close()));
  const r = new Recorder();
  p.dispatch(options(), r);
  await r.finished();
  const conn = pod.connections[0]!;
  assert.ok(await conn.waitFor((f) => f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK) !== 0));
  const pong = await conn.waitFor((f) => f.type === FRAME.PING && (f.flags & FLAG.ACK) !== 0);
  assert.equal(pong?.payload.toString(), '12345678');
  const settings = conn.frames.find((f) => f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK) === 0)!;
  const values = new Map<number, number>();
  for (let at = 0; at < settings.payload.length; at += 6) values.set(settings.payload.readUInt16BE(at), settings.payload.readUInt32BE(at + 2));
  assert.equal(values.get(2), 0, 'ENABLE_PUSH 0');
  assert.equal(values.get(6), 64 * 1024, 'MAX_HEADER_LIST_SIZE');
});

test('a request HTTP/2 cannot carry (CR/LF in a value, a bad name) is UND_ERR_INVALID_ARG and the pod sees nothing of it', async (t) => {
  let streams = 0;
  const server = await h2cServer((stream) => {
    streams++;
    stream.respond({ ':status': 204 });
    stream.end();
  });
  const p = pool(server.port);
  t.after(() => p.close().then(() => server.close()));
  for (const headers of [['x-a', 'one\r\nx-b: two'], ['bad name', 'x'], ['x-nul', 'a\u0000b']]) {
    const r = new Recorder();
    p.dispatch(options({ headers }), r);
    await r.finished();
    assert.equal(r.error?.code, 'UND_ERR_INVALID_ARG', JSON.stringify(headers));
  }
  const ok = new Recorder();
  p.dispatch(options(), ok);
  await ok.finished();
  assert.equal(ok.status, 204);
  assert.equal(streams, 1);
});

test('h2 over TLS: a pod that does not agree to h2 in ALPN fails while connecting (nothing sent)', async (t) => {
  const pki = await createTestPki();
  const leaf = await pki.issue('pod.svc');
  // A TLS server without ALPN (an HTTP/1.1-only pod): the handshake succeeds with no protocol chosen.
  const server = tls.createServer({ key: leaf.key, cert: leaf.cert }, (s) => s.on('error', () => {}));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const p = pool((server.address() as net.AddressInfo).port, { tls: { ca: pki.ca, rejectUnauthorized: true } });
  t.after(() => p.close().then(() => new Promise<void>((resolve) => server.close(() => resolve()))));
  const r = new Recorder();
  p.dispatch(options({ servername: 'pod.svc' }), r);
  await r.finished();
  assert.deepEqual(r.events, ['error']);
  assert.match(r.error!.message, /ALPN/);
});

test('a call that completed both ways sends the pod no RST_STREAM; a cancelled one sends CANCEL', async (t) => {
  const pod = await fakePod((c, f) => {
    if (isRequestHead(f) && f.payload.includes(Buffer.from('/done'))) c.write(...answer(f.streamId, 'complete'));
    else if (isRequestHead(f)) c.write(frame(FRAME.HEADERS, FLAG.END_HEADERS, f.streamId, hpack([[':status', '200']])), frame(FRAME.DATA, 0, f.streamId, Buffer.from('partial')));
  });
  const p = pool(pod.port);
  t.after(() => p.close().then(() => pod.close()));
  const done = new Recorder();
  p.dispatch(options({ path: '/done' }), done);
  await done.finished();
  assert.equal(done.body, 'complete');
  const cancelled = new Recorder();
  cancelled.onData = (c) => c.abort(new Error('the client went away'));
  p.dispatch(options({ path: '/cancel' }), cancelled);
  await cancelled.finished();
  const conn = pod.connections[0]!;
  const rst = await conn.waitFor((f) => f.type === FRAME.RST_STREAM);
  assert.equal(rst?.streamId, 3, 'only the cancelled stream is reset');
  assert.equal(rst?.payload.readUInt32BE(0), 0x8, 'CANCEL');
  assert.equal(conn.frames.filter((f) => f.type === FRAME.RST_STREAM).length, 1);
});

test('the body timeout stops while the handler is paused and runs again after resume', async (t) => {
  const pod = await fakePod((c, f) => {
    if (isRequestHead(f)) c.write(frame(FRAME.HEADERS, FLAG.END_HEADERS, f.streamId, hpack([[':status', '200']])), frame(FRAME.DATA, 0, f.streamId, Buffer.from('first')));
  });
  const p = pool(pod.port);
  t.after(() => p.close().then(() => pod.close()));
  const r = new Recorder();
  const started = Date.now();
  let resumedAt = 0;
  r.onData = (c) => {
    c.pause();
    setTimeout(() => {
      resumedAt = Date.now();
      c.resume();
    }, 400);
  };
  p.dispatch(options({ bodyTimeout: 200 }), r);
  await r.finished();
  assert.equal(r.error?.code, 'UND_ERR_BODY_TIMEOUT');
  assert.ok(resumedAt > 0 && resumedAt - started >= 390, 'no timeout while paused');
  assert.ok(Date.now() - resumedAt >= 150, 'the timeout ran again from the resume');
});
