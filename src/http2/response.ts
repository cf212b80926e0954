// The answer to one Http2Request (ProxyResponse) on its stream: writeHead keeps the
// head, which goes out as one HEADERS frame with the first body bytes or at end() (with
// END_STREAM when there is no body); write/end/destroy map to DATA frames and
// RST_STREAM; the stream tells it when it may write again ('drain') and when it closed
// ('close'). The write that completes the Content-Length ends the stream, so the last
// DATA frame carries END_STREAM: an HTTP/1.1 pod's body ends at a parser event after the
// one that delivered it, and a separate end would cost a frame of its own.
import { isCleanValue, isToken } from '../http1/header-chars.ts';
import type { HeaderInput, HeaderValue } from '../http1/response.ts';
import type { Http2Request } from './request.ts';
import { ErrorCode } from './wire/frames.ts';
import { ShapedEmitter } from '../util/shaped-emitter.ts';
import { kContext, kExchange, kRoute } from '../util/response-slots.ts';
import { HeaderBlock } from './wire/hpack.ts';
import type { H2Stream, OutboundSink } from './wire/stream.ts';

/** Connection-specific headers, which HTTP/2 forbids (RFC 9113 section 8.2.2): a pod's are dropped. */
function isConnectionSpecific(lower: string): boolean {
  switch (lower) {
    case 'connection':
    case 'keep-alive':
    case 'proxy-connection':
    case 'transfer-encoding':
    case 'upgrade':
    case 'te':
      return true;
    default:
      return false;
  }
}

function bodyForbidden(method: string, status: number): boolean {
  return method === 'HEAD' || status === 204 || status === 304;
}

export class Http2Response extends ShapedEmitter implements OutboundSink {
  readonly req: Http2Request;
  readonly stream: H2Stream;
  statusCode = 200;
  /** HTTP/2 has no reason phrase; kept for the interface. */
  statusMessage = '';
  /** Meaningless in HTTP/2: each stream ends alone; kept for the interface. */
  shouldKeepAlive = true;
  headersChecked = false;
  trailersExpected = false;
  headersSent = false;
  writableEnded = false;
  writableFinished = false;
  destroyed = false;
  /** Filled by the proxy layer (response-slots.ts). */
  [kContext]: unknown = undefined;
  [kRoute]: unknown = undefined;
  [kExchange]: unknown = undefined;
  private headerList: readonly (string | HeaderValue)[] | Readonly<Record<string, HeaderValue>> | undefined = undefined;
  private responded = false;
  private noBody = false;
  private closed = false;
  /** Body bytes the Content-Length still announces; -1 when there is none (or the stream waits for trailers). */
  private bodyLeft = -1;
  /** The write that completed the Content-Length ended the stream. */
  private lengthDone = false;

  constructor(req: Http2Request, stream: H2Stream) {
    super();
    this.req = req;
    this.stream = stream;
  }

  writeHead(status: number, reasonOrHeaders?: string | HeaderInput, headers?: HeaderInput): this {
    if (this.headersSent) throw new Error('response headers were already sent');
    this.headersSent = true;
    this.statusCode = status;
    this.headerList = typeof reasonOrHeaders === 'string' ? headers : reasonOrHeaders;
    return this;
  }

  writeEarlyHints(hints: Record<string, string | readonly string[]>): void {
    if (this.headersSent || this.destroyed || this.stream.closed) return;
    const block = new HeaderBlock().status(103);
    for (const name in hints) {
      const lower = name.toLowerCase();
      if (!isToken(lower) || isConnectionSpecific(lower)) continue;
      const value = hints[name]!;
      // Hints are optional; a value that cannot be sent is left out.
      if (typeof value === 'string') {
        if (isCleanValue(value)) block.add(lower, value);
      } else {
        for (const v of value) if (isCleanValue(v)) block.add(lower, v);
      }
    }
    this.stream.sendInformational(block);
  }

  /** The HEADERS frame's fields: lowercase names, repeated names as separate fields, connection-specific ones dropped. */
  private h2Headers(endLength: number): HeaderBlock {
    const list = this.headerList;
    const check = !this.headersChecked;
    let hasLength = false;
    // :status, content-length, and the fields (a name with several values may need more: the block grows).
    const out = new HeaderBlock(2 + (list === undefined ? 0 : Array.isArray(list) ? list.length >> 1 : 8)).status(this.statusCode);
    if (list !== undefined) {
      const flat = Array.isArray(list);
      const names = flat ? undefined : Object.keys(list);
      const count = flat ? (list as readonly unknown[]).length >> 1 : names!.length;
      for (let i = 0; i < count; i++) {
        const name = flat ? String((list as readonly unknown[])[2 * i]) : names![i]!;
        const value = flat ? ((list as readonly unknown[])[2 * i + 1] as HeaderValue) : (list as Record<string, HeaderValue>)[name]!;
        const lower = name.toLowerCase();
        if (isConnectionSpecific(lower) || (check && !isToken(lower))) continue;
        if (lower === 'content-length') {
          hasLength = true;
          this.bodyLeft = typeof value === 'string' || typeof value === 'number' ? contentLength(value) : -1;
        }
        if (typeof value === 'number') {
          out.add(lower, String(value));
        } else if (typeof value === 'string') {
          if (!check || isCleanValue(value)) out.add(lower, value);
        } else {
          for (let j = 0; j < value.length; j++) if (!check || isCleanValue(value[j]!)) out.add(lower, value[j]!);
        }
      }
    }
    if (!hasLength && endLength >= 0 && !this.noBody) out.add('content-length', String(endLength));
    return out;
  }

