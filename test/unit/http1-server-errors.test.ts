// portico's own HTTP/1.1 server (src/http1): bad input from untrusted clients (400, 431,
// request smuggling shapes that llhttp in strict mode refuses) and the client timeouts
// (headers, whole request, idle keep-alive), as a client sees them on the wire.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Http1Request } from '../../src/http1/request.ts';
import { delay, echoHandler, get, header, RawClient, readBody, serve, type Running } from './http1-server-support.ts';

/** Sends `data`, expects one answer with `status`, then the end of the connection. */
async function expectRejected(s: Running, data: string | Buffer, status: number): Promise<void> {
  const c = await RawClient.connect(s.port);
  try {
    c.socket.on('error', () => {});
    c.write(data);
    const res = await c.readResponse();
    assert.equal(res.status, status, `answer to ${JSON.stringify(data.toString().slice(0, 80))}`);
    assert.equal(header(res, 'connection'), 'close');
    assert.ok(await c.waitEnd(), 'the connection is closed');
    assert.equal(c.pending.length, 0, 'nothing after the answer');
  } finally {
    c.destroy();
  }
}

/** The server still answers a plain request on a new connection. */
async function stillServes(s: Running): Promise<void> {
  const c = await RawClient.connect(s.port);
  try {
    c.write(get('/alive'));
    const res = await c.readResponse();
    assert.equal(res.status, 200);
  } finally {
    c.destroy();
  }
}

test('a garbage request line: 400 and close; the server keeps serving', async (t) => {
  const seen: string[] = [];
  const s = await serve((req, res) => {
    seen.push(req.url);
    echoHandler(req, res);
  });
  t.after(() => s.close());
  const errors: string[] = [];
  s.http1.onClientError = (err) => errors.push((err as Error & { code: string }).code);
  for (const line of [
    'HELLO\r\n\r\n',
    'GET\r\n\r\n',
    'GET / HTTP/1.1 extra\r\nHost: test\r\n\r\n',
    'GET / HTTP/1.2\r\nHost: test\r\n\r\n',
    'GET / FTP/1.1\r\nHost: test\r\n\r\n',
    'G@T / HTTP/1.1\r\nHost: test\r\n\r\n',
    '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03', // a TLS ClientHello on the plain port
    'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
  ]) {
    await expectRejected(s, Buffer.from(line, 'latin1'), 400);
  }
  assert.equal(errors.length, 8, `onClientError for each: ${errors.join(',')}`);
  assert.deepEqual(seen, [], 'no handler saw any of them');
  await stillServes(s);
});

test('malformed heads: 400 (header syntax, line endings, NUL, obs-fold)', async (t) => {
  const s = await serve(echoHandler);
  t.after(() => s.close());
  for (const head of [
    'GET / HTTP/1.1\r\nHost : test\r\n\r\n', // whitespace before the colon (RFC 9112 5.1)
    'GET / HTTP/1.1\r\nHost: test\r\nX-A: one\r\n two\r\n\r\n', // obs-fold
    'GET / HTTP/1.1\nHost: test\n\n', // bare LF
    'GET / HTTP/1.1\r\nHost: test\r\nX: a\0b\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: test\r\nBad Name: x\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: test\r\n: empty-name\r\n\r\n',
    'GET /a b HTTP/1.1\r\nHost: test\r\n\r\n',
  ]) {
    await expectRejected(s, head, 400);
  }
  await stillServes(s);
});

test('request smuggling shapes: CL+TE, duplicate or bad Content-Length, bad Transfer-Encoding → 400', async (t) => {
  const seen: string[] = [];
  const s = await serve((req, res) => {
    seen.push(req.url);
    echoHandler(req, res);
  });
  t.after(() => s.close());
  for (const head of [
    'POST /clte HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    'POST /tecl HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n',
    'POST /dup HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello',
    'POST /dup2 HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!',
    'POST /list HTTP/1.1\r\nHost: test\r\nContent-Length: 5, 5\r\n\r\nhello',
    'POST /neg HTTP/1.1\r\nHost: test\r\nContent-Length: -1\r\n\r\n',
    'POST /plus HTTP/1.1\r\nHost: test\r\nContent-Length: +5\r\n\r\nhello',
    'POST /hex HTTP/1.1\r\nHost: test\r\nContent-Length: 0x5\r\n\r\nhello',
    'POST /te HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n',
    'POST /te2 HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: gzip\r\n\r\n',
    'POST /te3 HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n0\r\n\r\n',
  ]) {
    await expectRejected(s, head, 400);
  }
  assert.deepEqual(seen, []);
  await stillServes(s);
});

