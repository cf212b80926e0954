// The client side of one HTTP/2 connection to a pod (RFC 9113): the same engine as the
// server side (connection.ts) in the other role. What both ends do alike (SETTINGS, PING,
// windows, CONTINUATION, frames out in one socket write per read or event-loop turn) is
// H2Endpoint (endpoint.ts); the codec (frames, HPACK) and the stream's flow control
// (H2Stream) are shared too. Requests go out as streams we open; the pod's frames are
// checked as sections 4-6 say, its header blocks decoded within bounds (a hostile pod
// cannot make us hold more than http2ClientLimits allow), its answers validated
// (malformedResponse) before anyone sees them.
import type { Socket } from 'node:net';
import { CLIENT_PREFACE, DEFAULT_WINDOW, ErrorCode, FRAME_HEADER, Flag, FrameType, Setting, writeFrameHeader } from './frames.ts';
import { CONNECTION_WINDOW, H2Endpoint } from './endpoint.ts';
import { HpackError, type HeaderBlock } from './hpack.ts';
import { http2ClientLimits } from './limits.ts';
import { contentLength, malformedResponse, malformedTrailers, responseStatus } from './request-fields.ts';
import { H2Stream, type OutboundSink } from './stream.ts';

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

export class ClientConnection extends H2Endpoint<ClientStream> {
  private readonly host: ClientConnectionHost;
  private nextStreamId = 1;
  /** No new streams (GOAWAY either way, or ids ran out); `closing`: the socket ends with the last stream. */
  private retired = false;
  private closing = false;
  /** A connection error: nothing more is read. */
  private failed = false;
  private reason = 'the HTTP/2 connection to the pod closed';
  destroyed = false;

  constructor(socket: Socket, host: ClientConnectionHost) {
    super(socket, http2ClientLimits);
    this.host = host;
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
        return this.onPing(flags, streamId, buf, start, end);
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
    if (!this.connectionData(length)) return;
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
    this.startBlock(id, fragment, endStream);
  }

  protected continuedBlock(id: number, block: Buffer, endStream: boolean): void {
    this.headerBlock(id, block, endStream);
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

  // ---------------- H2Endpoint ----------------

  protected connectionError(code: number, reason: string): void {
    this.fail(code, `HTTP/2 error from the pod: ${reason}`);
  }

  protected streamProblem(stream: ClientStream, code: number, reason: string): void {
    this.streamFailed(stream, code, `HTTP/2 stream error from the pod: ${reason}`);
  }

  protected neverOpened(id: number): boolean {
    return id >= this.nextStreamId;
  }

  protected peerSetting(key: number, value: number): boolean {
    if (key === Setting.MAX_CONCURRENT_STREAMS) this.host.maxStreams(value);
    // A server never sends ENABLE_PUSH other than 0 (section 6.5.2).
    else if (key === Setting.ENABLE_PUSH && value !== 0) {
      this.protocolError('ENABLE_PUSH from a server');
      return false;
    }
    return true;
  }

  protected settingsAcked(): void {}

  /** A connection error: GOAWAY with `code`, then the socket ends; every stream fails. */
  private fail(code: number, reason: string): void {
    if (this.failed) return;
    this.failed = true;
    this.reason = reason;
    this.reader.stopped = true;
    // No new streams while the socket winds down.
    this.retire();
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
    this.unblock(stream);
    if (cut !== undefined && !stream.remoteEnded) stream.owner.cut(cut);
    stream.owner.streamClosed();
    if (this.closing && this.streams.size === 0) this.goodbye();
  }

}
