// What both ends of an HTTP/2 connection do alike (RFC 9113), shared by portico's server
// side (connection.ts, toward clients) and its client side (client-connection.ts, toward
// pods): SETTINGS, PING, WINDOW_UPDATE and the connection window, header blocks split
// over CONTINUATION frames (bounded), and frames out: everything queued while a read
// (or one turn of the event loop) is handled goes out in one socket write, DATA waiting
// for window or for the socket resumes when either opens. Each role decides what is
// an error and what it costs (the abstract methods).
import type { Socket } from 'node:net';
import { DEFAULT_MAX_FRAME_SIZE, DEFAULT_WINDOW, ErrorCode, Flag, FrameReader, MAX_WINDOW, Setting, type FrameSink } from './frames.ts';
import { FrameWriter } from './frame-writer.ts';
import { HpackDecoder, type HeaderBlock } from './hpack.ts';
import type { H2Stream, StreamConnection } from './stream.ts';

/** What a peer may cost an endpoint. */
export interface EndpointLimits {
  /** Compressed bytes of one header block (HEADERS + CONTINUATION) before the connection is ended. */
  readonly maxHeaderBlockBytes: number;
  /** CONTINUATION frames of one header block before the connection is ended (CVE-2024-27316). */
  readonly maxContinuations: number;
  /** SETTINGS and PING acknowledgements queued while the peer does not read: beyond, GOAWAY. */
  readonly maxQueuedAcks: number;
  /** Bytes queued toward the peer (socket included) above which DATA waits. */
  readonly maxQueuedBytes: number;
}

/**
 * The connection window each end gives its peer (section 6.9.2: 64 KiB until a
 * WINDOW_UPDATE). Stream windows stay at the default and bound what is buffered per
 * stream; a connection window of 64 KiB would cap all of a connection's streams together.
 */
export const CONNECTION_WINDOW = 1024 * 1024;
/** Return the connection window once this much arrived. */
const CONNECTION_ACK = 16 * 1024;

export abstract class H2Endpoint<S extends H2Stream> implements FrameSink, StreamConnection {
  readonly socket: Socket;
  readonly streams = new Map<number, S>();
  protected readonly reader = new FrameReader();
  protected readonly decoder = new HpackDecoder();
  protected readonly writer: FrameWriter;
  private readonly limits: EndpointLimits;
  protected settingsReceived = false;
  // The peer's settings and our window toward it.
  protected peerInitialWindow = DEFAULT_WINDOW;
  private sendWindow = DEFAULT_WINDOW;
  private recvWindow = CONNECTION_WINDOW;
  private recvUnacked = 0;
  // A header block in progress (HEADERS without END_HEADERS, then CONTINUATION).
  protected blockStream = 0;
  private blockParts: Buffer[] = [];
  private blockBytes = 0;
  private blockFrames = 0;
  private blockEndStream = false;
  private flushScheduled = false;
  /** Inside a read: what is queued goes out when it ends. */
  protected reading = false;
  private readonly blockedStreams = new Set<H2Stream>();
  private queuedAcks = 0;

  constructor(socket: Socket, limits: EndpointLimits) {
    this.socket = socket;
    this.limits = limits;
    this.writer = new FrameWriter(socket, () => this.scheduleFlush());
    socket.setNoDelay(true);
  }

  /** A connection error: GOAWAY `code`; `reason` says why, for whoever is told. */
  protected abstract connectionError(code: number, reason: string): void;
  /** A stream error on an open stream: RST_STREAM `code`. */
  protected abstract streamProblem(stream: S, code: number, reason: string): void;
  /** Whether `id` is a stream that was never opened (a frame on it is a connection error). */
  protected abstract neverOpened(id: number): boolean;
  /** A whole header block that came in HEADERS and CONTINUATION frames. */
  protected abstract continuedBlock(id: number, block: Buffer, endStream: boolean): void;
  /** A setting only one role acts on (ENABLE_PUSH, MAX_CONCURRENT_STREAMS); false when it failed the connection. */
  protected abstract peerSetting(key: number, value: number): boolean;
  /** The peer acknowledged our SETTINGS. */
  protected abstract settingsAcked(): void;
  /** Our END_STREAM went out on `stream`. */
  abstract localEnded(stream: H2Stream): void;
  /** RST_STREAM `code` and the stream closed. */
  abstract resetStream(stream: H2Stream, code: number): void;
  /** One whole frame in. */
  abstract frame(type: number, flags: number, streamId: number, buf: Buffer, start: number, end: number): void;

