// portico's HTTP/1.1 client (src/http1/client.ts) against real local servers: node:http
// servers, and scripted net servers that answer byte by byte or misbehave. Every test
// checks what a caller of dispatch() sees: the handler calls, their order, the bytes,
// the error codes src/proxy/forward.ts relies on, and which connections are reused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { Http1Pool, type Http1DispatchOptions, type Http1PoolOptions } from '../../src/http1/client.ts';
import { createTestPki } from './admin/fixtures.ts';
import { Recorder } from './dispatch-recorder.ts';
import { closedPort } from '../support/ports.ts';

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function options(o: Partial<Http1DispatchOptions> = {}): Http1DispatchOptions {
  return { path: '/', method: 'GET', headers: [], body: null, headersTimeout: 5_000, bodyTimeout: 5_000, ...o };
}

function send(pool: Http1Pool, o: Partial<Http1DispatchOptions> = {}, recorder = new Recorder()): Promise<Recorder> {
  pool.dispatch(options(o), recorder);
  return recorder.finished();
}

function makePool(port: number, o: Partial<Http1PoolOptions> = {}, host = '127.0.0.1'): Http1Pool {
  return new Http1Pool({ host, port }, { connectTimeout: 2_000, keepAliveTimeout: 10_000, ...o });
}

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
  remotePort: number;
}

interface NodeServer {
  port: number;
  seen: Seen[];
  /** Connections the server accepted. */
  connections: number;
  close(): Promise<void>;
}

/** A node:http server: the handler gets the request with its body read. */
async function nodeServer(handler: (req: http.IncomingMessage, res: http.ServerResponse, seen: Seen) => void, server: http.Server = http.createServer()): Promise<NodeServer> {
  const s: NodeServer = { port: 0, seen: [], connections: 0, close: () => Promise.resolve() };
  server.on('connection', () => s.connections++);
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const seen: Seen = { method: req.method!, url: req.url!, headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.concat(chunks).toString('latin1'), remotePort: req.socket.remotePort! };
      s.seen.push(seen);
      handler(req, res, seen);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  s.port = (server.address() as net.AddressInfo).port;
  s.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return s;
}

interface RawServer {
  port: number;
  sockets: net.Socket[];
  /** Everything each connection sent, in order of connection. */
  received: string[];
  close(): Promise<void>;
}

/**
 * A net server driven by the test: `onData(socket, all, index)` gets everything the
 * connection sent so far (latin1) each time more arrives.
 */
