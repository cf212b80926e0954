// The server side of one HTTP/2 connection (RFC 9113) on a plain or TLS socket: the
// preface and SETTINGS, frames in (checked as sections 4-6 say), HPACK, the stream
// state machine, the limits that keep a client from costing more than its share
// (http2Limits). What both ends do alike (SETTINGS, PING, windows, CONTINUATION, frames
// out in one socket write per read or event-loop turn) is H2Endpoint (endpoint.ts).
import type { Socket } from 'node:net';
import { CLIENT_PREFACE, DEFAULT_WINDOW, ErrorCode, FRAME_HEADER, Flag, FrameType, Setting, writeFrameHeader } from './frames.ts';
import { CONNECTION_WINDOW, H2Endpoint } from './endpoint.ts';
import { HpackError } from './hpack.ts';
import { http2Limits } from './limits.ts';
import { contentLength, malformedRequest, malformedTrailers } from './request-fields.ts';
import { H2Stream } from './stream.ts';

/** What the connection asks of the front end. */
export interface ConnectionHost {
  /** A new, well-formed request head (name, value pairs; pseudo-headers included). */
  request(stream: H2Stream, fields: string[], endStream: boolean): void;
  /** The connection is gone. */
  closed(conn: H2Connection): void;
  readonly maxFields: number;
}

/** Our SETTINGS: MAX_CONCURRENT_STREAMS, MAX_HEADER_LIST_SIZE, ENABLE_PUSH 0. */
const OUR_SETTINGS = (() => {
  const b = Buffer.alloc(FRAME_HEADER + 18);
  writeFrameHeader(b, 0, 18, FrameType.SETTINGS, 0, 0);
  b.writeUInt16BE(Setting.MAX_CONCURRENT_STREAMS, 9);
  b.writeUInt32BE(http2Limits.maxConcurrentStreams, 11);
  b.writeUInt16BE(Setting.MAX_HEADER_LIST_SIZE, 15);
  b.writeUInt32BE(http2Limits.maxHeaderListSize, 17);
  b.writeUInt16BE(Setting.ENABLE_PUSH, 21);
  b.writeUInt32BE(0, 23);
  return b;
})();

/** Streams we reset whose late frames are ignored rather than treated as errors. */
const RECENT_RESETS = 256;

export class H2Connection extends H2Endpoint<H2Stream> {
  private readonly host: ConnectionHost;
  private lastStreamId = 0;
  private prefaceLeft = CLIENT_PREFACE.length;
  /** The header block in progress had a PRIORITY on its own stream. */
  private blockBadPriority = false;
  /** Requests whose head arrived in this read: handed over once the read is done, so DATA in it is checked first. */
  private ready: { stream: H2Stream; fields: string[]; endStream: boolean }[] = [];
  private readonly recentResets: number[] = [];
  // What a client has spent of its limits.
  private resetTokens: number = http2Limits.streamResetBurst;
  private resetRefilledAt = Date.now();
  private invalid = 0;
  private rejected = 0;
  /** GOAWAY sent: streams above goawayLastId are ignored; the socket ends when the last stream closes. */
  private goawaySent = false;
  private goawayLastId = 0;
  /** A connection error: nothing more is read. */
  private failed = false;
  destroyed = false;
  /** Runs until the client acknowledges our SETTINGS. */
  private settingsTimer: NodeJS.Timeout | undefined;

  /** No keep-alive (idleTimeout 0): GOAWAY once no stream is open. */
  private readonly oneShot: boolean;

