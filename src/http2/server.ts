// Serves HTTP/2 on client connections handed over by the listeners (TLS with ALPN
// "h2", or plain connections that began with the h2c preface), through node:http2's
// core stream API (bench/h2-stream-cost.ts: about half the CPU and a third of the heap
// per stream of its compatibility API). Each stream becomes an Http2Request /
// Http2Response pair for the same handler the HTTP/1.1 server calls.
//
// Limits (RFC 9113; CVE-2023-44487 rapid reset, CVE-2024-27316 CONTINUATION flood):
// nghttp2 enforces MAX_CONCURRENT_STREAMS, the header list size (a stream error), the
// syntax of names and values, pseudo-headers, connection-specific headers and
// Content-Length against DATA; node:http2 bounds each session's memory and its rate
// of RST_STREAM frames (a GOAWAY ends the connection beyond it). See http2Limits.
import type * as http2 from 'node:http2';
import type { Http2Server, ServerHttp2Session, ServerHttp2Stream } from 'node:http2';
import { NGHTTP2_FLAG_END_STREAM, NGHTTP2_INTERNAL_ERROR, nodeHttp2 } from './node-http2.ts';
import type { Socket } from 'node:net';
import type { ProxyRequest, ProxyResponse } from '../proxy/exchange-types.ts';
import { http2Head, Http2Request } from './request.ts';
import { Http2Response, responseStreamClosed } from './response.ts';

export type Http2Handler = (req: ProxyRequest, res: ProxyResponse) => void;

export interface Http2FrontOptions {
  /** ms a connection without open streams is kept */
  idleTimeout: number;
  /** Header fields per request, pseudo-headers excluded, as for HTTP/1.1. */
  maxHeaders: number;
}

/** Settings and limits every HTTP/2 client connection gets. */
export const http2Limits = Object.freeze({
  /** Advertised; a stream beyond it is refused (RST_STREAM REFUSED_STREAM). */
  maxConcurrentStreams: 128,
  /** Advertised SETTINGS_MAX_HEADER_LIST_SIZE; a larger head is a stream error. */
  maxHeaderListSize: 32 * 1024,
  /** MB of buffered frames and header blocks per connection before new streams are refused. */
  maxSessionMemory: 10,
  /** RST_STREAM frames a client may send in a burst, and per second after it: beyond, GOAWAY. */
  streamResetBurst: 200,
  streamResetRate: 50,
  /** Invalid frames, and streams refused for the limits above, before the connection is closed. */
  maxSessionInvalidFrames: 100,
  maxSessionRejectedStreams: 100,
});

const kSocket = Symbol('portico.h2socket');
const kOpen = Symbol('portico.h2open');
type Session = ServerHttp2Session & { [kSocket]?: Socket; [kOpen]?: number };
const kSession = Symbol('portico.h2session');
type OwnedStream = ServerHttp2Stream & { [kSession]?: Session };

function ignore(): void {
  // Stream and session errors end in 'close'; there is nothing more to do with them.
}

export class Http2Front {
  private readonly handler: Http2Handler;
  private readonly options: Http2FrontOptions;
  /** Made on the first HTTP/2 connection (node:http2 is loaded then). */
  private server: Http2Server | undefined = undefined;
  private readonly sessions = new Set<Session>();
  /** The socket being handed to node:http2, for the 'session' event it emits at once. */
  private accepting: Socket | undefined = undefined;
  draining = false;
  /** Told about each request answered before routing (a malformed or unsupported head). */
  onRefused: ((reason: string, socket: Socket) => void) | undefined = undefined;

  constructor(handler: Http2Handler, options: Http2FrontOptions) {
    this.handler = handler;
    this.options = options;
    this.accept = this.accept.bind(this);
  }

  /** Starts an HTTP/2 session on a client connection (its unread bytes put back with unshift). */
  accept(socket: Socket): void {
    if (this.draining) {
      socket.destroy();
      return;
    }
    const server = this.serverFor();
    this.accepting = socket;
    server.emit('connection', socket);
    this.accepting = undefined;
  }

