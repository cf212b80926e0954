// The client side of one HTTP/2 connection to a pod (RFC 9113), on the same codec as
// the server side (connection.ts): frames (FrameReader, FrameWriter), HPACK, and the
// stream's flow control (H2Stream). Requests go out as streams we open; the pod's
// frames are checked as sections 4-6 say, its header blocks decoded within bounds (a
// hostile pod cannot make us hold more than http2ClientLimits allow), its answers
// validated (malformedResponse) before anyone sees them. Everything queued while a read
// (or one turn of the event loop) is handled goes out in one socket write.
import type { Socket } from 'node:net';
import {
  CLIENT_PREFACE, DEFAULT_MAX_FRAME_SIZE, DEFAULT_WINDOW, ErrorCode, FRAME_HEADER, Flag, FrameReader, FrameType,
  MAX_WINDOW, Setting, writeFrameHeader, type FrameSink,
} from './frames.ts';
import { FrameWriter } from './frame-writer.ts';
import { HpackDecoder, HpackError, type HeaderBlock } from './hpack.ts';
import { contentLength, malformedResponse, malformedTrailers, responseStatus } from './request-fields.ts';
import { H2Stream, type OutboundSink, type StreamConnection } from './stream.ts';

/** What a pod may cost us on one connection. */
export const http2ClientLimits = Object.freeze({
  /** Advertised SETTINGS_MAX_HEADER_LIST_SIZE; a larger response head or trailers fail the stream. */
  maxHeaderListSize: 64 * 1024,
  /** Compressed bytes of one header block (HEADERS + CONTINUATION) before the connection is ended. */
  maxHeaderBlockBytes: 256 * 1024,
  /** CONTINUATION frames of one header block before the connection is ended (CVE-2024-27316). */
  maxContinuations: 64,
  /** SETTINGS and PING acknowledgements queued while the pod does not read: beyond, GOAWAY. */
  maxQueuedAcks: 1000,
  /** Bytes queued toward the pod (socket included) above which DATA waits. */
  maxQueuedBytes: 256 * 1024,
});

/** What the connection tells whoever owns one of its streams (the request it carries). */
export interface ClientStreamOwner extends OutboundSink {
  /** A response head (1xx ones too): name, value pairs without :status; `endStream` when there is no body. */
  head(status: number, fields: string[], endStream: boolean): void;
  /** Body bytes, in order. */
  data(chunk: Buffer): void;
  /** Trailer fields; end() follows. */
  trailers(fields: string[]): void;
  /** The answer is complete (END_STREAM). */
  end(): void;
  /** The pod never processed the stream (GOAWAY below it, or REFUSED_STREAM): it may be sent again. cut() follows. */
  refused(): void;
  /** The stream ended before the answer did (reset by either side, a malformed answer, the connection lost): why. */
  cut(reason: string): void;
}

/** What the connection tells the pool. */
export interface ClientConnectionHost {
  /** The pod's SETTINGS_MAX_CONCURRENT_STREAMS (sent or changed). */
  maxStreams(n: number): void;
  /** The pod sent GOAWAY, or we ran out of stream ids: no new streams here. */
  retired(): void;
  /** The connection is gone (every stream was told). */
  closed(reason: string): void;
}

/** A stream we opened: the request's owner, and what has arrived of the answer. */
export class ClientStream extends H2Stream {
  readonly owner: ClientStreamOwner;
  /** The final (non-1xx) head arrived: HEADERS now are trailers. */
  headReceived = false;

  constructor(conn: ClientConnection, id: number, owner: ClientStreamOwner, sendWindow: number, recvWindow: number) {
    super(conn, id, sendWindow, recvWindow);
    this.owner = owner;
    this.outbound = owner;
  }
}

/**
 * The connection window we give the pod. Each stream keeps the default 64 KiB window,
 * so a paused answer buffers at most that; the connection's must cover several of them.
 */
