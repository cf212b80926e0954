// Heads built in the shared scratch buffer (src/http1/head-bytes.ts) on real sockets:
// what the peer reads must be every head as built, also when a socket keeps the buffer
// past the write (corked, or the kernel's buffer full) and the next head is built at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import { createTestPki } from './admin/fixtures.ts';
import { HeadBytes } from '../../src/http1/head-bytes.ts';
import { socketPair as pair } from './socket-pair.ts';

async function receivedLength(received: () => Buffer, length: number): Promise<Buffer> {
  for (let i = 0; i < 500 && received().length < length; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return received();
}

function build(head: HeadBytes, n: number): string {
  head.begin();
  head.latin1(`HTTP/1.1 200 OK\r\n`);
  head.field('x-n', String(n));
  head.field('x-pad', 'p'.repeat(40 + n));
  head.crlf();
  return `HTTP/1.1 200 OK\r\nx-n: ${n}\r\nx-pad: ${'p'.repeat(40 + n)}\r\n\r\n`;
}

test('a head written to a corked socket is not overwritten by the next head built', async () => {
  const { writer, received, close } = await pair();
  try {
    const head = new HeadBytes();
    let expected = '';
    writer.cork();
    for (let n = 0; n < 5; n++) {
      expected += build(head, n);
      head.send(writer);
    }
    writer.uncork();
    const got = await receivedLength(received, expected.length);
    assert.equal(got.toString('latin1'), expected);
  } finally {
    close();
  }
});

test('a head and body the kernel takes only part of are not overwritten by the next head built', async () => {
  const { writer, reader, received, close } = await pair();
  try {
    reader.pause();
    const head = new HeadBytes();
    let expected = '';
    // Send from the scratch buffer until the kernel's buffers are full and a write is
    // kept by the socket; then a few more, which must not write over the one kept.
    let sent = 0;
    let extra = 0;
    while (extra < 5 && sent < 10_000) {
      if (writer.writableLength > 0) extra++;
      expected += build(head, sent);
      // Each body differs, so that one written over another would show.
      const body = Buffer.alloc(16 * 1024, 0x41 + (sent % 26));
      head.bytes(body);
      expected += body.toString('latin1');
      head.send(writer);
      sent++;
      // A head is written once the turn's callbacks have run (turn-writes.ts).
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.ok(writer.writableLength > 0, 'a write was kept by the socket');
    reader.resume();
    const got = await receivedLength(received, expected.length);
    assert.equal(got.length, expected.length);
    assert.ok(got.toString('latin1') === expected, 'every head and body arrived as built');
  } finally {
    close();
  }
});

test('text() writes latin1 as socket.write(s, "latin1") would, short and long, and grows past 64 KiB', () => {
  const head = new HeadBytes();
  const short = 'caf\u00e9 \u00ff';
  const long = 'value-\u00e9'.repeat(20);
  const huge = 'h'.repeat(70 * 1024);
  head.begin();
  head.latin1(short);
  head.field('x', long);
  head.latin1(huge);
  const expected = Buffer.from(`${short}x: ${long}\r\n${huge}`, 'latin1');
  assert.ok(head.copy().equals(expected));
  assert.equal(head.at, expected.length);
  // The next head starts from the beginning.
  head.begin();
  head.latin1('a');
  assert.equal(head.copy().toString('latin1'), 'a');
});

test('a TLS socket, which completes its writes later, gets a copy: the scratch buffer stays the builder\'s', async () => {
  const pki = await createTestPki();
  const leaf = await pki.issue('localhost');
  const server = tls.createServer({ key: leaf.key, cert: leaf.cert });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<tls.TLSSocket>((resolve) => server.once('secureConnection', resolve));
  const client = tls.connect({ port: (server.address() as net.AddressInfo).port, host: '127.0.0.1', servername: 'localhost', ca: pki.ca });
  const chunks: Buffer[] = [];
  client.on('data', (chunk: Buffer) => chunks.push(chunk));
  try {
    const socket = await accepted;
    const head = new HeadBytes();
    const scratch = head.buf;
    let expected = '';
    for (let n = 0; n < 5; n++) {
      expected += build(head, n);
      head.send(socket);
      assert.equal(head.buf, scratch, 'no new scratch buffer per write');
    }
    const got = await receivedLength(() => Buffer.concat(chunks), expected.length);
    assert.equal(got.toString('latin1'), expected);
  } finally {
    client.destroy();
    server.close();
  }
});

test('a held head is written from the scratch buffer once, or copied out to its holder when the next head begins', async () => {
  const { writer, received, close } = await pair();
  try {
    const head = new HeadBytes();
    const kept: Buffer[] = [];
    const first = { keepHead: (copy: Buffer) => kept.push(copy) };
    const second = { keepHead: (copy: Buffer) => kept.push(copy) };
    const one = build(head, 1);
    head.hold(first);
    assert.equal(head.sendHeld(second, writer), false, 'not the holder: nothing written');
    assert.equal(head.sendHeld(first, writer), true);
    assert.equal(head.sendHeld(first, writer), false, 'written once');
    const two = build(head, 2);
    head.hold(second);
    assert.equal(kept.length, 0, 'the first was written, never copied');
    const three = build(head, 3);
    assert.equal(kept.length, 1, 'the second is copied out when the third begins');
    assert.equal(kept[0]!.toString('latin1'), two);
    assert.equal(head.sendHeld(second, writer), false, 'copied out: written from its copy, not the scratch buffer');
    head.hold(first);
    head.release(first);
    assert.equal(kept[1]!.toString('latin1'), three);
    head.send(writer);
    const got = await receivedLength(received, one.length + three.length);
    assert.equal(got.toString('latin1'), one + three, 'the released head is not the one in the scratch buffer any more; send writes what was built last');
  } finally {
    close();
  }
});

test('heads of one length, written one after another, each go out as built (their views are reused)', async () => {
  const { writer, received, close } = await pair();
  try {
    const head = new HeadBytes();
    let expected = '';
    for (let n = 0; n < 10; n++) {
      head.begin();
      const text = `HTTP/1.1 200 OK\r\nx-n: ${n}\r\n\r\n`;
      head.latin1(text);
      head.send(writer);
      expected += text;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const got = await receivedLength(received, expected.length);
    assert.equal(got.toString('latin1'), expected);
  } finally {
    close();
  }
});
