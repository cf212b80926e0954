// The answer to one Http1Request, written straight to the client socket: the head is
// built once and goes out in the same write as the first body bytes. Framing follows
// RFC 9112: Content-Length when known, chunked for HTTP/1.1 otherwise, close-delimited
// for HTTP/1.0; no body for HEAD, 1xx, 204 and 304.
import type { Socket } from 'node:net';
import { isCleanValue, isNamed, isToken } from './header-chars.ts';
import type { Http1Request } from './request.ts';
import { headBytes } from './head-bytes.ts';
import { settle } from './turn-writes.ts';
import { ShapedEmitter } from '../util/shaped-emitter.ts';
import { kContext, kExchange, kRoute } from '../util/response-slots.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { STATUS_CODES } = process.getBuiltinModule('node:http');

/** What a response needs from its connection. */
export interface ResponseOwner {
  /** The response ended (all of it handed to the socket); `keepAlive`: the connection may serve another request. */
  responseDone(res: Http1Response, keepAlive: boolean): void;
  /** The connection is closing (draining, or the client asked): answer with Connection: close. */
  readonly closing: boolean;
}

export type HeaderValue = string | number | readonly string[];
/** A policy's header after a pod's lines (writeHeadFields): [name, value, "add" | "remove"?]. */
export type ExtraHeader = readonly [name: string, value: string, mode?: string];
/** Flat [name, value, ...] (the fast form), or an object as node:http takes it. */
export type HeaderInput = readonly (string | HeaderValue)[] | Readonly<Record<string, HeaderValue>>;

function flatHeaders(input: HeaderInput | undefined): readonly (string | HeaderValue)[] | undefined {
  if (input === undefined || Array.isArray(input)) return input as readonly (string | HeaderValue)[] | undefined;
  const flat: (string | HeaderValue)[] = [];
  for (const name in input) flat.push(name, (input as Record<string, HeaderValue>)[name]!);
  return flat;
}

const CRLF = '\r\n';

/** Bodies up to this size are copied behind the head, so the answer is one write. */
const COPY_LIMIT = 16 * 1024;

const LAST_CHUNK = '0\r\n\r\n';

// The Date header, rendered at most once a second.
let dateText = '';
let dateSecond = -1;
function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(now).toUTCString();
  }
  return dateText;
}

// "HTTP/1.1 200 OK\r\n" and the like, made once per status code.
const statusLines: string[] = [];
function statusLine(status: number): string {
  return (statusLines[status] ??= `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n`);
}

function bodyForbidden(method: string, status: number): boolean {
  return method === 'HEAD' || status === 204 || status === 304 || (status >= 100 && status < 200);
}


export class Http1Response extends ShapedEmitter {
  readonly req: Http1Request;
  readonly socket: Socket;
  statusCode = 200;
  statusMessage = '';
  /** Set false to close the connection after this response. */
  shouldKeepAlive = true;
  /** writeHead was called (the head goes out with the first body bytes). */
  headersSent = false;
  /** end() was called. */
  writableEnded = false;
  /** Everything was handed to the socket. */
  writableFinished = false;
  /** The connection died (or destroy() was called) before the response ended. */
  destroyed = false;
  /**
   * The caller vouches that every name given to writeHead is a token and every value
   * clean (header-chars.ts), as llhttp guarantees for a head it parsed: the
   * per-character checks are skipped. Values must still be strings or numbers.
   */
  headersChecked = false;
  /** Filled by the proxy layer (response-slots.ts). */
  [kContext]: unknown = undefined;
  [kRoute]: unknown = undefined;
  [kExchange]: unknown = undefined;
  private readonly owner: ResponseOwner;
  private headerList: readonly (string | HeaderValue)[] | undefined = undefined;
  /** Header lines as bytes, in place of headerList (writeHeadFields). */
  private headFields: Buffer | null = null;
  private headFieldsDate = false;
  private headFieldsExtra: readonly ExtraHeader[] | undefined = undefined;
  /** The head is built but not written yet (it goes out with the first body bytes). */
  private headPending = false;
  private chunked = false;
  private noBody = false;
  private keepAlive = true;
  private closed = false;

  constructor(owner: ResponseOwner, req: Http1Request, socket: Socket) {
    super();
    this.owner = owner;
    this.req = req;
    this.socket = socket;
  }