test('a transfer coding before chunked (gzip, chunked; or over two header lines) → 501 and close, never passed on', async (t) => {
  const seen: string[] = [];
  const s = await serve((req, res) => {
    seen.push(req.url);
    echoHandler(req, res);
  });
  t.after(() => s.close());
  await expectRejected(s, 'POST /gz HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n', 501);
  await expectRejected(s, 'POST /gz2 HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n', 501);
  assert.deepEqual(seen, []);
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write('POST /plain HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: Chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n');
  assert.equal((await c.readResponse()).status, 200, 'chunked alone is fine, in any case');
});

test('Host: none in HTTP/1.1, or two → 400 and close; HTTP/1.0 without Host is served', async (t) => {
  const seen: string[] = [];
  const s = await serve((req, res) => {
    seen.push(req.url);
    echoHandler(req, res);
  });
  t.after(() => s.close());
  await expectRejected(s, 'GET /none HTTP/1.1\r\n\r\n', 400);
  await expectRejected(s, 'GET /two HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', 400);
  await expectRejected(s, 'GET /ws HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n', 400);
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write('GET /old HTTP/1.0\r\n\r\n');
  assert.equal((await c.readResponse()).body.toString(), 'GET /old');
  assert.deepEqual(seen, ['/old']);
});

test('a header block over 16 KiB → 431 and close, one big header or many', async (t) => {
  const s = await serve(echoHandler);
  t.after(() => s.close());
  await expectRejected(s, `GET / HTTP/1.1\r\nHost: test\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`, 431);
  let many = 'GET / HTTP/1.1\r\nHost: test\r\n';
  for (let i = 0; i < 400; i++) many += `X-H${i}: ${'v'.repeat(40)}\r\n`;
  await expectRejected(s, many + '\r\n', 431);
  // The request line alone over 8 KiB: 414, as nginx answers.
  await expectRejected(s, `GET /${'u'.repeat(17 * 1024)} HTTP/1.1\r\nHost: test\r\n\r\n`, 414);
  await expectRejected(s, `GET /${'u'.repeat(9 * 1024)} HTTP/1.1\r\nHost: test\r\nX-Big: ${'a'.repeat(8 * 1024)}\r\n\r\n`, 414);
  // Sent in pieces, as a slow client would.
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.socket.on('error', () => {});
  c.write('GET / HTTP/1.1\r\nHost: test\r\n');
  for (let i = 0; i < 20; i++) c.write(`X-Piece-${i}: ${'p'.repeat(1000)}\r\n`);
  assert.equal((await c.readResponse()).status, 431);
  assert.ok(await c.waitEnd());
  await stillServes(s);
});

