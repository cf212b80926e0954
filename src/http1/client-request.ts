// One request of the HTTP/1.1 client (src/http1/client.ts): checked and turned into
// its request head before any connection is chosen, then driven by the connection it
// runs on. It is also the request's dispatch controller (pause/resume/abort), so a
// handler that keeps it after the request ended cannot touch the connection's next
// request: the link is cut (`conn = null`) when the request ends.
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { isCleanValue, isNamed, isToken } from './header-chars.ts';
import { headBytes } from './head-bytes.ts';
import { settle } from './turn-writes.ts';
import { fieldPairs } from './response-head.ts';

/** An error of the client, with the `code` undici would give it (see src/proxy/forward.ts describe()). */
export class Http1ClientError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.code = code;
    this.name = 'Http1ClientError';
  }
}

export function invalidArgument(message: string): Http1ClientError {
  return new Http1ClientError('UND_ERR_INVALID_ARG', message);
}

/** The pod closed the connection (or broke the protocol) before a complete response. */
export function socketError(message: string): Http1ClientError {
  return new Http1ClientError('UND_ERR_SOCKET', message);
}

/** What a request needs from the connection it runs on. */
export interface RequestConnection {
  abortRequest(request: ClientRequest, reason: Error): void;
  pauseResponse(): void;
  resumeResponse(): void;
}

// Where a request is.
/** Waiting for a connection (being made). */
export const QUEUED = 0;
/** Inside the handler's onRequestStart: nothing written yet. */
export const STARTING = 1;
/** Written (or being written); the response is awaited or arriving. */
export const RUNNING = 2;
/** Ended or failed: the handler has had its last call. */
export const DONE = 3;

const DEFAULT_TIMEOUT = 300_000;
const EMPTY = Buffer.alloc(0);

/**
 * A request target in origin form ("/..."), with no space, control character or
 * non-latin1 character. "*" (OPTIONS *) is refused as undici refuses it, so that every
 * upstream protocol answers it alike (400).
 */
function isCleanPath(s: string): boolean {
  const n = s.length;
  if (n === 0 || s.charCodeAt(0) !== 0x2f /* / */) return false;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f || c > 0xff) return false;
  }
  return true;
}

/** A Content-Length value: digits only; -1 when it is not one. */
export function parseLength(value: string): number {
  const n = value.length;
  if (n === 0 || n > 15) return -1;
  let result = 0;
  for (let i = 0; i < n; i++) {
    const c = value.charCodeAt(i) - 0x30;
    if (c < 0 || c > 9) return -1;
    result = result * 10 + c;
  }
  return result;
}

/** Methods whose requests carry a body: sent with "content-length: 0" when they have none (as undici does). */
function expectsPayload(method: string): boolean {
  switch (method) {
    case 'POST':
    case 'PUT':
    case 'PATCH':
    case 'QUERY':
    case 'PROPFIND':
    case 'PROPPATCH':
      return true;
    default:
      return false;
  }
}

/** "close" among the comma-separated options of a Connection value; throws for options other than close/keep-alive. */
function connectionSaysClose(value: string): boolean | undefined {
  const lower = value.toLowerCase();
  let close = false;
  let start = 0;
  while (start <= lower.length) {
    let end = lower.indexOf(',', start);
    if (end === -1) end = lower.length;
    const token = lower.slice(start, end).trim();
    if (token === 'close') close = true;
    else if (token !== 'keep-alive' && token !== '') return undefined;
    start = end + 1;
  }
  return close;
}

export type RequestBody = Readable | Buffer | null;

/** The subset of undici's dispatch options the client takes. */
export interface Http1DispatchOptions {
  path: string;
  method: string;
  /** Flat [name, value, name, value, ...] */
  headers?: string[] | null;
  /**
   * portico's own: every header name is a token and every value clean (header-chars.ts),
   * because they come from llhttp, which refuses anything else, or from config checked
   * as strictly. The per-character checks are then skipped; the rest still applies.
   */
  headersChecked?: boolean;
  /**
   * portico's own: the handler reads the response's header pairs from the controller's
   * responseRawHeaders, so onResponseStart gets an empty record instead of one made for it
   * (1xx heads still come with theirs).
   */
  rawResponseHeaders?: boolean;
  /**
   * portico's own, with rawResponseHeaders: the handler takes a plain final head
   * (response-head.ts) as its header lines in bytes (responseHeadFields), so the client
   * reads such a head itself and makes no string of it.
   */
  responseHeadLines?: boolean;
  body?: Readable | Buffer | Uint8Array | string | null;
  /** ms from the request written to the response head; 0: none (default 300 s) */
  headersTimeout?: number | null;
  /** ms without a response body byte; 0: none (default 300 s) */
  bodyTimeout?: number | null;
  /** TLS server name for this request (pools with TLS) */
  servername?: string | null;
}

