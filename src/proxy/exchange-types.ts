// What the proxy (handler, policies, forwarder) uses of a request and its response,
// whichever front end received it: src/http1 (Http1Request/Http1Response satisfy these
// unchanged) or src/http2 (adapters over a stream of portico's HTTP/2 engine). Keep it this small: each
// member here is one more thing every front end has to provide.
import type { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import type { HeaderInput } from '../http1/response.ts';

export interface ProxyRequest {
  readonly method: string;
  /** The request target: origin form ("/path?q"), or absolute form from HTTP/1.1 proxies. */
  readonly url: string;
  /**
   * Flat [name, value, ...], Host included (from :authority in HTTP/2), no pseudo-headers.
   * A body without Content-Length is announced by Transfer-Encoding (chunked upstream).
   */
  readonly rawHeaders: string[];
  /** The client connection (TCP or TLS): addresses, PROXY protocol source, upgrade tunnels. */
  readonly socket: Socket;
  /** An HTTP/1.1 upgrade request (never in HTTP/2). */
  readonly upgrade: boolean;
  /** Bytes that came after an upgrade request's head. */
  readonly upgradeHead: Buffer | undefined;
  /** The body as a stream, with back-pressure to the client. */
  body(): Readable;
  /**
   * The whole body as one Buffer when all of it has arrived already and none was read
   * (an HTTP/2 request whose DATA and END_STREAM came with its head: a gRPC unary call);
   * undefined otherwise, and then body() is the way. Optional: HTTP/1.1 streams always.
   */
  receivedBody?(): Buffer | undefined;
}

/** Emits 'drain' (write may go on) and 'close' (ended, or cut) once. */
export interface ProxyResponse extends EventEmitter {
  readonly req: ProxyRequest;
  statusCode: number;
  /** HTTP/1.1: close the connection after this response; meaningless in HTTP/2. */
  shouldKeepAlive: boolean;
  /** The caller vouches that header names are tokens and values clean (header-chars.ts). */
  headersChecked: boolean;
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  readonly writableFinished: boolean;
  readonly destroyed: boolean;
  writeHead(status: number, reasonOrHeaders?: string | HeaderInput, headers?: HeaderInput): this;
  /**
   * Status and headers as header lines in bytes, each with its CRLF, to be written as they
   * are (an HTTP/1.1 pod's plain head: src/http1/response-head.ts). Only where the client
   * speaks HTTP/1.1 too; elsewhere the caller passes pairs to writeHead. `extra`: a
   * policy's headers, after them (see policyFitsLines in headers.ts).
   */
  writeHeadFields?(status: number, reason: string, fields: Buffer, hasDate: boolean, extra?: readonly (readonly [string, string, string?])[]): this;
  writeEarlyHints(hints: Record<string, string | readonly string[]>): void;
  /** False when the client is slow: wait for 'drain'. */
  write(chunk: Buffer | string): boolean;
  end(chunk?: Buffer | string): this;
  /**
   * Set before writeHead when the response will end with trailer fields (a gRPC answer):
   * HTTP/2 then keeps the stream open for them after the last DATA frame.
   */
  trailersExpected: boolean;
  /** Ends the response with these trailer fields (lowercase names); HTTP/1.1 drops them. */
  endWithTrailers(trailers: Readonly<Record<string, string | string[] | undefined>>): void;
  /** Cuts the response: the client sees it was not complete. */
  destroy(): void;
}