  private serverFor(): Http2Server {
    if (this.server !== undefined) return this.server;
    const server = nodeHttp2().createServer({
      settings: {
        maxConcurrentStreams: http2Limits.maxConcurrentStreams,
        maxHeaderListSize: http2Limits.maxHeaderListSize,
        enablePush: false,
      },
      // Pseudo-headers count too.
      maxHeaderListPairs: this.options.maxHeaders + 8,
      maxSessionMemory: http2Limits.maxSessionMemory,
      maxSessionInvalidFrames: http2Limits.maxSessionInvalidFrames,
      maxSessionRejectedStreams: http2Limits.maxSessionRejectedStreams,
      streamResetBurst: http2Limits.streamResetBurst,
      streamResetRate: http2Limits.streamResetRate,
    } as http2.ServerOptions);
    server.on('session', (session: Session) => this.opened(session));
    server.on('stream', (stream: ServerHttp2Stream, _headers: unknown, flags: number, rawHeaders: string[]) => this.onStream(stream, flags, rawHeaders));
    server.on('sessionError', ignore);
    return (this.server = server);
  }

  private opened(session: Session): void {
    session[kSocket] = this.accepting;
    session[kOpen] = 0;
    this.sessions.add(session);
    session.on('error', ignore);
    session.once('close', () => this.sessions.delete(session));
    session.setTimeout(this.options.idleTimeout, () => {
      // Idle means no stream open: a long response that is quiet for a while is not idle.
      if (session[kOpen] === 0) session.close();
    });
  }

  private onStream(stream: ServerHttp2Stream, flags: number, rawHeaders: string[]): void {
    stream.on('error', ignore);
    // 'stream' comes a tick after the frame: the connection may be gone by then.
    const session = stream.session as Session | undefined;
    const socket = session?.[kSocket];
    if (session === undefined || socket === undefined || stream.destroyed) return;
    const endStream = (flags & NGHTTP2_FLAG_END_STREAM) !== 0;
    const head = http2Head(rawHeaders, endStream);
    if (!('rawHeaders' in head)) {
      this.onRefused?.(head.reason, socket);
      refuse(stream, head.status, head.message);
      return;
    }
    session[kOpen]!++;
    (stream as OwnedStream)[kSession] = session;
    // 'close' comes once: on() spares the wrapper once() makes per stream. One listener
    // for the session's count and the response.
    stream.on('close', streamClosed);
    const req = new Http2Request(stream, socket, head);
    const res = new Http2Response(req, stream);
    // A head and DATA that came in one read are all checked by nghttp2 before the request
    // goes on (a Content-Length that disagrees resets the stream): wait for that read to end.
    if (endStream) this.handler(req, res);
    else setImmediate(dispatchChecked, this.handler, req, res);
  }

  /** Open client connections. */
  get size(): number {
    return this.sessions.size;
  }

  /** Stop taking streams: GOAWAY to every connection; each closes when its streams are done. */
  drain(): void {
    this.draining = true;
    for (const session of this.sessions) if (!session.closed) session.close();
  }

  /** Closes every connection, whatever it is doing. */
  destroyAll(): void {
    for (const session of this.sessions) session.destroy();
  }
}

function streamClosed(this: OwnedStream): void {
  const session = this[kSession];
  if (session !== undefined) session[kOpen]!--;
  responseStreamClosed(this);
}

function dispatchChecked(handler: Http2Handler, req: Http2Request, res: Http2Response): void {
  if (req.stream.destroyed || req.stream.closed) {
    res.streamClosed();
    return;
  }
  handler(req, res);
}

function refuse(stream: ServerHttp2Stream, status: number, message: string): void {
  if (stream.destroyed) return;
  const body = message + '\n';
  try {
    stream.respond({ ':status': status, 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
    stream.end(body);
  } catch {
    stream.close(NGHTTP2_INTERNAL_ERROR);
  }
}
