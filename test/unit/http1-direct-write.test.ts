// Writes straight through a socket's handle (src/http1/direct-write.ts) on real sockets:
// the peer must get every byte in order, whether the kernel takes a write whole or only
// part of it, with later writes through socket.write and an end() behind it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { socketPair as pair } from './socket-pair.ts';
import { NOT_DIRECT, QUEUED, WRITTEN, writeDirect } from '../../src/http1/direct-write.ts';

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** Writes 64 KiB chunks of `fill`, `fill + 1`... directly until the kernel takes one only in part; returns them all. */
function fillUntilQueued(writer: net.Socket, fill: number): Buffer[] {
  const written: Buffer[] = [];
  for (let i = 0; i < 1000; i++) {
    const chunk = Buffer.alloc(64 * 1024, fill + (i % 26));
    written.push(chunk);
    const result = writeDirect(writer, chunk);
    if (result === QUEUED) return written;
    assert.equal(result, WRITTEN);
  }
  throw new Error('the kernel took 1,000 writes of 64 KiB whole');
}

test('a write the kernel takes whole goes out at once, and socket.write still works after it', async () => {
  const { writer, received, close } = await pair();
  try {
    const data = Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi');
    assert.equal(writeDirect(writer, data), WRITTEN);
    assert.equal(writer.writableLength, 0);
    // The buffer is the caller's again: writing over it changes nothing sent.
    data.fill(0x58);
    writer.write('and more');
    await until(() => received().length >= 46);
    assert.equal(received().toString('latin1'), 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhiand more');
  } finally {
    close();
  }
});

test('a write the kernel takes only part of is finished first, later writes queue behind it, and drain follows', async () => {
  const { writer, reader, received, close } = await pair();
  try {
    reader.pause();
    const expected = fillUntilQueued(writer, 0x41);
    const drained = new Promise<void>((resolve) => writer.once('drain', resolve));
    // While that one is queued, another direct write is refused, and socket.write queues behind it.
    assert.equal(writeDirect(writer, Buffer.from('x')), NOT_DIRECT);
    const tail = Buffer.from('the end');
    expected.push(tail);
    writer.write(tail);
    reader.resume();
    await drained;
    const all = Buffer.concat(expected);
    await until(() => received().length >= all.length);
    assert.ok(received().equals(all), 'every byte arrived, in order');
    assert.equal(writeDirect(writer, Buffer.from('!')), WRITTEN, 'direct again once drained');
  } finally {
    close();
  }
});

test('end() after a write taken only in part sends all of it before the end', async () => {
  const { writer, reader, received, ended, close } = await pair();
  try {
    reader.pause();
    const expected = fillUntilQueued(writer, 0x61);
    writer.end();
    reader.resume();
    await ended;
    assert.ok(received().equals(Buffer.concat(expected)));
  } finally {
    close();
  }
});

test('a socket not connected yet, ended or destroyed is left to socket.write', async () => {
  const { writer, close } = await pair();
  try {
    const connecting = net.connect(1, '127.0.0.1');
    connecting.on('error', () => {});
    assert.equal(writeDirect(connecting, Buffer.from('x')), NOT_DIRECT);
    connecting.destroy();
    writer.end();
    assert.equal(writeDirect(writer, Buffer.from('x')), NOT_DIRECT);
    writer.destroy();
    assert.equal(writeDirect(writer, Buffer.from('x')), NOT_DIRECT);
  } finally {
    close();
  }
});

test('a write the peer reset refuses destroys the socket with the error', async () => {
  const { writer, reader, close } = await pair();
  try {
    const failed = new Promise<NodeJS.ErrnoException>((resolve) => writer.once('error', resolve));
    // On loopback the reset has reached the writer's socket when this returns; the writes
    // follow in the same run, before the writer's reads can see it.
    reader.resetAndDestroy();
    for (let i = 0; i < 10 && !writer.destroyed; i++) writeDirect(writer, Buffer.alloc(1024, 0x41));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the socket heard of no error within 2 s')), 2000);
    });
    const err = await Promise.race([failed, late]).finally(() => clearTimeout(timer));
    assert.ok(err.code === 'ECONNRESET' || err.code === 'EPIPE', `got ${err.code}`);
    assert.equal(err.syscall, 'write');
    assert.ok(writer.destroyed);
  } finally {
    close();
  }
});
