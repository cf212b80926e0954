// portico's HTTP/2 client for h2c and h2 pods: sessions to one address, each
// multiplexing up to the pod's MAX_CONCURRENT_STREAMS; past it another session opens.
// Each session is a ClientConnection (wire/client-connection.ts), portico's own HTTP/2
// engine in the client role, on the codec its server side uses. (It replaced node:http2's
// client, which cost 2.2-2.7x the CPU per proxied gRPC call, and before it undici's, whose
// response stream dropped DATA still buffered while paused when the trailers arrived.)
//
// Http2Pool implements the same part of undici's dispatch(options, handler) contract
// as Http1Pool (src/http1/client.ts), so the forwarder drives either:
// - onRequestStart(controller, {}) once the session is up, just before the stream
//   opens: a failure without it happened while connecting (nothing was sent);
// - onBodySent(chunk) per request body chunk;
// - onResponseStart(controller, status, headers) for the response, and for 1xx;
// - onResponseData(controller, chunk), onResponseEnd(controller, trailers);
// - onResponseError(controller, err) once on failure, with the codes of
//   src/proxy/forward.ts describe(): UND_ERR_CONNECT_TIMEOUT, UND_ERR_HEADERS_TIMEOUT,
//   UND_ERR_BODY_TIMEOUT, UND_ERR_SOCKET (the pod reset the stream or the session
//   died), system codes while connecting, UND_ERR_INVALID_ARG for a request HTTP/2
//   cannot carry (CR, LF, NUL in a value, a bad name), UND_ERR_CLOSED once the pool is
//   closed.
// The controller (pause/resume/abort) is the request itself. Pausing stops returning
// flow-control window for the stream, so the pod runs out of it: at most one window
// (64 KiB, the HTTP/2 default) is buffered per paused stream.
// A stream the pod never processed (above the last stream id of its GOAWAY, or refused
// with REFUSED_STREAM) is sent again once on another session when its body can be
// replayed (none, or a buffer); otherwise it fails with UND_ERR_SOCKET.
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { ClientConnection, type ClientConnectionHost, type ClientStream, type ClientStreamOwner } from './wire/client-connection.ts';
import { ErrorCode } from './wire/frames.ts';
import { HeaderBlock } from './wire/hpack.ts';
// Names and values checked with a character table (a regex test per field cost about 1 µs of a gRPC call).
import { isCleanValue, isToken } from '../http1/header-chars.ts';
import type { Socket } from 'node:net';
import type { ConnectionOptions, TLSSocket } from 'node:tls';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const net = process.getBuiltinModule('node:net');
const tls = process.getBuiltinModule('node:tls');

export interface Http2PoolOptions {
  /** ms to establish the connection (TCP, and TLS); 0: no limit */
  connectTimeout: number;
  /** ms a session without streams is kept */
  keepAliveTimeout: number;
  /** h2 over TLS (ALPN h2); without it h2c with prior knowledge */
  tls?: {
    /** PEM CA bundle the pod's certificate must chain to (default: the system's) */
    ca?: string;
    rejectUnauthorized: boolean;
  };
}

export interface Http2PoolAddress {
  host: string;
  port: number;
}

/** What the forwarder passes to dispatch (undici's DispatchOptions, as far as it is used). */
export interface Http2DispatchOptions {
  path: string;
  method: string;
  /** A flat list of names and values. */
  headers?: string[] | null;
  body?: Readable | Buffer | null;
  headersTimeout?: number | null;
  bodyTimeout?: number | null;
  /** TLS server name (h2); sessions are kept per name. */
  servername?: string;
}

/** An error with the code undici would give it (see src/proxy/forward.ts describe()). */
function clientError(code: string, message: string): Error & { code: string } {
  return Object.assign(new Error(message), { code });
}

/** Streams a peer allows before it says otherwise in its SETTINGS (RFC 9113 recommends at least 100). */
const ASSUMED_MAX_STREAMS = 100;

/** Request headers that are HTTP/1.1 connection-specific: RFC 9113 section 8.2.2 forbids them in HTTP/2. */
const CONNECTION_SPECIFIC = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'http2-settings']);

