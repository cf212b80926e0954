// A request as the HTTP/1.1 server parsed it: the head at once, the body (if any)
// as a Readable made on first use, fed by the connection with back-pressure.
import type { Socket } from 'node:net';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { Readable } = process.getBuiltinModule('node:stream');
type Readable = import('node:stream').Readable;

const EARLY_BODY_LIMIT = 64 * 1024;

/** What the request body needs from its connection: flow control and abort. */
export interface BodyFlow {
  /** The body's reader wants more: read from the socket again. */
  resumeBody(): void;
}

/** The body stream; reading it pulls from the client socket. */
class RequestBody extends Readable {
  private readonly flow: BodyFlow;

  constructor(flow: BodyFlow) {
    super({ highWaterMark: 64 * 1024 });
    this.flow = flow;
  }

  override _read(): void {
    this.flow.resumeBody();
  }
}

/** An answer the server gives itself: status, a short reason for metrics and logs, and the body. */
export interface Refusal {
  readonly status: number;
  readonly reason: string;
  readonly body: string;
}

export class Http1Request {
  readonly method: string;
  /** The request target as sent (origin form, or absolute form from proxies). */
  readonly url: string;
  /** Flat [name, value, ...] as sent. */
  readonly rawHeaders: string[];
  readonly httpVersionMajor: number;
  readonly httpVersionMinor: number;
  readonly socket: Socket;
  /** The client wants the connection kept open after this exchange. */
  readonly keepAlive: boolean;
  /** An upgrade request (Connection: upgrade + Upgrade); the connection is handed over. */
  readonly upgrade: boolean;
  /** Bytes that came after an upgrade request's head (the tunnel's first bytes). */
  upgradeHead: Buffer | undefined = undefined;
  /** Expect: 100-continue (answered when the request's turn comes). */
  expectsContinue = false;
  /**
   * Why the server answers this request itself instead of handing it over (no Host, too
   * many headers, an unsupported version or transfer coding...); see server.ts.
   */
  refusal: Refusal | undefined = undefined;
  /** The whole request, body included, has been received. */
  complete = false;
  /** The connection died before the request was complete. */
  aborted = false;
  private stream: RequestBody | undefined = undefined;
  /** Body bytes that arrived before anyone asked for the body. */
  private early: Buffer[] | undefined = undefined;
  private earlyBytes = 0;
  private readonly flow: BodyFlow;

  constructor(
    flow: BodyFlow,
    socket: Socket,
    method: string,
    url: string,
    rawHeaders: string[],
    versionMajor: number,
    versionMinor: number,
    keepAlive: boolean,
    upgrade: boolean,
  ) {
    this.flow = flow;
    this.socket = socket;
    this.method = method;
    this.url = url;
    this.rawHeaders = rawHeaders;
    this.httpVersionMajor = versionMajor;
    this.httpVersionMinor = versionMinor;
    this.keepAlive = keepAlive;
    this.upgrade = upgrade;
  }

  get httpVersion(): string {
    return `${this.httpVersionMajor}.${this.httpVersionMinor}`;
  }

  /** The first value of a header (name lowercase), or undefined. */
  header(lowerName: string): string | undefined {
    const raw = this.rawHeaders;
    const length = lowerName.length;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!;
      if (name.length === length && name.toLowerCase() === lowerName) return raw[i + 1];
    }
    return undefined;
  }

  /** The body as a stream (made on first call). Ends at once for a complete bodiless request. */
  body(): Readable {
    let stream = this.stream;
    if (stream === undefined) {
      stream = this.stream = new RequestBody(this.flow);
      const early = this.early;
      if (early !== undefined) {
        this.early = undefined;
        for (const chunk of early) stream.push(chunk);
      }
      if (this.complete) stream.push(null);
      else if (this.aborted) stream.destroy(abortedError());
    }
    return stream;
  }

  /** Called by the connection per body chunk; false: stop reading the socket for now. */
  pushBody(chunk: Buffer): boolean {
    const stream = this.stream;
    if (stream !== undefined) return stream.push(chunk);
    (this.early ??= []).push(chunk);
    // Nobody reads yet: hold at most this much, the rest waits in the socket.
    this.earlyBytes += chunk.length;
    return this.earlyBytes < EARLY_BODY_LIMIT;
  }

  /** Called by the connection at the end of the message. */
  endBody(): void {
    // A bodiless request is complete from its head on (and its stream ended at creation).
    if (this.complete) return;
    this.complete = true;
    this.stream?.push(null);
  }

  /** Called by the connection when it died mid-request. */
  abort(): void {
    if (this.complete || this.aborted) return;
    this.aborted = true;
    this.stream?.destroy(abortedError());
  }
}

function abortedError(): Error {
  return Object.assign(new Error('the client closed the connection before the request body was complete'), { code: 'ECONNRESET' });
}