const CONNECTION_WINDOW = 1024 * 1024;
/** Return the connection window once this much arrived. */
const CONNECTION_ACK = 16 * 1024;
/** The last stream id a client may use (odd, 2^31 - 1). */
const LAST_STREAM_ID = 0x7fffffff;

/** The preface, then our SETTINGS: ENABLE_PUSH 0, MAX_HEADER_LIST_SIZE; then a larger connection window. */
const OPENING = (() => {
  const settings = 12;
  const b = Buffer.alloc(CLIENT_PREFACE.length + FRAME_HEADER + settings + FRAME_HEADER + 4);
  CLIENT_PREFACE.copy(b, 0);
  let pos = writeFrameHeader(b, CLIENT_PREFACE.length, settings, FrameType.SETTINGS, 0, 0);
  b.writeUInt16BE(Setting.ENABLE_PUSH, pos);
  b.writeUInt32BE(0, pos + 2);
  b.writeUInt16BE(Setting.MAX_HEADER_LIST_SIZE, pos + 6);
  b.writeUInt32BE(http2ClientLimits.maxHeaderListSize, pos + 8);
  pos = writeFrameHeader(b, pos + settings, 4, FrameType.WINDOW_UPDATE, 0, 0);
  b.writeUInt32BE(CONNECTION_WINDOW - DEFAULT_WINDOW, pos);
  return b;
})();

export class ClientConnection implements FrameSink, StreamConnection {
  readonly socket: Socket;
  private readonly host: ClientConnectionHost;
  private readonly reader = new FrameReader();
  private readonly decoder = new HpackDecoder();
  readonly streams = new Map<number, ClientStream>();
  private nextStreamId = 1;
  private settingsReceived = false;
  private peerInitialWindow = DEFAULT_WINDOW;
  private sendWindow = DEFAULT_WINDOW;
  private recvWindow = CONNECTION_WINDOW;
  private recvUnacked = 0;
  // A header block in progress (HEADERS without END_HEADERS, then CONTINUATION).
  private blockStream = 0;
  private blockParts: Buffer[] = [];
  private blockBytes = 0;
  private blockFrames = 0;
  private blockEndStream = false;
  private readonly writer: FrameWriter;
  private flushScheduled = false;
  private reading = false;
  private readonly blockedStreams = new Set<H2Stream>();
  private queuedAcks = 0;
  /** No new streams (GOAWAY either way, or ids ran out); `closing`: the socket ends with the last stream. */
  private retired = false;
  private closing = false;
  /** A connection error: nothing more is read. */
  private failed = false;
  private reason = 'the HTTP/2 connection to the pod closed';
  destroyed = false;

  constructor(socket: Socket, host: ClientConnectionHost) {
    this.socket = socket;
    this.host = host;
    this.reader.maxPayload = DEFAULT_MAX_FRAME_SIZE;
    this.writer = new FrameWriter(socket, () => this.scheduleFlush());
    socket.setNoDelay(true);
    this.writer.raw(OPENING);
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('drain', () => this.resumeBlocked());
    socket.on('error', (err: Error) => {
      this.reason = `the connection to the pod failed: ${err.message}`;
      socket.destroy();
    });
    socket.once('close', () => this.gone());
    socket.resume();
  }

  /** Whether it takes new streams. */
  get usable(): boolean {
    return !this.retired && !this.failed && !this.destroyed;
  }

  // ---------------- streams out ----------------

  /** Opens a stream with the request head `block` (END_STREAM when `endStream`: no body). */
  request(owner: ClientStreamOwner, block: HeaderBlock, endStream: boolean): ClientStream {
    const id = this.nextStreamId;
    this.nextStreamId += 2;
    if (this.nextStreamId > LAST_STREAM_ID) this.retire();
    const stream = new ClientStream(this, id, owner, this.peerInitialWindow, DEFAULT_WINDOW);
    this.streams.set(id, stream);
    stream.sendHeaders(block, endStream);
    return stream;
  }

  // ---------------- frames in ----------------

  private read(chunk: Buffer): void {
    if (this.failed) return;
    this.reading = true;
    this.reader.push(chunk, this);
    this.reading = false;
    this.flush();
  }

