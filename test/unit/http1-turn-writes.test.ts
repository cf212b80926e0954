// Messages gathered through a turn of the event loop (src/http1/turn-writes.ts), on real
// sockets: nothing is written before the turn's callbacks have run, everything after,
// in the order given; settle() writes a socket's messages first when something else is
// about to write to it, end it or destroy it.
import { test } from 'node:test';
import type { Socket } from 'node:net';
import assert from 'node:assert/strict';
import { deferWrite, hasDeferred, workerIsBusy, setWorkerBusy, settle, useRunDelayFile, writesWait } from '../../src/http1/turn-writes.ts';
import { HeadBytes } from '../../src/http1/head-bytes.ts';
import { socketPair as pair } from './socket-pair.ts';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

async function receivedLength(received: () => Buffer, length: number): Promise<Buffer> {
  for (let i = 0; i < 500 && received().length < length; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return received();
}

const turnEnd = () => new Promise((resolve) => setImmediate(resolve));

/** Builds `text` as a head and sends it, as the server and the client do. */
function sendHead(head: HeadBytes, socket: Socket, text: string): boolean {
  head.begin();
  head.latin1(text);
  return head.send(socket);
}
/** npm test makes messages always wait (TURN_WRITES_WAIT); tests that choose a mode restore it. */
const alwaysWait = process.env.TURN_WRITES_WAIT === 'always';

test("messages wait for the end of the turn, then go out in order, each socket's to its own peer", async () => {
  const a = await pair();
  const b = await pair();
  try {
    deferWrite(a.writer, Buffer.from('a1 '));
    deferWrite(b.writer, Buffer.from('b1 '));
    deferWrite(a.writer, Buffer.from('a2'));
    assert.equal(a.writer.bytesWritten, 0, 'nothing written in the turn');
    assert.equal(b.writer.bytesWritten, 0);
    assert.ok(hasDeferred(a.writer) && hasDeferred(b.writer));
    await turnEnd();
    assert.equal(a.writer.bytesWritten, 5, 'written once the turn ended');
    assert.ok(!hasDeferred(a.writer) && !hasDeferred(b.writer));
    assert.equal((await receivedLength(a.received, 5)).toString(), 'a1 a2');
    assert.equal((await receivedLength(b.received, 3)).toString(), 'b1 ');
  } finally {
    a.close();
    b.close();
  }
});

test("settle writes a socket's messages now, ahead of a write and an end in the same turn, and leaves others waiting", async () => {
  const a = await pair();
  const b = await pair();
  try {
    deferWrite(a.writer, Buffer.from('head '));
    deferWrite(b.writer, Buffer.from('other'));
    settle(a.writer);
    a.writer.write('body');
    a.writer.end();
    assert.equal(b.writer.bytesWritten, 0, "the other socket's message still waits");
    await a.ended;
    assert.equal(a.received().toString(), 'head body');
    await turnEnd();
    assert.equal((await receivedLength(b.received, 5)).toString(), 'other');
  } finally {
    a.close();
    b.close();
  }
});

test('a socket destroyed before the end of the turn drops its messages, and the others still go out', async () => {
  const a = await pair();
  const b = await pair();
  try {
    deferWrite(a.writer, Buffer.from('lost'));
    deferWrite(b.writer, Buffer.from('kept'));
    a.writer.destroy();
    await turnEnd();
    assert.equal((await receivedLength(b.received, 4)).toString(), 'kept');
    assert.equal(a.writer.bytesWritten, 0);
  } finally {
    a.close();
    b.close();
  }
});

/**
 * A socket pair and a head builder for a test that sets the worker's mode itself: the mode
 * npm test chose (TURN_WRITES_WAIT) is restored afterwards.
 */
async function withHead(run: (head: HeadBytes, writer: Socket, received: () => Buffer) => Promise<void>): Promise<void> {
  const { writer, received, close } = await pair();
  try {
    await run(new HeadBytes(), writer, received);
  } finally {
    setWorkerBusy(false, alwaysWait);
    close();
  }
}

/** What the peer has received once `expected` has had time to arrive, as text. */
async function receivedText(received: () => Buffer, expected: string): Promise<string> {
  return (await receivedLength(received, expected.length)).toString('latin1');
}

test('while the worker is busy, a head sent from the scratch buffer waits for the end of the turn, as built even when the next head is built at once', () =>
  withHead(async (head, writer, received) => {
    setWorkerBusy(true, false); // as at saturation (until the next sample, after this turn)
    assert.equal(sendHead(head, writer, 'HTTP/1.1 200 OK\r\n\r\n'), true);
    sendHead(head, writer, 'HTTP/1.1 204 No Content\r\n\r\n');
    assert.equal(writer.bytesWritten, 0);
    const expected = 'HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n';
    assert.equal(await receivedText(received, expected), expected);
  }));

test('while the worker has time to spare, a head is written at once, after those left waiting from a busy spell', () =>
  withHead(async (head, writer, received) => {
    setWorkerBusy(true, false);
    sendHead(head, writer, 'HTTP/1.1 200 OK\r\n\r\n');
    assert.equal(writer.bytesWritten, 0, 'busy: the head waits');
    setWorkerBusy(false, false);
    sendHead(head, writer, 'HTTP/1.1 204 No Content\r\n\r\n');
    assert.equal(writer.bytesWritten, 19 + 27, 'the waiting head, then this one, written at once');
    sendHead(head, writer, 'HTTP/1.1 304 Not Modified\r\n\r\n');
    const expected = 'HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\n\r\n';
    assert.equal(writer.bytesWritten, expected.length);
    assert.equal(await receivedText(received, expected), expected);
  }));

test('a head written at once settles the messages its socket had waiting first', () =>
  withHead(async (head, writer, received) => {
    deferWrite(writer, Buffer.from('waiting '));
    setWorkerBusy(false, false);
    sendHead(head, writer, 'HTTP/1.1 200 OK\r\n\r\n');
    const expected = 'waiting HTTP/1.1 200 OK\r\n\r\n';
    assert.equal(writer.bytesWritten, expected.length);
    assert.equal(await receivedText(received, expected), expected);
  }));

test('the loop counts as busy after a stretch of work while messages are written, and as free again after a rest', async () => {
  try {
    useRunDelayFile('/nonexistent/schedstat'); // the loop alone, whatever else this machine runs
    setWorkerBusy(false, false);
    writesWait(); // a message to write: the loop is sampled
    const until = performance.now() + 300; // 300 ms of callbacks against at most 20 ms idle before
    while (performance.now() < until);
    await new Promise((resolve) => setTimeout(resolve, 5)); // the overdue sample runs first
    assert.equal(workerIsBusy(), true);
    assert.equal(writesWait(), true, 'messages wait while the loop is busy');
    await new Promise((resolve) => setTimeout(resolve, 60));
    assert.equal(workerIsBusy(), false);
    assert.equal(writesWait(), false, 'and are written at once after a rest');
  } finally {
    useRunDelayFile('/proc/self/schedstat');
    setWorkerBusy(false, alwaysWait);
  }
});

test('a worker whose thread waits for its CPU counts as busy with its loop idle, and as free once it waits no more', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'schedstat-')), 'schedstat');
  writeFileSync(file, '1000 0 10\n');
  try {
    useRunDelayFile(file);
    setWorkerBusy(false, false);
    writeFileSync(file, '1000 10000000000 20\n'); // 10 s of waiting since: far past any sample's share
    assert.equal(await sampledUntil(true), true, 'busy at the next sample');
    // No more waiting (the delay unchanged): free at the next sample, the sampler still running.
    assert.equal(await sampledUntil(false), false, 'free again');
  } finally {
    useRunDelayFile('/proc/self/schedstat');
    setWorkerBusy(false, alwaysWait);
  }
});