  /**
   * Sets the status and headers (flat [name, value, ...]; a value may be an array for
   * repeated headers). They are written with the first body bytes, or by end().
   */
  writeHead(status: number, reasonOrHeaders?: string | HeaderInput, headers?: HeaderInput): this {
    if (this.headersSent) throw new Error('response headers were already sent');
    this.headersSent = true;
    this.statusCode = status;
    if (typeof reasonOrHeaders === 'string') {
      this.statusMessage = reasonOrHeaders;
      this.headerList = flatHeaders(headers);
    } else {
      this.headerList = flatHeaders(reasonOrHeaders);
    }
    this.headPending = true;
    return this;
  }

  /**
   * Sets the status and headers as bytes: `fields` are header lines, each with its CRLF,
   * that can be written as they are, among them one Content-Length and no hop-by-hop
   * header (a pod's plain head, src/http1/response-head.ts). `hasDate`: one is a Date.
   * `extra`: headers written after them (but those marked "remove"), none of them a Date,
   * Connection or framing header (src/proxy/headers.ts policyFitsLines).
   */
  writeHeadFields(status: number, reason: string, fields: Buffer, hasDate: boolean, extra?: readonly ExtraHeader[]): this {
    if (this.headersSent) throw new Error('response headers were already sent');
    this.headersSent = true;
    this.statusCode = status;
    this.statusMessage = reason;
    this.headFields = fields;
    this.headFieldsDate = hasDate;
    this.headFieldsExtra = extra;
    this.headPending = true;
    return this;
  }

  /** A 103 Early Hints interim response (HTTP/1.1 clients only). */
  writeEarlyHints(hints: Record<string, string | readonly string[]>): void {
    if (this.headersSent || this.destroyed || this.req.httpVersionMinor === 0) return;
    let head = 'HTTP/1.1 103 Early Hints\r\n';
    for (const name in hints) {
      if (!isToken(name)) continue;
      const value = hints[name]!;
      for (const v of typeof value === 'string' ? [value] : value) if (isCleanValue(v)) head += `${name}: ${v}\r\n`;
    }
    settle(this.socket);
    this.socket.write(head + CRLF, 'latin1');
  }

  /**
   * Renders the head into `headBytes` (head-bytes.ts), to be sent or copied out before
   * anything else builds a head. `endLength` >= 0: the whole body is that one final
   * chunk, so it can be sent with a Content-Length instead of chunked.
   */
  private renderHead(endLength: number): void {
    const req = this.req;
    const status = this.statusCode;
    const list = this.headerList;
    const head = headBytes;
    head.begin();
    const reason = this.statusMessage;
    // A pod's reason phrase is most often the standard one: the status line made once serves.
    if (reason === '' || reason === STATUS_CODES[status] || !isCleanValue(reason)) head.latin1(statusLine(status));
    else head.latin1(`HTTP/1.1 ${status} ${reason}\r\n`);
    let hasLength = false;
    let hasDate = false;
    let closeAsked = false;
    const fields = this.headFields;
    if (fields !== null) {
      head.bytes(fields);
      hasLength = true;
      hasDate = this.headFieldsDate;
      const extra = this.headFieldsExtra;
      if (extra !== undefined) {
        for (let i = 0; i < extra.length; i++) {
          const entry = extra[i]!;
          if (entry[2] !== 'remove') head.field(entry[0], entry[1]);
        }
      }
    } else if (list !== undefined) {
      const check = !this.headersChecked;
      for (let i = 0; i + 1 < list.length; i += 2) {
        const name = String(list[i]);
        const value = list[i + 1]!;
        // A header that cannot be written as is is dropped, never allowed to split the head.
        if (check && !isToken(name)) continue;
        switch (name.length) {
          case 4:
            if (isNamed(name, 'date')) hasDate = true;
            break;
          case 10:
            if (isNamed(name, 'connection')) {
              // The connection's fate is decided here; only "close" is passed on.
              if (String(value).toLowerCase().includes('close')) closeAsked = true;
              continue;
            }
            break;
          case 14:
            if (isNamed(name, 'content-length')) hasLength = true;
            break;
          case 17:
            // Framing is this writer's job.
            if (isNamed(name, 'transfer-encoding')) continue;
            break;
        }
        if (typeof value === 'string') {
          if (!check || isCleanValue(value)) head.field(name, value);
        } else if (typeof value === 'number') {
          head.field(name, String(value));
        } else {
          for (let j = 0; j < value.length; j++) if (!check || isCleanValue(value[j]!)) head.field(name, value[j]!);
        }
      }
    }
    this.noBody = bodyForbidden(req.method, status);
    const http10 = req.httpVersionMinor === 0 && req.httpVersionMajor === 1;
    let keepAlive = this.shouldKeepAlive && req.keepAlive && !closeAsked && !this.owner.closing && !req.upgrade;
    // The whole answer goes out now (from end()) but the request body is not all in (a
    // 413, say): the connection closes after it, so say so.
    if (endLength >= 0 && !req.complete) keepAlive = false;
    if (!this.noBody && !hasLength) {
      if (endLength >= 0) {
        head.field('content-length', String(endLength));
      } else if (http10) {
        // HTTP/1.0 has no chunked encoding: the end of the body is the end of the connection.
        keepAlive = false;
      } else {
        this.chunked = true;
        head.latin1('transfer-encoding: chunked\r\n');
      }
    }
    if (!hasDate) head.field('date', httpDate());
    if (!keepAlive) head.latin1('connection: close\r\n');
    else if (http10) head.latin1('connection: keep-alive\r\n');
    this.keepAlive = keepAlive;
    head.crlf();
  }

