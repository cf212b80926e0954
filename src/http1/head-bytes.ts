// HTTP/1.1 heads written as bytes into one shared scratch buffer, not built as strings.
// Joining a head from strings (status line, then "name: value\r\n" per header) made about
// a third of the bytes a proxied request allocates: a cons string per piece, then a flat
// copy to write it. Those bytes set how often the young generation is collected, and
// each collection holds up every request in flight. Here the head's characters go
// straight into a buffer that is reused.
//
// While the worker is busy (turn-writes.ts: its event loop, or its thread's wait for a
// CPU), a head sent to a plain TCP socket waits in the buffer for the end of the turn, and
// the next head is built after it; once the turn's writes are done, heads are built from
// the start again. When 32 KiB wait, or once the worker is no longer busy, the next head
// writes them first. While it has time to spare, heads are written at once. A socket that
// kept a write's bytes (the kernel took only part) keeps this buffer, and the next heads
// get a new one. A socket that would keep the buffer at once (TLS, corked, or still
// writing) is given a copy. A request to a pod, whose head is built before its connection
// is known, leaves it here (`hold`): a free connection taking it in the same run sends it
// from here, and otherwise it is copied out for the request when the next head begins.
import type { Socket } from 'node:net';
import { afterWrites, deferWrite, workerIsBusy, settle, writeAll, writesWait } from './turn-writes.ts';
import { QUEUED, WRITTEN, writeDirect } from './direct-write.ts';
import { LineBytes } from '../util/line-bytes.ts';
import { PrefixViews } from '../util/prefix-views.ts';

/** Keeps a head left in the scratch buffer (hold) once the buffer is needed again. */
export interface HeadHolder {
  keepHead(copy: Buffer): void;
}

/** Room for a head and a small body behind it (bigger ones get a buffer of their own). */
const SCRATCH_SIZE = 64 * 1024;
/** Views of the scratch buffer's start kept for reuse, by length (see send). */
const MAX_VIEWS = 64;
/** Past this many bytes of messages waiting for the end of the turn, they are written before the next head. */
const WAITING_LIMIT = 32 * 1024;

/**
 * Builds one head at a time. Not reentrant: a head is begun, written to and sent (or
 * copied out) before the next one begins, all in one synchronous run.
 */
export class HeadBytes extends LineBytes {
  /**
   * Whose head the scratch buffer still holds, unwritten (a request to a pod, built before
   * its connection is known: written from here when a free connection takes it in the same
   * run, as most do, else copied out when the next head begins).
   */
  private held: HeadHolder | null = null;
  /** Where the head being built begins. */
  private start = 0;
  /** The end of the messages sent from the scratch buffer that wait for the end of the turn. */
  private waitingEnd = 0;
  private readonly views = new PrefixViews(MAX_VIEWS);

  constructor() {
    super(SCRATCH_SIZE);
    afterWrites((bytesKept) => {
      // A head held here is copied out before the buffer may be replaced.
      if (this.held !== null) this.release(this.held);
      // A socket that kept its message's bytes (the kernel took part) keeps this buffer: the next heads get a new one.
      if (bytesKept) this.keptBySocket();
      this.waitingEnd = 0;
    });
  }

  begin(): void {
    if (this.held !== null) this.release(this.held);
    // Past the room kept for them, or once the worker has time to spare, the waiting heads go out first.
    if (this.waitingEnd !== 0 && (this.waitingEnd > WAITING_LIMIT || !workerIsBusy())) writeAll();
    this.at = this.start = this.waitingEnd;
  }

  /** Leaves the head just built here for `holder`: sendHeld writes it, or it gets a copy (keepHead) when the next head begins. */
  hold(holder: HeadHolder): void {
    this.held = holder;
  }

  /** Writes `holder`'s head if the scratch buffer still holds it (returns false, writing nothing, if it was copied out). */
  sendHeld(holder: HeadHolder, socket: Socket): boolean {
    if (this.held !== holder) return false;
    this.held = null;
    this.send(socket);
    return true;
  }

  /** `holder`'s head for keeping: copied out now if the scratch buffer still holds it. */
  release(holder: HeadHolder): void {
    if (this.held !== holder) return;
    this.held = null;
    holder.keepHead(this.copy());
  }

  /** Appends "name: value\r\n". */
  field(name: string, value: string): void {
    this.latin1(name);
    this.room(2);
    this.buf[this.at++] = 0x3a; // :
    this.buf[this.at++] = 0x20;
    this.latin1(value);
    this.crlf();
  }

  crlf(): void {
    this.room(2);
    this.buf[this.at++] = 0x0d;
    this.buf[this.at++] = 0x0a;
  }

  /** The head so far in a buffer of its own (for a head kept past this run). */
  copy(): Buffer {
    const out = Buffer.allocUnsafe(this.at - this.start);
    this.buf.copy(out, 0, this.start, this.at);
    return out;
  }

  /**
   * Writes the bytes so far to `socket`: at the end of this turn while the worker is busy
   * (turn-writes.ts), else now; through socket.write for a socket that would keep the
   * buffer or has writes queued. Returns false when the socket asks the caller to wait for 'drain'.
   */
  send(socket: Socket): boolean {
    const wait = writesWait();
    // Messages left waiting from a busy spell go first.
    if (!wait) settle(socket);
    // TLS completes every write later (after encrypting), and a corked or busy socket queues the write.
    if (socket.writableLength !== 0 || socket.writableCorked !== 0 || (socket as Socket & { encrypted?: boolean }).encrypted === true) {
      settle(socket);
      return socket.write(this.copy());
    }
    // A head from the buffer's start (most, when written at once) reuses a view of that length:
    // whoever has it is done with it before the buffer's start is written again.
    const bytes = this.start === 0 ? this.views.get(this.buf, this.at) : this.buf.subarray(this.start, this.at);
    if (wait) {
      // The head stays where it was built until the turn's writes are done; the next begins after it.
      deferWrite(socket, bytes);
      this.waitingEnd = this.at;
      return true;
    }
    const direct = writeDirect(socket, bytes);
    if (direct === WRITTEN) return true;
    if (direct === QUEUED) {
      this.keptBySocket();
      return false;
    }
    const ok = socket.write(bytes);
    if (socket.writableLength !== 0) this.keptBySocket();
    return ok;
  }

  /** The kernel took only part of a write: the socket keeps this buffer, and the next heads get a new one. */
  private keptBySocket(): void {
    this.buf = Buffer.allocUnsafeSlow(SCRATCH_SIZE);
    this.waitingEnd = 0;
  }
}

/** The one builder: heads are built and sent one at a time on the one JavaScript thread. */
export const headBytes = new HeadBytes();
