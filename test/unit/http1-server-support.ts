// Helpers for the tests of portico's own HTTP/1.1 server (src/http1/server.ts): run an
// Http1Server on 127.0.0.1:0 and talk to it over raw sockets, reading exactly the
// bytes it puts on the wire.
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import type { Http1Request } from '../../src/http1/request.ts';
import type { Http1Response } from '../../src/http1/response.ts';
import { createHttp1Listener, Http1Server, type Http1ServerOptions, type RequestHandler } from '../../src/http1/server.ts';

export interface Running {
  http1: Http1Server;
  listener: net.Server;
  port: number;
  close(): Promise<void>;
}

export const DEFAULT_OPTIONS: Http1ServerOptions = { headerTimeout: 10_000, requestTimeout: 60_000, idleTimeout: 30_000 };

export async function serve(handler: RequestHandler, options: Partial<Http1ServerOptions> = {}): Promise<Running> {
  const http1 = new Http1Server(handler, { ...DEFAULT_OPTIONS, ...options });
  const listener = createHttp1Listener(http1);
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const port = (listener.address() as AddressInfo).port;
  return {
    http1,
    listener,
    port,
    async close() {
      http1.destroyAll();
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}

/** Reads the whole request body as a Buffer. */
export async function readBody(req: Http1Request): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req.body()) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A handler answering 200 with "<method> <url>" (Content-Length from end()). */
export function echoHandler(req: Http1Request, res: Http1Response): void {
  res.writeHead(200, ['content-type', 'text/plain']);
  res.end(`${req.method} ${req.url}`);
}

export interface ParsedResponse {
  status: number;
  reason: string;
  /** Header names lowercased, in order. */
  headers: [string, string][];
  head: string;
  body: Buffer;
  /** How the body was delimited. */
  framing: 'length' | 'chunked' | 'close' | 'none';
  /** The body as it was on the wire (chunk sizes included). */
  rawBody: Buffer;
}

export function header(res: ParsedResponse, name: string): string | undefined {
  return res.headers.find(([n]) => n === name)?.[1];
}

export function headerCount(res: ParsedResponse, name: string): number {
  return res.headers.filter(([n]) => n === name).length;
}

const DEFAULT_WAIT = 5000;

/** A client on a raw socket: write exact bytes, read exact bytes. */
export class RawClient {
  readonly socket: net.Socket;
  /** Received and not consumed yet, in pieces (joined when read: no quadratic copying). */
  private parts: Buffer[] = [];
  private size = 0;
  /** The server ended its side (FIN). */
  ended = false;
  closed = false;
  error: Error | undefined = undefined;
  private waiters: (() => void)[] = [];

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (data: Buffer) => {
      this.parts.push(data);
      this.size += data.length;
      this.wake();
    });
    socket.on('end', () => {
      this.ended = true;
      this.wake();
    });
    socket.on('error', (err) => {
      this.error = err;
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  static async connect(port: number, options: { allowHalfOpen?: boolean } = {}): Promise<RawClient> {
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: options.allowHalfOpen ?? true });
    await once(socket, 'connect');
    return new RawClient(socket);
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** Everything received and not consumed yet. */
  get pending(): Buffer {
    return this.buffer;
  }

  private get buffer(): Buffer {
    if (this.parts.length !== 1) this.parts = [Buffer.concat(this.parts, this.size)];
    return this.parts[0]!;
  }

  private set buffer(rest: Buffer) {
    this.parts = [rest];
    this.size = rest.length;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Waits until `ready()` is true (checked on every socket event and every 10 ms), or fails after `ms`. */
  async until(ready: () => boolean, what: string, ms = DEFAULT_WAIT): Promise<void> {
    const deadline = Date.now() + ms;
    while (!ready()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; received so far: ${JSON.stringify(this.buffer.toString('latin1').slice(0, 500))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 10));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Takes exactly `n` bytes. */
  async readBytes(n: number, ms = DEFAULT_WAIT): Promise<Buffer> {
    await this.until(() => this.size >= n || this.ended || this.closed, `${n} bytes`, ms);
    if (this.buffer.length < n) throw new Error(`connection ended after ${this.buffer.length} of ${n} bytes`);
    const out = this.buffer.subarray(0, n);
    this.buffer = this.buffer.subarray(n);
    return out;
  }

  /** Takes bytes up to and including `marker`. */
  async readUntil(marker: string, ms = DEFAULT_WAIT): Promise<Buffer> {
    await this.until(() => this.buffer.includes(marker, 0, 'latin1') || this.ended || this.closed, JSON.stringify(marker), ms);
    const at = this.buffer.indexOf(marker, 0, 'latin1');
    if (at < 0) throw new Error(`connection ended before ${JSON.stringify(marker)}; received: ${JSON.stringify(this.buffer.toString('latin1'))}`);
    const out = this.buffer.subarray(0, at + marker.length);
    this.buffer = this.buffer.subarray(at + marker.length);
    return out;
  }

  /** Takes everything until the server closes its side. */
  async readToEnd(ms = DEFAULT_WAIT): Promise<Buffer> {
    await this.until(() => this.ended || this.closed, 'the end of the connection', ms);
    const out = this.buffer;
    this.buffer = Buffer.alloc(0);
    return out;
  }

  /** The server ended or closed the connection (resolves false if it did not within `ms`). */
  async waitEnd(ms = DEFAULT_WAIT): Promise<boolean> {
    try {
      await this.until(() => this.ended || this.closed, 'the end of the connection', ms);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Reads one response, framed as RFC 9112 section 6.3 says: no body for HEAD / 1xx /
   * 204 / 304, else chunked, Content-Length, or until the connection ends.
   */
  async readResponse(options: { head?: boolean; ms?: number } = {}): Promise<ParsedResponse> {
    const ms = options.ms ?? DEFAULT_WAIT;
    const head = (await this.readUntil('\r\n\r\n', ms)).toString('latin1');
    const lines = head.slice(0, -4).split('\r\n');
    const m = /^HTTP\/1\.1 (\d{3}) (.*)$/.exec(lines[0]!);
    if (!m) throw new Error(`bad status line ${JSON.stringify(lines[0])}`);
    const status = Number(m[1]);
    const headers: [string, string][] = [];
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon <= 0) throw new Error(`bad header line ${JSON.stringify(line)}`);
      headers.push([line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()]);
    }
    const res: ParsedResponse = { status, reason: m[2]!, headers, head, body: Buffer.alloc(0), framing: 'none', rawBody: Buffer.alloc(0) };
    if (options.head || (status >= 100 && status < 200) || status === 204 || status === 304) return res;
    const te = header(res, 'transfer-encoding');
    const cl = header(res, 'content-length');
    if (te !== undefined) {
      if (te.toLowerCase() !== 'chunked') throw new Error(`unexpected transfer-encoding ${te}`);
      if (cl !== undefined) throw new Error('both transfer-encoding and content-length in a response');
      res.framing = 'chunked';
      const raw: Buffer[] = [];
      const body: Buffer[] = [];
      for (;;) {
        const sizeLine = await this.readUntil('\r\n', ms);
        raw.push(sizeLine);
        const size = sizeLine.toString('latin1').slice(0, -2);
        if (!/^[0-9a-f]+$/i.test(size)) throw new Error(`bad chunk size line ${JSON.stringify(size)}`);
        const n = parseInt(size, 16);
        if (n === 0) {
          const trailer = await this.readUntil('\r\n', ms);
          raw.push(trailer);
          if (trailer.length !== 2) throw new Error(`unexpected trailer ${JSON.stringify(trailer.toString())}`);
          break;
        }
        const data = await this.readBytes(n, ms);
        const crlf = await this.readBytes(2, ms);
        if (crlf.toString('latin1') !== '\r\n') throw new Error('chunk data not followed by CRLF');
        raw.push(data, crlf);
        body.push(data);
      }
      res.body = Buffer.concat(body);
      res.rawBody = Buffer.concat(raw);
    } else if (cl !== undefined) {
      res.framing = 'length';
      res.body = res.rawBody = await this.readBytes(Number(cl), ms);
    } else {
      res.framing = 'close';
      res.body = res.rawBody = await this.readToEnd(ms);
    }
    return res;
  }

  end(data?: string | Buffer): void {
    if (data === undefined) this.socket.end();
    else this.socket.end(data);
  }

  destroy(): void {
    this.socket.destroy();
  }
}

export function get(path: string, extra = ''): string {
  return `GET ${path} HTTP/1.1\r\nHost: test\r\n${extra}\r\n`;
}

export function post(path: string, body: string, extra = ''): string {
  return `POST ${path} HTTP/1.1\r\nHost: test\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