export class Http2Pool {
  readonly host: string;
  readonly port: number;
  /** :authority for requests that carry no Host. */
  readonly authority: string;
  readonly connectTimeout: number;
  readonly keepAliveTimeout: number;
  readonly tls: { ca?: string; rejectUnauthorized: boolean } | undefined;
  private readonly defaultServername: string;
  private readonly sessions = new Set<Session>();
  private closing = false;
  private resolveClosed: (() => void) | undefined = undefined;

  constructor(address: Http2PoolAddress, options: Http2PoolOptions) {
    this.host = address.host;
    this.port = address.port;
    this.authority = address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
    this.connectTimeout = options.connectTimeout;
    this.keepAliveTimeout = options.keepAliveTimeout;
    this.tls = options.tls === undefined ? undefined : { ca: options.tls.ca, rejectUnauthorized: options.tls.rejectUnauthorized };
    // An address is no server name (Node refuses IP addresses as SNI).
    this.defaultServername = net.isIP(address.host) === 0 ? address.host : '';
  }

  /** Open or opening sessions (for tests and debug output). */
  get size(): number {
    return this.sessions.size;
  }

  /** Sends a request; the handler hears how it goes (see the top of this file). Returns false when it failed at once. */
  dispatch(options: Dispatcher.DispatchOptions | Http2DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const opts = options as Http2DispatchOptions;
    const request = new Http2Request(handler, opts);
    if (this.closing) {
      request.fail(clientError('UND_ERR_CLOSED', 'the pool is closed'));
      return false;
    }
    const servername = this.tls === undefined ? '' : typeof opts.servername === 'string' && opts.servername !== '' ? opts.servername : this.defaultServername;
    this.sessionFor(servername).add(request);
    return true;
  }

  /** @internal a stream the pod never processed, sent again on another session */
  redispatch(request: Http2Request, servername: string): void {
    if (this.closing) {
      request.fail(clientError('UND_ERR_CLOSED', 'the pool is closed'));
      return;
    }
    this.sessionFor(servername).add(request);
  }

  /** A session with room for one more stream, to `servername`; a new one when none has. */
  private sessionFor(servername: string): Session {
    for (const session of this.sessions) {
      if (session.servername === servername && session.hasRoom()) return session;
    }
    const session = new Session(this, servername);
    this.sessions.add(session);
    return session;
  }

  /** @internal a session ended */
  forget(session: Session): void {
    this.sessions.delete(session);
    if (this.closing && this.sessions.size === 0) this.resolveClosed?.();
  }

  /** Takes no new requests; resolves once those in flight are done and the sessions closed. */
  close(): Promise<void> {
    this.closing = true;
    if (this.sessions.size === 0) return Promise.resolve();
    const done = new Promise<void>((resolve) => (this.resolveClosed = resolve));
    for (const session of this.sessions) session.close();
    return done;
  }

  /** Closes every session now; requests in flight fail. */
  destroy(): Promise<void> {
    this.closing = true;
    if (this.sessions.size === 0) return Promise.resolve();
    const done = new Promise<void>((resolve) => (this.resolveClosed = resolve));
    for (const session of [...this.sessions]) session.destroy(clientError('UND_ERR_DESTROYED', 'the pool was destroyed'));
    return done;
  }
}

/** One connection to the pod: connecting (requests wait), then open, then draining or gone. */
class Session implements ClientConnectionHost {
  readonly pool: Http2Pool;
  readonly servername: string;
  private conn: ClientConnection | undefined = undefined;
  private readonly socket: Socket;
  private connectTimer: NodeJS.Timeout | undefined = undefined;
  private idleTimer: NodeJS.Timeout | undefined = undefined;
  /** Requests waiting for the connection. */
  private waiting: Http2Request[] = [];
  /** Streams open on it. */
  private active = 0;
  private streamLimit = ASSUMED_MAX_STREAMS;
  /** Takes new streams (false after GOAWAY, an error, or close). */
  private usable = true;
  private ended = false;