export class ClientRequest implements Dispatcher.DispatchController {
  readonly handler: Dispatcher.DispatchHandler;
  /**
   * The request head, once copied out of head-bytes.ts's scratch buffer (EMPTY while the
   * buffer still holds it: see sendHead).
   */
  private head: Buffer = EMPTY;
  body: RequestBody = null;
  /** A Readable body without Content-Length: sent chunked. */
  chunked = false;
  /** Declared Content-Length; -1 when absent. */
  contentLength = -1;
  /** Body bytes sent so far. */
  bodySent = 0;
  /** The request head and body are all written. */
  sent = false;
  headersTimeout = DEFAULT_TIMEOUT;
  bodyTimeout = DEFAULT_TIMEOUT;
  servername = '';
  isHead = false;
  /** The request asked for Connection: close. */
  closeAfter = false;
  state = QUEUED;
  /** The connection the request runs on; null before and after. */
  conn: RequestConnection | null = null;
  aborted = false;
  paused = false;
  reason: Error | null = null;
  /** See responseRawHeaders. */
  private rawPairs: string[] | null = null;
  /**
   * With rawResponseHeaders, a plain final head (response-head.ts) comes as bytes: its
   * header lines, each with its CRLF, its Connection and Keep-Alive lines left out. Null otherwise.
   */
  responseHeadFields: Buffer | null = null;
  /** responseHeadFields hold a Date header. */
  responseHeadHasDate = false;
  /**
   * The final response's header pairs as the pod sent them (names as written), for a
   * handler that passes them on as they are: made from responseHeadFields when asked for.
   */
  get responseRawHeaders(): string[] | null {
    if (this.rawPairs === null && this.responseHeadFields !== null) this.rawPairs = fieldPairs(this.responseHeadFields);
    return this.rawPairs;
  }

  set responseRawHeaders(pairs: string[] | null) {
    this.rawPairs = pairs;
  }
  /** onResponseStart gets a header record (false: rawResponseHeaders was asked for). */
  recordHeaders = true;
  /** A plain final head is read by the client and handed over as bytes (responseHeadLines). */
  headLines = false;

  constructor(handler: Dispatcher.DispatchHandler) {
    this.handler = handler;
  }

