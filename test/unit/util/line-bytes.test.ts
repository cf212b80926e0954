// Log lines as bytes (src/util/line-bytes.ts) and where they go (src/util/line-sinks.ts):
// every value reads back as JSON.stringify or String would have written it, and a file
// gets every line whole and in order, in writes of whole lines when they are bounded.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { LineBytes, jsonBytes } from '../../../src/util/line-bytes.ts';
import { bufferedFd, wholeLinesEnd } from '../../../src/util/line-sinks.ts';

const SINKS = new URL('../../../src/util/line-sinks.ts', import.meta.url).href;

/** What `write` appends to a small LineBytes (so that it has to grow), as text. */
function written(write: (line: LineBytes) => void): string {
  const line = new LineBytes(4);
  line.latin1('>');
  write(line);
  return line.buf.toString('utf8', 1, line.at);
}

const TEXTS = ['', 'GET', '/cart?id=1&x=2', 'caf\u00e9', 'quote"back\\slash', 'tab\tnew\nline', '\u0001\u001f\u007f', '\ud83d\ude00', '\ud800', 'x'.repeat(100), 'é'.repeat(40)];

describe('LineBytes', () => {
  test('a JSON string in UTF-8 is what JSON.stringify writes', () => {
    for (const text of TEXTS) {
      assert.equal(written((line) => line.jsonString(text)), JSON.stringify(text), JSON.stringify(text));
      assert.equal(jsonBytes(text).toString('utf8'), JSON.stringify(text));
    }
  });

  test('latin1 text, short and long, is copied a byte a character', () => {
    for (const text of ['', ',"status":', 'a'.repeat(31), 'b'.repeat(32), 'c'.repeat(33), 'd'.repeat(1000)]) {
      assert.equal(written((line) => line.latin1(text)), text);
    }
  });

  test('numbers are written as String writes them', () => {
    const numbers = [0, 1, 9, 10, 99, 100, 200, 404, 1048576, 2 ** 31, 2 ** 40, Number.MAX_SAFE_INTEGER, -1, 1.5, 2 ** 60, NaN];
    for (const n of numbers) assert.equal(written((line) => line.number(n)), String(n));
  });

  test('milliseconds are written as String writes them', () => {
    const millis = [0, 0.001, 0.01, 0.1, 0.009, 0.09, 0.101, 0.11, 1, 1.5, 1.234, 2.25, 10.05, 999.999, 1234567.891, 0.30000000000000004, 1e-7, 123456789012.345, 5e15 + 0.5, -1.5];
    for (let i = 0; i < 2000; i++) millis.push(Math.round(Math.random() * 10 ** (i % 9)) / 1000);
    for (const ms of millis) assert.equal(written((line) => line.millis(ms)), String(ms), String(ms));
  });

  test('bytes made earlier are appended as they are', () => {
    assert.equal(written((line) => line.bytes(Buffer.from('{"a":1}'.repeat(3)))), '{"a":1}'.repeat(3));
  });
});

