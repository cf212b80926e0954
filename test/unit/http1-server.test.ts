// portico's own HTTP/1.1 server (src/http1): framing, keep-alive, HTTP/1.0, pipelining,
// half-close, upgrades and drain, as a client sees them on the wire. Request bodies and
// response back-pressure: http1-server-body.test.ts; bad input and timeouts:
// http1-server-errors.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { Http1Request } from '../../src/http1/request.ts';
import type { Http1Response } from '../../src/http1/response.ts';
import { delay, echoHandler, get, header, headerCount, post, RawClient, readBody, serve } from './http1-server-support.ts';

test('GET keep-alive: two requests on one connection, Date, Content-Length from end(body)', async (t) => {
  const s = await serve(echoHandler);
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  for (const path of ['/one', '/two']) {
    c.write(get(path));
    const res = await c.readResponse();
    assert.equal(res.status, 200);
    assert.equal(res.reason, 'OK');
    assert.equal(res.framing, 'length');
    assert.equal(header(res, 'content-length'), String(`GET ${path}`.length));
    assert.equal(res.body.toString(), `GET ${path}`);
    assert.equal(header(res, 'connection'), undefined);
    const date = header(res, 'date');
    assert.ok(date !== undefined && !Number.isNaN(Date.parse(date)), `Date header: ${date}`);
    assert.ok(Math.abs(Date.parse(date) - Date.now()) < 5000);
    assert.equal(headerCount(res, 'date'), 1);
  }
  assert.equal(c.pending.length, 0, 'nothing after the responses');
  assert.equal(c.ended, false, 'the connection stays open');
  assert.equal(s.http1.size, 1);
});

