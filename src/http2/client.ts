// portico's HTTP/2 client for h2c and h2 pods, on node:http2: sessions to one address,
// each multiplexing up to the pod's MAX_CONCURRENT_STREAMS; past it another session
// opens. It replaced undici's h2 client, whose response stream dropped DATA that was
// still buffered while the handler had paused it when the trailers arrived (a 4 MiB
// gRPC answer lost its tail under back-pressure).
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
//   died), system codes while connecting, UND_ERR_INVALID_ARG for a request node:http2
//   will not send, UND_ERR_CLOSED once the pool is closed.
// The controller (pause/resume/abort) is the request itself. Pausing stops reading the
// stream, so the pod runs out of flow-control window: at most one window (64 KiB, the
// HTTP/2 default) is buffered per paused stream.
import type * as http2 from 'node:http2';
import * as net from 'node:net';
import type { Readable } from 'node:stream';
import * as tls from 'node:tls';
import type { Dispatcher } from 'undici';
import { NGHTTP2_CANCEL, nodeHttp2 } from './node-http2.ts';

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
class Session {
  readonly pool: Http2Pool;
  readonly servername: string;
  private session: http2.ClientHttp2Session | undefined = undefined;
  private socket: net.Socket;
  private connectTimer: NodeJS.Timeout | undefined = undefined;
  private idleTimer: NodeJS.Timeout | undefined = undefined;
  /** Requests waiting for the connection. */
  private waiting: Http2Request[] = [];
  /** Streams open on it. */
  private active = 0;
  private maxStreams = ASSUMED_MAX_STREAMS;
  /** Takes new streams (false after GOAWAY, an error, or close). */
  private usable = true;
  private ended = false;