  frameTooLarge(): void {
    this.connectionError(ErrorCode.FRAME_SIZE_ERROR, 'a frame larger than our SETTINGS_MAX_FRAME_SIZE');
  }

  // ---------------- frames in ----------------

  /** Counts `length` DATA bytes against the connection window; false when the peer sent past it (the connection failed). */
  protected connectionData(length: number): boolean {
    // Flow control counts the whole payload, padding included (section 6.9.1).
    this.recvWindow -= length;
    if (this.recvWindow < 0) {
      this.connectionError(ErrorCode.FLOW_CONTROL_ERROR, 'DATA past the connection window');
      return false;
    }
    this.recvUnacked += length;
    if (this.recvUnacked >= CONNECTION_ACK) {
      this.recvWindow += this.recvUnacked;
      this.writer.windowUpdate(0, this.recvUnacked);
      this.recvUnacked = 0;
    }
    return true;
  }

  protected onPing(flags: number, streamId: number, buf: Buffer, start: number, end: number): void {
    if (end - start !== 8) return this.connectionError(ErrorCode.FRAME_SIZE_ERROR, 'a PING frame of the wrong size');
    if (streamId !== 0) return this.connectionError(ErrorCode.PROTOCOL_ERROR, 'PING on a stream');
    if ((flags & Flag.ACK) === 0) {
      this.writer.pingAck(buf, start);
      this.ackQueued();
    }
  }

  /** The first fragment of a header block that goes on in CONTINUATION frames. */
  protected startBlock(id: number, fragment: Buffer, endStream: boolean): void {
    this.blockStream = id;
    // Copied: a frame's bytes are the reader's only until the read returns.
    this.blockParts = [Buffer.from(fragment)];
    this.blockBytes = fragment.length;
    this.blockFrames = 0;
    this.blockEndStream = endStream;
  }

  protected onContinuation(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (this.blockStream === 0 || id !== this.blockStream) return this.connectionError(ErrorCode.PROTOCOL_ERROR, 'CONTINUATION out of place');
    this.blockFrames++;
    this.blockBytes += end - start;
    if (this.blockFrames > this.limits.maxContinuations || this.blockBytes > this.limits.maxHeaderBlockBytes) {
      return this.connectionError(ErrorCode.ENHANCE_YOUR_CALM, 'a header block beyond the limits (CONTINUATION flood)');
    }
    if (end > start) this.blockParts.push(Buffer.from(buf.subarray(start, end)));
    if ((flags & Flag.END_HEADERS) === 0) return;
    const block = this.blockParts.length === 1 ? this.blockParts[0]! : Buffer.concat(this.blockParts);
    this.blockStream = 0;
    this.blockParts = [];
    this.continuedBlock(id, block, this.blockEndStream);
  }

