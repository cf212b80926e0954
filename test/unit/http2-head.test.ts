// The HTTP/2 head in the HTTP/1.1 form the proxy works with, and telling h2c from
// HTTP/1.1 by a connection's first bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Socket } from 'node:net';
import { http2Head, Http2Request } from '../../src/http2/request.ts';
import { H2Stream } from '../../src/http2/wire/stream.ts';
import { prefaceKind } from '../../src/http2/preface.ts';

const get = [':method', 'GET', ':scheme', 'https', ':path', '/p?q=1', ':authority', 'a.test'];

test(':authority becomes the first header, Host; pseudo-headers go; a sent host header loses to :authority', () => {
  assert.deepEqual(http2Head([...get, 'host', 'other.test', 'accept', '*/*'], true), { method: 'GET', path: '/p?q=1', rawHeaders: ['host', 'a.test', 'accept', '*/*'] });
  const noAuthority = http2Head([':method', 'GET', ':scheme', 'http', ':path', '/', 'host', 'h.test'], true);
  assert.deepEqual(noAuthority, { method: 'GET', path: '/', rawHeaders: ['host', 'h.test'] });
});

test('cookie crumbs are joined with "; " into one header', () => {
  const head = http2Head([...get, 'cookie', 'a=1', 'x-other', 'y', 'cookie', 'b=2'], true);
  assert.ok('rawHeaders' in head);
  assert.deepEqual(head.rawHeaders, ['host', 'a.test', 'x-other', 'y', 'cookie', 'a=1; b=2']);
});

test('a body without content-length is announced as chunked; with one, or without body, nothing is added', () => {
  const post = [':method', 'POST', ':scheme', 'https', ':path', '/', ':authority', 'a.test'];
  assert.deepEqual((http2Head(post, false) as { rawHeaders: string[] }).rawHeaders, ['host', 'a.test', 'transfer-encoding', 'chunked']);
  assert.deepEqual((http2Head([...post, 'content-length', '3'], false) as { rawHeaders: string[] }).rawHeaders, ['host', 'a.test', 'content-length', '3']);
  assert.deepEqual((http2Head(post, true) as { rawHeaders: string[] }).rawHeaders, ['host', 'a.test']);
});

test('refused before routing: control characters in values (400), CONNECT and extended CONNECT (501), no :path (400)', () => {
  assert.equal((http2Head([...get, 'x-a', 'a\x7fb'], true) as { status: number }).status, 400);
  assert.equal((http2Head([...get, 'x-a', 'a\rb'], true) as { status: number }).status, 400);
  assert.equal((http2Head([':method', 'CONNECT', ':authority', 'a.test:443'], false) as { status: number }).status, 501);
  assert.equal((http2Head([...get, ':protocol', 'websocket'], false) as { status: number }).status, 501);
  assert.equal((http2Head([':method', 'GET', ':scheme', 'https', ':authority', 'a.test'], true) as { status: number }).status, 400);
});

test('prefaceKind: the h2 preface (also when split), anything else is HTTP/1.1 as soon as it differs', () => {
  const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
  assert.equal(prefaceKind(preface), 'h2');
  assert.equal(prefaceKind(Buffer.concat([preface, Buffer.from([0, 0, 0, 4])])), 'h2');
  assert.equal(prefaceKind(preface.subarray(0, 10)), undefined);
  assert.equal(prefaceKind(Buffer.from('P')), undefined);
  assert.equal(prefaceKind(Buffer.from('POST / HTTP/1.1\r\n')), 'http1');
  assert.equal(prefaceKind(Buffer.from('GET / HTTP/1.1\r\n')), 'http1');
  assert.equal(prefaceKind(Buffer.from('PRI * HTTP/1.1\r\n\r\n')), 'http1');
});

test('a body received whole is handed over once as a Buffer; the stream asked for after it is ended and empty', async () => {
  const conn = { socket: new Socket(), windowUpdate() {}, writeHeaders() {}, writeData() {}, canSend: () => true, sendRoom: () => 65535, blocked() {}, resetStream() {}, localEnded() {} };
  const stream = new H2Stream(conn, 1, 65535, 65535);
  const head = http2Head([':method', 'POST', ':scheme', 'http', ':path', '/svc/M', ':authority', 'a.test', 'content-length', '6'], false);
  assert.ok('rawHeaders' in head);
  const req = new Http2Request(stream, conn.socket, head);
  assert.equal(req.receivedBody(), undefined, 'not before the end of the body');
  req.data(Buffer.from('abc'));
  req.data(Buffer.from('def'));
  req.end();
  assert.equal(req.receivedBody()!.toString(), 'abcdef');
  assert.equal(req.receivedBody(), undefined, 'only once');
  const rest: Buffer[] = [];
  for await (const chunk of req.body()) rest.push(chunk as Buffer);
  assert.deepEqual(rest, []);
  conn.socket.destroy();
});