  constructor(pool: Http2Pool, servername: string) {
    this.pool = pool;
    this.servername = servername;
    const t = pool.tls;
    if (t !== undefined) {
      const options: ConnectionOptions = { host: pool.host, port: pool.port, ALPNProtocols: ['h2'], rejectUnauthorized: t.rejectUnauthorized };
      if (t.ca !== undefined) options.ca = t.ca;
      if (servername !== '') options.servername = servername;
      this.socket = tls.connect(options, () => this.connected());
    } else {
      this.socket = net.connect({ host: pool.host, port: pool.port }, () => this.connected());
    }
    this.socket.setNoDelay(true);
    this.socket.once('error', this.onConnectError);
    if (pool.connectTimeout > 0) {
      this.connectTimer = setTimeout(() => {
        this.socket.destroy(clientError('UND_ERR_CONNECT_TIMEOUT', `connecting to ${pool.authority} timed out after ${pool.connectTimeout} ms`));
      }, pool.connectTimeout);
    }
  }

  hasRoom(): boolean {
    return this.usable && this.active + this.waiting.length < this.streamLimit;
  }

  add(request: Http2Request): void {
    request.session = this;
    if (this.conn === undefined) this.waiting.push(request);
    else this.start(request);
  }

  private readonly onConnectError = (err: Error): void => {
    // Nothing was sent: the forwarder may try another pod.
    this.end(err);
  };

  private connected(): void {
    clearTimeout(this.connectTimer);
    this.connectTimer = undefined;
    const socket = this.socket;
    socket.off('error', this.onConnectError);
    if (this.pool.tls !== undefined && (socket as TLSSocket).alpnProtocol !== 'h2') {
      socket.destroy();
      this.end(clientError('UND_ERR_SOCKET', `the pod at ${this.pool.authority} did not accept HTTP/2 in ALPN`));
      return;
    }
    this.conn = new ClientConnection(socket, this);
    const waiting = this.waiting;
    this.waiting = [];
    for (const request of waiting) this.start(request);
    if (this.active === 0) this.idle();
  }

  // ---- ClientConnectionHost ----

  maxStreams(n: number): void {
    this.streamLimit = Math.max(1, n);
  }

  /** No new streams on a connection the pod is closing; the ones it still serves finish. */
  retired(): void {
    if (!this.usable) return;
    this.usable = false;
    if (this.active === 0) this.conn?.close();
  }

  closed(reason: string): void {
    this.end(clientError('UND_ERR_SOCKET', reason));
  }

  // ----

  private start(request: Http2Request): void {
    if (request.done) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    this.active++;
    request.open(this.conn!, this.pool);
  }

  /** @internal a request that was waiting or streaming is over */
  release(request: Http2Request, streamed: boolean): void {
    if (!streamed) {
      const i = this.waiting.indexOf(request);
      if (i >= 0) this.waiting.splice(i, 1);
      return;
    }
    this.active--;
    if (this.active === 0) this.idle();
  }

  private idle(): void {
    // No keep-alive (--upstream-keepalive 0): closed now, not by a timer of 0 ms, which a
    // request arriving in between would find still open and use.
    if (!this.usable || this.pool.keepAliveTimeout <= 0) {
      this.usable = false;
      this.conn?.close();
      return;
    }
    this.idleTimer = setTimeout(() => this.close(), this.pool.keepAliveTimeout);
    this.idleTimer.unref();
  }

  /** Graceful: streams in flight finish, then the connection closes. */
  close(): void {
    this.usable = false;
    clearTimeout(this.idleTimer);
    if (this.conn !== undefined) this.conn.close();
    else this.end(clientError('UND_ERR_CLOSED', 'the pool is closed'));
  }

  destroy(err: Error): void {
    this.usable = false;
    if (this.conn !== undefined) this.conn.destroy(err.message);
    else this.socket.destroy();
    this.end(err);
  }

  /** The connection is gone: requests still waiting fail with `err` (streams fail on their own). */
  private end(err: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.usable = false;
    clearTimeout(this.connectTimer);
    clearTimeout(this.idleTimer);
    const waiting = this.waiting;
    this.waiting = [];
    for (const request of waiting) request.fail(err);
    if (this.conn === undefined) this.socket.destroy();
    this.pool.forget(this);
  }
}

// The request body points back at its request, so its listeners are shared functions
// rather than closures made for every request (less garbage per call).
const kRequest = Symbol('portico.h2request');
type OwnedBody = Readable & { [kRequest]?: Http2Request };