  protected onSettings(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id !== 0) return this.connectionError(ErrorCode.PROTOCOL_ERROR, 'SETTINGS on a stream');
    if ((flags & Flag.ACK) !== 0) {
      if (end !== start) return this.connectionError(ErrorCode.FRAME_SIZE_ERROR, 'a SETTINGS ACK with a payload');
      this.settingsAcked();
      return;
    }
    if ((end - start) % 6 !== 0) return this.connectionError(ErrorCode.FRAME_SIZE_ERROR, 'a SETTINGS frame of the wrong size');
    for (let pos = start; pos < end; pos += 6) {
      const key = buf.readUInt16BE(pos);
      const value = buf.readUInt32BE(pos + 2);
      switch (key) {
        case Setting.INITIAL_WINDOW_SIZE: {
          if (value > MAX_WINDOW) return this.connectionError(ErrorCode.FLOW_CONTROL_ERROR, 'INITIAL_WINDOW_SIZE beyond 2^31-1');
          const delta = value - this.peerInitialWindow;
          this.peerInitialWindow = value;
          for (const stream of this.streams.values()) {
            stream.sendWindow += delta;
            if (stream.sendWindow > MAX_WINDOW) return this.connectionError(ErrorCode.FLOW_CONTROL_ERROR, 'a stream window beyond 2^31-1');
          }
          if (delta > 0) this.resumeBlocked();
          break;
        }
        case Setting.MAX_FRAME_SIZE:
          if (value < DEFAULT_MAX_FRAME_SIZE || value > 0xffffff) return this.connectionError(ErrorCode.PROTOCOL_ERROR, 'an invalid MAX_FRAME_SIZE');
          this.writer.maxFrame = value;
          break;
        // HEADER_TABLE_SIZE: our encoder uses no dynamic table.
        default:
          if (!this.peerSetting(key, value)) return;
      }
    }
    this.settingsReceived = true;
    this.writer.settingsAck();
    this.ackQueued();
  }

  protected onWindowUpdate(id: number, buf: Buffer, start: number, end: number): void {
    if (end - start !== 4) return this.connectionError(ErrorCode.FRAME_SIZE_ERROR, 'a WINDOW_UPDATE frame of the wrong size');
    const increment = buf.readUInt32BE(start) & 0x7fffffff;
    if (id === 0) {
      if (increment === 0) return this.connectionError(ErrorCode.PROTOCOL_ERROR, 'a connection WINDOW_UPDATE of 0');
      this.sendWindow += increment;
      if (this.sendWindow > MAX_WINDOW) return this.connectionError(ErrorCode.FLOW_CONTROL_ERROR, 'the connection window beyond 2^31-1');
      this.resumeBlocked();
      return;
    }
    const stream = this.streams.get(id);
    if (stream === undefined) {
      if (this.neverOpened(id)) this.connectionError(ErrorCode.PROTOCOL_ERROR, 'WINDOW_UPDATE on a stream never opened');
      return;
    }
    if (increment === 0) return this.streamProblem(stream, ErrorCode.PROTOCOL_ERROR, 'a stream WINDOW_UPDATE of 0');
    stream.sendWindow += increment;
    if (stream.sendWindow > MAX_WINDOW) return this.streamProblem(stream, ErrorCode.FLOW_CONTROL_ERROR, 'a stream window beyond 2^31-1');
    if (stream.pendingBytes > 0 || stream.pendingEnd) {
      if (stream.flushPending()) this.blockedStreams.delete(stream);
    }
  }

  protected ackQueued(): void {
    if (++this.queuedAcks > this.limits.maxQueuedAcks) this.connectionError(ErrorCode.ENHANCE_YOUR_CALM, 'acknowledgements queued while the peer does not read');
  }

  /** The stream no longer waits to send (it closed). */
  protected unblock(stream: H2Stream): void {
    this.blockedStreams.delete(stream);
  }

  // ---------------- frames out ----------------

  protected scheduleFlush(): void {
    if (this.reading || this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(flushLater, this);
  }

  /** Writes everything queued in one socket write. */
  flush(): void {
    this.flushScheduled = false;
    this.writer.flush();
    const socket = this.socket;
    if (socket.destroyed) return;
    if (socket.writableLength === 0) this.queuedAcks = 0;
    if (this.blockedStreams.size > 0 && !this.congested()) this.resumeBlocked();
  }

  private congested(): boolean {
    return this.socket.writableLength + this.writer.pendingBytes >= this.limits.maxQueuedBytes;
  }

  /** Whether `n` DATA bytes may go out now (connection window, socket not backed up). */
  canSend(n: number): boolean {
    return n <= this.sendWindow && !this.congested();
  }

  /** DATA bytes that may go out now. */
  sendRoom(): number {
    return this.congested() ? 0 : this.sendWindow;
  }

  blocked(stream: H2Stream): void {
    this.blockedStreams.add(stream);
  }

  protected resumeBlocked(): void {
    if (this.socket.writableLength === 0) this.queuedAcks = 0;
    for (const stream of this.blockedStreams) {
      if (this.congested() || this.sendWindow <= 0) break;
      if (stream.flushPending()) this.blockedStreams.delete(stream);
    }
  }

  writeHeaders(id: number, block: HeaderBlock, endStream: boolean): void {
    this.writer.headers(id, block, endStream);
  }

  /** DATA frames for `chunk` (already within the stream's window), END_STREAM on the last when `end`. */
  writeData(id: number, chunk: Buffer, end: boolean): void {
    this.sendWindow -= chunk.length;
    this.writer.data(id, chunk, end);
  }

  windowUpdate(id: number, increment: number): void {
    this.writer.windowUpdate(id, increment);
  }
}

function flushLater(endpoint: H2Endpoint<H2Stream>): void {
  endpoint.flush();
}
