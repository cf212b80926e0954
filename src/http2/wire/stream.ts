// One HTTP/2 stream (RFC 9113 section 5.1), on either side: its state, its two
// flow-control windows, the peer's DATA on its way in and ours waiting for window. On
// portico's server the inbound side is the client's request and the outbound side our
// answer; on portico's client to pods (client-connection.ts) the other way round. No
// Duplex and no events: the connection calls the sinks that own the stream, and they
// call back here.
import type { Socket } from 'node:net';
import type { HeaderBlock } from './hpack.ts';

/** What a stream tells whoever reads what the peer sends (the request on a server, the answer on a client). */
export interface InboundSink {
  /** Body bytes, in order. */
  data(chunk: Buffer): void;
  /** The body ended (END_STREAM, Content-Length matched). */
  end(): void;
  /** The stream was reset or its connection lost before the body ended. */
  aborted(): void;
}

/** What a stream tells whoever writes to the peer (the answer on a server, the request on a client). */
export interface OutboundSink {
  /** It may write again (window opened, socket drained). */
  drain(): void;
  /** The stream closed: ended both ways, reset by either side, or its connection gone. */
  streamClosed(): void;
}

/** What a stream needs of its connection (server or client role). */
export interface StreamConnection {
  readonly socket: Socket;
  writeHeaders(id: number, block: HeaderBlock, endStream: boolean): void;
  writeData(id: number, chunk: Buffer, end: boolean): void;
  windowUpdate(id: number, increment: number): void;
  canSend(n: number): boolean;
  sendRoom(): number;
  blocked(stream: H2Stream): void;
  resetStream(stream: H2Stream, code: number): void;
  /** Our END_STREAM went out: the connection decides what that means for the stream. */
  localEnded(stream: H2Stream): void;
}

/** Acknowledge received DATA once this much of it was consumed (half the default window). */
const ACK_THRESHOLD = 32_768;

export class H2Stream {
  readonly id: number;
  readonly conn: StreamConnection;
  inbound: InboundSink | undefined = undefined;
  outbound: OutboundSink | undefined = undefined;
  /** Body bytes (and the end) that came before the request was handed over. */
  early: Buffer[] | undefined = undefined;
  /** END_STREAM received. */
  remoteEnded = false;
  /** END_STREAM queued. */
  localEnded = false;
  /** END_STREAM written (not just waiting behind DATA). */
  endSent = false;
  closed = false;
  /** Reset (either way) rather than ended. */
  reset = false;
  /** Bytes we may still send (the peer's window for this stream). */
  sendWindow: number;
  /** Bytes the peer may still send before a WINDOW_UPDATE from us. */
  recvWindow: number;
  /** Consumed request bytes not yet returned by WINDOW_UPDATE. */
  private unacked = 0;
  /** The declared request body length (-1: none), and the DATA bytes so far. */
  expectedLength = -1;
  receivedLength = 0;
  /** DATA waiting for window or for the socket (made when some first waits: most streams never wait), and what ends the stream after it. */
  pending: Buffer[] | undefined = undefined;
  pendingBytes = 0;
  pendingEnd = false;
  pendingTrailers: HeaderBlock | undefined = undefined;
  /** The owner asked to hear when it may write again. */
  wantsDrain = false;
  /** The request has been handed to the handler (or answered before it). */
  dispatched = false;

  constructor(conn: StreamConnection, id: number, sendWindow: number, recvWindow: number) {
    this.conn = conn;
    this.id = id;
    this.sendWindow = sendWindow;
    this.recvWindow = recvWindow;
  }

  /** Hands the body bytes and end that came early to `sink`, then the rest as it comes. */
  attach(sink: InboundSink): void {
    this.inbound = sink;
    const early = this.early;
    this.early = undefined;
    if (early !== undefined) for (const chunk of early) sink.data(chunk);
    if (this.remoteEnded && !this.reset) sink.end();
  }