  frameTooLarge(): void {
    this.fail(ErrorCode.FRAME_SIZE_ERROR, 'the pod sent a frame larger than our SETTINGS_MAX_FRAME_SIZE');
  }

  frame(type: number, flags: number, streamId: number, buf: Buffer, start: number, end: number): void {
    if (this.failed) return;
    if (this.blockStream !== 0 && type !== FrameType.CONTINUATION) return this.protocolError('a frame inside a header block');
    if (!this.settingsReceived && (type !== FrameType.SETTINGS || (flags & Flag.ACK) !== 0)) return this.protocolError('no SETTINGS first');
    switch (type) {
      case FrameType.DATA:
        return this.onData(flags, streamId, buf, start, end);
      case FrameType.HEADERS:
        return this.onHeaders(flags, streamId, buf, start, end);
      case FrameType.CONTINUATION:
        return this.onContinuation(flags, streamId, buf, start, end);
      case FrameType.PRIORITY:
        if (streamId === 0) return this.protocolError('PRIORITY on stream 0');
        if (end - start !== 5) return this.fail(ErrorCode.FRAME_SIZE_ERROR, 'a PRIORITY frame of the wrong size');
        return;
      case FrameType.RST_STREAM:
        return this.onReset(streamId, buf, start, end);
      case FrameType.SETTINGS:
        return this.onSettings(flags, streamId, buf, start, end);
      case FrameType.PUSH_PROMISE:
        // We said ENABLE_PUSH 0 (section 8.4).
        return this.protocolError('PUSH_PROMISE with push disabled');
      case FrameType.PING:
        if (end - start !== 8) return this.fail(ErrorCode.FRAME_SIZE_ERROR, 'a PING frame of the wrong size');
        if (streamId !== 0) return this.protocolError('PING on a stream');
        if ((flags & Flag.ACK) === 0) {
          this.writer.pingAck(buf, start);
          this.ackQueued();
        }
        return;
      case FrameType.GOAWAY:
        if (streamId !== 0) return this.protocolError('GOAWAY on a stream');
        if (end - start < 8) return this.fail(ErrorCode.FRAME_SIZE_ERROR, 'a GOAWAY frame too short');
        return this.onGoaway(buf.readUInt32BE(start) & 0x7fffffff, buf.readUInt32BE(start + 4));
      case FrameType.WINDOW_UPDATE:
        return this.onWindowUpdate(streamId, buf, start, end);
      default:
        // Unknown frame types are ignored (section 5.5).
        return;
    }
  }