function onHeadersTimeout(request: Http2Request): void {
  request.fail(clientError('UND_ERR_HEADERS_TIMEOUT', 'headers timeout'));
}
function onBodyTimeout(request: Http2Request): void {
  request.fail(clientError('UND_ERR_BODY_TIMEOUT', 'body timeout'));
}
function onBodyData(this: OwnedBody, chunk: Buffer): void {
  this[kRequest]!.sendChunk(chunk);
}
function onBodyEnd(this: OwnedBody): void {
  this[kRequest]!.bodyEnded();
}
function onBodyError(this: OwnedBody, err: Error): void {
  this[kRequest]!.fail(Object.assign(err, { code: (err as { code?: string }).code ?? 'UND_ERR_ABORTED' }));
}

const EMPTY = Buffer.alloc(0);

/** One request: its stream (ClientStreamOwner), and the dispatch controller the handler holds. */
class Http2Request implements ClientStreamOwner {
  private readonly handler: Dispatcher.DispatchHandler;
  private readonly options: Http2DispatchOptions;
  session: Session | undefined = undefined;
  private stream: ClientStream | undefined = undefined;
  /** The request body being sent, while it is. */
  body: OwnedBody | undefined = undefined;
  private headersTimer: NodeJS.Timeout | undefined = undefined;
  private bodyTimer: NodeJS.Timeout | undefined = undefined;
  private bodyTimeout = 0;
  /** The answer's body is coming: the body timer runs whenever the handler is not paused. */
  private bodyTimed = false;
  /** Inside resume(), handing over held DATA: a nested resume leaves it to that loop. */
  private releasing = false;
  /** Answer bytes that came while paused (at most one stream window), and whether the end came after them. */
  private held: Buffer[] | undefined = undefined;
  private heldEnd = false;
  private trailerFields: string[] | undefined = undefined;
  /** The pod never processed the stream; `resent`: it was already sent again once. */
  private refusedByPod = false;
  private resent = false;
  private bodyCounted = false;
  done = false;
  aborted = false;
  paused = false;
  reason: Error | null = null;
  /** Inside onRequestStart: an abort now is acted on when it returns. */
  private opening = false;
  /** Its place on the session is given back. */
  private released = false;

  constructor(handler: Dispatcher.DispatchHandler, options: Http2DispatchOptions) {
    this.handler = handler;
    this.options = options;
  }

  // ---- DispatchController ----