  constructor(socket: Socket, host: ConnectionHost, idleTimeout: number, settingsTimeout: number, firstStreamTimeout = 10_000) {
    super(socket, http2Limits);
    this.host = host;
    this.writer.raw(OUR_SETTINGS);
    this.writer.windowUpdate(0, CONNECTION_WINDOW - DEFAULT_WINDOW);
    this.settingsTimer = setTimeout(settingsTimedOut, settingsTimeout, this);
    this.settingsTimer.unref();
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('drain', () => this.resumeBlocked());
    socket.on('error', () => socket.destroy());
    socket.once('close', () => this.gone());
    this.oneShot = idleTimeout === 0;
    // Without keep-alive, idle only before the first stream (then GOAWAY follows the last one).
    const idle = this.oneShot ? firstStreamTimeout : idleTimeout;
    if (idle > 0) {
      socket.setTimeout(idle, () => {
        // Idle means no stream open: a long answer that is quiet for a while is not idle.
        if (this.streams.size === 0) this.goaway(ErrorCode.NO_ERROR);
      });
    }
    socket.resume();
  }

  // ---------------- frames in ----------------

  private read(chunk: Buffer): void {
    if (this.failed) return;
    if (this.prefaceLeft > 0) {
      const n = Math.min(this.prefaceLeft, chunk.length);
      const offset = CLIENT_PREFACE.length - this.prefaceLeft;
      if (!chunk.subarray(0, n).equals(CLIENT_PREFACE.subarray(offset, offset + n))) {
        this.socket.destroy();
        return;
      }
      this.prefaceLeft -= n;
      chunk = chunk.subarray(n);
    }
    this.reading = true;
    this.reader.push(chunk, this);
    this.reading = false;
    const ready = this.ready;
    if (ready.length > 0) {
      this.ready = [];
      for (const r of ready) if (!r.stream.closed && !this.failed) this.host.request(r.stream, r.fields, r.endStream);
    }
    this.flush();
  }

  frame(type: number, flags: number, streamId: number, buf: Buffer, start: number, end: number): void {
    if (this.failed) return;
    if (this.blockStream !== 0 && type !== FrameType.CONTINUATION) return this.fail(ErrorCode.PROTOCOL_ERROR);
    if (!this.settingsReceived && (type !== FrameType.SETTINGS || (flags & Flag.ACK) !== 0)) return this.fail(ErrorCode.PROTOCOL_ERROR);
    switch (type) {
      case FrameType.DATA:
        return this.onData(flags, streamId, buf, start, end);
      case FrameType.HEADERS:
        return this.onHeaders(flags, streamId, buf, start, end);
      case FrameType.CONTINUATION:
        return this.onContinuation(flags, streamId, buf, start, end);
      case FrameType.PRIORITY:
        if (streamId === 0) return this.fail(ErrorCode.PROTOCOL_ERROR);
        if (end - start !== 5) return this.streamError(streamId, ErrorCode.FRAME_SIZE_ERROR);
        if ((buf.readUInt32BE(start) & 0x7fffffff) === streamId) return this.streamError(streamId, ErrorCode.PROTOCOL_ERROR);
        return;
      case FrameType.RST_STREAM:
        return this.onReset(streamId, buf, start, end);
      case FrameType.SETTINGS:
        return this.onSettings(flags, streamId, buf, start, end);
      case FrameType.PUSH_PROMISE:
        return this.fail(ErrorCode.PROTOCOL_ERROR);
      case FrameType.PING:
        return this.onPing(flags, streamId, buf, start, end);
      case FrameType.GOAWAY:
        if (streamId !== 0) return this.fail(ErrorCode.PROTOCOL_ERROR);
        if (end - start < 8) return this.fail(ErrorCode.FRAME_SIZE_ERROR);
        // The client opens no more streams; the open ones finish.
        if (!this.goawaySent) this.goaway(ErrorCode.NO_ERROR);
        return;
      case FrameType.WINDOW_UPDATE:
        return this.onWindowUpdate(streamId, buf, start, end);
      default:
        // Unknown frame types are ignored (section 5.5).
        return;
    }
  }