describe('line sinks', () => {
  test('a bounded write ends after the last whole line in reach, or after a longer line', () => {
    const buf = Buffer.from('aaa\nbb\ncccccccc\nd\n');
    assert.equal(wholeLinesEnd(buf, 0, buf.length, 100), buf.length, 'everything in reach');
    assert.equal(wholeLinesEnd(buf, 0, buf.length, 7), 7, 'two lines of 4 and 3 bytes');
    assert.equal(wholeLinesEnd(buf, 0, buf.length, 6), 4, 'the second line would not fit');
    assert.equal(wholeLinesEnd(buf, 7, buf.length, 4), 16, 'a line longer than the bound goes alone');
    assert.equal(wholeLinesEnd(buf, 16, buf.length, 1), buf.length);
  });

  for (const maxWrite of [Infinity, 512]) {
    test(`a file gets every line whole and in order (writes of at most ${maxWrite} bytes of whole lines)`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'portico-lines-'));
      const path = join(dir, 'out.log');
      const fd = openSync(path, 'w');
      try {
        const sink = bufferedFd(fd, maxWrite);
        const expected: string[] = [];
        // More than a buffer's worth, with lines of every length up to over the bound, written
        // while earlier writes are in flight.
        for (let i = 0; i < 3000; i++) {
          const text = `{"n":${i},"pad":"${'x'.repeat((i * 37) % 700)}"}\n`;
          expected.push(text);
          sink.line.latin1(text);
          sink.endLine();
          if (i % 500 === 0) await new Promise((resolve) => setImmediate(resolve));
        }
        await sink.flush();
        assert.equal(readFileSync(path, 'utf8'), expected.join(''));
      } finally {
        closeSync(fd);
        rmSync(dir, { recursive: true });
      }
    });
  }

  /**
   * Runs `script` (an ES module) with stdout a pipe (a shell's: libuv would give a child a
   * socket pair) that is read only after `readAfterMs`; resolves with what it wrote.
   */
  function pipedOutput(script: string, readAfterMs: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = spawn('sh', ['-c', `"$NODE" --input-type=module -e "$SCRIPT" | (sleep ${readAfterMs / 1000}; cat)`], {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, NODE: process.execPath, SCRIPT: script },
      });
      const chunks: Buffer[] = [];
      child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
      child.on('error', reject);
      child.on('close', (code) => (code === 0 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`child exited with ${code}`))));
    });
  }

  test("into a pipe that fills up, every line arrives whole and in order, and another writer's lines never land inside one", async () => {
    // 3,000 lines (about 1 MB) while the reader waits: the pipe (64 KiB) fills, and writes go
    // on in the thread pool. Between them the process writes lines of its own to fd 1, as pino does.
    const script = `
      const { writeSync } = await import('node:fs');
      const { bufferedFd } = await import(${JSON.stringify(SINKS)});
      const sink = bufferedFd(1);
      for (let i = 0; i < 3000; i++) {
        sink.line.latin1('{"n":' + i + ',"pad":"' + 'x'.repeat((i * 37) % 700) + '"}\\n');
        sink.endLine();
        if (i % 100 === 0) writeSync(1, '{"other":' + i + '}\\n');
        if (i % 250 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      await sink.flush();
    `;
    const lines = (await pipedOutput(script, 300)).split('\n').filter((l) => l !== '');
    const parsed = lines.map((l) => JSON.parse(l) as { n?: number; pad?: string; other?: number });
    const sunk = parsed.filter((p) => p.n !== undefined);
    assert.deepEqual(
      sunk.map((p) => p.n),
      Array.from({ length: 3000 }, (_, i) => i),
    );
    for (const p of sunk) assert.equal(p.pad, 'x'.repeat((p.n! * 37) % 700));
    assert.deepEqual(
      parsed.filter((p) => p.other !== undefined).map((p) => p.other),
      Array.from({ length: 30 }, (_, i) => i * 100),
    );
  });

  test('into a pipe, lines longer than PIPE_BUF arrive whole and in order too', async () => {
    const script = `
      const { bufferedFd } = await import(${JSON.stringify(SINKS)});
      const sink = bufferedFd(1);
      for (let i = 0; i < 200; i++) {
        sink.line.latin1('{"n":' + i + ',"pad":"' + 'y'.repeat(i % 3 === 0 ? 9000 : 100) + '"}\\n');
        sink.endLine();
      }
      await sink.flush();
    `;
    const lines = (await pipedOutput(script, 100)).split('\n').filter((l) => l !== '');
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as { n: number }).n),
      Array.from({ length: 200 }, (_, i) => i),
    );
  });

  test('a process that exits while its bounded writes are in flight still writes every line not yet taken', () => {
    // The child's stdout is a socket (libuv gives a child a socket pair), which is written
    // through the thread pool: the first write (whole lines up to 512 bytes) is in flight
    // when the process exits in the same turn, before its callback could start the next.
    const script = `
      const { bufferedFd } = await import(${JSON.stringify(SINKS)});
      const sink = bufferedFd(1, 512);
      for (let i = 0; i < 200; i++) { sink.line.latin1('{"n":' + i + '}\\n'); sink.endLine(); }
      sink.flush();
      for (let i = 200; i < 210; i++) { sink.line.latin1('{"n":' + i + '}\\n'); sink.endLine(); }
      process.exit(0);
    `;
    const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    const numbers = output
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => (JSON.parse(l) as { n: number }).n);
    // The write in flight at exit may land before, after or not at all: the rest is all there, in order.
    let inFirstWrite = 0;
    for (let bytes = 0; bytes + `{"n":${inFirstWrite}}\n`.length <= 512; inFirstWrite++) bytes += `{"n":${inFirstWrite}}\n`.length;
    assert.deepEqual(
      numbers.filter((n) => n >= inFirstWrite),
      Array.from({ length: 210 - inFirstWrite }, (_, i) => inFirstWrite + i),
    );
  });

  test('into a regular file, a batch is in the file when the line that fills it ends, and a flush writes the rest at once', () => {
    const dir = mkdtempSync(join(tmpdir(), 'portico-lines-'));
    const path = join(dir, 'out.log');
    const fd = openSync(path, 'w');
    try {
      const sink = bufferedFd(fd, 512);
      const lineOf = (i: number) => `{"n":${i},"pad":"${'z'.repeat(i % 300)}"}\n`;
      let i = 0;
      let batched = 0;
      // Lines until the buffer passes 64 KiB: the line that does so sends the batch, and no
      // write waits in the thread pool: the file has it before this turn ends.
      while (readFileSync(path).length === 0 && i < 5000) {
        sink.line.latin1(lineOf(i));
        batched += lineOf(i).length;
        i++;
        sink.endLine();
      }
      assert.ok(batched >= 64 * 1024 && batched < 64 * 1024 + 400, `the first batch was written after ${batched} bytes`);
      for (let j = 0; j < 10; j++, i++) {
        sink.line.latin1(lineOf(i));
        sink.endLine();
      }
      void sink.flush();
      const lines = readFileSync(path, 'utf8').split('\n').filter((l) => l !== '');
      assert.deepEqual(
        lines.map((l) => (JSON.parse(l) as { n: number }).n),
        Array.from({ length: i }, (_, n) => n),
      );
      for (const l of lines) {
        const { n, pad } = JSON.parse(l) as { n: number; pad: string };
        assert.equal(pad, 'z'.repeat(n % 300));
      }
    } finally {
      closeSync(fd);
      rmSync(dir, { recursive: true });
    }
  });
});
