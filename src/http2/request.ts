// An HTTP/2 request as the proxy sees it (ProxyRequest): the stream's head turned into
// HTTP/1.1-style raw headers once, and its body passed on with back-pressure (the
// client's window is returned only as the body is read).
import type { Socket } from 'node:net';
import { isCleanValue } from '../http1/header-chars.ts';
import type { ProxyRequest } from '../proxy/exchange-types.ts';
import type { H2Stream, InboundSink } from './wire/stream.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { Readable } = process.getBuiltinModule('node:stream');
type Readable = import('node:stream').Readable;

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
 * HTTP/1.1 pods (section 8.2.2). The engine already refused malformed heads (uppercase
 * and other invalid names, connection-specific headers, missing or unknown pseudo-headers,
 * CR, LF or NUL: wire/request-fields.ts) and checks Content-Length against the DATA;
 * other control characters are refused here (400): written into an HTTP/1.1 head they
 * are not what the client meant.
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

/**
 * The body handed to the forwarder: its own Readable, so that whoever reads it (and
 * destroys it on an upstream error) never touches the stream, which still has to carry
 * the answer. What it holds unread is not returned to the client's window: that is the
 * back-pressure (WINDOW_UPDATE goes out as the forwarder reads).
 */
class Http2RequestBody extends Readable {
  private readonly owner: Http2Request;

  constructor(owner: Http2Request) {
    super({ highWaterMark: 64 * 1024 });
    this.owner = owner;
  }

  override _read(): void {
    this.owner.release();
  }
}

export class Http2Request implements ProxyRequest, InboundSink {
  readonly method: string;
  readonly url: string;
  readonly rawHeaders: string[];
  readonly socket: Socket;
  readonly upgrade = false;
  readonly upgradeHead: Buffer | undefined = undefined;
  readonly httpVersionMajor = 2;
  readonly httpVersionMinor = 0;
  readonly stream: H2Stream;
  private bodyStream: Http2RequestBody | undefined = undefined;
  /** Body bytes that came before anyone read them. */
  private chunks: Buffer[] | undefined = undefined;
  /** Bytes received and not yet returned to the client's window. */
  private held = 0;
  private ended = false;
  private abortedEarly = false;
  /** receivedBody() handed the body over: body() is an ended, empty stream. */
  private bodyTaken = false;

  constructor(stream: H2Stream, socket: Socket, head: Http2Head) {
    this.stream = stream;
    this.socket = socket;
    this.method = head.method;
    this.url = head.path;
    this.rawHeaders = head.rawHeaders;
  }

  data(chunk: Buffer): void {
    const body = this.bodyStream;
    if (body === undefined) {
      (this.chunks ??= []).push(chunk);
      this.held += chunk.length;
    } else if (body.push(chunk)) {
      this.stream.consumed(chunk.length);
    } else {
      this.held += chunk.length;
    }
  }

  end(): void {
    this.ended = true;
    this.bodyStream?.push(null);
  }

  aborted(): void {
    if (this.ended) return;
    this.abortedEarly = true;
    const body = this.bodyStream;
    // Nobody reading it (the answer went out before the body was read): just drop it.
    if (body !== undefined) body.destroy(body.listenerCount('error') > 0 ? abortedError() : undefined);
  }

  /** The body's reader wants more: return what it took to the client's window. */
  release(): void {
    const held = this.held;
    this.held = 0;
    this.stream.consumed(held);
  }

  body(): Readable {
    if (this.bodyStream !== undefined) return this.bodyStream;
    const body = (this.bodyStream = new Http2RequestBody(this));
    if (this.bodyTaken) {
      body.push(null);
      return body;
    }
    const chunks = this.chunks;
    this.chunks = undefined;
    if (chunks !== undefined) for (const chunk of chunks) body.push(chunk);
    if (this.ended) body.push(null);
    else if (this.abortedEarly) body.destroy(abortedError());
    return body;
  }

  receivedBody(): Buffer | undefined {
    // A Readable and its ticks per call are what an HTTP/2 pod's small requests cost most:
    // when END_STREAM has been read, the buffered bytes are the body.
    if (this.bodyStream !== undefined || this.bodyTaken || !this.ended) return undefined;
    const chunks = this.chunks;
    this.chunks = undefined;
    // Later body() calls get an ended, empty stream, made only if one is asked for: made
    // here, it was a Readable, its state and a tick for every unary call (about 0.5 KB).
    this.bodyTaken = true;
    if (chunks === undefined) return Buffer.alloc(0);
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  }
}

function abortedError(): Error {
  return Object.assign(new Error('the client reset the stream before the request body was complete'), { code: 'ECONNRESET' });
}
