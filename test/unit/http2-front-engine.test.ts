// The HTTP/2 front end's flow control toward the client, with a handler of the test's own
// on a real socket: request bytes nobody has read are not returned to the client's window
// (so a client that sends past it gets FLOW_CONTROL_ERROR), and they are returned as the
// handler reads them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import net, { type AddressInfo } from 'node:net';
import type { ProxyRequest, ProxyResponse } from '../../src/proxy/exchange-types.ts';
import { Http2Front } from '../../src/http2/server.ts';
import { FLAG, FRAME, RawH2, frame, h2Connect, h2Request, hpack } from '../support/h2.ts';

const FLOW_CONTROL_ERROR = 3;
const SETTINGS_TIMEOUT = 4;

async function serve(handler: (req: ProxyRequest, res: ProxyResponse) => void, settingsTimeout?: number, idle: { idleTimeout: number; firstStreamTimeout?: number } = { idleTimeout: 10_000 }): Promise<{ port: number; close(): Promise<void> }> {
  const front = new Http2Front(handler, { ...idle, maxHeaders: 100, settingsTimeout });
  const server = net.createServer((socket) => front.accept(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      front.destroyAll();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const post = (path: string, length: number) => hpack([[':method', 'POST'], [':scheme', 'http'], [':path', path], [':authority', 'test'], ['content-length', String(length)]]);

test('bytes the handler has not read stay counted against the stream window: one byte past it is FLOW_CONTROL_ERROR', async (t) => {
  const held: ProxyResponse[] = [];
  const server = await serve((_req, res) => held.push(res));
  t.after(() => server.close());
  const raw = await RawH2.open(server.port, false);
  t.after(() => raw.close());
  raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS, 1, post('/held', 70_000)));
  for (let sent = 0; sent < 65_535; sent += 16_384) raw.write(frame(FRAME.DATA, 0, 1, Buffer.alloc(Math.min(16_384, 65_535 - sent), 'a')));
  // The whole window is in; the handler read none of it: no WINDOW_UPDATE for the stream.
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(raw.frames.filter((f) => f.type === FRAME.WINDOW_UPDATE && f.streamId === 1).length, 0);
  assert.equal(held.length, 1);
  raw.write(frame(FRAME.DATA, 0, 1, Buffer.from('b')));
  const rst = await raw.waitFor((f) => f.type === FRAME.RST_STREAM && f.streamId === 1);
  assert.equal(rst?.payload.readUInt32BE(0), FLOW_CONTROL_ERROR);
});

test('a body read as it comes: 3 MiB arrive exact over a 64 KiB window, the client kept going by WINDOW_UPDATEs', async (t) => {
  const server = await serve((req, res) => {
    const hash = createHash('sha256');
    let length = 0;
    req.body().on('data', (c: Buffer) => {
      hash.update(c);
      length += c.length;
    });
    req.body().on('end', () => res.end(JSON.stringify({ length, sha256: hash.digest('hex') })));
  });
  t.after(() => server.close());
  const session = await h2Connect(server.port, false);
  t.after(() => session.close());
  const body = randomBytes(3 * 1024 * 1024);
  const reply = await h2Request(session, { ':path': '/up', 'content-length': String(body.length) }, body);
  assert.deepEqual(reply.json(), { length: body.length, sha256: createHash('sha256').update(body).digest('hex') });
});

test('answers bigger than the windows, several at once on one connection: each written as drain allows, all arrive whole', async (t) => {
  const size = 2 * 1024 * 1024;
  const server = await serve((_req, res) => {
    res.writeHead(200, ['content-type', 'application/octet-stream']);
    let sent = 0;
    const chunk = Buffer.alloc(16 * 1024, 'd');
    const pump = (): void => {
      while (sent < size) {
        sent += chunk.length;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      res.end();
    };
    pump();
  });
  t.after(() => server.close());
  const session = await h2Connect(server.port, false);
  t.after(() => session.close());
  const replies = await Promise.all(Array.from({ length: 6 }, (_, i) => h2Request(session, { ':path': `/down/${i}` })));
  for (const reply of replies) {
    assert.equal(reply.status, 200);
    assert.equal(reply.body.length, size);
  }
});

test('a client that never acknowledges our SETTINGS gets GOAWAY SETTINGS_TIMEOUT and the connection ends (RFC 9113 section 6.5.3)', async (t) => {
  const server = await serve((_req, res) => res.end('ok'), 300);
  t.after(() => server.close());
  const silent = await RawH2.open(server.port, false, { ackSettings: false });
  t.after(() => silent.close());
  const goaway = await silent.waitFor((f) => f.type === FRAME.GOAWAY, 5000);
  assert.equal(goaway?.payload.readUInt32BE(4), SETTINGS_TIMEOUT);
  await silent.untilClosed(5000);
  assert.equal(silent.closed, true);
});

test('a client that acknowledges our SETTINGS is not cut when the timeout would have passed', async (t) => {
  const server = await serve((_req, res) => res.end('ok'), 300);
  t.after(() => server.close());
  const polite = await RawH2.open(server.port, false);
  t.after(() => polite.close());
  await new Promise((r) => setTimeout(r, 600));
  assert.equal(polite.frames.filter((f) => f.type === FRAME.GOAWAY).length, 0);
  polite.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, hpack([[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'test']])));
  const data = await polite.waitFor((f) => f.type === FRAME.DATA && f.streamId === 1);
  assert.equal(data?.payload.toString(), 'ok');
});

test('idleTimeout 0 (--client-idle-timeout 0) is no keep-alive: the streams open are answered, then GOAWAY NO_ERROR and the end; a connection without a stream waits firstStreamTimeout', async (t) => {
  const server = await serve((req, res) => setTimeout(() => res.end(`ok ${req.url}`), 50), undefined, { idleTimeout: 0, firstStreamTimeout: 300 });
  t.after(() => server.close());
  const raw = await RawH2.open(server.port, false);
  t.after(() => raw.close());
  const get = (path: string) => hpack([[':method', 'GET'], [':scheme', 'http'], [':path', path], [':authority', 'test']]);
  raw.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, get('/a')), frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 3, get('/b')));
  const goaway = await raw.waitFor((f) => f.type === FRAME.GOAWAY);
  assert.equal(goaway?.payload.readUInt32BE(0), 3, 'the last stream served is the last one opened');
  assert.equal(goaway?.payload.readUInt32BE(4), 0, 'NO_ERROR');
  const bodies = raw.frames.filter((f) => f.type === FRAME.DATA).map((f) => `${f.streamId} ${f.payload.toString()}`).sort();
  assert.deepEqual(bodies, ['1 ok /a', '3 ok /b'], 'both streams answered before GOAWAY');
  await raw.untilClosed(5000);

  const silent = await RawH2.open(server.port, false);
  t.after(() => silent.close());
  const t0 = Date.now();
  const idle = await silent.waitFor((f) => f.type === FRAME.GOAWAY, 5000);
  assert.equal(idle?.payload.readUInt32BE(4), 0);
  assert.ok(Date.now() - t0 >= 250, `not at once: after ${Date.now() - t0} ms`);
  await silent.untilClosed(5000);
});
