// Where access lines go once written as bytes (src/util/line-bytes.ts): a file descriptor
// through a 64 KiB buffer (portico's stdout), or any stream that takes strings (a logger's
// own destination; tests read lines back from one).
import { LineBytes } from './line-bytes.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { write, writeSync } = process.getBuiltinModule('node:fs');

/** A line is written into `line`, then endLine() says it is whole. */
export interface LineSink {
  /** Where the next line is written. */
  readonly line: LineBytes;
  /** The bytes appended to `line` since the last call are one whole line, "\n" included. */
  endLine(): void;
  /** Resolves once every line ended so far is out (the write in flight included). */
  flush(): Promise<void>;
}

/** A batch is written once this much is buffered (or once a second when quiet). */
const FLUSH_AT = 64 * 1024;
/** Room for a batch and the line that ends it. */
const BUFFER_SIZE = FLUSH_AT + 16 * 1024;

/**
 * Where a write of whole lines from buf[from, end) ends, at most `maxWrite` bytes long:
 * after the last "\n" in reach, or after the first one if a single line is longer.
 * A "\n" is only ever a line's end: JSON escapes the ones in values.
 */
export function wholeLinesEnd(buf: Uint8Array, from: number, end: number, maxWrite: number): number {
  if (end - from <= maxWrite) return end;
  const inReach = buf.lastIndexOf(0x0a, from + maxWrite - 1);
  if (inReach >= from) return inReach + 1;
  const first = buf.indexOf(0x0a, from);
  return first < 0 || first >= end ? end : first + 1;
}

/**
 * `fd`, buffered: lines are gathered in one buffer and written about 64 KiB at a time (or
 * once a second when quiet) instead of one write per request. At most one write is in
 * flight; it writes from a second buffer while lines go on filling the first, and what
 * is still buffered at exit is written synchronously, so no line is lost.
 *
 * `maxWrite`: workers share one stdout pipe, where only writes up to PIPE_BUF (4096
 * bytes) are atomic, so their lines go out in writes of whole lines below it.
 */
export function bufferedFd(fd: number, maxWrite = Infinity): LineSink {
  const line = new LineBytes(BUFFER_SIZE);
  // The buffer being written, from `from` to `end`, or null when no write is in flight;
  // the write in flight ends at `until` (before `end` when writes are bounded).
  let out: Buffer | null = null;
  let from = 0;
  let until = 0;
  let end = 0;
  let spare: Buffer | null = Buffer.allocUnsafeSlow(BUFFER_SIZE);
  const idle: (() => void)[] = [];

  const writeNext = () => {
    const buf = out!;
    until = maxWrite === Infinity ? end : wholeLinesEnd(buf, from, end, maxWrite);
    write(fd, buf, from, until - from, null, (error, written) => {
      // An error (stdout gone, EPIPE) drops this batch rather than let lines pile up without bound.
      from = error !== null || written <= 0 ? end : from + written;
      if (from < end) return writeNext();
      // The batch is out: its buffer becomes the spare, unless a bigger one replaced it.
      if (buf.length === BUFFER_SIZE) spare = buf;
      out = null;
      if (line.at >= FLUSH_AT || idle.length > 0) flush();
    });
  };

  const flush = () => {
    if (out !== null) return;
    if (line.at === 0) {
      for (const resolve of idle.splice(0)) resolve();
      return;
    }
    out = line.buf;
    from = 0;
    end = line.at;
    line.buf = spare ?? Buffer.allocUnsafeSlow(BUFFER_SIZE);
    line.at = 0;
    spare = null;
    writeNext();
  };

  const timer = setInterval(flush, 1000);
  timer.unref();
  // At exit, what no write has taken yet: the rest of a batch written in bounded writes, then the buffer.
  process.once('exit', () => {
    try {
      if (out !== null && until < end) writeSync(fd, out, until, end - until);
      if (line.at > 0) writeSync(fd, line.buf, 0, line.at);
    } catch {
      // stdout gone: nothing to save
    }
  });
  return {
    line,
    endLine() {
      if (line.at >= FLUSH_AT) flush();
    },
    flush() {
      return new Promise<void>((resolve) => {
        idle.push(resolve);
        flush();
      });
    },
  };
}

/** Each line handed to `stream` as a string as soon as it ends. */
export function streamLines(stream: { write(text: string): unknown }): LineSink {
  const line = new LineBytes(4096);
  return {
    line,
    endLine() {
      const text = line.buf.toString('utf8', 0, line.at);
      line.at = 0;
      stream.write(text);
    },
    flush: () => Promise.resolve(),
  };
}