async function rawServer(onData: (socket: net.Socket, all: string, index: number) => void): Promise<RawServer> {
  const s: RawServer = { port: 0, sockets: [], received: [], close: () => Promise.resolve() };
  const server = net.createServer((socket) => {
    const index = s.sockets.length;
    s.sockets.push(socket);
    s.received.push('');
    socket.on('error', () => {});
    socket.on('data', (d) => {
      s.received[index] += d.toString('latin1');
      onData(socket, s.received[index]!, index);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  s.port = (server.address() as net.AddressInfo).port;
  s.close = () =>
    new Promise<void>((resolve) => {
      for (const socket of s.sockets) socket.destroy();
      server.close(() => resolve());
    });
  return s;
}

/** The number of complete request heads in what a connection sent (bodiless requests). */
function heads(all: string): number {
  return all.split('\r\n\r\n').length - 1;
}

async function until(condition: () => boolean, what: string, ms = 2_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await delay(5);
  }
}

/** The two ways a response head is read: by llhttp, and as a plain head's lines (responseHeadLines). */
const READ_MODES: [string, Partial<Http1DispatchOptions>][] = [
  ['llhttp', {}],
  ['plain heads read as lines', { rawResponseHeaders: true, responseHeadLines: true }],
];

// ---- requests and responses ----

test('GET: the handler calls in order, headers lowercase with repeats as arrays, the body', async (t) => {
  const s = await nodeServer((_req, res) => {
    res.setHeader('X-Mixed-Case', 'yes');
    res.setHeader('Set-Cookie', ['a=1', 'b=2']);
    res.writeHead(200, 'Fine', { 'content-type': 'text/plain' });
    res.write('hello ');
    res.end('world');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const r = await send(pool, { path: '/a/b?c=d', headers: ['x-one', '1', 'X-Two', 'two'] });
  assert.deepEqual(r.events, ['start', 'response 200', 'data', 'end']);
  assert.equal(r.status, 200);
  assert.equal(r.statusMessage, 'Fine');
  assert.equal(r.headers['x-mixed-case'], 'yes');
  assert.deepEqual(r.headers['set-cookie'], ['a=1', 'b=2']);
  assert.equal(r.headers['content-type'], 'text/plain');
  assert.equal(r.body, 'hello world');
  assert.equal(r.requestSent, true);
  const seen = s.seen[0]!;
  assert.equal(seen.method, 'GET');
  assert.equal(seen.url, '/a/b?c=d');
  assert.equal(seen.headers['x-one'], '1');
  assert.equal(seen.headers['x-two'], 'two');
  assert.equal(seen.headers.host, `127.0.0.1:${s.port}`, 'a Host is added when the caller gives none');
  assert.equal(seen.headers['content-length'], undefined);
  assert.equal(seen.headers['transfer-encoding'], undefined);
});

test('rawResponseHeaders: the handler gets the pairs as the pod wrote them and an empty record; 1xx heads keep theirs', async (t) => {
  const s = await nodeServer((_req, res) => {
    res.writeEarlyHints({ link: '</a.css>; rel=preload' });
    res.setHeader('X-Mixed-Case', 'yes');
    res.setHeader('Keep-Alive', 'timeout=30');
    res.writeHead(200, { 'Content-Length': '5' });
    res.end('hello');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const r = await send(pool, { rawResponseHeaders: true });
  assert.equal(r.status, 200);
  assert.equal(r.body, 'hello');
  assert.deepEqual(Object.keys(r.headers), [], 'no record');
  const raw = (r.controller as unknown as { responseRawHeaders: string[] }).responseRawHeaders;
  const at = raw.indexOf('X-Mixed-Case');
  assert.ok(at >= 0 && raw[at + 1] === 'yes', `the pairs as written: ${raw.join(' ')}`);
  assert.equal(raw[raw.indexOf('Content-Length') + 1], '5');
  assert.equal(r.informational[0]?.headers.link, '</a.css>; rel=preload', 'a 103 still comes with its record');
  // Without the option, the same response comes with its record.
  const plain = await send(pool);
  assert.equal(plain.headers['x-mixed-case'], 'yes');
  assert.equal(plain.headers['content-length'], '5');
  assert.equal(s.connections, 1, 'the connection (Keep-Alive read from the pairs) was reused');
});

test('responseHeadLines and a plain head: its lines as bytes, its body across reads, and llhttp reads the next, chunked, response', async (t) => {
  const s = await rawServer((socket, all) => {
    const n = heads(all);
    if (!all.endsWith('\r\n\r\n')) return;
    if (n === 1) {
      socket.write('HTTP/1.1 200 OK\r\nX-Mixed-Case: yes\r\nConnection: keep-alive\r\nContent-Length: 10\r\n\r\nhello');
      setTimeout(() => socket.write('world'), 30);
    } else if (n === 2) {
      socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n');
    } else {
      socket.write('HTTP/1.1 201 Made\r\nContent-Length: 2\r\n\r\nok');
    }
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  type Raw = { responseHeadFields: Buffer | null; responseRawHeaders: string[] | null };
  const first = await send(pool, { rawResponseHeaders: true, responseHeadLines: true });
  assert.deepEqual(first.events, ['start', 'response 200', 'data', 'end']);
  assert.equal(first.body, 'helloworld', 'the body of the second read counted to its length');
  assert.deepEqual(Object.keys(first.headers), [], 'no record');
  const raw = first.controller as unknown as Raw;
  assert.equal(raw.responseHeadFields?.toString('latin1'), 'X-Mixed-Case: yes\r\nContent-Length: 10\r\n', 'the lines as written, without Connection: keep-alive');
  assert.deepEqual(raw.responseRawHeaders, ['X-Mixed-Case', 'yes', 'Content-Length', '10'], 'pairs made of them when asked for');
  const chunked = await send(pool, { rawResponseHeaders: true, responseHeadLines: true });
  assert.equal(chunked.body, 'hello');
  assert.equal((chunked.controller as unknown as Raw).responseHeadFields, null, 'a chunked head is llhttp\'s');
  assert.deepEqual((chunked.controller as unknown as Raw).responseRawHeaders, ['Transfer-Encoding', 'chunked']);
  // Without responseHeadLines, a plain head is llhttp's too.
  const third = await send(pool, { rawResponseHeaders: true });
  assert.equal((third.controller as unknown as Raw).responseHeadFields, null);
  assert.deepEqual((third.controller as unknown as Raw).responseRawHeaders, ['Content-Length', '2']);
  assert.equal(third.status, 201);
  assert.equal(third.statusMessage, 'Made');
  assert.equal(third.body, 'ok');
  assert.equal(s.sockets.length, 1, 'one connection carried all three');
});

test('responseHeadLines and a plain head: a stray answer after its body is dropped with the connection; a pod that closes in its body fails the request', async (t) => {
  const s = await rawServer((socket, all, index) => {
    if (!all.endsWith('\r\n\r\n')) return;
    if (index === 0) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray');
    else if (index === 1) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nX');
    else socket.end('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const first = await send(pool, { rawResponseHeaders: true, responseHeadLines: true });
  assert.deepEqual(first.events, ['start', 'response 200', 'data', 'end']);
  assert.equal(first.body, 'abc');
  const empty = await send(pool, { rawResponseHeaders: true, responseHeadLines: true });
  assert.deepEqual(empty.events, ['start', 'response 200', 'end'], 'Content-Length: 0, a stray byte behind it');
  assert.equal(s.sockets.length, 2, 'the connection that carried a stray answer was not reused');
  const cut = await send(pool, { rawResponseHeaders: true, responseHeadLines: true });
  assert.deepEqual(cut.events, ['start', 'response 200', 'data', 'error']);
  assert.equal(cut.error?.code, 'UND_ERR_SOCKET');
  assert.match(cut.error!.message, /middle of the response/);
  assert.equal(s.sockets.length, 3);
});

test('response headers named like Object members (__proto__, constructor, toString) are plain headers', async (t) => {
  const s = await rawServer((socket, all) => {
    if (all.endsWith('\r\n\r\n')) socket.write('HTTP/1.1 200 OK\r\n__proto__: p\r\nConstructor: c\r\ntoString: t1\r\ntostring: t2\r\n123: n\r\ncontent-length: 2\r\n\r\nok');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const r = await send(pool);
  assert.equal(r.body, 'ok');
  const headers = r.headers as Record<string, unknown>;
  const names: string[] = [];
  for (const name in headers) names.push(name);
  assert.deepEqual(names, ['123', '__proto__', 'constructor', 'tostring', 'content-length']);
  assert.equal(headers['__proto__'], 'p');
  assert.equal(headers['constructor'], 'c');
  assert.deepEqual(headers['tostring'], ['t1', 't2']);
  assert.equal(headers['toString'], undefined);
  assert.equal(headers['hasOwnProperty'], undefined);
});

test('the request head is written as given, in one piece, with the caller Host kept', async (t) => {
  const s = await rawServer((socket, all) => {
    if (all.endsWith('\r\n\r\n')) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const r = await send(pool, { method: 'DELETE', path: '/x?y=%20z', headers: ['Host', 'app.example', 'X-Latin', 'caf\u00e9'] });
  assert.equal(r.body, 'ok');
  assert.equal(s.received[0], 'DELETE /x?y=%20z HTTP/1.1\r\nHost: app.example\r\nX-Latin: caf\u00e9\r\n\r\n');
});

test('request heads left in the scratch buffer: written from it by a free connection, copied out for one still connecting', async (t) => {
  const s = await rawServer((socket, all) => {
    if (all.endsWith('\r\n\r\n')) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  // A free connection, then requests dispatched in one run: the first one takes the idle
  // connection and is written from the scratch buffer; the others wait for connections
  // being made while the next heads are built there, so theirs must have been copied out.
  assert.equal((await send(pool, { path: '/warm' })).body, 'ok');
  const paths = ['/a', '/bb', '/ccc', '/dddd'];
  const results = paths.map((path, i) => send(pool, { path, headers: ['X-N', String(i).repeat(i + 1)] }));
  for (const r of await Promise.all(results)) assert.equal(r.body, 'ok');
  const sent = s.received.join('').split('\r\n\r\n').filter((h) => h !== '').sort();
  const expected = ['GET /warm HTTP/1.1\r\nhost: 127.0.0.1:' + s.port, ...paths.map((path, i) => `GET ${path} HTTP/1.1\r\nX-N: ${String(i).repeat(i + 1)}\r\nhost: 127.0.0.1:${s.port}`)].sort();
  assert.deepEqual(sent, expected);
  assert.equal(s.sockets.length, 4, 'one connection reused, three made');
});

test('HEAD: no body even with a Content-Length; the connection is not reused (as undici)', async (t) => {
  const s = await rawServer((socket, all) => {
    if (all.endsWith('\r\n\r\n')) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 30\r\ncontent-type: text/plain\r\n\r\n');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const r = await send(pool, { method: 'HEAD' });
  assert.deepEqual(r.events, ['start', 'response 200', 'end']);
  assert.equal(r.headers['content-length'], '30');
  await until(() => pool.size === 0, 'the connection to close');
  const again = await send(pool, { method: 'HEAD' });
  assert.equal(again.status, 200);
  assert.equal(s.sockets.length, 2);
});

test('POST with Content-Length: the Readable body is streamed as is, every chunk reported', async (t) => {
  const s = await nodeServer((_req, res, seen) => res.end(`got ${seen.body.length}`));
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const parts = ['a'.repeat(1000), 'b'.repeat(70_000), 'c'];
  const r = await send(pool, { method: 'POST', headers: ['content-type', 'text/plain', 'Content-Length', '71001'], body: Readable.from(parts.map((p) => Buffer.from(p))) });
  assert.equal(r.body, 'got 71001');
  assert.equal(r.bodySent, 71_001);
  assert.equal(r.requestSent, true);
  const seen = s.seen[0]!;
  assert.equal(seen.body, parts.join(''));
  assert.equal(seen.headers['content-length'], '71001');
  assert.equal(seen.headers['transfer-encoding'], undefined);
});

test('POST without Content-Length: the body goes chunked, framed exactly, empty chunks skipped', async (t) => {
  const s = await rawServer((socket, all) => {
    if (all.endsWith('0\r\n\r\n')) socket.write('HTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const body = Readable.from([Buffer.from('abc'), Buffer.alloc(0), Buffer.from('x'.repeat(20))]);
  const r = await send(pool, { method: 'PUT', path: '/up', body });
  assert.equal(r.status, 201);
  assert.equal(r.bodySent, 23);
  assert.equal(s.received[0], `PUT /up HTTP/1.1\r\nhost: 127.0.0.1:${s.port}\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n14\r\n${'x'.repeat(20)}\r\n0\r\n\r\n`);
  // And a real server reads it back.
  const n = await nodeServer((_req, res, seen) => res.end(seen.body));
  const pool2 = makePool(n.port);
  t.after(() => pool2.destroy().then(() => n.close()));
  const echoed = await send(pool2, { method: 'POST', body: Readable.from(['one ', 'two ', 'three'].map((p) => Buffer.from(p))) });
  assert.equal(echoed.body, 'one two three');
  assert.equal(n.seen[0]!.headers['transfer-encoding'], 'chunked');
});

test('a bodiless POST gets content-length: 0 (servers may want a length); a bodiless GET gets none', async (t) => {
  const s = await nodeServer((_req, res) => res.end());
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  await send(pool, { method: 'POST' });
  await send(pool, { method: 'GET' });
  assert.equal(s.seen[0]!.headers['content-length'], '0');
  assert.equal(s.seen[1]!.headers['content-length'], undefined);
});

test('a body that does not match its Content-Length fails the request; no extra byte reaches the pod', async (t) => {
  const s = await rawServer(() => {});
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const longer = await send(pool, { method: 'POST', headers: ['content-length', '4'], body: Readable.from([Buffer.from('abc'), Buffer.from('defg')]) });
  assert.equal(longer.error?.code, 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH');
  assert.ok(s.received[0]!.endsWith('\r\n\r\nabc'), JSON.stringify(s.received[0]));
  const shorter = await send(pool, { method: 'POST', headers: ['content-length', '10'], body: Readable.from([Buffer.from('abc')]) });
  assert.equal(shorter.error?.code, 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH');
  const none = await send(pool, { method: 'POST', headers: ['content-length', '10'], body: null });
  assert.equal(none.error?.code, 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH');
  assert.deepEqual(none.events, ['error']);
});

test('response framings: chunked, close-delimited, 204, 304 with a Content-Length', async (t) => {
  const s = await rawServer((socket, all) => {
    if (!all.endsWith('\r\n\r\n')) return;
    const path = all.slice(all.lastIndexOf('GET ') + 4, all.lastIndexOf(' HTTP/1.1'));
    switch (path) {
      case '/chunked':
        socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n');
        setTimeout(() => socket.write('6\r\n world\r\n0\r\nx-trailer: t\r\n\r\n'), 20);
        break;
      case '/close':
        socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil ');
        setTimeout(() => socket.end('the end'), 20);
        break;
      case '/204':
        socket.write('HTTP/1.1 204 No Content\r\n\r\n');
        break;
      case '/304':
        socket.write('HTTP/1.1 304 Not Modified\r\ncontent-length: 5\r\netag: "x"\r\n\r\n');
        break;
    }
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const chunked = await send(pool, { path: '/chunked' });
  assert.equal(chunked.body, 'hello world');
  assert.equal(chunked.events.at(-1), 'end');
  const c204 = await send(pool, { path: '/204' });
  assert.deepEqual(c204.events, ['start', 'response 204', 'end']);
  const c304 = await send(pool, { path: '/304' });
  assert.deepEqual(c304.events, ['start', 'response 304', 'end']);
  assert.equal(c304.headers['content-length'], '5');
  assert.equal(s.sockets.length, 1, 'chunked, 204 and 304 leave the connection reusable');
  const closed = await send(pool, { path: '/close' });
  assert.equal(closed.body, 'until the end');
  assert.equal(closed.events.at(-1), 'end');
  await until(() => pool.size === 0, 'the close-delimited connection to be gone');
  await send(pool, { path: '/204' });
  assert.equal(s.sockets.length, 2);
});

test('framings in turn on one connection: a length body in pieces, Content-Length: 0, 103 then a length, chunked, length again', async (t) => {
  const s = await rawServer((socket, all) => {
    if (!all.endsWith('\r\n\r\n')) return;
    const path = all.slice(all.lastIndexOf('GET ') + 4, all.lastIndexOf(' HTTP/1.1'));
    switch (path) {
      case '/pieces':
        // The head and the body's first bytes in one read, the rest in two more.
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhel');
        setTimeout(() => socket.write('lo w'), 20);
        setTimeout(() => socket.write('orld'), 40);
        break;
      case '/empty':
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
        break;
      case '/hints':
        socket.write('HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n');
        setTimeout(() => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok'), 20);
        break;
      case '/chunked':
        socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n');
        break;
      case '/again':
        socket.write('HTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone');
        break;
    }
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const pieces = await send(pool, { path: '/pieces' });
  assert.equal(pieces.body, 'hello world');
  assert.deepEqual(pieces.events.filter((e) => e === 'end'), ['end'], 'ended once, after its last byte');
  const empty = await send(pool, { path: '/empty' });
  assert.deepEqual(empty.events, ['start', 'response 200', 'end']);
  const hints = await send(pool, { path: '/hints' });
  assert.equal(hints.body, 'ok');
  assert.equal(hints.events.at(-1), 'end');
  assert.equal((await send(pool, { path: '/chunked' })).body, 'abc');
  const again = await send(pool, { path: '/again' });
  assert.equal(again.body, 'done');
  assert.ok(again.events.includes('response 201'));
  assert.equal(s.sockets.length, 1, 'every one of them left the connection reusable');
  assert.equal(heads(s.received[0]!), 5);
});

test('where the body lies in a read: a head in two reads, 103 and 200 and body in one, blank lines before a head, a length after chunks', async (t) => {
  const s = await rawServer((socket, all) => {
    if (!all.endsWith('\r\n\r\n')) return;
    const path = all.slice(all.lastIndexOf('GET ') + 4, all.lastIndexOf(' HTTP/1.1'));
    switch (path) {
      case '/split-head':
        // The head cut in the middle of a header, the body with its end.
        socket.write('HTTP/1.1 200 OK\r\nContent-Le');
        setTimeout(() => socket.write('ngth: 5\r\n\r\nhello'), 20);
        break;
      case '/split-blank-line':
        // The blank line that ends the head cut in two.
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r');
        setTimeout(() => socket.write('\nbody'), 20);
        break;
      case '/hints-at-once':
        socket.write('HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhinted');
        break;
      case '/blank-lines':
        socket.write('\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc');
        break;
      case '/chunked':
        socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n\r\n\r\n\r\r\n0\r\n\r\n');
        break;
      case '/length':
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n\r\n\r\nabcd');
        break;
    }
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  assert.equal((await send(pool, { path: '/split-head' })).body, 'hello');
  assert.equal((await send(pool, { path: '/split-blank-line' })).body, 'body');
  const hinted = await send(pool, { path: '/hints-at-once' });
  assert.deepEqual(hinted.events, ['start', 'response 103', 'response 200', 'data', 'end']);
  assert.equal(hinted.body, 'hinted');
  assert.equal((await send(pool, { path: '/blank-lines' })).body, 'abc');
  // Bodies that hold CRLF CRLF themselves, chunked then counted.
  assert.equal((await send(pool, { path: '/chunked' })).body, '\r\n\r\n\r');
  assert.equal((await send(pool, { path: '/length' })).body, '\r\n\r\nabcd');
  assert.equal(s.sockets.length, 1, 'every one of them left the connection reusable');
});

test('a second response after a length body in the same read: the body is whole, the rest dropped with the connection', async (t) => {
  const s = await rawServer((socket, all) => {
    if (all.endsWith('\r\n\r\n')) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const first = await send(pool);
  assert.equal(first.body, 'abc');
  assert.deepEqual(first.events, ['start', 'response 200', 'data', 'end']);
  assert.equal((await send(pool)).body, 'abc');
  assert.equal(s.sockets.length, 2, 'the connection that carried a stray response was not reused');
});

for (const [label, mode] of READ_MODES) test(`the start of a stray answer after a response, in the same read, is dropped with the connection (${label})`, async (t) => {
  const s = await rawServer((socket, all, index) => {
    if (!all.endsWith('\r\n\r\n')) return;
    if (index === 0 && heads(all) === 1) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 2');
    else if (index === 0) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext');
    else if (index === 1) socket.write(heads(all) === 1 ? 'HTTP/1.1 204 No Content\r\n\r\nHTTP/1.' : 'HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext');
    else socket.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  assert.equal((await send(pool, mode)).body, 'abc');
  const second = await send(pool, mode);
  assert.deepEqual(second.events, ['start', 'response 204', 'end'], 'a new connection: no answer made of the stray bytes');
  assert.equal(s.sockets.length, 2, 'the connection that carried them was not reused');
  assert.equal((await send(pool, mode)).body, 'fresh');
  assert.equal(s.sockets.length, 3, 'nor was the one whose bodiless answer had bytes after it');
});

test('bodies kept by the handler stay intact while other connections read: 4 responses of 1 MiB at once', async (t) => {
  const bodies = [0, 1, 2, 3].map((i) => {
    const b = Buffer.allocUnsafe(1024 * 1024);
    for (let j = 0; j < b.length; j++) b[j] = (j * 31 + i * 101 + (j >> 10)) & 0xff;
    return b;
  });
  const s = await nodeServer((req, res) => {
    const body = bodies[Number(req.url!.slice(1))]!;
    res.writeHead(200, { 'content-length': body.length });
    // In pieces, so reads of the four connections interleave.
    let at = 0;
    const next = () => {
      if (at >= body.length) return void res.end();
      res.write(body.subarray(at, (at += 100_000)), () => setImmediate(next));
    };
    next();
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const results = await Promise.all([0, 1, 2, 3].map((i) => send(pool, { path: `/${i}` })));
  for (let i = 0; i < 4; i++) {
    assert.ok(results[i]!.chunks.length > 1, 'the body came in more than one read');
    assert.ok(Buffer.concat(results[i]!.chunks).equals(bodies[i]!), `body ${i} is the bytes sent`);
  }
});

// ---- connections ----

test('keep-alive: sequential requests share one connection; concurrent ones get one each', async (t) => {
  let hold: (() => void)[] = [];
  const s = await nodeServer((req, res) => {
    if (req.url === '/slow') hold.push(() => res.end('slow'));
    else res.end('fast');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  for (let i = 0; i < 3; i++) assert.equal((await send(pool)).body, 'fast');
  assert.equal(s.connections, 1);
  assert.equal(new Set(s.seen.map((x) => x.remotePort)).size, 1);
  assert.equal(pool.size, 1);
  assert.equal(pool.idleCount, 1);

  const slow = [0, 1, 2, 3].map(() => send(pool, { path: '/slow' }));
  await until(() => hold.length === 4, 'four requests at the server');
  assert.equal(s.connections, 4, 'no limit on connections: the idle one and three new');
  for (const release of hold) release();
  hold = [];
  for (const r of await Promise.all(slow)) assert.equal(r.body, 'slow');
  assert.equal(pool.idleCount, 4);
});

test('a pool that keeps no idle connection (keepAliveTimeout 0) says Connection: close, one connection per request; a keep-alive pool says nothing', async (t) => {
  const heads: string[] = [];
  const s = await nodeServer((req, res) => {
    heads.push(String(req.headers.connection));
    res.end('ok');
  });
  const closing = makePool(s.port, { keepAliveTimeout: 0 });
  const keeping = makePool(s.port);
  t.after(() => Promise.all([closing.destroy(), keeping.destroy()]).then(() => s.close()));
  for (let i = 0; i < 3; i++) assert.equal((await send(closing)).body, 'ok');
  assert.deepEqual(heads, ['close', 'close', 'close']);
  assert.equal(s.connections, 3);
  assert.equal(closing.idleCount, 0);
  heads.length = 0;
  for (let i = 0; i < 2; i++) assert.equal((await send(keeping)).body, 'ok');
  assert.deepEqual(heads, ['undefined', 'undefined']);
  assert.equal(s.connections, 4);
});

test('idle connections are reused most recently used first', async (t) => {
  const pending: net.Socket[] = [];
  const s = await rawServer((socket, all) => {
    if (all.endsWith('\r\n\r\n')) pending.push(socket);
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const answer = (socket: net.Socket) => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n');
  const a = send(pool);
  const b = send(pool);
  await until(() => pending.length === 2, 'two requests');
  const [first, second] = [pending[0]!, pending[1]!];
  answer(second);
  await b;
  answer(first);
  await a;
  // `first` answered last: it is on top of the idle list.
  const c = send(pool);
  await until(() => pending.length === 3, 'the third request');
  assert.equal(pending[2], first);
  answer(first);
  await c;
});

for (const [label, mode] of READ_MODES) test(`idle connections close after keepAliveTimeout, or sooner when the pod says Keep-Alive: timeout=N (${label})`, async (t) => {
  const s = await rawServer((socket, all) => {
    if (!all.endsWith('\r\n\r\n')) return;
    const hint = all.includes('/hint') ? 'keep-alive: timeout=3\r\n' : '';
    socket.write(`HTTP/1.1 200 OK\r\n${hint}content-length: 0\r\n\r\n`);
  });
  t.after(() => s.close());
  const short = makePool(s.port, { keepAliveTimeout: 100 });
  t.after(() => short.destroy());
  await send(short, mode);
  assert.equal(short.idleCount, 1);
  await delay(300);
  assert.equal(short.size, 0);
  assert.ok(s.sockets[0]!.readableEnded || s.sockets[0]!.destroyed, 'the pod saw it close');

  // timeout=3 from the pod, less a 2 s margin: 1 s, below the pool's 10 s.
  const hinted = makePool(s.port, { keepAliveTimeout: 10_000 });
  t.after(() => hinted.destroy());
  await send(hinted, { path: '/hint', ...mode });
  await delay(600);
  assert.equal(hinted.size, 1);
  await until(() => hinted.size === 0, 'the hinted idle timeout', 1_500);
});

test('an idle connection the pod closes is dropped; the next request gets a new one', async (t) => {
  const s = await rawServer((socket, all) => {
    if (all.endsWith('\r\n\r\n')) socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  assert.equal((await send(pool)).body, 'ok');
  await until(() => pool.size === 0, 'the closed connection to leave the pool');
  assert.equal((await send(pool)).body, 'ok');
  assert.equal(s.sockets.length, 2);
});

test('a stale keep-alive connection: the request fails after onRequestStart (UND_ERR_SOCKET or a reset)', async (t) => {
  const s = await rawServer((socket, all) => {
    const n = heads(all);
    if (n === 1 && all.endsWith('\r\n\r\n')) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n');
    // The second request on a connection: the pod had given up on it.
    else if (n === 2) socket.end();
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  await send(pool);
  const r = await send(pool);
  assert.deepEqual(r.events, ['start', 'error'], 'started (sent), so the caller knows a connection was there');
  assert.equal(r.error?.code, 'UND_ERR_SOCKET');

  const reset = await rawServer((socket, all) => {
    const n = heads(all);
    if (n === 1 && all.endsWith('\r\n\r\n')) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n');
    else if (n === 2) socket.resetAndDestroy();
  });
  const pool2 = makePool(reset.port);
  t.after(() => pool2.destroy().then(() => reset.close()));
  await send(pool2);
  const r2 = await send(pool2);
  assert.deepEqual(r2.events, ['start', 'error']);
  assert.ok(r2.error?.code === 'ECONNRESET' || r2.error?.code === 'UND_ERR_SOCKET', String(r2.error?.code));
});

for (const [label, mode] of READ_MODES) test(`Connection: close, HTTP/1.0 and Keep-Alive: timeout=1 responses are not reused (${label})`, async (t) => {
  const answers: Record<string, string> = {
    '/close': 'HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 1\r\n\r\nc',
    '/http10': 'HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 1\r\n\r\nh',
    '/short': 'HTTP/1.1 200 OK\r\nkeep-alive: timeout=1\r\ncontent-length: 1\r\n\r\ns',
    '/keep': 'HTTP/1.1 200 OK\r\nkeep-alive: timeout=30, max=100\r\ncontent-length: 1\r\n\r\nk',
  };
  const s = await rawServer((socket, all) => {
    if (!all.endsWith('\r\n\r\n')) return;
    const line = all.slice(all.lastIndexOf('GET '));
    socket.write(answers[line.slice(4, line.indexOf(' HTTP/1.1'))]!);
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  for (const path of ['/close', '/http10', '/short']) {
    const before = s.sockets.length;
    const r = await send(pool, { path, ...mode });
    assert.equal(r.status, 200);
    await until(() => pool.size === 0, `the connection of ${path} to close`);
    assert.equal(s.sockets.length, before + 1);
  }
  const kept = await send(pool, { path: '/keep', ...mode });
  await send(pool, { path: '/keep', ...mode });
  assert.equal(pool.size, 1, 'Keep-Alive: timeout=30 keeps it');
  // Read as lines, the pod's Keep-Alive is not among them (hop-by-hop).
  const fields = (kept.controller as unknown as { responseHeadFields: Buffer | null }).responseHeadFields;
  assert.equal(fields?.toString('latin1'), label === 'llhttp' ? undefined : 'content-length: 1\r\n');
});

test('a request with Connection: close is sent with it and its connection is not reused', async (t) => {
  const s = await nodeServer((_req, res) => res.end('x'));
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  await send(pool, { headers: ['connection', 'close'] });
  assert.equal(s.seen[0]!.headers.connection, 'close');
  await until(() => pool.size === 0, 'the connection to close');
});

test('a response that completes before the whole request was sent: the rest is not sent, the connection closes', async (t) => {
  const answered = new WeakSet<net.Socket>();
  const s = await rawServer((socket, all) => {
    // Answers as soon as the head is in, without waiting for the body.
    if (all.includes('\r\n\r\n') && !answered.has(socket)) {
      answered.add(socket);
      socket.write('HTTP/1.1 413 Payload Too Large\r\ncontent-length: 4\r\n\r\nbig!');
    }
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const body = new PassThrough();
  body.write('first part');
  const r = await send(pool, { method: 'POST', body });
  assert.equal(r.status, 413);
  assert.equal(r.body, 'big!');
  assert.equal(r.requestSent, false);
  assert.equal(body.listenerCount('data'), 0, 'the body is no longer read');
  assert.equal(body.destroyed, true, 'and it is destroyed, as undici does');
  await until(() => pool.size === 0, 'the connection to close');
});

test('streaming both ways: a pod may answer while the request body is still coming', async (t) => {
  // The pod echoes each chunk as it comes (full duplex), and ends when the body ends.
  const duplex = http.createServer((req, res) => {
    res.writeHead(200);
    req.on('data', (c: Buffer) => res.write(c));
    req.on('end', () => res.end());
  });
  await new Promise<void>((resolve) => duplex.listen(0, '127.0.0.1', resolve));
  const pool = makePool((duplex.address() as net.AddressInfo).port);
  t.after(() => pool.destroy().then(() => new Promise<void>((resolve) => duplex.close(() => resolve()))));
  const body = new PassThrough();
  const r = new Recorder();
  pool.dispatch(options({ method: 'POST', body }), r);
  body.write('ping ');
  await until(() => r.body === 'ping ', 'the first echo');
  body.end('pong');
  await r.finished();
  assert.equal(r.body, 'ping pong');
  assert.equal(r.requestSent, true);
  assert.equal(pool.idleCount, 1);
});

// ---- back-pressure and timeouts ----

test('back-pressure: pause() stops reading the pod, resume() goes on; the body arrives whole', async (t) => {
  const total = 16 * 1024 * 1024;
  let serverBlocked = false;
  const s = await nodeServer((_req, res) => {
    res.writeHead(200, { 'content-length': String(total) });
    const chunk = Buffer.alloc(64 * 1024, 97);
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        sent += chunk.length;
        if (!res.write(chunk)) {
          serverBlocked = true;
          res.once('drain', pump);
          return;
        }
      }
      res.end();
    };
    pump();
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const r = new Recorder();
  r.onData = (c) => {
    if (!c.paused && r.bytes < total) c.pause();
  };
  pool.dispatch(options(), r);
  await until(() => r.bytes > 0, 'the first bytes');
  await delay(100);
  const held = r.bytes;
  await delay(200);
  assert.equal(r.bytes, held, 'nothing more while paused');
  assert.ok(held < total / 4, `only what was read before the pause (${held} bytes)`);
  assert.ok(serverBlocked, 'the pod felt it');
  assert.equal(r.controller!.paused, true);
  r.onData = undefined;
  r.controller!.resume();
  await r.finished();
  assert.equal(r.bytes, total);
});

test('headers timeout: UND_ERR_HEADERS_TIMEOUT after the request was sent', async (t) => {
  const s = await rawServer(() => {});
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const started = Date.now();
  const r = await send(pool, { headersTimeout: 150 });
  const took = Date.now() - started;
  assert.deepEqual(r.events, ['start', 'error']);
  assert.equal(r.error?.code, 'UND_ERR_HEADERS_TIMEOUT');
  assert.ok(took >= 140 && took < 1_500, `took ${took} ms`);
  await until(() => pool.size === 0, 'the connection to close');
});

test('body timeout: UND_ERR_BODY_TIMEOUT when the pod stops mid-body, but not while the caller holds it back', async (t) => {
  const s = await rawServer((socket, all) => {
    if (!all.endsWith('\r\n\r\n')) return;
    if (all.includes('/stall')) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc');
    else {
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nabc');
      setTimeout(() => socket.write('def'), 400);
    }
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const stalled = await send(pool, { path: '/stall', bodyTimeout: 150 });
  assert.deepEqual(stalled.events, ['start', 'response 200', 'data', 'error']);
  assert.equal(stalled.error?.code, 'UND_ERR_BODY_TIMEOUT');
  assert.equal(stalled.body, 'abc');

  // Paused by the caller for longer than the body timeout: no timeout.
  const r = new Recorder();
  r.onData = (c) => {
    if (r.bytes === 3) {
      c.pause();
      setTimeout(() => c.resume(), 600);
    }
  };
  pool.dispatch(options({ path: '/slow', bodyTimeout: 300 }), r);
  await r.finished();
  assert.equal(r.error, undefined);
  assert.equal(r.body, 'abcdef');
});

test('body timeout equal to the idle timeout: idle connections still close on time, reuse restarts the clock, a stalled body still fails', async (t) => {
  const s = await rawServer((socket, all) => {
    if (!all.endsWith('\r\n\r\n')) return;
    if (all.includes('/stall')) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc');
    else socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
  });
  const pool = makePool(s.port, { keepAliveTimeout: 250 });
  t.after(() => pool.destroy().then(() => s.close()));
  const first = await send(pool, { bodyTimeout: 250 });
  assert.equal(first.body, 'ok');
  assert.equal(pool.idleCount, 1);
  await delay(150);
  const second = await send(pool, { bodyTimeout: 250 });
  assert.equal(second.body, 'ok');
  assert.equal(s.sockets.length, 1, 'the idle connection was reused');
  await delay(150);
  assert.equal(pool.size, 1, 'idle 150 ms after its second response: kept (the idle clock restarted)');
  await until(() => pool.size === 0, 'the idle connection to close', 1_000);
  assert.ok(s.sockets[0]!.readableEnded || s.sockets[0]!.destroyed, 'the pod saw it close');

  const stalled = await send(pool, { path: '/stall', bodyTimeout: 250 });
  assert.equal(stalled.error?.code, 'UND_ERR_BODY_TIMEOUT');
  assert.equal(stalled.body, 'abc');
});

test('connection refused: the system code, and no onRequestStart (nothing was sent)', async (t) => {
  const pool = makePool(await closedPort());
  t.after(() => pool.destroy());
  const r = await send(pool);
  assert.deepEqual(r.events, ['error']);
  assert.equal(r.error?.code, 'ECONNREFUSED');
  assert.equal(pool.size, 0);
});

test('connect timeout: a listener that never accepts (backlog full) gives UND_ERR_CONNECT_TIMEOUT', async (t) => {
  // A listener in a worker whose event loop is then blocked: the kernel completes a
  // connection or two into the backlog, then drops further SYNs.
  const shared = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(
    `const { workerData, parentPort } = require('node:worker_threads');
     const server = require('node:net').createServer();
     server.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
       parentPort.postMessage(server.address().port);
       Atomics.wait(workerData, 0, 0);
     });`,
    { eval: true, workerData: shared },
  );
  t.after(async () => {
    Atomics.store(shared, 0, 1);
    Atomics.notify(shared, 0);
    await worker.terminate();
  });
  const port = await new Promise<number>((resolve) => worker.once('message', resolve));
  const fillers: net.Socket[] = [];
  t.after(() => {
    for (const f of fillers) f.destroy();
  });
  for (;;) {
    const f = net.connect(port, '127.0.0.1');
    f.on('error', () => {});
    fillers.push(f);
    const connected = await Promise.race([new Promise<boolean>((resolve) => f.once('connect', () => resolve(true))), delay(200).then(() => false)]);
    if (!connected) break;
    assert.ok(fillers.length < 50, 'the backlog never filled');
  }
  const pool = makePool(port, { connectTimeout: 200 });
  t.after(() => pool.destroy());
  const started = Date.now();
  const r = await send(pool);
  assert.deepEqual(r.events, ['error']);
  assert.equal(r.error?.code, 'UND_ERR_CONNECT_TIMEOUT');
  assert.ok(Date.now() - started < 1_500);
});

test('reset or end mid-response: ECONNRESET or UND_ERR_SOCKET after the response started', async (t) => {
  const s = await rawServer((socket, all) => {
    if (!all.endsWith('\r\n\r\n')) return;
    socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial');
    setTimeout(() => (all.includes('/reset') ? socket.resetAndDestroy() : socket.end()), 30);
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const reset = await send(pool, { path: '/reset' });
  assert.deepEqual(reset.events, ['start', 'response 200', 'data', 'error']);
  assert.equal(reset.error?.code, 'ECONNRESET');
  assert.equal(reset.body, 'partial');
  const ended = await send(pool, { path: '/end' });
  assert.deepEqual(ended.events, ['start', 'response 200', 'data', 'error']);
  assert.equal(ended.error?.code, 'UND_ERR_SOCKET');
  const chunked = await rawServer((socket, all) => {
    if (all.endsWith('\r\n\r\n')) socket.end('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n');
  });
  const pool2 = makePool(chunked.port);
  t.after(() => pool2.destroy().then(() => chunked.close()));
  const cut = await send(pool2);
  assert.equal(cut.error?.code, 'UND_ERR_SOCKET', 'a chunked body cut by the end of the connection is not complete');
});

test('a response that does not parse: its HPE_ code; a 101 nobody asked for: UND_ERR_SOCKET', async (t) => {
  const s = await rawServer((socket, all) => {
    if (!all.endsWith('\r\n\r\n')) return;
    socket.write(all.includes('/101') ? 'HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\nconnection: upgrade\r\n\r\n' : 'HTTP/1.1 200 OK\r\ncontent-length: nope\r\n\r\n');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const bad = await send(pool);
  assert.match(bad.error?.code ?? '', /^HPE_/);
  const upgrade = await send(pool, { path: '/101' });
  assert.equal(upgrade.error?.code, 'UND_ERR_SOCKET');
  assert.deepEqual(upgrade.events, ['start', 'error']);
});

test('bytes from an idle connection nobody asked for: the connection is dropped', async (t) => {
  const s = await rawServer((socket, all) => {
    if (!all.endsWith('\r\n\r\n')) return;
    socket.write('HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\na');
    setTimeout(() => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nforged'), 30);
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  assert.equal((await send(pool)).body, 'a');
  await until(() => pool.size === 0, 'the connection to be dropped');
  assert.equal((await send(pool)).body, 'a');
});

// ---- 1xx ----

test('103 Early Hints are passed on before the response; 100 Continue is not', async (t) => {
  const s = await rawServer((socket, all) => {
    if (!all.endsWith('\r\n\r\n')) return;
    socket.write('HTTP/1.1 100 Continue\r\n\r\n');
    socket.write('HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\nLink: </app.js>; rel=preload\r\n\r\n');
    setTimeout(() => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nbody'), 20);
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const r = await send(pool);
  assert.deepEqual(r.events, ['start', 'response 103', 'response 200', 'data', 'end']);
  assert.deepEqual(r.informational[0]!.headers.link, ['</style.css>; rel=preload', '</app.js>; rel=preload']);
  assert.equal(r.body, 'body');
  await send(pool);
  assert.equal(s.sockets.length, 1, 'still reusable');
});

test('a pod that sends more than eight 1xx heads fails the request (UND_ERR_SOCKET) after passing eight on', async (t) => {
  const s = await rawServer((socket, all) => {
    if (!all.endsWith('\r\n\r\n')) return;
    socket.write('HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n'.repeat(20) + 'HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nbody');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const r = await send(pool);
  assert.equal(r.error?.code, 'UND_ERR_SOCKET');
  assert.match(r.error!.message, /1xx heads/);
  assert.equal(r.informational.length, 8);
  assert.equal(r.status, 0, 'no final response reached the handler');
});

test('after a burst, at most maxIdle connections stay idle; the least recently used ones close', async (t) => {
  const s = await nodeServer((_req, res) => setTimeout(() => res.end('ok'), 30));
  const pool = makePool(s.port, { maxIdle: 2 });
  t.after(() => pool.destroy().then(() => s.close()));
  const results = await Promise.all(Array.from({ length: 5 }, () => send(pool)));
  assert.deepEqual(results.map((r) => r.status), [200, 200, 200, 200, 200]);
  assert.equal(s.connections, 5, 'five at once needed five connections');
  assert.equal(pool.idleCount, 2);
  await until(() => pool.size === 2, 'the other three closed');
  assert.equal((await send(pool)).status, 200, 'an idle one is reused');
  assert.equal(s.connections, 5);
});

// ---- refused requests ----

test('CR, LF, NUL and non-latin1 characters, and bad header names, are refused: UND_ERR_INVALID_ARG, nothing written', async (t) => {
  const s = await nodeServer((_req, res) => res.end());
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const bad: Partial<Http1DispatchOptions>[] = [
    { headers: ['x-a', 'one\r\nx-injected: 1'] },
    { headers: ['x-a', 'one\nx-injected: 1'] },
    { headers: ['x-a', 'one\rtwo'] },
    { headers: ['x-a', 'nul\u0000'] },
    { headers: ['x-a', 'wide \u010a char'] },
    { headers: ['x a', 'v'] },
    { headers: ['x-a:', 'v'] },
    { headers: ['x-a\r\nx-b', 'v'] },
    { headers: ['', 'v'] },
    { headers: ['x-odd'] as string[] },
    { headers: ['transfer-encoding', 'chunked'] },
    { headers: ['connection', 'upgrade'] },
    { headers: ['content-length', '1x'] },
    { headers: ['content-length', '1', 'content-length', '2'] },
    { path: '/a\r\nx-injected: 1' },
    { path: '/a b' },
    { path: '/a\u0000' },
    { path: 'no-slash' },
    { path: '*' },
    { path: '' },
    { method: 'GET /x HTTP/1.1\r\n' },
    { method: 'CONNECT' },
  ];
  for (const o of bad) {
    const r = await send(pool, o);
    assert.deepEqual(r.events, ['error'], JSON.stringify(o));
    assert.equal(r.error?.code, 'UND_ERR_INVALID_ARG', JSON.stringify(o));
  }
  assert.equal(s.connections, 0, 'no connection was even made');
  // The same header name and value twice is one header.
  const ok = await send(pool, { method: 'POST', headers: ['content-length', '2', 'Content-Length', '2'], body: Buffer.from('hi') });
  assert.equal(ok.status, 200);
  assert.equal(s.seen[0]!.rawHeaders.filter((h) => h.toLowerCase() === 'content-length').length, 1);
  assert.equal(s.seen[0]!.body, 'hi');
});

test('headersChecked (headers from llhttp) still applies the rules on framing and hop-by-hop headers', async (t) => {
  const s = await nodeServer((_req, res) => res.end());
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  for (const headers of [['transfer-encoding', 'chunked'], ['connection', 'upgrade'], ['content-length', '1x'], ['Host', 'a', 'host', 'b'], ['Expect', '100-continue']]) {
    const r = await send(pool, { headersChecked: true, headers });
    assert.equal(r.error?.code, 'UND_ERR_INVALID_ARG', JSON.stringify(headers));
  }
  const ok = await send(pool, { headersChecked: true, headers: ['X-City', 'Z\u00fcrich', 'x-tab', 'a\tb'] });
  assert.equal(ok.status, 200);
  assert.equal(s.seen[0]!.headers['x-city'], 'Z\u00fcrich');
  assert.equal(s.seen[0]!.headers['x-tab'], 'a\tb');
});

// ---- abort ----

test('abort() mid-response: onResponseError(reason) once, the connection is destroyed', async (t) => {
  const s = await rawServer((socket, all) => {
    if (all.endsWith('\r\n\r\n')) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nsome');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const reason = new Error('client went away');
  const r = new Recorder();
  r.onData = (c) => {
    c.abort(reason);
    c.abort(new Error('twice'));
  };
  pool.dispatch(options(), r);
  await r.finished();
  assert.deepEqual(r.events, ['start', 'response 200', 'data', 'error']);
  assert.equal(r.error, reason);
  assert.equal(r.controller!.aborted, true);
  await until(() => pool.size === 0, 'the connection to close');
  assert.equal(s.sockets[0]!.destroyed || s.sockets[0]!.readableEnded, true);
});

test('abort() in onRequestStart: nothing is written and the connection stays usable', async (t) => {
  const s = await rawServer((socket, all) => {
    if (all.endsWith('\r\n\r\n')) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n');
  });
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  await send(pool);
  const reason = new Error('gone');
  const r = new Recorder();
  r.onStart = (c) => c.abort(reason);
  pool.dispatch(options({ path: '/never' }), r);
  await r.finished();
  assert.deepEqual(r.events, ['start', 'error']);
  assert.equal(r.error, reason);
  assert.equal(pool.idleCount, 1);
  await send(pool, { path: '/next' });
  assert.equal(s.sockets.length, 1);
  assert.ok(!s.received[0]!.includes('/never'));
});

test('a request body that fails or closes before its end fails the request and destroys the connection', async (t) => {
  const s = await rawServer(() => {});
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const failing = new PassThrough();
  const r = new Recorder();
  pool.dispatch(options({ method: 'POST', body: failing }), r);
  await until(() => s.received[0] !== undefined, 'the head at the pod');
  const boom = Object.assign(new Error('client reset'), { code: 'ECONNRESET' });
  failing.destroy(boom);
  await r.finished();
  assert.deepEqual(r.events, ['start', 'error']);
  assert.equal(r.error, boom);

  const closing = new PassThrough();
  const r2 = new Recorder();
  pool.dispatch(options({ method: 'POST', body: closing }), r2);
  await until(() => s.received[1] !== undefined, 'the second head');
  closing.destroy();
  await r2.finished();
  assert.equal(r2.error?.code, 'UND_ERR_ABORTED');
  await until(() => pool.size === 0, 'both connections closed');
});

test('a body untouched while connecting: a refused connection leaves it whole for another pod', async (t) => {
  const pool = makePool(await closedPort());
  const s = await nodeServer((_req, res, seen) => res.end(seen.body));
  const other = makePool(s.port);
  t.after(() => Promise.all([pool.destroy(), other.destroy()]).then(() => s.close()));
  const body = new PassThrough();
  body.end('the body');
  const refused = await send(pool, { method: 'POST', body });
  assert.equal(refused.error?.code, 'ECONNREFUSED');
  assert.equal(body.destroyed, false);
  assert.equal((await send(other, { method: 'POST', body })).body, 'the body');
});

test('a body that fails while the connection is being made fails the request at once', async (t) => {
  const s = await rawServer(() => {}); // TLS handshake never answered: connecting for ever
  const pool = makePool(s.port, { connectTimeout: 5_000, tls: { rejectUnauthorized: true } });
  t.after(() => pool.destroy().then(() => s.close()));
  const body = new PassThrough();
  const r = new Recorder();
  pool.dispatch(options({ method: 'POST', body, servername: 'x.svc' }), r);
  await until(() => s.sockets.length === 1, 'the connection attempt');
  const boom = new Error('client gone');
  body.destroy(boom);
  await r.finished();
  assert.deepEqual(r.events, ['error']);
  assert.equal(r.error, boom);
  // Sending an already destroyed body fails at once too.
  const again = await send(pool, { method: 'POST', body });
  assert.equal(again.error, boom);
});

test('a body error that comes after the request was aborted does not go unheard', async (t) => {
  const s = await rawServer(() => {});
  const pool = makePool(s.port);
  t.after(() => pool.destroy().then(() => s.close()));
  const body = new PassThrough();
  const r = new Recorder();
  pool.dispatch(options({ method: 'POST', body }), r);
  await until(() => s.received.length === 1, 'the head at the pod');
  // As the proxy's server does when a client leaves mid-body: the body is destroyed
  // with an error (emitted on the next tick) and the request aborted right after.
  const reason = new Error('client went away');
  body.destroy(Object.assign(new Error('client closed mid-body'), { code: 'ECONNRESET' }));
  r.controller!.abort(reason);
  await r.finished();
  assert.equal(r.error, reason);
  await delay(20); // an unheard 'error' would fail this test as an uncaught exception
});

// ---- closing ----

test('close(): refuses new requests, closes idle connections now and busy ones after their response', async (t) => {
  const hold: (() => void)[] = [];
  const s = await nodeServer((req, res) => {
    if (req.url === '/slow') hold.push(() => res.end('slow'));
    else res.end('fast');
  });
  t.after(() => s.close());
  const pool = makePool(s.port);
  await send(pool);
  const slow = send(pool, { path: '/slow' });
  const fast = send(pool);
  await until(() => hold.length === 1 && s.seen.length === 3, 'both requests at the server');
  await fast;
  assert.equal(pool.size, 2);
  let closed = false;
  const closing = pool.close().then(() => (closed = true));
  await until(() => pool.size === 1, 'the idle connection to close');
  const refused = await send(pool);
  assert.equal(refused.error?.code, 'UND_ERR_CLOSED');
  assert.equal(closed, false);
  hold[0]!();
  assert.equal((await slow).body, 'slow');
  await closing;
  assert.equal(pool.size, 0);
});

test('destroy(): requests in flight fail with UND_ERR_DESTROYED', async (t) => {
  const s = await rawServer(() => {});
  t.after(() => s.close());
  const pool = makePool(s.port);
  const r = new Recorder();
  pool.dispatch(options(), r);
  await until(() => s.received.length === 1, 'the request at the pod');
  await pool.destroy();
  await r.finished();
  assert.equal(r.error?.code, 'UND_ERR_DESTROYED');
  assert.equal((await send(pool)).error?.code, 'UND_ERR_DESTROYED');
});

// ---- TLS ----

test('TLS: verified with the given CA and server name, ALPN http/1.1, connections reused; wrong CA or name refused before sending', async (t) => {
  const pki = await createTestPki();
  const leaf = await pki.issue('web.shop.svc');
  let alpn: string | false | null = null;
  const server = https.createServer({ cert: leaf.cert, key: leaf.key, ALPNProtocols: ['http/1.1'] });
  server.on('secureConnection', (socket) => (alpn = socket.alpnProtocol));
  const s = await nodeServer((req, res) => res.end(`secure ${req.url}`), server);
  t.after(() => s.close());

  const pool = makePool(s.port, { tls: { ca: pki.ca, rejectUnauthorized: true } });
  t.after(() => pool.destroy());
  const r = await send(pool, { path: '/one', servername: 'web.shop.svc' });
  assert.equal(r.body, 'secure /one');
  assert.equal(alpn, 'http/1.1');
  assert.equal((await send(pool, { path: '/two', servername: 'web.shop.svc' })).body, 'secure /two');
  assert.equal(s.connections, 1);

  // The pool's own server name serves requests that name none.
  const named = makePool(s.port, { tls: { ca: pki.ca, rejectUnauthorized: true, servername: 'web.shop.svc' } });
  t.after(() => named.destroy());
  assert.equal((await send(named)).status, 200);

  const wrongName = await send(pool, { servername: 'other.shop.svc' });
  assert.deepEqual(wrongName.events, ['error']);
  assert.equal(wrongName.error?.code, 'ERR_TLS_CERT_ALTNAME_INVALID');

  const otherPki = await createTestPki();
  const wrongCa = makePool(s.port, { tls: { ca: otherPki.ca, rejectUnauthorized: true } });
  t.after(() => wrongCa.destroy());
  const refused = await send(wrongCa, { servername: 'web.shop.svc' });
  assert.deepEqual(refused.events, ['error']);
  assert.ok(refused.error?.code, 'a TLS error code');

  const insecure = makePool(s.port, { tls: { rejectUnauthorized: false } });
  t.after(() => insecure.destroy());
  assert.equal((await send(insecure, { servername: 'anything.example' })).status, 200);
});

test('TLS: a handshake that never completes is a connect timeout', async (t) => {
  const s = await rawServer(() => {}); // accepts TCP, never answers the ClientHello
  const pool = makePool(s.port, { connectTimeout: 200, tls: { rejectUnauthorized: true } });
  t.after(() => pool.destroy().then(() => s.close()));
  const r = await send(pool, { servername: 'web.shop.svc' });
  assert.deepEqual(r.events, ['error']);
  assert.equal(r.error?.code, 'UND_ERR_CONNECT_TIMEOUT');
});
