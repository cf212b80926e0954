// Serves HTTP/2 on client connections handed over by the listeners (TLS with ALPN
// "h2", or plain connections that began with the h2c preface), with portico's own
// engine (wire/: frames, HPACK, streams, flow control and limits, RFC 9113). node:http2
// made a Duplex, events and ticks per stream, which cost more than the proxying itself
// (bench/h2-stream-cost.ts). The client toward HTTP/2 pods (client.ts) is the same
// engine in the client role (wire/client-connection.ts).
// Each stream becomes an Http2Request / Http2Response pair for the same handler the
// HTTP/1.1 server calls. The limits are http2Limits (wire/limits.ts).
import type { Socket } from 'node:net';
import type { ProxyRequest, ProxyResponse } from '../proxy/exchange-types.ts';
import { H2Connection, type ConnectionHost } from './wire/connection.ts';
import { ErrorCode } from './wire/frames.ts';
import { HeaderBlock } from './wire/hpack.ts';
import { http2Limits } from './wire/limits.ts';
import type { H2Stream } from './wire/stream.ts';
import { http2Head, Http2Request } from './request.ts';
import { Http2Response } from './response.ts';

export { http2Limits } from './wire/limits.ts';

export type Http2Handler = (req: ProxyRequest, res: ProxyResponse) => void;

export interface Http2FrontOptions {
  /**
   * ms a connection without open streams is kept. 0: no keep-alive (as nginx
   * keepalive_timeout 0): GOAWAY once the streams open are done, and a connection waits
   * for its first stream at most firstStreamTimeout.
   */
  idleTimeout: number;
  /** With idleTimeout 0: ms a new connection may go without opening a stream (default 10 s). */
  firstStreamTimeout?: number;
  /** Header fields per request, pseudo-headers excluded, as for HTTP/1.1. */
  maxHeaders: number;
  /** ms a client has to acknowledge our SETTINGS (default http2Limits.settingsAckTimeout). */
  settingsTimeout?: number;
}

export class Http2Front implements ConnectionHost {
  private readonly handler: Http2Handler;
  private readonly options: Http2FrontOptions;
  private readonly connections = new Set<H2Connection>();
  /** Pseudo-headers count too. */
  readonly maxFields: number;
  draining = false;
  /** Told about each request answered before routing (a malformed or unsupported head). */
  onRefused: ((reason: string, socket: Socket) => void) | undefined = undefined;

  constructor(handler: Http2Handler, options: Http2FrontOptions) {
    this.handler = handler;
    this.options = options;
    this.maxFields = options.maxHeaders + 8;
    this.accept = this.accept.bind(this);
  }

  /** Starts HTTP/2 on a client connection (its unread bytes put back with unshift). */
  accept(socket: Socket): void {
    if (this.draining) {
      socket.destroy();
      return;
    }
    this.connections.add(new H2Connection(socket, this, this.options.idleTimeout, this.options.settingsTimeout ?? http2Limits.settingsAckTimeout, this.options.firstStreamTimeout ?? 10_000));
  }

  request(stream: H2Stream, fields: string[], endStream: boolean): void {
    const socket = stream.conn.socket;
    const head = http2Head(fields, endStream);
    if (!('rawHeaders' in head)) {
      this.onRefused?.(head.reason, socket);
      refuse(stream, head.status, head.message);
      return;
    }
    const req = new Http2Request(stream, socket, head);
    const res = new Http2Response(req, stream);
    stream.outbound = res;
    stream.attach(req);
    this.handler(req, res);
  }

  closed(conn: H2Connection): void {
    this.connections.delete(conn);
  }

  /** Open client connections. */
  get size(): number {
    return this.connections.size;
  }

  /** Stop taking streams: GOAWAY to every connection; each closes when its streams are done. */
  drain(): void {
    this.draining = true;
    for (const conn of this.connections) conn.goaway(ErrorCode.NO_ERROR);
  }

  /** Closes every connection, whatever it is doing. */
  destroyAll(): void {
    for (const conn of this.connections) conn.destroy();
  }
}

/** Answers a request refused before routing with a short text, and stops its body. */
function refuse(stream: H2Stream, status: number, message: string): void {
  const body = Buffer.from(message + '\n');
  const head = new HeaderBlock().status(status).add('content-type', 'text/plain; charset=utf-8').add('content-length', String(body.length)).add('cache-control', 'no-store');
  stream.sendHeaders(head, false);
  stream.sendData(body, true);
}