  private onData(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id === 0) return this.fail(ErrorCode.PROTOCOL_ERROR);
    const length = end - start;
    if (!this.connectionData(length)) return;
    let dataEnd = end;
    let dataStart = start;
    if ((flags & Flag.PADDED) !== 0) {
      if (length < 1) return this.fail(ErrorCode.FRAME_SIZE_ERROR);
      const pad = buf[start]!;
      if (pad >= length) return this.fail(ErrorCode.PROTOCOL_ERROR);
      dataStart = start + 1;
      dataEnd = end - pad;
    }
    const stream = this.streams.get(id);
    if (stream === undefined) {
      if (id > this.lastStreamId) return this.fail(ErrorCode.PROTOCOL_ERROR);
      if (!this.recentResets.includes(id)) this.streamError(id, ErrorCode.STREAM_CLOSED);
      return;
    }
    if (stream.remoteEnded) return this.streamError(id, ErrorCode.STREAM_CLOSED);
    stream.recvWindow -= length;
    if (stream.recvWindow < 0) return this.streamError(id, ErrorCode.FLOW_CONTROL_ERROR);
    const size = dataEnd - dataStart;
    // The padding is nobody's to consume: give it back at once.
    if (size < length) stream.consumed(length - size);
    stream.receivedLength += size;
    if (stream.expectedLength >= 0 && stream.receivedLength > stream.expectedLength) return this.malformed(stream);
    const endStream = (flags & Flag.END_STREAM) !== 0;
    // Empty DATA frames cost work and carry nothing (CVE-2019-9518): counted as invalid.
    if (length === 0 && !endStream && ++this.invalid > http2Limits.maxSessionInvalidFrames) return this.fail(ErrorCode.ENHANCE_YOUR_CALM);
    if (endStream && stream.expectedLength >= 0 && stream.receivedLength !== stream.expectedLength) return this.malformed(stream);
    if (size > 0) {
      const data = buf.subarray(dataStart, dataEnd);
      if (stream.inbound !== undefined) stream.inbound.data(data);
      else (stream.early ??= []).push(data);
    }
    if (endStream) this.remoteEnd(stream);
  }

  private onHeaders(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id === 0 || (id & 1) === 0) return this.fail(ErrorCode.PROTOCOL_ERROR);
    let pos = start;
    let blockEnd = end;
    if ((flags & Flag.PADDED) !== 0) {
      if (end - start < 1) return this.fail(ErrorCode.FRAME_SIZE_ERROR);
      const pad = buf[pos++]!;
      if (pad >= end - start) return this.fail(ErrorCode.PROTOCOL_ERROR);
      blockEnd = end - pad;
    }
    let badPriority = false;
    if ((flags & Flag.PRIORITY) !== 0) {
      if (blockEnd - pos < 5) return this.fail(ErrorCode.FRAME_SIZE_ERROR);
      badPriority = (buf.readUInt32BE(pos) & 0x7fffffff) === id;
      pos += 5;
    }
    if (pos > blockEnd) return this.fail(ErrorCode.PROTOCOL_ERROR);
    const fragment = buf.subarray(pos, blockEnd);
    const endStream = (flags & Flag.END_STREAM) !== 0;
    if ((flags & Flag.END_HEADERS) !== 0) {
      this.headerBlock(id, fragment, endStream, badPriority);
      return;
    }
    this.blockBadPriority = badPriority;
    this.startBlock(id, fragment, endStream);
  }

  protected continuedBlock(id: number, block: Buffer, endStream: boolean): void {
    this.headerBlock(id, block, endStream, this.blockBadPriority);
  }

  /** A whole header block: decoded always (the HPACK table must stay in step), then a new request or trailers. */
  private headerBlock(id: number, block: Buffer, endStream: boolean, badPriority: boolean): void {
    const fields: string[] = [];
    let listSize: number;
    try {
      listSize = this.decoder.decode(block, 0, block.length, fields, http2Limits.maxHeaderListSize);
    } catch (err) {
      if (err instanceof HpackError) return this.fail(ErrorCode.COMPRESSION_ERROR);
      throw err;
    }
    const existing = this.streams.get(id);
    if (existing !== undefined) {
      // Trailers: they end the stream; the proxy does not forward them (README, Known limits).
      if (existing.remoteEnded) return this.streamError(id, ErrorCode.STREAM_CLOSED);
      if (!endStream || badPriority || malformedTrailers(fields) !== undefined) return this.malformed(existing);
      if (existing.expectedLength >= 0 && existing.receivedLength !== existing.expectedLength) return this.malformed(existing);
      this.remoteEnd(existing);
      return;
    }
    if (id <= this.lastStreamId) {
      if (this.recentResets.includes(id)) return;
      return this.fail(ErrorCode.PROTOCOL_ERROR);
    }
    if (this.goawaySent) return;
    this.lastStreamId = id;
    if (badPriority) return this.invalidStream(id, ErrorCode.PROTOCOL_ERROR);
    if (listSize > http2Limits.maxHeaderListSize || fields.length > 2 * this.host.maxFields) return this.invalidStream(id, ErrorCode.ENHANCE_YOUR_CALM);
    if (this.streams.size >= http2Limits.maxConcurrentStreams) {
      this.rememberReset(id);
      this.writeReset(id, ErrorCode.REFUSED_STREAM);
      if (++this.rejected > http2Limits.maxSessionRejectedStreams) this.fail(ErrorCode.ENHANCE_YOUR_CALM);
      return;
    }
    if (malformedRequest(fields) !== undefined) return this.invalidStream(id, ErrorCode.PROTOCOL_ERROR);
    const expected = contentLength;
    if (endStream && expected > 0) return this.invalidStream(id, ErrorCode.PROTOCOL_ERROR);
    const stream = new H2Stream(this, id, this.peerInitialWindow, DEFAULT_WINDOW);
    stream.expectedLength = expected;
    this.streams.set(id, stream);
    if (endStream) stream.remoteEnded = true;
    this.ready.push({ stream, fields, endStream });
  }

  private onReset(id: number, buf: Buffer, start: number, end: number): void {
    if (end - start !== 4) return this.fail(ErrorCode.FRAME_SIZE_ERROR);
    if (id === 0 || id > this.lastStreamId) return this.fail(ErrorCode.PROTOCOL_ERROR);
    // A token bucket: a burst, then a steady rate (rapid reset, CVE-2023-44487).
    const now = Date.now();
    this.resetTokens = Math.min(http2Limits.streamResetBurst, this.resetTokens + ((now - this.resetRefilledAt) * http2Limits.streamResetRate) / 1000);
    this.resetRefilledAt = now;
    if (this.resetTokens < 1) return this.fail(ErrorCode.ENHANCE_YOUR_CALM);
    this.resetTokens--;
    const stream = this.streams.get(id);
    if (stream === undefined) return;
    stream.reset = true;
    this.closeStream(stream, true);
  }

  private remoteEnd(stream: H2Stream): void {
    stream.remoteEnded = true;
    stream.inbound?.end();
    if (stream.endSent) this.closeStream(stream, false);
  }

  // ---------------- errors and limits ----------------

  /** A malformed frame or head on a stream: RST_STREAM PROTOCOL_ERROR, counted. */
  private malformed(stream: H2Stream): void {
    this.resetStream(stream, ErrorCode.PROTOCOL_ERROR);
    if (++this.invalid > http2Limits.maxSessionInvalidFrames) this.fail(ErrorCode.ENHANCE_YOUR_CALM);
  }

  /** A stream refused as it opens (malformed, or over a limit): counted as invalid. */
  private invalidStream(id: number, code: number): void {
    this.rememberReset(id);
    this.writeReset(id, code);
    if (++this.invalid > http2Limits.maxSessionInvalidFrames) this.fail(ErrorCode.ENHANCE_YOUR_CALM);
  }

  private streamError(id: number, code: number): void {
    const stream = this.streams.get(id);
    if (stream !== undefined) {
      this.resetStream(stream, code);
    } else {
      this.rememberReset(id);
      this.writeReset(id, code);
    }
    if (++this.invalid > http2Limits.maxSessionInvalidFrames) this.fail(ErrorCode.ENHANCE_YOUR_CALM);
  }

  // ---------------- H2Endpoint ----------------

  protected connectionError(code: number): void {
    this.fail(code);
  }

  protected streamProblem(stream: H2Stream, code: number): void {
    this.streamError(stream.id, code);
  }

  protected neverOpened(id: number): boolean {
    return id > this.lastStreamId;
  }

  protected peerSetting(key: number, value: number): boolean {
    // MAX_CONCURRENT_STREAMS: we push nothing.
    if (key === Setting.ENABLE_PUSH && value > 1) {
      this.fail(ErrorCode.PROTOCOL_ERROR);
      return false;
    }
    return true;
  }

  protected settingsAcked(): void {
    clearTimeout(this.settingsTimer);
    this.settingsTimer = undefined;
  }

  private rememberReset(id: number): void {
    const recent = this.recentResets;
    if (recent.length >= RECENT_RESETS) recent.shift();
    recent.push(id);
  }

  /** A connection error: GOAWAY with `code`, then the socket ends; every stream is cut. */
  fail(code: number): void {
    if (this.failed) return;
    this.failed = true;
    this.reader.stopped = true;
    this.writeGoaway(code);
    for (const stream of [...this.streams.values()]) {
      stream.reset = true;
      this.closeStream(stream, true);
    }
    this.flush();
    this.endSocket();
  }

  /** GOAWAY (graceful with NO_ERROR): no new streams; the socket ends once the open ones close. */
  goaway(code: number): void {
    if (this.goawaySent || this.failed) return;
    this.writeGoaway(code);
    if (this.streams.size === 0) {
      this.flush();
      this.endSocket();
    } else {
      this.scheduleFlush();
    }
  }

  private writeGoaway(code: number): void {
    this.goawaySent = true;
    this.goawayLastId = this.lastStreamId;
    this.writer.goaway(this.goawayLastId, code);
  }

  private endSocket(): void {
    const socket = this.socket;
    if (socket.destroyed) return;
    socket.end();
    // A client that never closes its side: do not wait for it.
    setTimeout(() => socket.destroy(), 1000).unref();
  }

  /** Closes the socket now, whatever it is doing. */
  destroy(): void {
    this.socket.destroy();
  }

  private gone(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.failed = true;
    clearTimeout(this.settingsTimer);
    for (const stream of [...this.streams.values()]) {
      stream.reset = true;
      this.closeStream(stream, true);
    }
    this.host.closed(this);
  }

  /** RST_STREAM `code` and the stream closed (its request and response told). */
  resetStream(stream: H2Stream, code: number): void {
    if (stream.closed) return;
    stream.reset = true;
    this.rememberReset(stream.id);
    this.writeReset(stream.id, code);
    this.closeStream(stream, true);
  }

  localEnded(stream: H2Stream): void {
    if (stream.remoteEnded) this.closeStream(stream, false);
    // Answered before the request ended: RST_STREAM NO_ERROR tells the client to stop
    // sending (RFC 9113 section 8.1) rather than hold the stream open.
    else this.resetStream(stream, 0);
  }

  closeStream(stream: H2Stream, reset: boolean): void {
    if (stream.closed) return;
    stream.closed = true;
    this.streams.delete(stream.id);
    this.unblock(stream);
    if (reset && !stream.remoteEnded) stream.inbound?.aborted();
    stream.outbound?.streamClosed();
    if (this.goawaySent && this.streams.size === 0 && !this.failed) {
      this.flush();
      this.endSocket();
    } else if (this.oneShot && this.streams.size === 0 && !this.failed) {
      this.goaway(ErrorCode.NO_ERROR);
    }
  }

  private writeReset(id: number, code: number): void {
    this.writer.reset(id, code);
  }
}

/** The client never acknowledged our SETTINGS (section 6.5.3). */
function settingsTimedOut(conn: H2Connection): void {
  conn.fail(ErrorCode.SETTINGS_TIMEOUT);
}

