// portico's own HTTP/1.1 server (src/http1): request bodies (Content-Length, chunked,
// 100-continue, back-pressure, answers before the body) and the response side
// (back-pressure, 'drain', 'close'), on raw sockets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import type { Http1Request } from '../../src/http1/request.ts';
import type { Http1Response } from '../../src/http1/response.ts';
import { delay, get, header, post, RawClient, readBody, serve } from './http1-server-support.ts';

function sha(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** A body that is not the same byte over and over (so lost or reordered bytes show). */
function pattern(size: number): Buffer {
  const out = Buffer.alloc(size + 3);
  for (let i = 0; i < size; i += 4) out.writeUInt32BE(i >>> 2, i);
  return out.subarray(0, size);
}

const bodyEcho = async (req: Http1Request, res: Http1Response): Promise<void> => {
  const body = await readBody(req);
  res.end(`${body.length} ${sha(body)}`);
};

test('a Content-Length body arrives intact, in one write or in pieces', async (t) => {
  const s = await serve(bodyEcho);
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  const body = pattern(300_000);
  c.write(`POST / HTTP/1.1\r\nHost: test\r\nContent-Length: ${body.length}\r\n\r\n`);
  c.write(body);
  assert.equal((await c.readResponse()).body.toString(), `${body.length} ${sha(body)}`);
  // Trickled in small pieces, the head split too.
  const small = pattern(1000);
  const whole = Buffer.concat([Buffer.from(`POST / HTTP/1.1\r\nHost: te`), Buffer.from(`st\r\nContent-Length: 1000\r\n\r\n`), small]);
  for (let i = 0; i < whole.length; i += 97) {
    c.write(whole.subarray(i, i + 97));
    await delay(1);
  }
  assert.equal((await c.readResponse()).body.toString(), `1000 ${sha(small)}`);
});

test('a chunked body arrives decoded and intact (extensions and trailers ignored)', async (t) => {
  const s = await serve(bodyEcho);
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  const parts = [pattern(10), pattern(70_000), Buffer.from('tail')];
  let wire = 'POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n';
  c.write(wire);
  for (const [i, part] of parts.entries()) {
    c.write(`${part.length.toString(16)}${i === 0 ? ';ext=1' : ''}\r\n`);
    c.write(part);
    c.write('\r\n');
    await delay(5);
  }
  c.write('0\r\nx-trailer: yes\r\n\r\n');
  const all = Buffer.concat(parts);
  assert.equal((await c.readResponse()).body.toString(), `${all.length} ${sha(all)}`);
  wire = 'POST / HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n';
  c.write(wire);
  assert.equal((await c.readResponse()).body.toString(), `0 ${sha(Buffer.alloc(0))}`);
});

test("a chunked request's trailers never become header lines of the next request", async (t) => {
  const heads: string[][] = [];
  const s = await serve(async (req, res) => {
    await readBody(req);
    heads.push(req.rawHeaders);
    res.end('ok');
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  // As a shared front connection could carry them: one client's trailers ...
  c.write('POST /a HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nAuthorization: Bearer first-client\r\nX-Trailer: 1\r\n\r\n');
  await c.readResponse();
  // ... and the next request, with more than 32 header lines (the parser hands those over in pieces).
  let many = 'GET /b HTTP/1.1\r\nHost: test\r\n';
  for (let i = 0; i < 40; i++) many += `X-H${i}: ${i}\r\n`;
  c.write(many + '\r\n');
  await c.readResponse();
  assert.deepEqual(heads[0], ['Host', 'test', 'Transfer-Encoding', 'chunked']);
  assert.equal(heads[1]!.length, 2 * 41);
  assert.deepEqual(heads[1]!.slice(0, 4), ['Host', 'test', 'X-H0', '0']);
  assert.ok(!heads[1]!.includes('Authorization'));
});

test('a body read only after the answer started, or never read on a complete request, keeps the connection', async (t) => {
  const s = await serve(async (req, res) => {
    if (req.url === '/ignore') {
      // The whole (small) body is in; not reading it is fine.
      await delay(20);
      res.end('ignored');
      return;
    }
    res.write('start;');
    const body = await readBody(req);
    res.end(`${body.length}`);
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(post('/ignore', 'some body'));
  assert.equal((await c.readResponse()).body.toString(), 'ignored');
  c.write(post('/read', 'x'.repeat(5000)));
  assert.equal((await c.readResponse()).body.toString(), 'start;5000');
  c.write(get('/read'));
  assert.equal((await c.readResponse()).body.toString(), 'start;0');
});

test('a large body read late on a keep-alive connection: all bytes, then the next request is served', async (t) => {
  const s = await serve(async (req, res) => {
    await delay(100); // the body arrives before anyone reads it
    const body = await readBody(req);
    res.end(`${body.length} ${sha(body)}`);
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  for (const size of [100_000, 200_000, 1_000_000]) {
    const body = pattern(size);
    c.write(Buffer.concat([Buffer.from(`POST / HTTP/1.1\r\nHost: test\r\nContent-Length: ${size}\r\n\r\n`), body]));
    assert.equal((await c.readResponse()).body.toString(), `${size} ${sha(body)}`, `a ${size}-byte body`);
  }
  c.write(get('/'));
  assert.equal((await c.readResponse()).body.toString(), `0 ${sha(Buffer.alloc(0))}`);
});

test('a slow body reader (stream back-pressure) on a keep-alive connection', async (t) => {
  const s = await serve(async (req, res) => {
    const hash = createHash('sha256');
    let n = 0;
    for await (const chunk of req.body()) {
      hash.update(chunk as Buffer);
      n += (chunk as Buffer).length;
      await delay(2);
    }
    res.end(`${n} ${hash.digest('hex')}`);
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  const body = pattern(600_000);
  c.write(Buffer.concat([Buffer.from(`POST / HTTP/1.1\r\nHost: test\r\nContent-Length: ${body.length}\r\n\r\n`), body]));
  assert.equal((await c.readResponse({ ms: 20_000 })).body.toString(), `${body.length} ${sha(body)}`);
  c.write(post('/', 'abc'));
  assert.equal((await c.readResponse()).body.toString(), `3 ${sha(Buffer.from('abc'))}`);
});

test('back-pressure: an unread body of several MiB is not buffered by the server; read later, every byte arrives', async (t) => {
  let request: Http1Request | undefined;
  const s = await serve((req, res) => {
    request = req;
    (res as Http1Response & { later?: Http1Response }).later = res;
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  const size = 8 * 1024 * 1024;
  const body = pattern(size);
  c.write(`POST /big HTTP/1.1\r\nHost: test\r\nContent-Length: ${size}\r\n\r\n`);
  c.write(body);
  await c.until(() => request !== undefined, 'the handler');
  await delay(300);
  const read = request!.socket.bytesRead;
  assert.ok(read < 2 * 1024 * 1024, `the server read ${read} bytes of an unread ${size}-byte body`);
  assert.ok(c.socket.writableLength > 0, 'the client is held back');
  const got = await readBody(request!);
  assert.equal(got.length, size);
  assert.ok(got.equals(body), 'every byte, in order');
});

test('Expect: 100-continue: "HTTP/1.1 100 Continue" before the body is sent, then the answer', async (t) => {
  const s = await serve(bodyEcho);
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write('POST / HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n');
  const interim = await c.readResponse();
  assert.equal(interim.status, 100);
  assert.equal(interim.head, 'HTTP/1.1 100 Continue\r\n\r\n');
  c.write('hello');
  assert.equal((await c.readResponse()).body.toString(), `5 ${sha(Buffer.from('hello'))}`);
  // A complete request (the body came along) gets no 100.
  c.write('POST / HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n');
  const res = await c.readResponse();
  assert.equal(res.status, 200);
  // HTTP/1.0 knows no 100 Continue.
  c.write('POST / HTTP/1.0\r\nConnection: keep-alive\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi');
  assert.equal((await c.readResponse()).status, 200);
});

test('Expect: 100-continue on a pipelined request: 100 only when its turn comes', async (t) => {
  const s = await serve(async (req, res) => {
    if (req.url === '/slow') await delay(100);
    const body = await readBody(req);
    res.end(`${req.url}:${body}`);
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/slow') + 'POST /p HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n');
  assert.equal((await c.readResponse()).body.toString(), '/slow:');
  assert.equal((await c.readResponse()).status, 100);
  c.write('abc');
  assert.equal((await c.readResponse()).body.toString(), '/p:abc');
});

test('an answer before the body (413): the connection closes, the unread body is never parsed as a request', async (t) => {
  const seen: string[] = [];
  const s = await serve((req, res) => {
    seen.push(req.url);
    res.writeHead(413, ['content-type', 'text/plain']);
    res.end('too large');
  });
  t.after(() => s.close());
  // The body is itself a request: had the server gone on parsing, /smuggled would be served.
  const smuggled = get('/smuggled');
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(`POST /upload HTTP/1.1\r\nHost: test\r\nContent-Length: ${smuggled.length + 100}\r\n\r\n`);
  await delay(20);
  c.write(smuggled);
  const res = await c.readResponse();
  assert.equal(res.status, 413);
  assert.equal(header(res, 'connection'), 'close');
  assert.ok(await c.waitEnd());
  assert.equal(c.pending.length, 0);
  assert.deepEqual(seen, ['/upload']);
});

test('an answer before a large body: the client still reads the whole answer', async (t) => {
  const s = await serve((_req, res) => {
    res.writeHead(413, ['content-type', 'text/plain']);
    res.end('too large');
  });
  t.after(() => s.close());
  for (let i = 0; i < 5; i++) {
    const c = await RawClient.connect(s.port);
    t.after(() => c.destroy());
    c.socket.on('error', () => {}); // the upload itself may be cut
    const size = 4 * 1024 * 1024;
    c.write(`POST /upload HTTP/1.1\r\nHost: test\r\nContent-Length: ${size}\r\n\r\n`);
    c.write(Buffer.alloc(size, 'x'));
    const res = await c.readResponse();
    assert.equal(res.status, 413);
    assert.equal(res.body.toString(), 'too large');
    assert.ok(await c.waitEnd());
  }
});

test('closing after an early answer lingers: the rest of the upload is read and dropped, not reset', async (t) => {
  const s = await serve((_req, res) => {
    res.writeHead(413, ['content-type', 'text/plain']);
    res.end('too large');
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  const size = 8 * 1024 * 1024;
  c.write(`POST /upload HTTP/1.1\r\nHost: test\r\nContent-Length: ${size}\r\n\r\n`);
  const res = await c.readResponse();
  assert.equal(res.status, 413);
  assert.ok(await c.waitEnd(), 'the server sent FIN after the answer');
  // The client goes on sending its body, as browsers do: a server that closed with
  // unread input would reset the connection (EPIPE/ECONNRESET here).
  const written = new Promise<void>((resolve, reject) => {
    c.socket.write(Buffer.alloc(size, 'x'), (err) => (err ? reject(err) : resolve()));
  });
  await written;
  await delay(50);
  assert.equal(c.error, undefined, 'no reset while the server lingers');
  c.socket.end();
  await c.until(() => c.closed, 'the connection closes once the client is done too');
});

/** Answers as the proxy streams a pod's answer (writeHead, write, end), never reading the body. */
function answersEarly(seen: string[]) {
  return (req: Http1Request, res: Http1Response): void => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(200, ['content-type', 'text/plain']);
    res.write(`answer to ${req.url}`);
    res.end();
  };
}

test('a streamed answer before the whole body: the rest is read and dropped, the connection and the pipelined requests behind go on', async (t) => {
  const seen: string[] = [];
  const s = await serve(answersEarly(seen));
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  // The body's rest is itself a request: it must be dropped as body, never served.
  const smuggled = get('/smuggled');
  const half = Buffer.alloc(500, 'a');
  c.write(`POST /early HTTP/1.1\r\nHost: test\r\nContent-Length: ${500 + smuggled.length}\r\n\r\n`);
  c.write(half);
  const first = await c.readResponse();
  assert.equal(first.status, 200);
  assert.equal(header(first, 'connection'), undefined, 'no close announced');
  await delay(20);
  c.write(smuggled + get('/next'));
  const second = await c.readResponse();
  assert.equal(second.body.toString(), 'answer to /next');
  assert.deepEqual(seen, ['POST /early', 'GET /next']);
  assert.equal(c.closed, false, 'still open');
});

test('a body to drop larger than 1 MiB: the connection is closed instead (lingering)', async (t) => {
  const seen: string[] = [];
  const s = await serve(answersEarly(seen));
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.socket.on('error', () => {});
  const size = 8 * 1024 * 1024;
  c.write(`POST /big HTTP/1.1\r\nHost: test\r\nContent-Length: ${size}\r\n\r\n`);
  assert.equal((await c.readResponse()).status, 200);
  c.write(Buffer.alloc(size, 'x'));
  assert.ok(await c.waitEnd(), 'the server ends the connection after about 1 MiB dropped');
  await delay(50);
  assert.equal(c.error, undefined, 'gently: it lingers, no reset');
  assert.deepEqual(seen, ['POST /big']);
});

test('res.write() returns false for a slow reader, and the response emits drain', async (t) => {
  const events: string[] = [];
  let finished: () => void;
  const done = new Promise<void>((resolve) => (finished = resolve));
  const total = 32 * 1024 * 1024;
  const s = await serve((_req, res) => {
    res.writeHead(200, ['content-length', String(total)]);
    const chunk = Buffer.alloc(256 * 1024, 'z');
    let sent = 0;
    const pump = (): void => {
      while (sent < total) {
        sent += chunk.length;
        if (!res.write(chunk)) {
          events.push('false');
          res.once('drain', () => {
            events.push('drain');
            pump();
          });
          return;
        }
      }
      res.end();
      finished();
    };
    pump();
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.socket.pause(); // a client that does not read
  c.write(get('/'));
  // The kernel buffers take some megabytes, then the writes must wait.
  await delay(300);
  const stalled = events.length;
  assert.ok(stalled > 0 && events[0] === 'false' && events.at(-1) === 'false', `events: ${events.join(',')}`);
  await delay(200);
  assert.equal(events.length, stalled, 'no drain while the client does not read');
  c.socket.resume();
  const res = await c.readResponse({ ms: 20_000 });
  await done;
  assert.equal(res.body.length, total);
  assert.ok(events.includes('drain'));
  // The connection goes on.
  c.write(get('/'));
  assert.equal((await c.readResponse({ ms: 20_000 })).body.length, total);
});

test("'close' on the response: once after end(), once (destroyed) when the client disconnects mid-response", async (t) => {
  const closes: { url: string; destroyed: boolean; ended: boolean }[] = [];
  const s = await serve((req, res) => {
    res.on('close', () => closes.push({ url: req.url, destroyed: res.destroyed, ended: res.writableEnded }));
    if (req.url.startsWith('/stream')) {
      // Streams until the client goes away (the writes find out).
      res.write('partial');
      const timer = setInterval(() => res.write('.'), 10);
      res.on('close', () => clearInterval(timer));
      return;
    }
    res.end('whole');
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/whole'));
  await c.readResponse();
  await delay(20);
  assert.deepEqual(closes, [{ url: '/whole', destroyed: false, ended: true }]);

  // The client closes its socket (FIN; the next writes are refused) ...
  c.write(get('/stream-fin'));
  await c.readUntil('partial');
  c.destroy();
  await c.until(() => closes.length === 2, "the response's close");
  // ... or resets it.
  const r = await RawClient.connect(s.port);
  r.write(get('/stream-rst'));
  await r.readUntil('partial');
  r.socket.resetAndDestroy();
  await r.until(() => closes.length === 3, "the response's close");
  await delay(50);
  assert.deepEqual(closes, [
    { url: '/whole', destroyed: false, ended: true },
    { url: '/stream-fin', destroyed: true, ended: false },
    { url: '/stream-rst', destroyed: true, ended: false },
  ]);
  await r.until(() => s.http1.size === 0, 'the server to forget both connections');
});

test("a client that goes away mid-body: the body stream errors and the response closes", async (t) => {
  const bodyErrors: (Error & { code?: string })[] = [];
  let closed = 0;
  let destroyed = false;
  const s = await serve((req, res) => {
    res.on('close', () => {
      closed++;
      destroyed = res.destroyed;
    });
    req.body().on('error', (err) => bodyErrors.push(err)).resume();
  });
  t.after(() => s.close());
  for (const how of ['fin', 'rst']) {
    closed = 0;
    bodyErrors.length = 0;
    const c = await RawClient.connect(s.port);
    c.write('POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 1000\r\n\r\nonly part');
    await delay(50);
    if (how === 'fin') c.destroy();
    else c.socket.resetAndDestroy();
    await c.until(() => closed > 0 && bodyErrors.length > 0, `close and the body error (${how})`);
    await delay(20);
    assert.equal(closed, 1);
    assert.equal(destroyed, true);
    assert.deepEqual(bodyErrors.map((e) => e.code), ['ECONNRESET']);
    await c.until(() => s.http1.size === 0, 'the server to forget the connection');
  }
});

test('res.destroy() cuts the connection; the client sees an incomplete response', async (t) => {
  let closes = 0;
  const s = await serve((_req, res) => {
    res.on('close', () => closes++);
    res.writeHead(200, ['content-length', '100']);
    res.write('only 10 b.');
    setTimeout(() => res.destroy(), 20);
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  t.after(() => c.destroy());
  c.write(get('/'));
  await assert.rejects(c.readResponse(), /connection ended after 10 of 100 bytes/);
  await delay(20);
  assert.equal(closes, 1);
});

test('a response emits close once even when end() is followed by the connection closing', async (t) => {
  let closes = 0;
  const s = await serve((_req, res) => {
    res.on('close', () => closes++);
    res.end('x');
  });
  t.after(() => s.close());
  const c = await RawClient.connect(s.port);
  c.write(get('/', 'Connection: close\r\n'));
  await c.readResponse();
  assert.ok(await c.waitEnd());
  c.destroy();
  await once(c.socket, 'close');
  await delay(20);
  assert.equal(closes, 1);
});