  /**
   * Checks the request and builds its head. Returns the error to fail it with, or
   * null. `hostHeader` is sent when the headers carry no Host.
   */
  /**
   * `keepAlive` false: the pool keeps no idle connection (--upstream-keepalive 0), so the
   * request says "Connection: close", as RFC 9112 section 9.6 asks of a client that does
   * not keep connections (the pod then need not hold the connection open after answering).
   */
  prepare(options: Http1DispatchOptions, hostHeader: string, tls: boolean, defaultServername: string, keepAlive = true): Http1ClientError | null {
    const method = options.method;
    if (typeof method !== 'string' || !isToken(method)) return invalidArgument('invalid method');
    if (method === 'CONNECT') return invalidArgument('CONNECT is not supported');
    const path = options.path;
    if (typeof path !== 'string' || !isCleanPath(path)) return invalidArgument('invalid request path');
    this.isHead = method === 'HEAD';
    const head = headBytes;
    head.begin();
    head.latin1(method);
    head.latin1(' ');
    head.latin1(path);
    head.latin1(' HTTP/1.1\r\n');
    let hasHost = false;
    let hasConnection = false;
    let contentLength = -1;
    this.recordHeaders = options.rawResponseHeaders !== true;
    this.headLines = !this.recordHeaders && options.responseHeadLines === true;
    const headers = options.headers;
    if (headers !== undefined && headers !== null) {
      if (!Array.isArray(headers) || (headers.length & 1) !== 0) return invalidArgument('headers must be a flat array of names and values');
      const check = options.headersChecked !== true;
      for (let i = 0; i < headers.length; i += 2) {
        const name = headers[i];
        const value = headers[i + 1];
        if (typeof name !== 'string' || (check && !isToken(name))) return invalidArgument('invalid header name');
        if (typeof value !== 'string' || (check && !isCleanValue(value))) return invalidArgument(`invalid value for header ${name}`);
        // The few names the client acts on, told apart by length and first letter before any lowercasing.
        const first = name.charCodeAt(0) | 0x20;
        switch (name.length) {
          case 4:
            if (first === 0x68 /* h */ && isNamed(name, 'host')) {
              if (hasHost) return invalidArgument('more than one host header');
              hasHost = true;
            }
            break;
          case 14:
            if (first === 0x63 /* c */ && isNamed(name, 'content-length')) {
              const length = parseLength(value);
              if (length < 0 || (contentLength >= 0 && length !== contentLength)) return invalidArgument('invalid content-length header');
              if (contentLength >= 0) continue; // the same value twice: sent once
              contentLength = length;
            }
            break;
          case 17:
            if (first === 0x74 /* t */ && isNamed(name, 'transfer-encoding')) return invalidArgument('transfer-encoding is set by the client');
            break;
          case 10:
            if (first === 0x63 /* c */ && isNamed(name, 'connection')) {
              const close = connectionSaysClose(value);
              if (close === undefined) return invalidArgument('invalid connection header');
              hasConnection = true;
              if (close) this.closeAfter = true;
            } else if (first === 0x6b /* k */ && isNamed(name, 'keep-alive')) {
              return invalidArgument('invalid keep-alive header');
            }
            break;
          case 7:
            if (first === 0x75 /* u */ && isNamed(name, 'upgrade')) return invalidArgument('upgrade is not supported');
            break;
          case 6:
            if (first === 0x65 /* e */ && isNamed(name, 'expect')) return invalidArgument('expect is not supported');
            break;
        }
        head.field(name, value);
      }
    }
    if (!hasHost) head.field('host', hostHeader);
    if (!keepAlive && !hasConnection) {
      head.latin1('connection: close\r\n');
      this.closeAfter = true;
    }

    const body = options.body ?? null;
    if (body === null) {
      if (contentLength > 0) return new Http1ClientError('UND_ERR_REQ_CONTENT_LENGTH_MISMATCH', 'request body length does not match content-length header');
      if (contentLength < 0 && expectsPayload(method)) head.latin1('content-length: 0\r\n');
    } else if (typeof body === 'string' || body instanceof Uint8Array) {
      const bytes = typeof body === 'string' ? Buffer.from(body) : Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
      if (contentLength < 0) head.field('content-length', String(bytes.length));
      else if (contentLength !== bytes.length) return new Http1ClientError('UND_ERR_REQ_CONTENT_LENGTH_MISMATCH', 'request body length does not match content-length header');
      this.body = bytes;
    } else if (typeof (body as Readable).on === 'function' && typeof (body as Readable).pause === 'function') {
      if (contentLength < 0) {
        head.latin1('transfer-encoding: chunked\r\n');
        this.chunked = true;
      }
      this.body = body as Readable;
    } else {
      return invalidArgument('body must be a Readable, a Buffer, a string or null');
    }
    head.crlf();
    this.contentLength = contentLength;

    const headersTimeout = options.headersTimeout;
    if (headersTimeout !== undefined && headersTimeout !== null) {
      if (typeof headersTimeout !== 'number' || !(headersTimeout >= 0)) return invalidArgument('invalid headersTimeout');
      this.headersTimeout = headersTimeout;
    }
    const bodyTimeout = options.bodyTimeout;
    if (bodyTimeout !== undefined && bodyTimeout !== null) {
      if (typeof bodyTimeout !== 'number' || !(bodyTimeout >= 0)) return invalidArgument('invalid bodyTimeout');
      this.bodyTimeout = bodyTimeout;
    }
    if (tls) {
      const servername = options.servername;
      this.servername = typeof servername === 'string' && servername !== '' ? servername : defaultServername;
    }
    // Left in the scratch buffer: a free connection writes it from there (sendHead).
    head.hold(this);
    return null;
  }

  keepHead(copy: Buffer): void {
    this.head = copy;
  }

  /** Writes the head: from the scratch buffer if it is still there, else the copy. */
  sendHead(socket: Socket): void {
    if (headBytes.sendHeld(this, socket)) return;
    settle(socket);
    socket.write(this.head);
  }

  /** The head as a buffer of its own (for a corked write with the body). */
  ownHead(): Buffer {
    headBytes.release(this);
    return this.head;
  }

  // ---- DispatchController ----

  abort(reason: Error): void {
    if (this.state === DONE || this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    // STARTING: the connection sees `aborted` when onRequestStart returns, before writing.
    if (this.state === RUNNING) this.conn?.abortRequest(this, reason);
    else if (this.state === QUEUED) {
      // Its connection is still being made; that connection goes idle when it is.
      this.state = DONE;
      this.handler.onResponseError?.(this, reason);
    }
  }

  pause(): void {
    if (this.state !== RUNNING || this.paused) return;
    this.paused = true;
    this.conn?.pauseResponse();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    if (this.state === RUNNING) this.conn?.resumeResponse();
  }
}