  abort(reason: Error): void {
    if (this.done || this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    if (!this.opening) this.fail(reason);
  }

  pause(): void {
    if (this.paused || this.stream === undefined) return;
    this.paused = true;
    // The pod cannot send while we return no window: the idle timer would fire for nothing.
    clearTimeout(this.bodyTimer);
    this.bodyTimer = undefined;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    if (this.done || this.releasing) return;
    const held = this.held;
    if (held !== undefined) {
      this.releasing = true;
      // In order; the handler may pause again, and the rest waits for the next resume.
      while (held.length > 0 && !this.paused && !this.done) this.deliver(held.shift()!);
      this.releasing = false;
      if (this.paused || this.done) return;
      this.held = undefined;
    }
    if (this.heldEnd) {
      this.complete();
      return;
    }
    if (this.bodyTimed) this.bodyTimer = setTimeout(onBodyTimeout, this.bodyTimeout, this);
  }

  /** Opens the stream on a connected session and sends the request. */
  open(conn: ClientConnection, pool: Http2Pool): void {
    this.opening = true;
    this.handler.onRequestStart?.(this, {});
    this.opening = false;
    if (this.aborted) {
      this.fail(this.reason!);
      return;
    }
    const options = this.options;
    let head: HeaderBlock;
    try {
      head = requestHead(options, pool);
    } catch (err) {
      // The request, not the pod, is at fault.
      this.fail(clientError('UND_ERR_INVALID_ARG', (err as Error).message));
      return;
    }
    const body = options.body ?? null;
    const stream = conn.request(this, head, body === null);
    this.stream = stream;
    const headersTimeout = options.headersTimeout ?? 300_000;
    if (headersTimeout > 0) this.headersTimer = setTimeout(onHeadersTimeout, headersTimeout, this);
    this.bodyTimeout = options.bodyTimeout ?? 300_000;
    if (body !== null) this.sendBody(stream, body);
  }

  private sendBody(stream: ClientStream, body: Readable | Buffer): void {
    if (Buffer.isBuffer(body)) {
      if (!this.bodyCounted) {
        this.bodyCounted = true;
        this.handler.onBodySent?.(body);
      }
      // The handler may have given up on it (a body over the size limit).
      if (!this.done) stream.sendData(body, true);
      return;
    }
    const source = body as OwnedBody;
    this.body = source;
    source[kRequest] = this;
    source.on('data', onBodyData);
    source.once('end', onBodyEnd);
    source.once('error', onBodyError);
  }

  /** @internal a chunk of the request body */
  sendChunk(chunk: Buffer): void {
    if (this.done) return;
    this.handler.onBodySent?.(chunk);
    if (this.done) return;
    if (!this.stream!.sendData(chunk, false)) this.body!.pause();
  }

  /** @internal the request body is complete */
  bodyEnded(): void {
    this.detachBody();
    if (!this.done) this.stream!.sendData(EMPTY, true);
  }

  private detachBody(): void {
    const body = this.body;
    if (body === undefined) return;
    this.body = undefined;
    body.off('data', onBodyData);
    body.off('end', onBodyEnd);
    body.off('error', onBodyError);
    body[kRequest] = undefined;
  }

  // ---- ClientStreamOwner ----

  drain(): void {
    this.body?.resume();
  }

  head(status: number, fields: string[], endStream: boolean): void {
    if (this.done) return;
    const headers = fieldsToHeaders(fields);
    if (status < 200) {
      this.handler.onResponseStart?.(this, status, headers, '');
      return;
    }
    clearTimeout(this.headersTimer);
    this.headersTimer = undefined;
    if (this.bodyTimeout > 0 && !endStream) {
      this.bodyTimed = true;
      if (!this.paused) this.bodyTimer = setTimeout(onBodyTimeout, this.bodyTimeout, this);
    }
    this.handler.onResponseStart?.(this, status, headers, '');
  }

  data(chunk: Buffer): void {
    if (this.done) return;
    if (this.paused || this.held !== undefined) {
      (this.held ??= []).push(chunk);
      return;
    }
    this.deliver(chunk);
    if (this.bodyTimer !== undefined && !this.paused && !this.done) this.bodyTimer.refresh();
  }

  /** Hands a chunk to the handler, then gives its bytes back to the pod's window. */
  private deliver(chunk: Buffer): void {
    this.handler.onResponseData?.(this, chunk);
    this.stream!.consumed(chunk.length);
  }

  trailers(fields: string[]): void {
    this.trailerFields = fields;
  }

  end(): void {
    if (this.done) return;
    if (this.paused || this.held !== undefined) {
      // DATA still held is delivered first, then the end (with the trailers).
      this.heldEnd = true;
      return;
    }
    this.complete();
  }

  private complete(): void {
    this.done = true;
    this.finish();
    const fields = this.trailerFields;
    this.handler.onResponseEnd?.(this, fields === undefined ? {} : fieldsToHeaders(fields));
  }

  refused(): void {
    this.refusedByPod = true;
  }

  cut(reason: string): void {
    if (this.done) return;
    const body = this.options.body ?? null;
    if (this.refusedByPod && !this.resent && (body === null || Buffer.isBuffer(body)) && this.session !== undefined) {
      // Nothing of it was processed: once more when the stream has closed (streamClosed follows).
      this.resent = true;
      return;
    }
    this.fail(clientError('UND_ERR_SOCKET', reason));
  }

  streamClosed(): void {
    this.finish();
    if (!this.resent || !this.refusedByPod || this.done) return;
    // On a session that takes new streams: the stream's place on this one is given back.
    this.refusedByPod = false;
    const session = this.session!;
    this.stream = undefined;
    this.session = undefined;
    this.released = false;
    session.pool.redispatch(this, session.servername);
  }

  /** Fails the request once: the stream is cancelled (RST_STREAM CANCEL reaches the pod). */
  fail(err: Error): void {
    if (this.done) return;
    this.done = true;
    this.finish();
    this.handler.onResponseError?.(this, err);
  }

  /**
   * Frees the timers and, once the stream is closed, its place on the session. Called
   * when the request is done and again when the stream closes.
   */
  private finish(): void {
    clearTimeout(this.headersTimer);
    this.headersTimer = undefined;
    clearTimeout(this.bodyTimer);
    this.bodyTimer = undefined;
    // The stream may close while paused with DATA held: it is still to be delivered.
    if (this.done) this.held = undefined;
    this.detachBody();
    const stream = this.stream;
    // Unless both directions are complete, RST_STREAM CANCEL tells the pod to stop (a client's cancel reaches it).
    if (stream !== undefined && !stream.closed && this.done && !(stream.remoteEnded && stream.endSent)) stream.resetWith(ErrorCode.CANCEL);
    if (this.released || this.session === undefined) return;
    // A stream counts until it is closed; a request that never opened one leaves the wait list.
    if (stream === undefined) {
      this.released = true;
      this.session.release(this, false);
    } else if (stream.closed) {
      this.released = true;
      this.session.release(this, true);
    }
  }
}

/** The request head: pseudo-headers, lowercase names, no connection-specific fields. Throws on what HTTP/2 cannot carry. */
function requestHead(options: Http2DispatchOptions, pool: Http2Pool): HeaderBlock {
  const method = options.method;
  const path = options.path;
  if (!isToken(method)) throw new Error(`invalid method ${JSON.stringify(method)}`);
  if (path === '' || !isCleanValue(path) || path.includes(' ')) throw new Error(`invalid path ${JSON.stringify(path)}`);
  const raw = options.headers;
  // The first Host is :authority. Found first, so that the fields go straight into the
  // block after the pseudo-headers, without a list of them in between (allocated per call).
  let authority = '';
  if (raw !== undefined && raw !== null) {
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!;
      if (name.length === 4 && name.toLowerCase() === 'host') {
        authority = raw[i + 1]!;
        break;
      }
    }
  }
  if (authority === '') authority = pool.authority;
  else if (!isCleanValue(authority)) throw new Error('invalid value for header host');
  // The 4 pseudo-headers and at most one field per header (Host goes as :authority).
  const head = new HeaderBlock(4 + (raw === undefined || raw === null ? 0 : raw.length >> 1)).add(':method', method).add(':path', path).add(':scheme', pool.tls === undefined ? 'http' : 'https').add(':authority', authority);
  if (raw !== undefined && raw !== null) {
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toLowerCase();
      const value = raw[i + 1]!;
      if (name === 'host' || CONNECTION_SPECIFIC.has(name)) continue;
      // TE is allowed only as "trailers" (RFC 9113 section 8.2.2).
      if (name === 'te' && value.trim().toLowerCase() !== 'trailers') continue;
      if (!isToken(name)) throw new Error(`invalid header name ${JSON.stringify(raw[i])}`);
      if (!isCleanValue(value)) throw new Error(`invalid value for header ${name}`);
      head.add(name, value);
    }
  }
  return head;
}

/**
 * The prototype of header records, as for HTTP/1.1 pods (src/http1/client-connection.ts):
 * empty and without Object.prototype, so a field named __proto__ or constructor is a field
 * like any other. Object.create(null) did that too, but V8 keeps such objects in
 * dictionary mode: about 1.2 KB allocated per gRPC call for the head and the trailers
 * (heap sampling profile under h2load), where records made from this prototype get hidden
 * classes, shared by the answers of a pod that sends the same fields each time.
 */
const HEADER_RECORD_PROTOTYPE: object = Object.freeze(Object.create(null));

/** Name, value pairs as undici hands headers over: a name seen twice has an array. */
function fieldsToHeaders(fields: string[]): Record<string, string | string[] | undefined> {
  const out = Object.create(HEADER_RECORD_PROTOTYPE) as Record<string, string | string[] | undefined>;
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i]!;
    const value = fields[i + 1]!;
    const prev = out[name];
    if (prev === undefined) out[name] = value;
    else if (Array.isArray(prev)) prev.push(value);
    else out[name] = [prev, value];
  }
  return out;
}