/** Writes a message every millisecond (the sampler keeps running) until workerIsBusy() is `busy`, for at most 300 ms. */
async function sampledUntil(busy: boolean): Promise<boolean> {
  for (let i = 0; i < 300 && workerIsBusy() !== busy; i++) {
    writesWait();
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return workerIsBusy();
}

test('heads built in one turn past the room kept for them (written early) all arrive as built, each after the one before', async () => {
  const pairs = await Promise.all([pair(), pair(), pair()]);
  setWorkerBusy(true, false); // only the room sends them early
  try {
    const head = new HeadBytes();
    const expected = pairs.map(() => '');
    // 3 sockets × 60 heads of 1-2 KiB: about 150 KiB in one turn, over the 32 KiB after
    // which the waiting ones are written before the next head is built.
    for (let n = 0; n < 180; n++) {
      const text = `HTTP/1.1 200 OK\r\nx-n: ${n}\r\nx-pad: ${String.fromCharCode(0x41 + (n % 26)).repeat(1000 + n * 5)}\r\n\r\n`;
      head.begin();
      head.latin1(text);
      head.send(pairs[n % 3]!.writer);
      expected[n % 3] += text;
    }
    assert.equal(head.buf.length, 64 * 1024, 'the heads waiting were written early rather than the scratch buffer grown');
    for (let i = 0; i < 3; i++) {
      const got = await receivedLength(pairs[i]!.received, expected[i]!.length);
      assert.ok(got.toString('latin1') === expected[i], `socket ${i} got every head as built, in order`);
    }
  } finally {
    setWorkerBusy(false, alwaysWait);
    for (const p of pairs) p.close();
  }
});