test("a reason phrase given to writeHead is written as given, the standard one or not; a dirty one gives way to the standard", async (t) => {
  const reasons: [number, string][] = [
    [200, 'OK'],
    [200, 'Fine'],
    [404, 'OK'],
    [201, ''],
    [503, 'Busy\r\nx-injected: 1'],
  ];
  let next = 0;
  const s = await serve((_req, res) => {
    const [status, reason] = reasons[next++]!;
    res.writeHead(status, reason, ['content-type', 'text/plain']);
    res.end('x');
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  const expected: [number, string][] = [
    [200, 'OK'],
    [200, 'Fine'],
    [404, 'OK'],
    [201, 'Created'],
    [503, 'Service Unavailable'],
  ];
  for (const [status, reason] of expected) {
    c.write(get('/'));
    const res = await c.readResponse();
    assert.equal(res.status, status);
    assert.equal(res.reason, reason);
    assert.equal(header(res, 'x-injected'), undefined);
  }
});

test('a multi-byte string body gets its byte length', async (t) => {
  const s = await serve((_req, res) => res.end('héllo €'));
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/'));
  const res = await c.readResponse();
  assert.equal(header(res, 'content-length'), String(Buffer.byteLength('héllo €')));
  assert.equal(res.body.toString('utf8'), 'héllo €');
});

test('a header that would split the head (CR, LF, a char above U+00FF, a bad name) is dropped, the rest served', async (t) => {
  const s = await serve((_req, res) => {
    res.writeHead(200, ['x-ok', 'yes', 'x-crlf', 'a\r\nx-injected: 1', 'x-wide', 'a\u010ax-injected: 2', 'bad name', 'v', 'x-after', 'fine']);
    res.end('body');
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/'));
  const res = await c.readResponse();
  assert.equal(res.status, 200);
  assert.equal(header(res, 'x-ok'), 'yes');
  assert.equal(header(res, 'x-after'), 'fine');
  for (const name of ['x-crlf', 'x-wide', 'x-injected', 'bad name']) assert.equal(header(res, name), undefined, name);
  assert.equal(res.body.toString(), 'body');
});

test('write() + end() without a length: chunked, framed exactly', async (t) => {
  const s = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('hello ');
    res.write(Buffer.from('wörld'));
    res.write('');
    res.end('!');
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  for (let i = 0; i < 2; i++) {
    c.write(get('/'));
    const res = await c.readResponse();
    assert.equal(res.status, 200);
    assert.equal(res.framing, 'chunked');
    assert.equal(header(res, 'content-length'), undefined);
    assert.equal(res.body.toString(), 'hello wörld!');
    // No empty chunk in the middle (it would end the body), one last chunk.
    assert.equal(res.rawBody.toString('latin1'), `6\r\nhello \r\n6\r\n${Buffer.from('wörld').toString('latin1')}\r\n1\r\n!\r\n0\r\n\r\n`);
  }
  assert.equal(c.pending.length, 0);
});

test('write() of a body then end() with nothing: last chunk only', async (t) => {
  const s = await serve((_req, res) => {
    res.write('abc');
    setTimeout(() => res.end(), 10);
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/'));
  const res = await c.readResponse();
  assert.equal(res.rawBody.toString(), '3\r\nabc\r\n0\r\n\r\n');
  c.write(get('/'));
  assert.equal((await c.readResponse()).body.toString(), 'abc');
});

test('a handler-set Content-Length is used as is (no chunking, no second length)', async (t) => {
  const s = await serve((_req, res) => {
    res.writeHead(200, ['Content-Length', '10']);
    res.write('01234');
    setTimeout(() => res.end('56789'), 10);
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/'));
  const res = await c.readResponse();
  assert.equal(res.framing, 'length');
  assert.equal(headerCount(res, 'content-length'), 1);
  assert.equal(header(res, 'transfer-encoding'), undefined);
  assert.equal(res.body.toString(), '0123456789');
  c.write(get('/'));
  assert.equal((await c.readResponse()).body.toString(), '0123456789');
  assert.equal(c.pending.length, 0);
});

test('handler-set Transfer-Encoding and Connection headers do not break the framing', async (t) => {
  const s = await serve((_req, res) => {
    res.writeHead(200, ['transfer-encoding', 'chunked', 'connection', 'keep-alive']);
    res.end('xyz');
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/'));
  const res = await c.readResponse();
  assert.equal(res.framing, 'length');
  assert.equal(res.body.toString(), 'xyz');
  assert.equal(header(res, 'connection'), undefined);
});

test('end() with no body at all: Content-Length: 0', async (t) => {
  const s = await serve((_req, res) => {
    res.writeHead(404);
    res.end();
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/'));
  const res = await c.readResponse();
  assert.equal(res.status, 404);
  assert.equal(res.reason, 'Not Found');
  assert.equal(header(res, 'content-length'), '0');
  c.write(get('/'));
  assert.equal((await c.readResponse()).status, 404);
});

test('writeEarlyHints: a 103 before the answer (HTTP/1.1 only); a handler-set Date is not doubled', async (t) => {
  const s = await serve((_req, res) => {
    res.writeEarlyHints({ link: ['</a.css>; rel=preload', '</b.js>; rel=preload'], 'x-bad': 'a\r\nx-injected: 1' });
    res.writeHead(200, ['date', 'Thu, 01 Jan 2026 00:00:00 GMT']);
    res.end('final');
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/'));
  const hints = await c.readResponse();
  assert.equal(hints.status, 103);
  assert.deepEqual(hints.headers, [
    ['link', '</a.css>; rel=preload'],
    ['link', '</b.js>; rel=preload'],
  ]);
  const res = await c.readResponse();
  assert.equal(res.status, 200);
  assert.equal(headerCount(res, 'date'), 1);
  assert.equal(header(res, 'date'), 'Thu, 01 Jan 2026 00:00:00 GMT');
  assert.equal(res.body.toString(), 'final');
  c.write('GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n');
  assert.equal((await c.readResponse()).status, 200, 'no 103 for an HTTP/1.0 client');
});

test('HEAD, 204 and 304: no body bytes on the wire, the connection stays usable', async (t) => {
  const s = await serve((req, res) => {
    if (req.url === '/204') {
      res.writeHead(204);
      res.end('must not be sent');
    } else if (req.url === '/304') {
      res.writeHead(304, ['etag', '"x"']);
      res.write('nope');
      res.end();
    } else if (req.url === '/head-chunked') {
      res.write('no');
      res.end('pe');
    } else if (req.url === '/head-length') {
      res.writeHead(200, ['content-length', '1234']);
      res.end();
    } else {
      res.end('a body of some length');
    }
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());

  c.write('HEAD / HTTP/1.1\r\nHost: test\r\n\r\n');
  let res = await c.readResponse({ head: true });
  assert.equal(res.status, 200);
  assert.equal(header(res, 'transfer-encoding'), undefined);

  c.write('HEAD /head-chunked HTTP/1.1\r\nHost: test\r\n\r\n');
  res = await c.readResponse({ head: true });
  assert.equal(header(res, 'transfer-encoding'), undefined, 'no chunked framing for HEAD');

  c.write('HEAD /head-length HTTP/1.1\r\nHost: test\r\n\r\n');
  res = await c.readResponse({ head: true });
  assert.equal(header(res, 'content-length'), '1234', 'a HEAD answer may give the length of the GET body');

  c.write(get('/204'));
  res = await c.readResponse();
  assert.equal(res.status, 204);
  assert.equal(header(res, 'content-length'), undefined);
  assert.equal(header(res, 'transfer-encoding'), undefined);

  c.write(get('/304'));
  res = await c.readResponse();
  assert.equal(res.status, 304);
  assert.equal(header(res, 'etag'), '"x"');
  assert.equal(header(res, 'transfer-encoding'), undefined);

  // Had any body bytes been sent, they would show up before this status line.
  c.write(get('/after'));
  res = await c.readResponse();
  assert.equal(res.status, 200);
  assert.equal(res.body.toString(), 'a body of some length');
  await delay(50);
  assert.equal(c.pending.length, 0);
});

test('HTTP/1.0: no chunked encoding; the body ends with the connection', async (t) => {
  const s = await serve((_req, res) => {
    res.write('part one, ');
    setTimeout(() => res.end('part two'), 10);
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write('GET / HTTP/1.0\r\n\r\n');
  const res = await c.readResponse();
  assert.equal(res.framing, 'close');
  assert.equal(header(res, 'transfer-encoding'), undefined);
  assert.equal(header(res, 'connection'), 'close');
  assert.equal(res.body.toString(), 'part one, part two');
  assert.ok(c.ended);
});

test('HTTP/1.0 with Connection: keep-alive and a Content-Length answer keeps the connection', async (t) => {
  const s = await serve(echoHandler);
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  for (const path of ['/a', '/b']) {
    c.write(`GET ${path} HTTP/1.0\r\nConnection: keep-alive\r\n\r\n`);
    const res = await c.readResponse();
    assert.equal(res.framing, 'length');
    assert.equal(header(res, 'connection'), 'keep-alive');
    assert.equal(res.body.toString(), `GET ${path}`);
  }
  assert.equal(c.ended, false);
  // Without keep-alive the 1.0 connection closes after the answer.
  c.write('GET /c HTTP/1.0\r\n\r\n');
  const res = await c.readResponse();
  assert.equal(res.body.toString(), 'GET /c');
  assert.equal(header(res, 'connection'), 'close');
  assert.ok(await c.waitEnd());
});

test('HTTP/1.0 keep-alive with a streamed answer: close-delimited, connection: close', async (t) => {
  const s = await serve((_req, res) => {
    res.write('x');
    res.end('y');
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write('GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n');
  const res = await c.readResponse();
  assert.equal(res.framing, 'close');
  assert.equal(header(res, 'connection'), 'close');
  assert.equal(res.body.toString(), 'xy');
});

test('Connection: close from the client: the answer says so and the socket ends', async (t) => {
  const s = await serve(echoHandler);
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/bye', 'Connection: close\r\n'));
  const res = await c.readResponse();
  assert.equal(res.status, 200);
  assert.equal(header(res, 'connection'), 'close');
  assert.equal(res.body.toString(), 'GET /bye');
  assert.ok(await c.waitEnd(), 'the server ends the connection');
  assert.equal(c.pending.length, 0);
});

test('a handler can close the connection (connection: close / shouldKeepAlive = false)', async (t) => {
  const s = await serve((req, res) => {
    if (req.url === '/a') res.writeHead(200, ['Connection', 'close']);
    else res.shouldKeepAlive = false;
    res.end('done');
  });
  t.after(() => s.close());
  for (const path of ['/a', '/b']) {
    const c = await RawClient.connect(s.port);
    t.after(() => c.destroy());
    c.write(get(path));
    const res = await c.readResponse();
    assert.equal(header(res, 'connection'), 'close');
    assert.equal(headerCount(res, 'connection'), 1);
    assert.ok(await c.waitEnd());
  }
});

test('pipelining: three requests in one write, answered in order though the first answers last', async (t) => {
  const order: string[] = [];
  const s = await serve(async (req, res) => {
    order.push(`start ${req.url}`);
    const body = (await readBody(req)).toString();
    if (req.url === '/slow') await delay(150);
    order.push(`end ${req.url}`);
    res.end(`${req.method} ${req.url} [${body}]`);
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/slow') + post('/post', 'payload=1') + get('/fast'));
  const answers = [];
  for (let i = 0; i < 3; i++) answers.push((await c.readResponse()).body.toString());
  assert.deepEqual(answers, ['GET /slow []', 'POST /post [payload=1]', 'GET /fast []']);
  // One at a time, in order: the later handlers wait for the earlier answers.
  assert.deepEqual(order, ['start /slow', 'end /slow', 'start /post', 'end /post', 'start /fast', 'end /fast']);
  c.write(get('/again'));
  assert.equal((await c.readResponse()).body.toString(), 'GET /again []');
});

test('pipelining: a chunked POST among pipelined requests', async (t) => {
  const s = await serve(async (req, res) => {
    const body = (await readBody(req)).toString();
    await delay(req.url === '/1' ? 50 : 0);
    res.end(`${req.url}:${body}`);
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(
    get('/1') +
      'POST /2 HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n' +
      post('/3', 'xyz'),
  );
  const got = [];
  for (let i = 0; i < 3; i++) got.push((await c.readResponse()).body.toString());
  assert.deepEqual(got, ['/1:', '/2:abcde', '/3:xyz']);
});

test('pipelining: a large POST body behind a slow request still arrives (the socket reads again for it)', async (t) => {
  const s = await serve(async (req, res) => {
    if (req.url === '/slow') await delay(100);
    const body = await readBody(req);
    res.end(`${req.url}:${body.length}`);
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  const size = 3 * 1024 * 1024;
  c.write(get('/slow') + `POST /big HTTP/1.1\r\nHost: test\r\nContent-Length: ${size}\r\n\r\n`);
  c.write(Buffer.alloc(size, 'b'));
  assert.equal((await c.readResponse()).body.toString(), '/slow:0');
  assert.equal((await c.readResponse()).body.toString(), `/big:${size}`);
  c.write(get('/after'));
  assert.equal((await c.readResponse()).body.toString(), '/after:0');
});

test('pipelining: many requests behind a slow one, answered synchronously, all arrive in order', async (t) => {
  const s = await serve((req, res) => {
    if (req.url === '/slow') setTimeout(() => res.end('slow'), 50);
    else res.end(req.url);
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  const n = 3000;
  let batch = get('/slow');
  for (let i = 0; i < n; i++) batch += `GET /${i} HTTP/1.1\r\nHost: a\r\n\r\n`;
  c.write(batch);
  assert.equal((await c.readResponse()).body.toString(), 'slow');
  for (let i = 0; i < n; i++) assert.equal((await c.readResponse({ ms: 10_000 })).body.toString(), `/${i}`);
});

test('a client FIN while an answer is pending is the client leaving: the response closes at once', async (t) => {
  let closed!: (destroyed: boolean) => void;
  const sawClose = new Promise<boolean>((resolve) => (closed = resolve));
  const s = await serve((_req: Http1Request, res: Http1Response) => {
    res.on('close', () => closed(res.destroyed));
    setTimeout(() => res.end('too late'), 5_000).unref();
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.end(get('/x'));
  assert.equal(await sawClose, true, 'the response was destroyed, not answered');
  assert.ok(await c.waitEnd(), 'and the connection is closed');
  assert.equal(c.pending.length, 0, 'nothing was written');
});

test('a client that leaves while pipelined requests wait is noticed: the answer in progress closes at once', async (t) => {
  let closed!: (destroyed: boolean) => void;
  const sawClose = new Promise<boolean>((resolve) => (closed = resolve));
  const urls: string[] = [];
  const s = await serve((req: Http1Request, res: Http1Response) => {
    urls.push(req.url);
    res.on('close', () => closed(res.destroyed));
    setTimeout(() => res.end('too late'), 5_000).unref();
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/slow') + get('/queued'));
  await c.until(() => urls.length === 1, 'the first request is being answered');
  await delay(20);
  c.socket.end();
  assert.equal(await sawClose, true, 'the response was destroyed, not left to run');
  assert.deepEqual(urls, ['/slow'], 'the queued request never started');
});

test('client half-close with a synchronous handler', async (t) => {
  const s = await serve(echoHandler);
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.end(post('/p', 'body'));
  assert.equal((await c.readResponse()).body.toString(), 'POST /p');
  assert.ok(await c.waitEnd());
});

test('upgrade: req.upgrade, the bytes after the head in req.upgradeHead, the handler takes the socket', async (t) => {
  let seen: Http1Request | undefined;
  const s = await serve((req: Http1Request, res: Http1Response) => {
    seen = req;
    if (!req.upgrade) {
      res.end('plain');
      return;
    }
    const socket = req.socket;
    socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n');
    if (req.upgradeHead) socket.write(Buffer.concat([Buffer.from('echo:'), req.upgradeHead]));
    socket.on('data', (d: Buffer) => socket.write(Buffer.concat([Buffer.from('echo:'), d])));
    socket.on('end', () => socket.end());
    socket.resume();
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write('GET /ws HTTP/1.1\r\nHost: test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nearly-bytes');
  const head = await c.readResponse();
  assert.equal(head.status, 101);
  assert.equal(seen?.upgrade, true);
  assert.equal(seen?.url, '/ws');
  assert.equal(seen?.upgradeHead?.toString(), 'early-bytes');
  assert.equal((await c.readBytes('echo:early-bytes'.length)).toString(), 'echo:early-bytes');
  // What looks like HTTP is tunnel data now, not a request.
  c.write('GET /not-a-request HTTP/1.1\r\n\r\n');
  assert.equal((await c.readUntil('\r\n\r\n')).toString(), 'echo:GET /not-a-request HTTP/1.1\r\n\r\n');
  c.end();
  assert.ok(await c.waitEnd());
});

test('upgrade without bytes after the head: upgradeHead is undefined', async (t) => {
  let head: Buffer | undefined | null = null;
  const s = await serve((req) => {
    head = req.upgradeHead;
    req.socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: x\r\n\r\n');
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write('GET / HTTP/1.1\r\nHost: test\r\nConnection: upgrade\r\nUpgrade: x\r\n\r\n');
  assert.equal((await c.readResponse()).status, 101);
  assert.equal(head, undefined);
});

test('an upgrade request the handler answers normally closes the connection', async (t) => {
  const s = await serve((_req, res) => {
    res.writeHead(400);
    res.end('no upgrades here');
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write('GET / HTTP/1.1\r\nHost: test\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: test\r\n\r\n');
  const res = await c.readResponse();
  assert.equal(res.status, 400);
  assert.equal(header(res, 'connection'), 'close');
  assert.ok(await c.waitEnd());
  assert.equal(c.pending.length, 0, 'the bytes after the upgrade head were not served as a request');
});

test('CONNECT is not an upgrade; its answer closes the connection, later bytes are not requests', async (t) => {
  const seen: string[] = [];
  const s = await serve((req, res) => {
    seen.push(`${req.method} ${req.url} upgrade=${req.upgrade}`);
    res.writeHead(405, ['allow', 'GET']);
    res.end();
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: test\r\n\r\n');
  const res = await c.readResponse();
  assert.equal(res.status, 405);
  assert.ok(await c.waitEnd(), 'the connection is closed after the answer to CONNECT');
  assert.deepEqual(seen, ['CONNECT example.com:443 upgrade=false']);
  assert.equal(c.pending.length, 0);
});

test('CONNECT with the tunnel bytes in a later packet', async (t) => {
  const seen: string[] = [];
  const s = await serve((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    setTimeout(() => {
      res.writeHead(405);
      res.end();
    }, 50);
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
  await delay(20);
  c.write('GET /smuggled HTTP/1.1\r\nHost: test\r\n\r\n');
  const res = await c.readResponse();
  assert.equal(res.status, 405);
  assert.ok(await c.waitEnd());
  assert.deepEqual(seen, ['CONNECT example.com:443']);
  assert.equal(c.pending.length, 0);
});

test('drain(): idle connections close at once, a busy one finishes its answer then closes', async (t) => {
  let release: (() => void) | undefined;
  const s = await serve((req, res) => {
    if (req.url === '/busy') {
      release = () => res.end('finished');
      return;
    }
    res.end('ok');
  });
  t.after(() => s.close());
  const idle = await RawClient.connect(s.port);
  t.after(() => idle.destroy());
  idle.write(get('/'));
  assert.equal((await idle.readResponse()).status, 200);
  const fresh = await RawClient.connect(s.port); // connected, nothing sent yet
  t.after(() => fresh.destroy());
  const busy = await RawClient.connect(s.port);
  t.after(() => busy.destroy());
  busy.write(get('/busy'));
  await new Promise<void>((resolve) => {
    const check = () => (release ? resolve() : setTimeout(check, 5));
    check();
  });
  assert.equal(s.http1.size, 3);

  s.http1.drain();
  assert.ok(await idle.waitEnd(2000), 'the idle keep-alive connection is closed');
  assert.ok(await fresh.waitEnd(2000), 'a connection that sent nothing is closed');
  assert.equal(busy.ended || busy.closed, false, 'the busy one is still open');
  release!();
  const res = await busy.readResponse();
  assert.equal(res.body.toString(), 'finished');
  assert.equal(header(res, 'connection'), 'close');
  assert.ok(await busy.waitEnd());
  // New connections are refused while draining.
  const late = await RawClient.connect(s.port);
  t.after(() => late.destroy());
  assert.ok(await late.waitEnd());
});

test('node:http and fetch clients interoperate (keep-alive agent, chunked and length bodies)', async (t) => {
  const s = await serve(async (req, res) => {
    const body = await readBody(req);
    if (req.url === '/chunked') {
      res.writeHead(201, ['x-len', String(body.length)]);
      res.write('a');
      res.end('b');
    } else {
      res.end(`${req.method}:${body.length}`);
    }
  });
  t.after(() => s.close());
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  const sockets = new Set<unknown>();
  for (let i = 0; i < 3; i++) {
    const got = await new Promise<{ status: number; body: string; len: string | undefined }>((resolve, reject) => {
      const req = http.request({ port: s.port, host: '127.0.0.1', path: '/chunked', method: 'PUT', agent }, (res) => {
        sockets.add(res.socket);
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body, len: res.headers['x-len'] as string | undefined }));
      });
      req.on('error', reject);
      req.write('12345');
      req.end('678');
    });
    assert.deepEqual(got, { status: 201, body: 'ab', len: '8' });
  }
  assert.equal(sockets.size, 1, 'one keep-alive connection served all three');
  const r = await fetch(`http://127.0.0.1:${s.port}/f`, { method: 'POST', body: 'x'.repeat(100_000) });
  assert.equal(await r.text(), 'POST:100000');
});
