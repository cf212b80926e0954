// An HTTP/2 request as the proxy sees it (ProxyRequest): the stream's head turned into
// HTTP/1.1-style raw headers once, and its body read from the stream with back-pressure
// (node:http2 sends WINDOW_UPDATE only as the body is read).
import type { ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { isCleanValue } from '../http1/header-chars.ts';
import type { ProxyRequest } from '../proxy/exchange-types.ts';

/** Why a request is answered before routing: status, a reason for metrics, the text for the client. */
export interface Http2Refusal {
  readonly status: number;
  readonly reason: string;
  readonly message: string;
}

const BAD_VALUE: Http2Refusal = { status: 400, reason: 'invalid_header_value', message: 'a header value contains CR, LF, NUL or another control character' };
const NO_PATH: Http2Refusal = { status: 400, reason: 'no_path', message: 'the request has no :path' };
const CONNECT: Http2Refusal = { status: 501, reason: 'connect', message: 'CONNECT is not supported' };
const EXTENDED_CONNECT: Http2Refusal = { status: 501, reason: 'connect', message: 'extended CONNECT (RFC 8441) is not supported' };

/** What the HTTP/2 head says, in HTTP/1.1 form. */
export interface Http2Head {
  readonly method: string;
  readonly path: string;
  readonly rawHeaders: string[];
}

/**
 * The head of an h2 request in HTTP/1.1 form: :authority becomes Host (first), cookie
 * crumbs are joined with "; " (RFC 9113 section 8.2.3), pseudo-headers go, and a body
 * without Content-Length is announced by Transfer-Encoding so that it is sent chunked to
 * HTTP/1.1 pods (section 8.2.2). node:http2 (nghttp2) already refused uppercase and
 * other invalid names, connection-specific headers, missing or unknown pseudo-headers
 * and a Content-Length that disagrees with the DATA, with a stream error; it lets CR,
 * LF and NUL in values through (section 8.2.1 says they are malformed), so they are
 * refused here: written into an HTTP/1.1 head they would split it.
 */
export function http2Head(raw: readonly string[], endStream: boolean): Http2Head | Http2Refusal {
  let method = '';
  let path = '';
  let authority = '';
  let host = '';
  let cookie = '';
  let hasLength = false;
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    if (!isCleanValue(value)) return BAD_VALUE;
    if (name.charCodeAt(0) === 58 /* ':' */) {
      switch (name) {
        case ':method':
          method = value;
          break;
        case ':path':
          path = value;
          break;
        case ':authority':
          authority = value;
          break;
        case ':protocol':
          return EXTENDED_CONNECT;
      }
      continue;
    }
    switch (name) {
      case 'host':
        // :authority wins when both are sent (RFC 9113 section 8.3.1).
        if (host === '') host = value;
        continue;
      case 'cookie':
        cookie = cookie === '' ? value : `${cookie}; ${value}`;
        continue;
      case 'content-length':
        hasLength = true;
        break;
    }
    out.push(name, value);
  }
  if (method === 'CONNECT') return CONNECT;
  if (path === '') return NO_PATH;
  if (authority === '') authority = host;
  if (cookie !== '') out.push('cookie', cookie);
  if (!endStream && !hasLength) out.push('transfer-encoding', 'chunked');
  if (authority !== '') out.unshift('host', authority);
  return { method, path, rawHeaders: out };
}

const kBody = Symbol('portico.h2body');
type BodySource = ServerHttp2Stream & { [kBody]?: Http2RequestBody };

/**
 * The body handed to the forwarder: its own Readable, so that whoever reads it
 * (and destroys it on an upstream error) never destroys the stream, which still has
 * to carry the answer.
 */
class Http2RequestBody extends Readable {
  private readonly source: BodySource;

  constructor(source: BodySource) {
    super({ highWaterMark: 64 * 1024 });
    this.source = source;
    source[kBody] = this;
    source.on('data', onStreamData);
    source.on('end', onStreamEnd);
    source.on('aborted', onStreamAborted);
  }

  override _read(): void {
    this.source.resume();
  }
}

function onStreamData(this: BodySource, chunk: Buffer): void {
  if (this[kBody]?.push(chunk) === false) this.pause();
}

function onStreamEnd(this: BodySource): void {
  this[kBody]?.push(null);
}

function onStreamAborted(this: BodySource): void {
  this[kBody]?.destroy(Object.assign(new Error('the client reset the stream before the request body was complete'), { code: 'ECONNRESET' }));
}

export class Http2Request implements ProxyRequest {
  readonly method: string;
  readonly url: string;
  readonly rawHeaders: string[];
  readonly socket: Socket;
  readonly upgrade = false;
  readonly upgradeHead: Buffer | undefined = undefined;
  readonly httpVersionMajor = 2;
  readonly httpVersionMinor = 0;
  readonly stream: ServerHttp2Stream;
  private bodyStream: Http2RequestBody | undefined = undefined;

  constructor(stream: ServerHttp2Stream, socket: Socket, head: Http2Head) {
    this.stream = stream;
    this.socket = socket;
    this.method = head.method;
    this.url = head.path;
    this.rawHeaders = head.rawHeaders;
  }

  body(): Readable {
    return (this.bodyStream ??= new Http2RequestBody(this.stream));
  }

  receivedBody(): Buffer | undefined {
    // A stream, DATA events and ticks per call are what an HTTP/2 pod's small requests cost
    // most: when END_STREAM has been read, the buffered bytes are the body.
    const state = (this.stream as unknown as { _readableState?: { ended?: boolean } })._readableState;
    if (this.bodyStream !== undefined || state?.ended !== true) return undefined;
    // Everything buffered at once (the stream is paused and ended); 'end' follows.
    return (this.stream.read() as Buffer | null) ?? Buffer.alloc(0);
  }
}