  /** Returns `bytes` of request body to the peer's window once the owner consumed them. */
  consumed(bytes: number): void {
    if (this.closed || this.remoteEnded || bytes <= 0) return;
    this.unacked += bytes;
    if (this.unacked < ACK_THRESHOLD) return;
    this.recvWindow += this.unacked;
    this.conn.windowUpdate(this.id, this.unacked);
    this.unacked = 0;
  }

  /** The response head; `endStream` when there is no body. */
  sendHeaders(block: HeaderBlock, endStream: boolean): void {
    if (this.closed || this.localEnded) return;
    this.conn.writeHeaders(this.id, block, endStream);
    if (endStream) this.localDone();
  }

  /** An interim (1xx) head. */
  sendInformational(block: HeaderBlock): void {
    if (this.closed || this.localEnded) return;
    this.conn.writeHeaders(this.id, block, false);
  }

  /**
   * Body bytes, and END_STREAM after them when `end`. False when the caller should wait
   * for drain(): the bytes are kept (never dropped), but more would queue without bound.
   */
  sendData(chunk: Buffer, end: boolean): boolean {
    if (this.closed || this.localEnded) return false;
    if (end) this.localEnded = true;
    if (this.pendingBytes === 0 && chunk.length <= this.sendWindow && this.conn.canSend(chunk.length)) {
      this.sendWindow -= chunk.length;
      this.conn.writeData(this.id, chunk, end);
      if (end) this.localDone();
      return true;
    }
    if (chunk.length > 0) {
      (this.pending ??= []).push(chunk);
      this.pendingBytes += chunk.length;
    }
    if (end) this.pendingEnd = true;
    // Send what the windows allow now; the rest waits for WINDOW_UPDATE or the socket.
    if (this.flushPending()) return true;
    this.conn.blocked(this);
    if (end) return true;
    this.wantsDrain = true;
    return false;
  }

  /** Ends the stream with trailer fields (after any DATA still waiting). */
  sendTrailers(block: HeaderBlock): void {
    if (this.closed || this.localEnded) return;
    this.localEnded = true;
    if (this.pendingBytes === 0) {
      this.conn.writeHeaders(this.id, block, true);
      this.localDone();
      return;
    }
    this.pendingTrailers = block;
    this.pendingEnd = true;
  }

  /** Sends what window and socket allow of the waiting DATA; true when nothing waits any more (the stream can leave the blocked set). */
  flushPending(): boolean {
    let endWritten = false;
    while (this.pendingBytes > 0) {
      const room = Math.min(this.sendWindow, this.conn.sendRoom());
      if (room <= 0) return false;
      // pendingBytes > 0: some DATA was queued, so the list exists.
      const pending = this.pending!;
      const head = pending[0]!;
      const part = head.length <= room ? head : head.subarray(0, room);
      if (part === head) pending.shift();
      else pending[0] = head.subarray(room);
      this.pendingBytes -= part.length;
      this.sendWindow -= part.length;
      endWritten = this.pendingBytes === 0 && this.pendingEnd && this.pendingTrailers === undefined;
      this.conn.writeData(this.id, part, endWritten);
    }
    if (this.pendingEnd) {
      this.pendingEnd = false;
      if (this.pendingTrailers !== undefined) {
        this.conn.writeHeaders(this.id, this.pendingTrailers, true);
        this.pendingTrailers = undefined;
      } else if (!endWritten) {
        // An end with no bytes left to carry it (end() after a write that waited).
        this.conn.writeData(this.id, EMPTY, true);
      }
      this.localDone();
    } else if (this.wantsDrain) {
      this.wantsDrain = false;
      this.outbound?.drain();
      // What the response wrote on drain may be waiting again.
      return this.pendingBytes === 0 && !this.pendingEnd;
    }
    return true;
  }

  private localDone(): void {
    this.endSent = true;
    this.conn.localEnded(this);
  }

  /** Cuts the stream: RST_STREAM with `code`. */
  resetWith(code: number): void {
    if (this.closed) return;
    this.conn.resetStream(this, code);
  }
}

const EMPTY = Buffer.alloc(0);