  constructor(pool: Http2Pool, servername: string) {
    this.pool = pool;
    this.servername = servername;
    const t = pool.tls;
    if (t !== undefined) {
      const options: tls.ConnectionOptions = { host: pool.host, port: pool.port, ALPNProtocols: ['h2'], rejectUnauthorized: t.rejectUnauthorized };
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
    return this.usable && this.active + this.waiting.length < this.maxStreams;
  }

  add(request: Http2Request): void {
    request.session = this;
    if (this.session === undefined) this.waiting.push(request);
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
    if (this.pool.tls !== undefined && (socket as tls.TLSSocket).alpnProtocol !== 'h2') {
      this.end(clientError('UND_ERR_SOCKET', `the pod at ${this.pool.authority} did not accept HTTP/2 in ALPN`));
      return;
    }
    const session = nodeHttp2().connect(`${this.pool.tls === undefined ? 'http' : 'https'}://${this.pool.authority}`, {
      createConnection: () => socket,
      settings: { enablePush: false },
    });
    this.session = session;
    session.on('remoteSettings', (settings) => {
      if (settings.maxConcurrentStreams !== undefined) this.maxStreams = Math.max(1, settings.maxConcurrentStreams);
    });
    // No new streams on a session the pod is closing; the ones it still serves finish.
    session.on('goaway', () => this.retire());
    session.on('error', () => this.retire());
    session.on('close', () => this.end(clientError('UND_ERR_SOCKET', 'the HTTP/2 session to the pod closed')));
    const waiting = this.waiting;
    this.waiting = [];
    for (const request of waiting) this.start(request);
    if (this.active === 0) this.idle();
  }

  private start(request: Http2Request): void {
    if (request.done) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    this.active++;
    request.open(this.session!, this.pool);
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
    if (!this.usable) {
      this.session?.close();
      return;
    }
    this.idleTimer = setTimeout(() => this.close(), this.pool.keepAliveTimeout);
    this.idleTimer.unref();
  }

  private retire(): void {
    if (!this.usable) return;
    this.usable = false;
    if (this.active === 0) this.session?.close();
  }

  /** Graceful: streams in flight finish, then the connection closes. */
  close(): void {
    this.usable = false;
    clearTimeout(this.idleTimer);
    if (this.session !== undefined) this.session.close();
    else this.end(clientError('UND_ERR_CLOSED', 'the pool is closed'));
  }

  destroy(err: Error): void {
    this.usable = false;
    if (this.session !== undefined) this.session.destroy();
    else this.socket.destroy();
    this.end(err);
  }

  /** The session is gone: requests still waiting fail with `err` (streams fail on their own). */
  private end(err: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.usable = false;
    clearTimeout(this.connectTimer);
    clearTimeout(this.idleTimer);
    const waiting = this.waiting;
    this.waiting = [];
    for (const request of waiting) request.fail(err);
    if (this.session === undefined) this.socket.destroy();
    this.pool.forget(this);
  }
}

// The stream and the request body point back at their request, so their listeners are
// shared functions rather than closures made for every request (less garbage per call).
const kRequest = Symbol('portico.h2request');
type OwnedStream = http2.ClientHttp2Stream & { [kRequest]?: Http2Request };
type OwnedBody = Readable & { [kRequest]?: Http2Request };

function onStreamResponse(this: OwnedStream, headers: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader): void {
  this[kRequest]!.response(headers);
}
function onStreamInformational(this: OwnedStream, headers: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader): void {
  this[kRequest]!.informational(headers);
}
function onStreamData(this: OwnedStream, chunk: Buffer): void {
  this[kRequest]!.data(chunk);
}
function onStreamTrailers(this: OwnedStream, trailers: http2.IncomingHttpHeaders): void {
  // Kept until 'end': DATA buffered while paused is still to be delivered.
  this[kRequest]!.trailers = withoutPseudo(trailers);
}
function onStreamEnd(this: OwnedStream): void {
  this[kRequest]!.ended();
}
function onStreamError(this: OwnedStream, err: Error): void {
  this[kRequest]!.fail(clientError('UND_ERR_SOCKET', `HTTP/2 stream to the pod failed: ${err.message}`));
}
function onStreamClose(this: OwnedStream): void {
  this[kRequest]!.closed();
}
function onStreamTimeout(this: OwnedStream): void {
  // Armed with setTimeout(bodyTimeout) once the response starts (not while paused).
  this[kRequest]!.fail(clientError('UND_ERR_BODY_TIMEOUT', 'body timeout'));
}
function onStreamDrain(this: OwnedStream): void {
  this[kRequest]!.body?.resume();
}
function onHeadersTimeout(request: Http2Request): void {
  request.fail(clientError('UND_ERR_HEADERS_TIMEOUT', 'headers timeout'));
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

/** One request: its stream, and the dispatch controller the handler holds. */
class Http2Request {
  private readonly handler: Dispatcher.DispatchHandler;
  private readonly options: Http2DispatchOptions;
  session: Session | undefined = undefined;
  private stream: OwnedStream | undefined = undefined;
  /** The request body being sent, while it is. */
  body: OwnedBody | undefined = undefined;
  private headersTimer: NodeJS.Timeout | undefined = undefined;
  trailers: Record<string, string | string[] | undefined> | undefined = undefined;
  private bodyTimeout = 0;
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
    this.stream.pause();
    // The pod cannot send while we do not read: the idle timer would fire for nothing.
    if (this.bodyTimeout > 0) this.stream.setTimeout(0);
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    const stream = this.stream;
    if (stream === undefined) return;
    if (this.bodyTimeout > 0 && !this.done) stream.setTimeout(this.bodyTimeout);
    stream.resume();
  }

  /** Opens the stream on a connected session and sends the request. */
  open(session: http2.ClientHttp2Session, pool: Http2Pool): void {
    this.opening = true;
    this.handler.onRequestStart?.(this, {});
    this.opening = false;
    if (this.aborted) {
      this.fail(this.reason!);
      return;
    }
    const options = this.options;
    const headers = h2Headers(options, pool);
    const body = options.body ?? null;
    let stream: OwnedStream;
    try {
      stream = session.request(headers, { endStream: body === null });
    } catch (err) {
      // node:http2 validates names and values (CR, LF, NUL, uppercase...): the request, not the pod, is at fault.
      this.fail(clientError('UND_ERR_INVALID_ARG', (err as Error).message));
      return;
    }
    this.stream = stream;
    stream[kRequest] = this;
    stream.on('response', onStreamResponse);
    stream.on('headers', onStreamInformational);
    stream.on('data', onStreamData);
    stream.on('trailers', onStreamTrailers);
    stream.on('end', onStreamEnd);
    stream.on('error', onStreamError);
    stream.on('close', onStreamClose);
    stream.on('timeout', onStreamTimeout);
    const headersTimeout = options.headersTimeout ?? 300_000;
    if (headersTimeout > 0) this.headersTimer = setTimeout(onHeadersTimeout, headersTimeout, this);
    this.bodyTimeout = options.bodyTimeout ?? 300_000;
    if (body !== null) this.sendBody(stream, body);
  }

  private sendBody(stream: OwnedStream, body: Readable | Buffer): void {
    if (Buffer.isBuffer(body)) {
      this.handler.onBodySent?.(body);
      // The handler may have given up on it (a body over the size limit).
      if (!this.done) stream.end(body);
      return;
    }
    const source = body as OwnedBody;
    this.body = source;
    source[kRequest] = this;
    source.on('data', onBodyData);
    source.once('end', onBodyEnd);
    source.once('error', onBodyError);
    stream.on('drain', onStreamDrain);
  }

  /** @internal a chunk of the request body */
  sendChunk(chunk: Buffer): void {
    if (this.done) return;
    this.handler.onBodySent?.(chunk);
    if (this.done) return;
    if (!this.stream!.write(chunk)) this.body!.pause();
  }

  /** @internal the request body is complete */
  bodyEnded(): void {
    this.detachBody();
    if (!this.done) this.stream!.end();
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

  /** @internal */
  response(headers: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader): void {
    if (this.done) return;
    clearTimeout(this.headersTimer);
    this.headersTimer = undefined;
    if (this.bodyTimeout > 0 && !this.paused) this.stream!.setTimeout(this.bodyTimeout);
    this.handler.onResponseStart?.(this, headers[':status'] ?? 502, withoutPseudo(headers), '');
  }

  /** @internal a 1xx head */
  informational(headers: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader): void {
    const status = headers[':status'];
    if (this.done || status === undefined || status >= 200) return;
    this.handler.onResponseStart?.(this, status, withoutPseudo(headers), '');
  }

  /** @internal */
  data(chunk: Buffer): void {
    if (this.done) return;
    this.handler.onResponseData?.(this, chunk);
  }

  /** @internal the response is complete */
  ended(): void {
    if (this.done) return;
    this.done = true;
    this.finish();
    this.handler.onResponseEnd?.(this, this.trailers ?? {});
  }

  /** @internal the stream closed */
  closed(): void {
    if (this.done) {
      this.finish();
      return;
    }
    const code = this.stream?.rstCode;
    this.fail(clientError('UND_ERR_SOCKET', code === undefined || code === 0 ? 'the pod closed the stream before the response ended' : `the pod reset the stream (HTTP/2 error code ${code})`));
  }

  /** Fails the request once: the stream is cancelled (RST_STREAM CANCEL reaches the pod). */
  fail(err: Error): void {
    if (this.done) return;
    this.done = true;
    this.finish();
    this.handler.onResponseError?.(this, err);
  }

  /**
   * Frees the stream's timers and, once the stream is closed, its place on the session.
   * Called when the request is done and again at the stream's 'close'.
   */
  private finish(): void {
    clearTimeout(this.headersTimer);
    this.headersTimer = undefined;
    this.detachBody();
    const stream = this.stream;
    if (stream !== undefined) {
      stream.setTimeout(0);
      // Unless both directions are complete, RST_STREAM CANCEL tells the pod to stop (a client's cancel reaches it).
      if (!stream.closed && !(stream.readableEnded && stream.writableEnded)) stream.close(NGHTTP2_CANCEL);
    }
    if (this.released || this.session === undefined) return;
    // A stream counts until it is closed (its 'close' calls finish again); a request that never opened one leaves the wait list.
    if (stream === undefined) {
      this.released = true;
      this.session.release(this, false);
    } else if (stream.closed) {
      this.released = true;
      this.session.release(this, true);
    }
  }
}

/** The request head for node:http2: pseudo-headers, lowercase names, no connection-specific fields. */
function h2Headers(options: Http2DispatchOptions, pool: Http2Pool): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {
    ':method': options.method,
    ':path': options.path,
    ':scheme': pool.tls === undefined ? 'http' : 'https',
  };
  let authority = '';
  const raw = options.headers;
  if (raw !== undefined && raw !== null) {
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toLowerCase();
      const value = raw[i + 1]!;
      if (name === 'host') {
        if (authority === '') authority = value;
        continue;
      }
      if (CONNECTION_SPECIFIC.has(name)) continue;
      // TE is allowed only as "trailers" (RFC 9113 section 8.2.2).
      if (name === 'te' && value.trim().toLowerCase() !== 'trailers') continue;
      const prev = out[name];
      if (prev === undefined) out[name] = value;
      else if (Array.isArray(prev)) prev.push(value);
      else out[name] = [prev as string, value];
    }
  }
  out[':authority'] = authority === '' ? pool.authority : authority;
  return out;
}

/** Response headers without :status (node:http2 puts it among them). */
function withoutPseudo(headers: http2.IncomingHttpHeaders): Record<string, string | string[] | undefined> {
  const out: Record<string, string | string[] | undefined> = {};
  for (const name in headers) {
    if (name.charCodeAt(0) !== 0x3a /* : */) out[name] = headers[name];
  }
  return out;
}