test('just under the limits: a 12 KiB header, 100 headers (they come in pieces from the parser), a long URL', async (t) => {
  let last: Http1Request | undefined;
  const s = await serve((req, res) => {
    last = req;
    res.end(`${req.rawHeaders.length / 2} ${req.url.length}`);
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(`GET / HTTP/1.1\r\nHost: test\r\nX-Big: ${'a'.repeat(12 * 1024)}\r\n\r\n`);
  assert.equal((await c.readResponse()).body.toString(), '2 1');
  assert.equal(last!.header('x-big')!.length, 12 * 1024);
  let many = 'GET /many HTTP/1.1\r\nHost: test\r\n';
  for (let i = 0; i < 100; i++) many += `X-H${i}: value-${i}\r\n`;
  c.write(many + '\r\n');
  assert.equal((await c.readResponse()).body.toString(), '101 5');
  assert.equal(last!.header('x-h99'), 'value-99');
  assert.equal(last!.rawHeaders[2 * 100], 'X-H99');
  const url = `/${'u'.repeat(8000)}?q=${'q'.repeat(4000)}`;
  c.write(get(url));
  assert.equal((await c.readResponse()).body.toString(), `1 ${url.length}`);
  assert.equal(last!.url, url);
});

test('maxHeaders: a head with more header lines than the limit is refused with 431, never passed on with lines dropped', async (t) => {
  const seen: number[] = [];
  const s = await serve(
    (req, res) => {
      seen.push(req.rawHeaders.length / 2);
      res.end('ok');
    },
    { maxHeaders: 10 },
  );
  t.after(() => s.close());
  const refused: string[] = [];
  s.http1.onRefused = (reason) => refused.push(reason);
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  let head = 'GET / HTTP/1.1\r\nHost: test\r\n';
  for (let i = 0; i < 5; i++) head += `X-H${i}: ${i}\r\n`;
  c.write(head + '\r\n');
  assert.equal((await c.readResponse()).status, 200);
  assert.deepEqual(seen, [6]);
  // Past the limit, the framing header comes last: dropped, the body would be read as the next request.
  for (const n of [9, 50, 300]) {
    let big = 'POST / HTTP/1.1\r\nHost: test\r\n';
    for (let i = 0; i < n; i++) big += `X-H${i}: ${i}\r\n`;
    await expectRejected(s, big + 'Content-Length: 5\r\n\r\nhello', 431);
  }
  assert.deepEqual(seen, [6], 'no handler saw them');
  assert.deepEqual(refused, ['too_many_headers', 'too_many_headers', 'too_many_headers']);
  await stillServes(s);
});

test('request lines the server does not serve: 505 for another HTTP version, 400 without a version, 501 for an unknown method', async (t) => {
  const seen: string[] = [];
  const s = await serve((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.end('ok');
  });
  t.after(() => s.close());
  const refused: string[] = [];
  s.http1.onRefused = (reason) => refused.push(reason);
  await expectRejected(s, 'GET / HTTP/2.0\r\nHost: test\r\n\r\n', 505);
  await expectRejected(s, 'GET / HTTP/3.0\r\nHost: test\r\n\r\n', 505);
  await expectRejected(s, 'GET /\r\n\r\n', 400);
  await expectRejected(s, 'FROB / HTTP/1.1\r\nHost: test\r\n\r\n', 501);
  await expectRejected(s, 'POST / HTTP/1.0\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n', 400);
  assert.deepEqual(seen, []);
  assert.deepEqual(refused, ['http_version_not_supported', 'http_version_not_supported', 'no_http_version', 'unknown_method', 'transfer_encoding_in_http10']);
  // Registered methods that llhttp knows are served (and proxied) like any other.
  for (const method of ['PURGE', 'MKCALENDAR', 'PROPFIND', 'LINK', 'QUERY']) {
    const c = await RawClient.connect(s.port);
    c.write(`${method} /x HTTP/1.1\r\nHost: test\r\n\r\n`);
    assert.equal((await c.readResponse()).status, 200, method);
    c.destroy();
  }
  assert.deepEqual(seen, ['PURGE /x', 'MKCALENDAR /x', 'PROPFIND /x', 'LINK /x', 'QUERY /x']);
});

test('a bad chunk size before the answer started: 400, not a silent close', async (t) => {
  const s = await serve(async (req, res) => {
    await readBody(req).catch(() => {});
    if (!res.destroyed) res.end('read');
  });
  t.after(() => s.close());
  await expectRejected(s, 'POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFFFF\r\nhello\r\n0\r\n\r\n', 400);
  await stillServes(s);
});

test('a bad chunk mid-body while the handler runs: the connection is cut, the body stream errors', async (t) => {
  const errors: string[] = [];
  const s = await serve(async (req, res) => {
    try {
      await readBody(req);
      res.end('read');
    } catch (err) {
      errors.push((err as Error & { code: string }).code);
      res.destroy();
    }
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.socket.on('error', () => {});
  c.write('POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n');
  await delay(30);
  c.write('zz\r\n');
  assert.ok(await c.waitEnd());
  await c.until(() => errors.length === 1, 'the handler to see the error');
  assert.deepEqual(errors, ['ECONNRESET']);
  await stillServes(s);
});

test('bytes after a Connection: close request are ignored; its answer is still sent', async (t) => {
  const seen: string[] = [];
  const s = await serve(async (req, res) => {
    seen.push(req.url);
    await delay(30);
    res.end(`answer ${req.url}`);
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/last', 'Connection: close\r\n') + get('/ignored'));
  const res = await c.readResponse();
  assert.equal(res.body.toString(), 'answer /last');
  assert.equal(header(res, 'connection'), 'close');
  assert.ok(await c.waitEnd());
  assert.equal(c.pending.length, 0);
  assert.deepEqual(seen, ['/last']);
});

test('random bytes and cut requests on many connections: nothing crashes, the server keeps serving', async (t) => {
  const s = await serve(async (req, res) => {
    try {
      await readBody(req);
    } catch {
      // the client went away
    }
    res.end('ok');
  });
  t.after(() => s.close());
  const inputs: Buffer[] = [];
  for (let i = 0; i < 40; i++) inputs.push(randomBytes(1 + (i * 97) % 3000));
  const valid = Buffer.from(get('/x') + 'POST /y HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n');
  for (let cut = 1; cut < valid.length; cut += 7) {
    inputs.push(valid.subarray(0, cut)); // cut short
    const mangled = Buffer.from(valid);
    mangled[cut] = (mangled[cut]! + 1 + (cut % 200)) & 0xff; // one byte wrong
    inputs.push(mangled);
  }
  const clients = await Promise.all(inputs.map(() => RawClient.connect(s.port)));
  for (const [i, c] of clients.entries()) {
    c.socket.on('error', () => {});
    if (i % 2 === 0) c.end(inputs[i]);
    else c.write(inputs[i]!);
  }
  await delay(200);
  for (const c of clients) c.destroy();
  await stillServes(s);
  const deadline = Date.now() + 5000;
  while (s.http1.size > 0 && Date.now() < deadline) await delay(20);
  assert.equal(s.http1.size, 0, 'every connection was cleaned up');
});

// ---- timeouts (small values; no upper bound tighter than a few seconds) ----

const TIMEOUTS = { headerTimeout: 300, requestTimeout: 600, idleTimeout: 400 };

test('headers trickled too slowly → 408 and close', async (t) => {
  const seen: string[] = [];
  const s = await serve((req, res) => {
    seen.push(req.url);
    res.end();
  }, TIMEOUTS);
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.socket.on('error', () => {});
  const started = Date.now();
  const head = 'GET /slow HTTP/1.1\r\nHost: test\r\nX-A: b\r\n\r\n';
  let i = 0;
  const timer = setInterval(() => {
    if (i < head.length - 2 && !c.ended && !c.closed) c.write(head[i++]!);
  }, 50);
  t.after(() => clearInterval(timer));
  const res = await c.readResponse();
  const elapsed = Date.now() - started;
  assert.equal(res.status, 408);
  assert.equal(header(res, 'connection'), 'close');
  assert.ok(await c.waitEnd());
  assert.ok(elapsed >= 250 && elapsed < 5000, `after ${elapsed} ms`);
  assert.deepEqual(seen, []);
});

test('the header timeout applies to the next request on a keep-alive connection too', async (t) => {
  const s = await serve(echoHandler, TIMEOUTS);
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.socket.on('error', () => {});
  c.write(get('/first'));
  assert.equal((await c.readResponse()).status, 200);
  c.write('GET /second HTTP/1.1\r\nHo');
  const started = Date.now();
  const res = await c.readResponse();
  assert.equal(res.status, 408);
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 250 && elapsed < 5000, `after ${elapsed} ms`);
});

test('an idle keep-alive connection is closed after idleTimeout; one that keeps asking is not', async (t) => {
  const s = await serve(echoHandler, TIMEOUTS);
  t.after(() => s.close());
  const busy = await RawClient.connect(s.port);
  t.after(() => busy.destroy());
  const idle = await RawClient.connect(s.port);
  t.after(() => idle.destroy());
  idle.write(get('/'));
  await idle.readResponse();
  const started = Date.now();
  // `busy` asks every 100 ms (well under the idle timeout) for about a second.
  for (let i = 0; i < 10; i++) {
    busy.write(get(`/${i}`));
    assert.equal((await busy.readResponse()).body.toString(), `GET /${i}`);
    await delay(100);
  }
  assert.ok(idle.ended || idle.closed, 'the idle connection was closed');
  assert.equal(idle.pending.length, 0, 'without an answer');
  assert.equal(busy.ended || busy.closed, false, 'the busy one was not');
  assert.ok(Date.now() - started < 5000);
  // A connection that never sends a byte is closed too.
  const silent = await RawClient.connect(s.port);
  t.after(() => silent.destroy());
  const t0 = Date.now();
  assert.ok(await silent.waitEnd());
  assert.ok(Date.now() - t0 >= 250);
});

/**
 * A server (TIMEOUTS) whose handler reads each request's body before answering, and
 * records the code of each body that fails; a GET is answered at once ("got").
 */
async function serveBodies(t: TestContext): Promise<{ port: number; errors: string[]; closed: () => number }> {
  const errors: string[] = [];
  let closed = 0;
  const s = await serve(async (req, res) => {
    res.on('close', () => closed++);
    if (req.method === 'GET') return void res.end('got');
    try {
      await readBody(req);
      res.end('got it');
    } catch (err) {
      errors.push((err as Error & { code: string }).code);
    }
  }, TIMEOUTS);
  t.after(() => s.close());
  return { port: s.port, errors, closed: () => closed };
}

test('requestTimeout: a body that stalls cuts the connection; the handler sees the body fail', async (t) => {
  const s = await serveBodies(t);
  const errors = s.errors;
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.socket.on('error', () => {});
  const started = Date.now();
  c.write('POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\nonly a part');
  assert.ok(await c.waitEnd());
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 500 && elapsed < 5000, `after ${elapsed} ms`);
  await c.until(() => errors.length === 1 && s.closed() === 1, 'the handler to see it');
  assert.deepEqual(errors, ['ECONNRESET']);
});

test('requestTimeout also covers the body of a pipelined request that started later', async (t) => {
  const errors: string[] = [];
  const s = await serve(async (req, res) => {
    if (req.url === '/first') {
      await delay(100);
      res.end('first');
      return;
    }
    try {
      await readBody(req);
      res.end('got it');
    } catch (err) {
      errors.push((err as Error & { code: string }).code);
    }
  }, TIMEOUTS);
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.socket.on('error', () => {});
  c.write(get('/first') + 'POST /second HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\npart');
  assert.equal((await c.readResponse()).body.toString(), 'first');
  assert.ok(await c.waitEnd(), 'the stalled body is timed out');
  await c.until(() => errors.length === 1, 'the handler to see it');
});

test('blank lines between requests start no header timeout: the connection is closed by the idle timeout, silently', async (t) => {
  const s = await serve(echoHandler, TIMEOUTS);
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/a'));
  assert.equal((await c.readResponse()).status, 200);
  // A stray CRLF, as old clients sent after a body (RFC 9112 2.2 lets a server ignore it).
  c.write('\r\n');
  await delay(350); // past the header timeout (300), within the idle timeout (400)
  assert.equal(c.ended || c.closed, false, 'not closed by the header timeout');
  c.write(get('/b'));
  assert.equal((await c.readResponse()).body.toString(), 'GET /b');
  c.write('\r\n');
  const started = Date.now();
  assert.ok(await c.waitEnd());
  assert.ok(Date.now() - started >= 350, 'closed by the idle timeout');
  assert.equal(c.pending.length, 0, 'without a 408');
});

test('a POST after a GET on a keep-alive connection: its stalled body is cut by the request timeout', async (t) => {
  const s = await serveBodies(t);
  const errors = s.errors;
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.socket.on('error', () => {});
  c.write(get('/first'));
  assert.equal((await c.readResponse()).body.toString(), 'got');
  const started = Date.now();
  c.write('POST /second HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\npart');
  assert.ok(await c.waitEnd(), 'the stalled body is timed out');
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 500 && elapsed < 5000, `after ${elapsed} ms`);
  await c.until(() => errors.length === 1, 'the handler to see it');
});

test('a slow answer to a bodiless request, first on its connection or later, is not cut by any client timeout', async (t) => {
  const s = await serve(async (req, res) => {
    await delay(800); // longer than every client timeout: answering has no limit
    res.end(req.url);
  }, TIMEOUTS);
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/first'));
  assert.equal((await c.readResponse()).body.toString(), '/first');
  c.write('POST /body HTTP/1.1\r\nHost: test\r\nContent-Length: 2\r\n\r\nab');
  assert.equal((await c.readResponse()).body.toString(), '/body');
  c.write(get('/after-a-body'));
  assert.equal((await c.readResponse()).body.toString(), '/after-a-body');
  assert.equal(c.ended || c.closed, false);
});

test('a steady body within the request timeout, and a slow handler, are not cut', async (t) => {
  const s = await serve(async (req, res) => {
    const body = await readBody(req);
    await delay(800); // longer than every client timeout: answering has no limit here
    res.end(`${body.length}`);
  }, TIMEOUTS);
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write('POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\n');
  for (const ch of 'abcde') {
    await delay(60);
    c.write(ch);
  }
  assert.equal((await c.readResponse()).body.toString(), '5');
  c.write(get('/'));
  assert.equal((await c.readResponse()).body.toString(), '0');
});

test('idleTimeout 0 (--client-idle-timeout 0) is no keep-alive: each answer says Connection: close and the connection ends; the wait for a first request is the header timeout', async (t) => {
  const s = await serve(echoHandler, { ...TIMEOUTS, idleTimeout: 0 });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  // A client that connects and takes its time (under the header timeout) is still answered.
  await delay(150);
  c.write(get('/only') + get('/pipelined'));
  const res = await c.readResponse();
  assert.equal(res.status, 200);
  assert.equal(res.body.toString(), 'GET /only');
  assert.equal(header(res, 'connection'), 'close');
  assert.ok(await c.waitEnd(), 'the connection ends after the one answer');
  assert.equal(c.pending.length, 0, 'the pipelined request is not answered');
  // A connection that sends nothing is closed after the header timeout, not at once.
  const silent = await RawClient.connect(s.port);
  t.after(() => silent.destroy());
  const t0 = Date.now();
  assert.ok(await silent.waitEnd());
  assert.ok(Date.now() - t0 >= 250, `closed after ${Date.now() - t0} ms`);
});
