// The answer to one Http2Request (ProxyResponse) on its node:http2 stream: writeHead
// keeps the head, which goes out as one HEADERS frame with the first body bytes or at
// end() (with END_STREAM when there is no body); write/end/destroy map to the stream's
// write/end/RST_STREAM, its 'drain' and 'close' are passed on. The write that completes
// the Content-Length ends the stream, so the last DATA frame carries END_STREAM: an
// HTTP/1.1 pod's body ends at a parser event after the one that delivered it, and
// node:http2 sends a DATA frame (and a send cycle) of its own for an end() that comes
// after the write's tick.
import { EventEmitter } from 'node:events';
import type { OutgoingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { NGHTTP2_INTERNAL_ERROR } from './node-http2.ts';
import { isCleanValue, isToken } from '../http1/header-chars.ts';
import type { HeaderInput, HeaderValue } from '../http1/response.ts';
import type { Http2Request } from './request.ts';

/** Connection-specific headers, which HTTP/2 forbids (RFC 9113 section 8.2.2); node:http2 throws on them. */
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

const kResponse = Symbol('portico.h2response');
type OwnedStream = ServerHttp2Stream & { [kResponse]?: Http2Response };

function onStreamDrain(this: OwnedStream): void {
  this[kResponse]?.emit('drain');
}

/** The stream's 'close' for its response (the front's one listener per stream calls it). */
export function responseStreamClosed(stream: ServerHttp2Stream): void {
  (stream as OwnedStream)[kResponse]?.streamClosed();
}

/** The pod's trailers go out once node:http2 asks for them (after the last DATA frame). */
function onWantTrailers(this: OwnedStream): void {
  const response = this[kResponse];
  const trailers = response?.pendingTrailers;
  if (trailers === undefined) return;
  response!.pendingTrailers = undefined;
  try {
    this.sendTrailers(trailerFields(trailers));
  } catch {
    this.close(NGHTTP2_INTERNAL_ERROR);
  }
}

export class Http2Response extends EventEmitter {
  readonly req: Http2Request;
  readonly stream: ServerHttp2Stream;
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
  private headerList: readonly (string | HeaderValue)[] | Readonly<Record<string, HeaderValue>> | undefined = undefined;
  private responded = false;
  private noBody = false;
  private closed = false;
  private drainHooked = false;
  /** Body bytes the Content-Length still announces; -1 when there is none (or the stream waits for trailers). */
  private bodyLeft = -1;
  /** Set by endWithTrailers until node:http2 asks for them ('wantTrailers'). */
  pendingTrailers: Readonly<Record<string, string | string[] | undefined>> | undefined = undefined;

  /**
   * The stream's 'close' must reach streamClosed() (responseStreamClosed) and its 'error'
   * needs a listener (a reset stream errors, then closes): the front adds both, one
   * listener each per stream.
   */
  constructor(req: Http2Request, stream: ServerHttp2Stream) {
    super();
    this.req = req;
    this.stream = stream;
    (stream as OwnedStream)[kResponse] = this;
  }

  writeHead(status: number, reasonOrHeaders?: string | HeaderInput, headers?: HeaderInput): this {
    if (this.headersSent) throw new Error('response headers were already sent');
    this.headersSent = true;
    this.statusCode = status;
    this.headerList = typeof reasonOrHeaders === 'string' ? headers : reasonOrHeaders;
    return this;
  }

  writeEarlyHints(hints: Record<string, string | readonly string[]>): void {
    if (this.headersSent || this.destroyed || this.stream.destroyed) return;
    const out: OutgoingHttpHeaders = { ':status': 103 };
    for (const name in hints) {
      const lower = name.toLowerCase();
      if (isToken(lower)) out[lower] = hints[name] as string | string[];
    }
    try {
      this.stream.additionalHeaders(out);
    } catch {
      // Hints are optional; a value node:http2 refuses is left out.
    }
  }

  /** The HEADERS frame's fields: lowercase names, repeated names as arrays, connection-specific ones dropped. */
  private h2Headers(endLength: number): OutgoingHttpHeaders {
    const out: OutgoingHttpHeaders = { ':status': this.statusCode };
    const list = this.headerList;
    const check = !this.headersChecked;
    let hasLength = false;
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
          add(out, lower, String(value));
        } else if (typeof value === 'string') {
          if (!check || isCleanValue(value)) add(out, lower, value);
        } else {
          for (let j = 0; j < value.length; j++) if (!check || isCleanValue(value[j]!)) add(out, lower, value[j]!);
        }
      }
    }
    if (!hasLength && endLength >= 0 && !this.noBody) out['content-length'] = endLength;
    return out;
  }

  /** Sends the HEADERS frame; false when node:http2 refused it (the stream is then reset). */
  private respond(endStream: boolean, endLength: number): boolean {
    this.responded = true;
    this.noBody = bodyForbidden(this.req.method, this.statusCode);
    try {
      const end = endStream || this.noBody;
      this.stream.respond(this.h2Headers(endLength), { endStream: end, waitForTrailers: this.trailersExpected && !end });
      if (this.trailersExpected) this.bodyLeft = -1;
      return true;
    } catch {
      this.destroy();
      return false;
    }
  }

  write(chunk: Buffer | string): boolean {
    if (this.writableEnded || this.destroyed) return false;
    if (!this.headersSent) this.writeHead(this.statusCode);
    if (!this.responded && !this.respond(false, -1)) return false;
    if (this.noBody || chunk.length === 0) return true;
    const stream = this.stream;
    if (this.bodyLeft > 0 && typeof chunk !== 'string') {
      this.bodyLeft -= chunk.length;
      if (this.bodyLeft === 0) {
        // The whole announced body: DATA with END_STREAM (end() finds the stream ended).
        stream.end(chunk);
        return true;
      }
    }
    if (stream.write(chunk)) return true;
    if (!this.drainHooked) {
      this.drainHooked = true;
      stream.on('drain', onStreamDrain);
    }
    return false;
  }

  end(chunk?: Buffer | string): this {
    if (this.writableEnded || this.destroyed) return this;
    this.writableEnded = true;
    const hasChunk = chunk !== undefined && chunk.length > 0;
    if (!this.headersSent) this.writeHead(this.statusCode);
    const stream = this.stream;
    if (!this.responded) {
      const length = hasChunk ? (typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk!.length) : 0;
      if (!this.respond(!hasChunk, length)) return this;
      if (hasChunk && !this.noBody) stream.end(chunk);
    } else if (!stream.writableEnded) {
      if (hasChunk && !this.noBody) stream.end(chunk);
      else stream.end();
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
    if (!this.headersSent) this.writeHead(this.statusCode);
    if (!this.responded && !this.respond(false, -1)) return;
    const stream = this.stream;
    // A shared listener rather than a closure per call (one per gRPC answer).
    this.pendingTrailers = trailers;
    stream.on('wantTrailers', onWantTrailers);
    stream.end();
    this.writableFinished = true;
    this.emitClose();
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    if (!this.stream.closed) this.stream.close(NGHTTP2_INTERNAL_ERROR);
    this.emitClose();
  }

  /** The stream closed (answered, reset by the client, or its connection gone). */
  streamClosed(): void {
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

function add(out: OutgoingHttpHeaders, name: string, value: string): void {
  const prior = out[name];
  if (prior === undefined) out[name] = value;
  else if (Array.isArray(prior)) prior.push(value);
  else out[name] = [String(prior), value];
}

/** Trailer fields for sendTrailers: lowercase tokens with clean values, no pseudo or connection-specific fields. */
function trailerFields(trailers: Readonly<Record<string, string | string[] | undefined>>): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const name in trailers) {
    const lower = name.toLowerCase();
    const value = trailers[name];
    if (value === undefined || !isToken(lower) || isConnectionSpecific(lower) || lower === 'content-length') continue;
    if (typeof value === 'string') {
      if (isCleanValue(value)) out[lower] = value;
    } else {
      const clean = value.filter(isCleanValue);
      if (clean.length > 0) out[lower] = clean;
    }
  }
  return out;
}