  private onData(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id === 0) return this.protocolError('DATA on stream 0');
    const length = end - start;
    // Flow control counts the whole payload, padding included (section 6.9.1).
    this.recvWindow -= length;
    if (this.recvWindow < 0) return this.fail(ErrorCode.FLOW_CONTROL_ERROR, 'the pod sent past the connection window');
    this.recvUnacked += length;
    if (this.recvUnacked >= CONNECTION_ACK) {
      this.recvWindow += this.recvUnacked;
      this.writer.windowUpdate(0, this.recvUnacked);
      this.recvUnacked = 0;
    }
    let dataStart = start;
    let dataEnd = end;
    if ((flags & Flag.PADDED) !== 0) {
      if (length < 1) return this.fail(ErrorCode.FRAME_SIZE_ERROR, 'padded DATA without a pad length');
      const pad = buf[start]!;
      if (pad >= length) return this.protocolError('DATA padding longer than the frame');
      dataStart = start + 1;
      dataEnd = end - pad;
    }
    const stream = this.streams.get(id);
    if (stream === undefined) {
      if (id >= this.nextStreamId) return this.protocolError('DATA on a stream never opened');
      // A stream we reset or finished: late frames are ignored.
      return;
    }
    if (!stream.headReceived) return this.streamFailed(stream, ErrorCode.PROTOCOL_ERROR, 'the pod sent DATA before a response head');
    if (stream.remoteEnded) return this.streamFailed(stream, ErrorCode.STREAM_CLOSED, 'the pod sent DATA after the end of the stream');
    stream.recvWindow -= length;
    if (stream.recvWindow < 0) return this.streamFailed(stream, ErrorCode.FLOW_CONTROL_ERROR, 'the pod sent past the stream window');
    const size = dataEnd - dataStart;
    // The padding is nobody's to consume: give it back at once.
    if (size < length) stream.consumed(length - size);
    stream.receivedLength += size;
    if (stream.expectedLength >= 0 && stream.receivedLength > stream.expectedLength) return this.streamFailed(stream, ErrorCode.PROTOCOL_ERROR, 'the pod sent more than its content-length');
    const endStream = (flags & Flag.END_STREAM) !== 0;
    if (endStream && stream.expectedLength >= 0 && stream.receivedLength !== stream.expectedLength) return this.streamFailed(stream, ErrorCode.PROTOCOL_ERROR, 'the pod sent less than its content-length');
    if (size > 0) stream.owner.data(buf.subarray(dataStart, dataEnd));
    if (endStream && !stream.closed) this.remoteEnd(stream);
  }

  private onHeaders(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id === 0) return this.protocolError('HEADERS on stream 0');
    if ((id & 1) === 0 || id >= this.nextStreamId) return this.protocolError('HEADERS on a stream we never opened');
    let pos = start;
    let blockEnd = end;
    if ((flags & Flag.PADDED) !== 0) {
      if (end - start < 1) return this.fail(ErrorCode.FRAME_SIZE_ERROR, 'padded HEADERS without a pad length');
      const pad = buf[pos++]!;
      if (pad >= end - start) return this.protocolError('HEADERS padding longer than the frame');
      blockEnd = end - pad;
    }
    if ((flags & Flag.PRIORITY) !== 0) pos += 5;
    if (pos > blockEnd) return this.protocolError('HEADERS too short');
    const fragment = buf.subarray(pos, blockEnd);
    const endStream = (flags & Flag.END_STREAM) !== 0;
    if ((flags & Flag.END_HEADERS) !== 0) return this.headerBlock(id, fragment, endStream);
    if (fragment.length > http2ClientLimits.maxHeaderBlockBytes) return this.fail(ErrorCode.ENHANCE_YOUR_CALM, 'the pod sent a header block beyond the limit');
    this.blockStream = id;
    // Copied: the frame's bytes are only ours until this read returns.
    this.blockParts = [Buffer.from(fragment)];
    this.blockBytes = fragment.length;
    this.blockFrames = 0;
    this.blockEndStream = endStream;
  }

  private onContinuation(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (this.blockStream === 0 || id !== this.blockStream) return this.protocolError('CONTINUATION out of place');
    this.blockFrames++;
    this.blockBytes += end - start;
    if (this.blockFrames > http2ClientLimits.maxContinuations || this.blockBytes > http2ClientLimits.maxHeaderBlockBytes) {
      return this.fail(ErrorCode.ENHANCE_YOUR_CALM, 'the pod sent a header block beyond the limits (CONTINUATION flood)');
    }
    if (end > start) this.blockParts.push(Buffer.from(buf.subarray(start, end)));
    if ((flags & Flag.END_HEADERS) === 0) return;
    const block = this.blockParts.length === 1 ? this.blockParts[0]! : Buffer.concat(this.blockParts);
    this.blockStream = 0;
    this.blockParts = [];
    this.headerBlock(id, block, this.blockEndStream);
  }

  /** A whole header block: decoded always (the HPACK table must stay in step), then a response head or trailers. */
  private headerBlock(id: number, block: Buffer, endStream: boolean): void {
    const fields: string[] = [];
    let listSize: number;
    try {
      listSize = this.decoder.decode(block, 0, block.length, fields, http2ClientLimits.maxHeaderListSize);
    } catch (err) {
      if (err instanceof HpackError) return this.fail(ErrorCode.COMPRESSION_ERROR, `the pod's header block could not be decoded: ${err.message}`);
      throw err;
    }
    const stream = this.streams.get(id);
    // A stream we reset or finished.
    if (stream === undefined) return;
    if (stream.remoteEnded) return this.streamFailed(stream, ErrorCode.STREAM_CLOSED, 'the pod sent HEADERS after the end of the stream');
    if (listSize > http2ClientLimits.maxHeaderListSize) {
      return this.streamFailed(stream, ErrorCode.ENHANCE_YOUR_CALM, `the pod's header list is larger than ${http2ClientLimits.maxHeaderListSize} bytes`);
    }
    if (stream.headReceived) {
      if (!endStream) return this.streamFailed(stream, ErrorCode.PROTOCOL_ERROR, 'the pod sent trailers without END_STREAM');
      const bad = malformedTrailers(fields);
      if (bad !== undefined) return this.streamFailed(stream, ErrorCode.PROTOCOL_ERROR, `malformed trailers from the pod: ${bad}`);
      if (stream.expectedLength >= 0 && stream.receivedLength !== stream.expectedLength) return this.streamFailed(stream, ErrorCode.PROTOCOL_ERROR, 'the pod sent less than its content-length');
      stream.owner.trailers(fields);
      if (!stream.closed) this.remoteEnd(stream);
      return;
    }
    const bad = malformedResponse(fields);
    if (bad !== undefined) return this.streamFailed(stream, ErrorCode.PROTOCOL_ERROR, `malformed response head from the pod: ${bad}`);
    const status = responseStatus;
    // The pseudo-headers come first; :status is the only one.
    fields.splice(0, 2);
    if (status < 200) {
      if (endStream) return this.streamFailed(stream, ErrorCode.PROTOCOL_ERROR, 'the pod ended the stream with a 1xx head');
      stream.owner.head(status, fields, false);
      return;
    }
    stream.headReceived = true;
    stream.expectedLength = contentLength;
    if (endStream && contentLength > 0) return this.streamFailed(stream, ErrorCode.PROTOCOL_ERROR, 'the pod sent less than its content-length');
    stream.owner.head(status, fields, endStream);
    if (endStream && !stream.closed) this.remoteEnd(stream);
  }

  private onReset(id: number, buf: Buffer, start: number, end: number): void {
    if (end - start !== 4) return this.fail(ErrorCode.FRAME_SIZE_ERROR, 'an RST_STREAM frame of the wrong size');
    if (id === 0 || id >= this.nextStreamId) return this.protocolError('RST_STREAM on a stream never opened');
    const stream = this.streams.get(id);
    if (stream === undefined) return;
    const code = buf.readUInt32BE(start);
    stream.reset = true;
    // REFUSED_STREAM: the pod did no work on it (section 8.7).
    if (code === ErrorCode.REFUSED_STREAM && !stream.headReceived) stream.owner.refused();
    this.closeStream(stream, code === ErrorCode.NO_ERROR ? 'the pod closed the stream before the response ended' : `the pod reset the stream (HTTP/2 error code ${code})`);
  }

  private onSettings(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id !== 0) return this.protocolError('SETTINGS on a stream');
    if ((flags & Flag.ACK) !== 0) {
      if (end !== start) this.fail(ErrorCode.FRAME_SIZE_ERROR, 'a SETTINGS ACK with a payload');
      return;
    }
    if ((end - start) % 6 !== 0) return this.fail(ErrorCode.FRAME_SIZE_ERROR, 'a SETTINGS frame of the wrong size');
    for (let pos = start; pos < end; pos += 6) {
      const key = buf.readUInt16BE(pos);
      const value = buf.readUInt32BE(pos + 2);
      switch (key) {
        case Setting.ENABLE_PUSH:
          // A server never sends it other than 0 (section 6.5.2); 1 is an error.
          if (value !== 0) return this.protocolError('ENABLE_PUSH from a server');
          break;
        case Setting.MAX_CONCURRENT_STREAMS:
          this.host.maxStreams(value);
          break;
        case Setting.INITIAL_WINDOW_SIZE: {
          if (value > MAX_WINDOW) return this.fail(ErrorCode.FLOW_CONTROL_ERROR, 'INITIAL_WINDOW_SIZE beyond 2^31-1');
          const delta = value - this.peerInitialWindow;
          this.peerInitialWindow = value;
          for (const stream of this.streams.values()) {
            stream.sendWindow += delta;
            if (stream.sendWindow > MAX_WINDOW) return this.fail(ErrorCode.FLOW_CONTROL_ERROR, 'a stream window beyond 2^31-1');
          }
          if (delta > 0) this.resumeBlocked();
          break;
        }
        case Setting.MAX_FRAME_SIZE:
          if (value < DEFAULT_MAX_FRAME_SIZE || value > 0xffffff) return this.protocolError('an invalid MAX_FRAME_SIZE');
          this.writer.maxFrame = value;
          break;
        // HEADER_TABLE_SIZE: our encoder uses no dynamic table. MAX_HEADER_LIST_SIZE: requests come from our front, within its own limit.
      }
    }
    this.settingsReceived = true;
    this.writer.settingsAck();
    this.ackQueued();
  }

  private onWindowUpdate(id: number, buf: Buffer, start: number, end: number): void {
    if (end - start !== 4) return this.fail(ErrorCode.FRAME_SIZE_ERROR, 'a WINDOW_UPDATE frame of the wrong size');
    const increment = buf.readUInt32BE(start) & 0x7fffffff;
    if (id === 0) {
      if (increment === 0) return this.protocolError('a connection WINDOW_UPDATE of 0');
      this.sendWindow += increment;
      if (this.sendWindow > MAX_WINDOW) return this.fail(ErrorCode.FLOW_CONTROL_ERROR, 'the connection window beyond 2^31-1');
      this.resumeBlocked();
      return;
    }
    const stream = this.streams.get(id);
    if (stream === undefined) {
      if (id >= this.nextStreamId) this.protocolError('WINDOW_UPDATE on a stream never opened');
      return;
    }
    if (increment === 0) return this.streamFailed(stream, ErrorCode.PROTOCOL_ERROR, 'the pod sent a stream WINDOW_UPDATE of 0');
    stream.sendWindow += increment;
    if (stream.sendWindow > MAX_WINDOW) return this.streamFailed(stream, ErrorCode.FLOW_CONTROL_ERROR, 'the pod opened a stream window beyond 2^31-1');
    if (stream.pendingBytes > 0 || stream.pendingEnd) {
      if (stream.flushPending()) this.blockedStreams.delete(stream);
    }
  }

  /** The pod closes: streams above `lastId` were never processed (they may be sent again); the others finish. */
  private onGoaway(lastId: number, code: number): void {
    this.retire();
    if (code !== ErrorCode.NO_ERROR) this.reason = `the pod ended the HTTP/2 connection (GOAWAY, error code ${code})`;
    for (const stream of [...this.streams.values()]) {
      if (stream.id <= lastId) continue;
      stream.reset = true;
      stream.owner.refused();
      this.closeStream(stream, 'the pod closed the connection without processing the stream (GOAWAY)');
    }
  }

  private remoteEnd(stream: ClientStream): void {
    stream.remoteEnded = true;
    stream.owner.end();
    if (stream.endSent) this.closeStream(stream, undefined);
  }

  // ---------------- errors ----------------

  private protocolError(why: string): void {
    this.fail(ErrorCode.PROTOCOL_ERROR, `HTTP/2 protocol error from the pod: ${why}`);
  }

  /** A stream error: RST_STREAM `code` to the pod, the request fails with `reason`. */
  private streamFailed(stream: ClientStream, code: number, reason: string): void {
    this.cutStream(stream, code, reason);
  }

  private ackQueued(): void {
    if (++this.queuedAcks > http2ClientLimits.maxQueuedAcks) this.fail(ErrorCode.ENHANCE_YOUR_CALM, 'the pod does not read its acknowledgements');
  }

  /** A connection error: GOAWAY with `code`, then the socket ends; every stream fails. */
  private fail(code: number, reason: string): void {
    if (this.failed) return;
    this.failed = true;
    this.reason = reason;
    this.reader.stopped = true;
    this.writer.goaway(0, code);
    this.failStreams(reason);
    this.flush();
    this.endSocket();
  }

  private failStreams(reason: string): void {
    for (const stream of [...this.streams.values()]) {
      stream.reset = true;
      this.closeStream(stream, reason);
    }
  }

  private retire(): void {
    if (this.retired) return;
    this.retired = true;
    this.host.retired();
  }

  /** No new streams; the connection ends (GOAWAY NO_ERROR) once the open ones are done. */
  close(): void {
    this.retire();
    this.closing = true;
    if (this.streams.size === 0) this.goodbye();
  }

  private goodbye(): void {
    if (this.failed || this.destroyed) return;
    this.failed = true;
    this.writer.goaway(0, ErrorCode.NO_ERROR);
    this.flush();
    this.endSocket();
  }

  private endSocket(): void {
    const socket = this.socket;
    if (socket.destroyed) return;
    socket.end();
    // A pod that never closes its side: do not wait for it.
    setTimeout(() => socket.destroy(), 1000).unref();
  }

  /** Closes the socket now; streams in flight fail. */
  destroy(reason: string): void {
    this.reason = reason;
    this.socket.destroy();
  }

  private gone(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.failed = true;
    this.failStreams(this.reason);
    this.host.closed(this.reason);
  }

  /** RST_STREAM `code` (our request cancelled it) and the stream closed. */
  resetStream(stream: H2Stream, code: number): void {
    this.cutStream(stream as ClientStream, code, 'the stream was cancelled');
  }

  /** RST_STREAM `code` and the stream closed; its owner hears `reason` unless the answer was complete. */
  private cutStream(stream: ClientStream, code: number, reason: string): void {
    if (stream.closed) return;
    stream.reset = true;
    if (!this.socket.destroyed) this.writer.reset(stream.id, code);
    this.closeStream(stream, reason);
  }

  localEnded(stream: H2Stream): void {
    // The request is sent; the stream stays open (half-closed) for the answer.
    if (stream.remoteEnded) this.closeStream(stream as ClientStream, undefined);
  }

  /** The stream is over; `cut`: why, when it ended before the answer did. */
  private closeStream(stream: ClientStream, cut: string | undefined): void {
    if (stream.closed) return;
    stream.closed = true;
    this.streams.delete(stream.id);
    this.blockedStreams.delete(stream);
    if (cut !== undefined && !stream.remoteEnded) stream.owner.cut(cut);
    stream.owner.streamClosed();
    if (this.closing && this.streams.size === 0) this.goodbye();
  }

  // ---------------- frames out ----------------

  private scheduleFlush(): void {
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
    return this.socket.writableLength + this.writer.pendingBytes >= http2ClientLimits.maxQueuedBytes;
  }

  canSend(n: number): boolean {
    return n <= this.sendWindow && !this.congested();
  }

  sendRoom(): number {
    return this.congested() ? 0 : this.sendWindow;
  }

  blocked(stream: H2Stream): void {
    this.blockedStreams.add(stream);
  }

  private resumeBlocked(): void {
    if (this.socket.writableLength === 0) this.queuedAcks = 0;
    for (const stream of this.blockedStreams) {
      if (this.congested() || this.sendWindow <= 0) break;
      if (stream.flushPending()) this.blockedStreams.delete(stream);
    }
  }

  writeHeaders(id: number, block: HeaderBlock, endStream: boolean): void {
    this.writer.headers(id, block, endStream);
  }

  writeData(id: number, chunk: Buffer, end: boolean): void {
    this.sendWindow -= chunk.length;
    this.writer.data(id, chunk, end);
  }

  windowUpdate(id: number, increment: number): void {
    this.writer.windowUpdate(id, increment);
  }
}

function flushLater(conn: ClientConnection): void {
  conn.flush();
}