  /** Writes a body chunk; false when the client is slow (wait for 'drain'). */
  write(chunk: Buffer | string): boolean {
    if (this.writableEnded || this.destroyed) return false;
    const socket = this.socket;
    if (!this.headersSent) this.writeHead(this.statusCode);
    if (this.headPending) {
      this.headPending = false;
      this.renderHead(-1);
      const head = headBytes;
      if (this.noBody || chunk.length === 0) return head.send(socket);
      if (!this.chunked && typeof chunk !== 'string' && chunk.length <= COPY_LIMIT) {
        head.bytes(chunk);
        return head.send(socket);
      }
      settle(socket);
      socket.cork();
      socket.write(head.copy());
      const ok = this.writeChunk(chunk);
      socket.uncork();
      return ok;
    }
    if (this.noBody || chunk.length === 0) return true;
    // An earlier write of this response (its head) may wait for the turn's end: it goes first.
    settle(socket);
    if (!this.chunked) return socket.write(chunk);
    socket.cork();
    const ok = this.writeChunk(chunk);
    socket.uncork();
    return ok;
  }

  private writeChunk(chunk: Buffer | string): boolean {
    const socket = this.socket;
    if (!this.chunked) return typeof chunk === 'string' ? socket.write(chunk, 'utf8') : socket.write(chunk);
    const length = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    socket.write(length.toString(16) + CRLF, 'latin1');
    if (typeof chunk === 'string') socket.write(chunk, 'utf8');
    else socket.write(chunk);
    return socket.write(CRLF, 'latin1');
  }

  /** Ends the response, with a last chunk if given. */
  /** HTTP/1.1 responses carry no trailers here (as before): see endWithTrailers. */
  trailersExpected = false;

  /** Trailers are dropped: portico does not send chunked trailers to HTTP/1.1 clients. */
  endWithTrailers(_trailers: Readonly<Record<string, string | string[] | undefined>>): void {
    this.end();
  }

  end(chunk?: Buffer | string): this {
    if (this.writableEnded || this.destroyed) return this;
    this.writableEnded = true;
    const socket = this.socket;
    const hasChunk = chunk !== undefined && chunk.length > 0;
    if (!this.headersSent) this.writeHead(this.statusCode);
    if (this.headPending) {
      this.headPending = false;
      const length = hasChunk ? (typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk!.length) : 0;
      this.renderHead(length);
      const head = headBytes;
      if (hasChunk && !this.noBody && typeof chunk !== 'string' && chunk!.length <= COPY_LIMIT) {
        head.bytes(chunk!);
        head.send(socket);
      } else if (hasChunk && !this.noBody) {
        settle(socket);
        socket.cork();
        socket.write(head.copy());
        if (typeof chunk === 'string') socket.write(chunk, 'utf8');
        else socket.write(chunk!);
        socket.uncork();
      } else {
        head.send(socket);
      }
    } else if (this.chunked) {
      settle(socket);
      socket.cork();
      if (hasChunk) this.writeChunk(chunk!);
      socket.write(LAST_CHUNK, 'latin1');
      socket.uncork();
    } else if (hasChunk && !this.noBody) {
      settle(socket);
      if (typeof chunk === 'string') socket.write(chunk, 'utf8');
      else socket.write(chunk!);
    }
    this.writableFinished = true;
    this.owner.responseDone(this, this.keepAlive);
    this.emitClose();
    return this;
  }

  /** Cuts the response (and the connection): the client sees it was not complete. */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    settle(this.socket);
    this.socket.destroy();
    this.emitClose();
  }

  /** The connection answers in this response's place (its request was malformed): what the handler still writes is dropped. */
  supersede(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.emitClose();
  }

  /** Called by the connection when its socket closed. */
  connectionClosed(): void {
    if (!this.writableEnded) this.destroyed = true;
    this.emitClose();
  }

  private emitClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.emit('close');
  }
}