  /** Sends the HEADERS frame; false when the stream is gone. */
  private respond(endStream: boolean, endLength: number): boolean {
    this.responded = true;
    this.noBody = bodyForbidden(this.req.method, this.statusCode);
    if (this.stream.closed) {
      this.destroyed = true;
      this.emitClose();
      return false;
    }
    const end = endStream || this.noBody;
    this.stream.sendHeaders(this.h2Headers(endLength), end);
    if (this.trailersExpected) this.bodyLeft = -1;
    return true;
  }

  write(chunk: Buffer | string): boolean {
    if (this.writableEnded || this.destroyed) return false;
    if (!this.headersSent) this.writeHead(this.statusCode);
    if (!this.responded && !this.respond(false, -1)) return false;
    if (this.noBody || chunk.length === 0) return true;
    const data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (this.bodyLeft > 0) {
      this.bodyLeft -= data.length;
      if (this.bodyLeft === 0) {
        // The whole announced body: DATA with END_STREAM; end() finds the stream ended
        // and emits 'close' then (the stream may close at once, see streamClosed).
        this.lengthDone = true;
        this.stream.sendData(data, true);
        return true;
      }
    }
    return this.stream.sendData(data, false);
  }

  end(chunk?: Buffer | string): this {
    if (this.writableEnded || this.destroyed) return this;
    this.writableEnded = true;
    // Set before the stream can close (and emit 'close') while the last frame is queued.
    this.writableFinished = true;
    const data = chunk === undefined || chunk.length === 0 ? undefined : typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (!this.headersSent) this.writeHead(this.statusCode);
    const stream = this.stream;
    if (!this.responded) {
      if (!this.respond(data === undefined, data === undefined ? 0 : data.length)) return this;
      if (data !== undefined && !this.noBody) stream.sendData(data, true);
    } else if (!stream.localEnded) {
      stream.sendData(data !== undefined && !this.noBody ? data : EMPTY, true);
    }
    this.writableFinished = true;
    this.emitClose();
    return this;
  }

  /** Ends the stream with a trailing HEADERS frame (gRPC's grpc-status and metadata). */
  endWithTrailers(trailers: Readonly<Record<string, string | string[] | undefined>>): void {
    if (this.writableEnded || this.destroyed) return;
    if (!this.trailersExpected || this.noBody) {
      this.end();
      return;
    }
    this.writableEnded = true;
    this.writableFinished = true;
    if (!this.headersSent) this.writeHead(this.statusCode);
    if (!this.responded && !this.respond(false, -1)) return;
    this.stream.sendTrailers(trailerFields(trailers));
    this.writableFinished = true;
    this.emitClose();
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.stream.resetWith(ErrorCode.INTERNAL_ERROR);
    this.emitClose();
  }

  drain(): void {
    if (!this.destroyed) this.emit('drain');
  }

  /** The stream closed (answered, reset by the client, or its connection gone). */
  streamClosed(): void {
    // Ended by the write that completed the Content-Length: the caller's end() comes next.
    if (this.lengthDone && !this.writableEnded && !this.stream.reset) return;
    if (!this.writableEnded) this.destroyed = true;
    this.emitClose();
  }

  private emitClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.emit('close');
  }
}

/** A Content-Length value as a byte count; -1 when it is not one plain decimal number. */
function contentLength(value: string | number): number {
  const n = typeof value === 'number' ? value : /^\d{1,15}$/.test(value) ? Number(value) : -1;
  return Number.isSafeInteger(n) && n >= 0 ? n : -1;
}

/** Trailer fields: lowercase tokens with clean values, no pseudo or connection-specific fields. */
function trailerFields(trailers: Readonly<Record<string, string | string[] | undefined>>): HeaderBlock {
  const out = new HeaderBlock();
  for (const name in trailers) {
    const lower = name.toLowerCase();
    const value = trailers[name];
    if (value === undefined || !isToken(lower) || isConnectionSpecific(lower) || lower === 'content-length') continue;
    if (typeof value === 'string') {
      if (isCleanValue(value)) out.add(lower, value);
    } else {
      for (const v of value) if (isCleanValue(v)) out.add(lower, v);
    }
  }
  return out;
}

const EMPTY = Buffer.alloc(0);
