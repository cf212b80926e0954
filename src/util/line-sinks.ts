// Where access lines go once written as bytes (src/util/line-bytes.ts): a file descriptor
// through a 64 KiB buffer (portico's stdout), or any stream that takes strings (a logger's
// own destination; tests read lines back from one).
import { LineBytes } from './line-bytes.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { write, writeSync, openSync, fstatSync, constants } = process.getBuiltinModule('node:fs');

/** A line is written into `line`, then endLine() says it is whole. */
export interface LineSink {
  /** Where the next line is written. */
  readonly line: LineBytes;
  /** The bytes appended to `line` since the last call are one whole line, "\n" included. */
  endLine(): void;
  /** Resolves once every line ended so far is out (the write in flight included). */
  flush(): Promise<void>;
}

/** The longest write to a pipe that Linux (and POSIX) keeps whole when several processes write to it. */
export const PIPE_BUF = 4096;

/**
 * A second descriptor of the pipe `fd` is, non-blocking, or -1 when fd is no pipe. A write
 * through it of at most PIPE_BUF bytes goes in whole at once, or fails with EAGAIN when the
 * pipe is full: no round trip through libuv's thread pool, which cost a pinned worker ~25 µs
 * a write (with 4 KiB writes, 6-11% of its requests). Opened anew through /proc so that fd
 * itself, which pino writes to too, stays blocking.
 */
function nonBlockingPipe(fd: number): number {
  try {
    if (!fstatSync(fd).isFIFO()) return -1;
    return openSync(`/proc/self/fd/${fd}`, constants.O_WRONLY | constants.O_NONBLOCK);
  } catch {
    return -1;
  }
}

/** Whether fd is a regular file: a write there only copies into the page cache. */
function isRegularFile(fd: number): boolean {
  try {
    return fstatSync(fd).isFile();
  } catch {
    return false;
  }
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
 * Into a regular file the batch is written from this thread, as nginx writes its buffered
 * log: a write there copies into the page cache, and a round trip through the thread pool
 * cost more than the copy (4% of the requests a pinned worker served with its log on).
 *
 * `maxWrite`: workers share one stdout pipe, where only writes up to PIPE_BUF (4096
 * bytes) are atomic, so their lines go out in writes of whole lines below it.
 *
 * Into a pipe (a container runtime's stdout), lines always go in writes of whole lines up to
 * PIPE_BUF, so that no other writer's line (another worker's, pino's) lands inside one, and
 * straight from this thread while the pipe has room; only when it is full do they wait in
 * the thread pool.
 */
export function bufferedFd(fd: number, maxWrite = Infinity): LineSink {
  const pipe = nonBlockingPipe(fd);
  // Written from this thread: the pipe's non-blocking descriptor, or a regular file.
  const direct = pipe >= 0 ? pipe : isRegularFile(fd) ? fd : -1;
  if (pipe >= 0) maxWrite = Math.min(maxWrite, PIPE_BUF);
  const line = new LineBytes(BUFFER_SIZE);
  // The buffer being written, from `from` to `end`, or null when no write is in flight;
  // the write in flight ends at `until` (before `end` when writes are bounded).
  let out: Buffer | null = null;
  let from = 0;
  let until = 0;
  let end = 0;
  let spare: Buffer | null = Buffer.allocUnsafeSlow(BUFFER_SIZE);
  const idle: (() => void)[] = [];

  // The batch is out: its buffer becomes the spare, unless a bigger one replaced it.
  const batchOut = (buf: Buffer) => {
    if (buf.length === BUFFER_SIZE) spare = buf;
    out = null;
    if (line.at >= FLUSH_AT || idle.length > 0) flush();
  };

  const writeNext = (): void => {
    const buf = out!;
    if (direct >= 0 && writeNow(direct, buf)) return batchOut(buf);
    until = maxWrite === Infinity ? end : wholeLinesEnd(buf, from, end, maxWrite);
    write(fd, buf, from, until - from, null, (error, written) => {
      // An error (stdout gone, EPIPE) drops this batch rather than let lines pile up without bound.
      from = error !== null || written <= 0 ? end : from + written;
      if (from < end) return writeNext();
      batchOut(buf);
    });
  };

  // Writes what `target` takes now, from this thread: a regular file (into the page cache,
  // as nginx writes its buffered log) or the pipe's non-blocking descriptor. True once the
  // batch is out (or dropped), false when the pipe is full.
  const writeNow = (target: number, buf: Buffer): boolean => {
    while (from < end) {
      const stop = wholeLinesEnd(buf, from, end, maxWrite);
      try {
        // Into a pipe up to PIPE_BUF, all or nothing; a single longer line may go in part, and the rest next.
        const written = writeSync(target, buf, from, stop - from);
        from = written > 0 ? from + written : end;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return false;
        from = end; // stdout gone (EPIPE), the disk full: the batch is dropped, as in the thread pool
      }
    }
    return true;
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
