// One keep-alive connection of the HTTP/1.1 client to a pod: a socket (TCP or TLS),
// one native response parser for its whole life, and at most one request at a time.
// Every event handler is a module-level function that finds its connection through
// the socket (or parser, or body stream), so a request costs no closure; the timers
// are per connection and re-armed with refresh(), so a request costs no timer either.
import type { Readable } from 'node:stream';
import {
  attachParser,
  disposeParser,
  HTTPParser,
  kOnBody,
  kOnHeaders,
  kOnHeadersComplete,
  kOnMessageComplete,
  LENIENT_NONE,
  pauseInput,
  RESPONSE,
  resumeInput,
  type LlhttpParser,
  type ParserError,
} from './parser.ts';
import { type ClientRequest, DONE, Http1ClientError, parseLength, QUEUED, RUNNING, socketError, STARTING, type RequestConnection } from './client-request.ts';
import type { Socket } from 'node:net';
import { PrefixViews } from '../util/prefix-views.ts';
import { headerRecord, type HeaderRecord } from './header-record.ts';
import { isNamed } from './header-chars.ts';
import { keepAliveHint, plainFields, plainHead, plainReason, readPlainHead } from './response-head.ts';
import { settle } from './turn-writes.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const net = process.getBuiltinModule('node:net');
const tls = process.getBuiltinModule('node:tls');

/** What a connection needs from its pool. */
export interface ConnectionPool {
  readonly host: string;
  readonly port: number;
  readonly connectTimeout: number;
  readonly keepAliveTimeout: number;
  readonly tls: { ca?: string; rejectUnauthorized: boolean } | undefined;
  /** No more reuse: connections close once their request is done. */
  readonly closing: boolean;
  /** A connection whose request is done and that can take another. */
  release(conn: Connection): void;
  /** Takes a connection off the idle list (it is closing). */
  unidle(conn: Connection): void;
  /** The connection's socket closed. */
  removed(conn: Connection): void;
}

// Where a connection is.
const CONNECTING = 0;
/** In the pool's idle list. */
const IDLE = 1;
/** Running a request. */
const BUSY = 2;
/** Being destroyed, or closed: never used again. */
const CLOSED = 3;

// Where the response of the current request is.
/** No final (non-1xx) response head yet. */
const AWAITING = 0;
/** The final head is in; the body is arriving. */
const BODY = 1;
/** The message is complete; the request ends once the parser returns. */
const COMPLETE = 2;

// Timer kinds (the extra argument of the timers' callback).
const T_CONNECT = 0;
const T_HEADERS = 1;
const T_BODY = 2;
const T_IDLE = 3;

/** Longest delay setTimeout takes; longer ones would fire at once. */
const MAX_DELAY = 2_147_483_647;
/** 1xx heads one response may bring before the request fails (the HTTP/2 client's limit too). */
const MAX_INFORMATIONAL_HEADS = 8;
/** Keep-alive: timeout=N from a pod is trusted minus this margin (as undici does). */
const KEEP_ALIVE_MARGIN = 2_000;

/**
 * Where every read of a plain TCP connection to a pod lands (net's `onread`). One buffer
 * serves them all: each read is parsed, and its body bytes copied out, before the event
 * loop reads again, and nothing reads a TCP socket from inside those callbacks.
 */
const READ_BUFFER = Buffer.allocUnsafeSlow(64 * 1024);
/** Views of READ_BUFFER by read length (nothing keeps a read's view past its parse). */
const READ_VIEWS = new PrefixViews();
/** The end of a message head (llhttp takes no line ending but CRLF). */
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');

const EMPTY_CONTEXT = Object.freeze({});
const NO_TRAILERS = Object.freeze({});

const kConnection = Symbol('portico.http1.client.connection');
const kBodyRequest = Symbol('portico.http1.client.request');

type ConnSocket = Socket & { [kConnection]?: Connection | null };
type BodyStream = Readable & { [kBodyRequest]?: ClientRequest | null };
interface OwnedParser extends LlhttpParser {
  conn: Connection | null;
}

/** A response's record when the dispatcher asked for its raw pairs only (rawResponseHeaders). */
const NO_RECORD: HeaderRecord = Object.freeze(Object.create(null) as HeaderRecord);

/** The Keep-Alive header's value (repeated ones joined) of the head declaredLength() last read. */
let keepAliveValue: string | undefined;

/**
 * The body length a response head declares: its Content-Length, or -1 when the body ends
 * otherwise (chunked, at the close) or the head is one llhttp settles itself (several
 * lengths, a Transfer-Encoding beside one). Read from the pairs as the pod wrote them,
 * with the Keep-Alive header (keepAliveValue) on the way: no record is made for it.
 */
function declaredLength(raw: string[]): number {
  let length = '';
  let lengths = 0;
  let transferEncoding = false;
  keepAliveValue = undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    // Told apart by length and first letter before any comparison, as client-request.ts does.
    const first = name.charCodeAt(0) | 0x20;
    switch (name.length) {
      case 10:
        if (first === 0x6b /* k */ && isNamed(name, 'keep-alive')) keepAliveValue = keepAliveValue === undefined ? raw[i + 1]! : keepAliveValue + ',' + raw[i + 1]!;
        break;
      case 14:
        if (first === 0x63 /* c */ && isNamed(name, 'content-length')) {
          length = raw[i + 1]!;
          lengths++;
        }
        break;
      case 17:
        if (first === 0x74 /* t */ && isNamed(name, 'transfer-encoding')) transferEncoding = true;
        break;
    }
  }
  return lengths === 1 && !transferEncoding ? parseLength(length) : -1;
}

export class Connection implements RequestConnection {
  readonly pool: ConnectionPool;
  readonly socket: Socket;
  /** TLS server name the connection was made with ('' for plain TCP). */
  readonly servername: string;
  private parser: OwnedParser | null;
  state = CONNECTING;
  /** The request running (or waiting for the connection to be made). */
  request: ClientRequest | null;
  private response = AWAITING;
  /** A 1xx head was parsed: its message-complete is not the response's. */
  private informational = false;
  /** 1xx heads of the current request: each is passed on, so a pod may not send them without end. */
  private informationalHeads = 0;
  /** The response allows the connection to be reused. */
  private keepAlive = false;
  /** A second response followed the first in the same read: never reuse. */
  private stray = false;
  /** Header pairs of a head that came in pieces (over 32 headers). */
  private pendingHeaders: string[] | null = null;
  /** The body stream is paused until the socket drains. */
  private bodyWaitsDrain = false;
  /** The socket is paused for the handler (back-pressure). */
  private readPaused = false;
  private unrefed = false;
  /** Inside parser.execute() or finish(): the parser must not be freed now. */
  private executing = false;
  /** The parser reads the socket itself (attachParser); else 'data' is fed to it. */
  private attached = false;
  /** Reads land in READ_BUFFER and go through onRead (plain TCP). */
  private readonly ownReads: boolean;
  /**
   * parser[kOnBody] is set: llhttp hands over the body, a fresh ArrayBuffer per chunk.
   * Off for a response of known length read through onRead, whose body is copied out of
   * the read instead: an ArrayBuffer per response made each scavenge sweep about a
   * thousand of them, half its pause on a busy core.
   */
  private bodyCallback = true;
  /** The next read begins at the start of the response (onRead can find where its body starts). */
  private atMessageStart = true;
  /**
   * The response's head was plain and read here (response-head.ts), and so is its body:
   * llhttp sees none of this response, and stays at the start of a message.
   */
  private plainBody = false;
  /** Heads (1xx and final) completed in the read being parsed. */
  private headsInRead = 0;
  /** First socket error, reported when the socket closes. */
  private error: Error | null = null;
  /** ms an idle connection is kept: the pool's, or less if the pod says so. */
  private idleMs: number;
  private connectTimer: NodeJS.Timeout | null = null;
  private headersTimer: NodeJS.Timeout | null = null;
  private headersTimerMs = 0;
  private bodyTimer: NodeJS.Timeout | null = null;
  private bodyTimerMs = 0;
  private idleTimer: NodeJS.Timeout | null = null;
  private idleTimerMs = 0;
  /**
   * The body timer was started during the read being handled: starting it again in the
   * same read changes nothing (the loop's clock has not moved), so that is skipped.
   */
  private bodyArmedInRead = false;
  /**
   * The connection is idle and the body timer, started in the read that ended the
   * response and for as long as the idle timeout, stands for the idle timer: one timer
   * started per response instead of two.
   */
  private idleOnBodyTimer = false;
  /**
   * Body bytes still to come of a response of known length, counted here so that its end
   * needs no call from llhttp (one native-to-JS call less per response); -1 when llhttp
   * says where the body ends (kOnMessageComplete set, see callMessageComplete).
   */
  private bodyRemaining = -1;
  /** parser[kOnMessageComplete] is set. */
  private messageCompleteCalled = true;

  constructor(pool: ConnectionPool, request: ClientRequest) {
    this.pool = pool;
    this.request = request;
    this.servername = request.servername;
    this.idleMs = pool.keepAliveTimeout;
    const options = pool.tls;
    let socket: Socket;
    if (options !== undefined) {
      socket = tls.connect({
        host: pool.host,
        port: pool.port,
        servername: this.servername === '' ? undefined : this.servername,
        ca: options.ca,
        rejectUnauthorized: options.rejectUnauthorized,
        ALPNProtocols: ['http/1.1'],
      });
      socket.setKeepAlive(true, 60_000);
      socket.on('secureConnect', onSocketConnect);
    } else {
      socket = net.connect({
        host: pool.host,
        port: pool.port,
        noDelay: true,
        keepAlive: true,
        keepAliveInitialDelay: 60_000,
        onread: { buffer: READ_BUFFER, callback: onSocketRead },
      });
      socket.on('connect', onSocketConnect);
    }
    this.ownReads = options === undefined;
    socket.setNoDelay(true);
    (socket as ConnSocket)[kConnection] = this;
    if (!this.ownReads) socket.on('data', onSocketData);
    socket.on('end', onSocketEnd);
    socket.on('error', onSocketError);
    socket.on('close', onSocketClose);
    socket.on('drain', onSocketDrain);
    this.socket = socket;

    const parser = new HTTPParser() as OwnedParser;
    parser.initialize(RESPONSE, {}, 0, LENIENT_NONE);
    parser.conn = this;
    parser[kOnHeaders] = onParserHeaders;
    parser[kOnHeadersComplete] = onParserHeadersComplete;
    if (this.ownReads) this.bodyCallback = false;
    else parser[kOnBody] = onParserBody;
    parser[kOnMessageComplete] = onParserMessageComplete;
    this.parser = parser;

    if (pool.connectTimeout > 0) {
      this.connectTimer = setTimeout(onTimer, Math.min(pool.connectTimeout, MAX_DELAY), this, T_CONNECT);
      this.connectTimer.unref();
    }
  }

  // ---- requests ----

  onConnect(): void {
    if (this.state !== CONNECTING) return;
    if (this.connectTimer !== null) {
      clearTimeout(this.connectTimer);
      this.connectTimer = null;
    }
    if (this.parser !== null && !this.ownReads) this.attached = attachParser(this.parser, this.socket, onParserExecute);
    const request = this.request;
    this.request = null;
    this.state = BUSY;
    if (request !== null && request.state === QUEUED) {
      this.start(request);
      return;
    }
    if (request !== null) this.detachBody(request, false);
    this.done(true);
  }

  /** Runs `r` on this (connected, free) connection. */
  start(r: ClientRequest): void {
    this.state = BUSY;
    this.request = r;
    this.response = AWAITING;
    this.informational = false;
    this.informationalHeads = 0;
    this.stray = false;
    this.keepAlive = false;
    r.conn = this;
    r.state = STARTING;
    this.idleOnBodyTimer = false;
    if (this.ownReads) {
      // The last response ended with its last byte (else the connection is not reused).
      this.atMessageStart = true;
      this.plainBody = false;
      this.setBodyCallback(false);
    }
    if (this.unrefed) {
      this.unrefed = false;
      this.socket.ref();
    }
    r.handler.onRequestStart?.(r, EMPTY_CONTEXT);
    if (r.aborted || this.request !== r) {
      // Aborted before a byte was written: the connection is as good as before.
      if (this.request === r) {
        this.request = null;
        r.conn = null;
        r.state = DONE;
        this.detachBody(r, false);
        this.done(true);
        r.handler.onResponseError?.(r, r.reason!);
      }
      return;
    }
    r.state = RUNNING;
    if (r.headersTimeout > 0) this.armHeaders(r.headersTimeout);
    const socket = this.socket;
    const body = r.body;
    if (body === null) {
      r.sendHead(socket);
      this.requestSent(r);
      return;
    }
    if (Buffer.isBuffer(body)) {
      settle(socket);
      socket.cork();
      socket.write(r.ownHead());
      socket.write(body);
      socket.uncork();
      r.bodySent = body.length;
      r.handler.onBodySent?.(body);
      if (this.request === r) this.requestSent(r);
      return;
    }
    const stream = body as BodyStream;
    if (stream.destroyed) {
      this.abortRequest(r, stream.errored ?? bodyClosedError());
      return;
    }
    r.sendHead(socket);
    if (stream.readableEnded) {
      this.bodyEnded(r);
      return;
    }
    // 'error' has been watched since dispatch (watchBody).
    stream.on('data', onBodyData);
    stream.on('end', onBodyEnd);
    stream.on('close', onBodyClose);
    stream.resume();
  }

  bodyData(r: ClientRequest, chunk: Buffer | string): void {
    if (this.request !== r || r.sent) return;
    const data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const length = data.length;
    if (length === 0) return;
    const socket = this.socket;
    // The head may wait for the end of the turn it was sent in: it goes first.
    settle(socket);
    let flowing: boolean;
    if (r.chunked) {
      socket.cork();
      socket.write(length.toString(16) + '\r\n', 'latin1');
      socket.write(data);
      flowing = socket.write('\r\n', 'latin1');
      socket.uncork();
    } else {
      if (r.bodySent + length > r.contentLength) {
        this.abortRequest(r, lengthMismatch());
        return;
      }
      flowing = socket.write(data);
    }
    r.bodySent += length;
    if (!flowing) {
      this.bodyWaitsDrain = true;
      (r.body as Readable).pause();
    }
    // The response head is awaited from the end of the request: sending is progress.
    if (this.response === AWAITING && r.headersTimeout > 0) this.headersTimer?.refresh();
    r.handler.onBodySent?.(data);
  }

  bodyEnded(r: ClientRequest): void {
    if (this.request !== r || r.sent) return;
    if (!r.chunked && r.bodySent !== r.contentLength) {
      this.abortRequest(r, lengthMismatch());
      return;
    }
    this.detachBody(r, false);
    if (r.chunked) {
      settle(this.socket);
      this.socket.write('0\r\n\r\n', 'latin1');
    }
    if (this.response === AWAITING && r.headersTimeout > 0) this.headersTimer?.refresh();
    this.requestSent(r);
  }

  /** The body stream failed or closed before its end. */
  bodyFailed(r: ClientRequest, err: Error | null): void {
    if (this.request !== r || r.sent) return;
    this.abortRequest(r, err ?? bodyClosedError());
  }

  private requestSent(r: ClientRequest): void {
    r.sent = true;
    r.handler.onRequestSent?.();
  }

  private detachBody(r: ClientRequest, abandon: boolean): void {
    this.bodyWaitsDrain = false;
    unwatchBody(r, abandon);
  }

  onDrain(): void {
    if (!this.bodyWaitsDrain) return;
    this.bodyWaitsDrain = false;
    const r = this.request;
    if (r !== null && !r.sent) (r.body as Readable).resume();
  }

  // ---- DispatchController, through the request ----

  abortRequest(r: ClientRequest, reason: Error): void {
    if (this.request !== r) return;
    this.fail(reason);
  }

  pauseResponse(): void {
    if (this.readPaused) return;
    this.readPaused = true;
    pauseInput(this.socket, this.attached);
  }

  resumeResponse(): void {
    if (!this.readPaused) return;
    this.readPaused = false;
    resumeInput(this.socket, this.attached);
    // The body timer does not run out while the handler holds the response back.
    if (this.response === BODY && this.request !== null && this.request.bodyTimeout > 0) this.bodyTimer?.refresh();
  }

  // ---- ending a request ----

  /**
   * Fails the current request: the connection is destroyed first (so nothing can
   * reuse it), then the handler hears of it once.
   */
  fail(err: Error): void {
    const r = this.request;
    this.destroy();
    if (r === null) return;
    this.request = null;
    r.conn = null;
    if (r.state === DONE) {
      // Aborted while the connection was being made: the caller has heard already.
      this.detachBody(r, false);
      return;
    }
    const started = r.state === RUNNING;
    r.state = DONE;
    this.detachBody(r, started);
    r.handler.onResponseError?.(r, err);
  }

  /** The response is complete: the connection goes idle or closes, then the handler hears the end. */
  private finishResponse(reusable: boolean): void {
    const r = this.request!;
    this.request = null;
    r.conn = null;
    r.state = DONE;
    this.response = AWAITING;
    // A response that came before the whole request: the rest is not sent, and the
    // pod is still reading it, so the connection cannot take another request.
    const sent = r.sent;
    if (!sent) this.detachBody(r, true);
    this.done(reusable && sent && this.keepAlive && !this.stray && !r.closeAfter);
    r.handler.onResponseEnd?.(r, NO_TRAILERS);
  }

  /** The connection's request is over: keep it for the next, or close it. */
  private done(reuse: boolean): void {
    if (this.state === CLOSED) return;
    if (!reuse || this.pool.closing || this.idleMs <= 0) {
      this.destroy();
      return;
    }
    if (this.readPaused) {
      this.readPaused = false;
      resumeInput(this.socket, this.attached);
    }
    this.state = IDLE;
    if (this.bodyArmedInRead && this.bodyTimerMs === this.idleMs) {
      this.idleOnBodyTimer = true;
    } else {
      this.idleOnBodyTimer = false;
      this.armIdle(this.idleMs);
    }
    if (!this.unrefed) {
      this.unrefed = true;
      this.socket.unref();
    }
    this.pool.release(this);
  }

  /** Closes the connection now (it is taken off the idle list at once). */
  destroy(): void {
    if (this.state === CLOSED) return;
    if (this.state === IDLE) this.pool.unidle(this);
    this.state = CLOSED;
    settle(this.socket);
    this.socket.destroy();
  }

  // ---- response ----

  onData(data: Buffer): void {
    const parser = this.parser;
    if (this.state !== BUSY || parser === null || this.request === null) {
      // Bytes nobody asked for (an idle connection, or one being closed).
      this.destroy();
      return;
    }
    this.executing = true;
    const result = parser.execute(data);
    this.executing = false;
    this.executed(result);
  }

  /**
   * One read of a plain TCP connection, in READ_BUFFER. With no body callback, the body
   * bytes of a response of known length are found in the read (after the heads it
   * completed, or from its start once the head is in) and copied out, into Buffer's pool.
   */
  onRead(nread: number, buf: Buffer): void {
    const parser = this.parser;
    const r = this.request;
    if (this.state !== BUSY || parser === null || r === null) {
      this.destroy();
      return;
    }
    if (this.plainBody) {
      if (this.response === BODY) this.plainBodyBytes(buf, 0, nread);
      this.executed(nread);
      return;
    }
    // The pod's header lines go on as bytes, with no string made of them (responseHeadLines).
    if (this.atMessageStart && r.headLines && !r.isHead && r.state === RUNNING && readPlainHead(buf, nread)) {
      this.plainResponse(buf, nread, r);
      return;
    }
    const before = this.response;
    // Mid-head (a head in pieces, or after a 1xx): where the body starts is llhttp's to say.
    if (!this.bodyCallback && before !== BODY && !this.atMessageStart) this.setBodyCallback(true);
    this.headsInRead = 0;
    const data = buf === READ_BUFFER ? READ_VIEWS.get(READ_BUFFER, nread) : buf.subarray(0, nread);
    this.executing = true;
    const result = parser.execute(data);
    this.executing = false;
    if (!this.bodyCallback && this.request === r && (this.response === BODY || this.response === COMPLETE)) {
      const start = before === BODY ? 0 : bodyStart(data, this.headsInRead);
      if (start < 0) {
        this.fail(socketError('the response head could not be found in the bytes llhttp parsed'));
        return;
      }
      const bodyEnd = start + this.bodyRemaining;
      // Bytes after the response's end: the start of an answer nobody asked for, which llhttp
      // would hold as the start of the next one (a whole head there sets stray itself).
      if (typeof result === 'number' && nread > bodyEnd) this.stray = true;
      if (this.response === BODY) {
        const end = Math.min(typeof result === 'number' ? nread : result.bytesParsed, bodyEnd);
        if (end > start) this.body(copyOf(data, start, end));
      }
    }
    if (this.response === AWAITING) this.atMessageStart = false;
    this.executed(result);
  }

  /**
   * A read that begins with a plain final head (readPlainHead has just accepted it): what
   * headersComplete() and onRead do with llhttp's help, done here. Its body's length is
   * its Content-Length, and it has no hop-by-hop header but Connection: keep-alive and Keep-Alive.
   */
  private plainResponse(buf: Buffer, nread: number, r: ClientRequest): void {
    const head = plainHead;
    const status = head.status;
    const length = head.contentLength;
    const bodyAt = head.length;
    const reason = plainReason(buf);
    r.responseHeadFields = plainFields(buf);
    r.responseHeadHasDate = head.hasDate;
    this.atMessageStart = false;
    this.plainBody = true;
    this.response = BODY;
    // HTTP/1.1 without "Connection: close": reusable (a HEAD request never comes here),
    // unless the pod's Keep-Alive says it keeps the connection too briefly (as headersComplete).
    this.keepAlive = this.keepsFor(head.keepAliveMs);
    if (r.bodyTimeout > 0) {
      this.armBody(r.bodyTimeout);
      this.bodyArmedInRead = true;
    }
    this.bodyRemaining = length;
    r.handler.onResponseStart?.(r, status, NO_RECORD, reason);
    if (this.request === r && this.response === BODY) {
      if (length === 0) this.response = COMPLETE;
      this.plainBodyBytes(buf, bodyAt, nread);
    }
    this.executed(nread);
  }

  /** Body bytes [start, nread) of a read, of a response read here: past its length, they are a stray answer. */
  private plainBodyBytes(buf: Buffer, start: number, nread: number): void {
    let end = nread;
    if (end - start > this.bodyRemaining) {
      this.stray = true;
      end = start + this.bodyRemaining;
    }
    if (end > start) this.body(copyOf(buf, start, end));
  }

  /** After the parser went through one read (fed by onData, or reading the socket itself). */
  executed(result: number | ParserError): void {
    this.readDone(result);
    this.bodyArmedInRead = false;
  }

  private readDone(result: number | ParserError): void {
    if (this.state !== BUSY && this.state !== CLOSED) {
      // Bytes nobody asked for, on an idle connection.
      this.destroy();
      return;
    }
    if (this.request === null) return; // failed or aborted during the callbacks
    if (typeof result !== 'number') {
      if (this.response === COMPLETE) this.finishResponse(false);
      else this.fail(parseError(result));
      return;
    }
    if (this.response === COMPLETE) this.finishResponse(true);
  }

  collectHeaders(headers: string[]): void {
    // After the head, these are trailers: not passed on.
    if (this.response !== AWAITING) return;
    const pending = (this.pendingHeaders ??= []);
    for (let i = 0; i < headers.length; i++) pending.push(headers[i]!);
  }

  headersComplete(versionMajor: number, versionMinor: number, headers: string[] | undefined, statusCode: number, statusMessage: string, upgrade: boolean, keepAlive: boolean): number {
    const r = this.request;
    if (headers === undefined) {
      headers = this.pendingHeaders ?? [];
      this.pendingHeaders = null;
    }
    if (r === null || r.state !== RUNNING) return 1;
    if (this.response !== AWAITING) {
      // Another response after the complete one, in the same read.
      this.stray = true;
      return 1;
    }
    if (upgrade || statusCode === 101) {
      this.fail(socketError(`pod answered ${statusCode} to a request that asked for no upgrade`));
      return 1;
    }
    if (statusCode < 200) {
      if (++this.informationalHeads > MAX_INFORMATIONAL_HEADS) {
        this.fail(socketError(`pod sent more than ${MAX_INFORMATIONAL_HEADS} 1xx heads`));
        return 1;
      }
      this.informational = true;
      this.headsInRead++;
      // Its end is only known from llhttp.
      this.callMessageComplete(true);
      // 100 Continue is for the client itself (which does not wait for it); the others are passed on.
      if (statusCode !== 100) r.handler.onResponseStart?.(r, statusCode, headerRecord(headers), statusMessage);
      return 1;
    }
    this.response = BODY;
    this.headsInRead++;
    const declared = declaredLength(headers);
    // HTTP/1.0 answers are not reused even with keep-alive; nor is a connection after
    // HEAD (as undici: a pod that sends a body anyway would corrupt the next response).
    const reusable = keepAlive && versionMajor === 1 && versionMinor >= 1 && !r.isHead;
    const hinted = this.keepsFor(keepAliveValue === undefined ? -1 : keepAliveHint(keepAliveValue));
    this.keepAlive = reusable && hinted;
    if (r.bodyTimeout > 0) {
      this.armBody(r.bodyTimeout);
      this.bodyArmedInRead = true;
    }
    // No body after a head for HEAD, 204 or 304 (RFC 9112 6.3), whatever the head says.
    const length = r.isHead || statusCode === 204 || statusCode === 304 ? 0 : declared;
    this.bodyRemaining = length;
    this.callMessageComplete(length < 0);
    // Chunks, or a body to the close: only llhttp knows where their bytes are.
    if (length < 0) this.setBodyCallback(true);
    r.responseRawHeaders = headers;
    r.handler.onResponseStart?.(r, statusCode, r.recordHeaders ? headerRecord(headers) : NO_RECORD, statusMessage);
    if (length === 0 && this.request === r && this.response === BODY) this.response = COMPLETE;
    return r.isHead ? 1 : 0;
  }

  /**
   * Sets idleMs from the pool's keep-alive timeout and the pod's Keep-Alive timeout=N
   * (`hintMs`, -1 when none), trusted minus a margin; false when that leaves no time.
   */
  private keepsFor(hintMs: number): boolean {
    let idleMs = this.pool.keepAliveTimeout;
    let keeps = true;
    if (hintMs >= 0) {
      if (hintMs - KEEP_ALIVE_MARGIN <= 0) keeps = false;
      else if (hintMs - KEEP_ALIVE_MARGIN < idleMs) idleMs = hintMs - KEEP_ALIVE_MARGIN;
    }
    this.idleMs = idleMs;
    return keeps;
  }

  /** Whether llhttp calls messageComplete(): only for a response whose end this does not count. */
  private callMessageComplete(call: boolean): void {
    if (this.messageCompleteCalled === call || this.parser === null) return;
    this.messageCompleteCalled = call;
    this.parser[kOnMessageComplete] = call ? onParserMessageComplete : undefined;
  }

  private setBodyCallback(on: boolean): void {
    if (this.bodyCallback === on || this.parser === null) return;
    this.bodyCallback = on;
    this.parser[kOnBody] = on ? onParserBody : undefined;
  }

  body(chunk: Buffer): void {
    const r = this.request;
    if (r === null || this.response !== BODY) return;
    if (r.bodyTimeout > 0 && !this.bodyArmedInRead) {
      this.bodyTimer?.refresh();
      this.bodyArmedInRead = true;
    }
    r.handler.onResponseData?.(r, chunk);
    // The last byte of a counted body: complete, as llhttp would have said right after.
    if (this.bodyRemaining > 0 && (this.bodyRemaining -= chunk.length) <= 0 && this.request === r && this.response === BODY) this.response = COMPLETE;
  }

  messageComplete(): void {
    if (this.informational) {
      this.informational = false;
      return;
    }
    if (this.request === null || this.response !== BODY) return;
    this.response = COMPLETE;
  }

  onEnd(): void {
    const r = this.request;
    if (r === null || this.state !== BUSY) {
      this.destroy();
      return;
    }
    if (this.response === BODY && this.plainBody) {
      this.fail(socketError('the pod closed the connection in the middle of the response'));
      return;
    }
    if (this.response === BODY && this.parser !== null) {
      // A body delimited by the end of the connection ends here; any other is cut short.
      this.executing = true;
      this.parser.finish();
      this.executing = false;
      if (this.request !== r) return;
      if ((this.response as number) === COMPLETE) {
        this.finishResponse(false);
        return;
      }
      this.fail(socketError('the pod closed the connection in the middle of the response'));
      return;
    }
    this.fail(socketError('the pod closed the connection before answering'));
  }

  onError(err: Error): void {
    this.error ??= err;
  }

  onClose(): void {
    const wasIdle = this.state === IDLE;
    this.state = CLOSED;
    if (wasIdle) this.pool.unidle(this);
    (this.socket as ConnSocket)[kConnection] = null;
    if (this.connectTimer !== null) clearTimeout(this.connectTimer);
    if (this.headersTimer !== null) clearTimeout(this.headersTimer);
    if (this.bodyTimer !== null) clearTimeout(this.bodyTimer);
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.connectTimer = this.headersTimer = this.bodyTimer = this.idleTimer = null;
    const r = this.request;
    if (r !== null) {
      this.request = null;
      r.conn = null;
      if (r.state !== DONE) {
        const started = r.state === RUNNING;
        r.state = DONE;
        this.detachBody(r, started);
        r.handler.onResponseError?.(r, this.error ?? socketError('the connection to the pod closed'));
      } else {
        this.detachBody(r, false);
      }
    }
    if (!this.executing) this.freeParser();
    this.pool.removed(this);
  }

  private freeParser(): void {
    const parser = this.parser;
    if (parser === null) return;
    this.parser = null;
    parser.conn = null;
    if (this.attached) {
      this.attached = false;
      parser.unconsume();
    }
    disposeParser(parser);
  }

  // ---- timers: one of each kind per connection, refreshed, replaced only when the delay changes ----

  private armHeaders(ms: number): void {
    const timer = this.headersTimer;
    if (timer !== null && this.headersTimerMs === ms) {
      timer.refresh();
      return;
    }
    if (timer !== null) clearTimeout(timer);
    this.headersTimerMs = ms;
    this.headersTimer = newTimer(this, ms, T_HEADERS);
  }

  private armBody(ms: number): void {
    const timer = this.bodyTimer;
    if (timer !== null && this.bodyTimerMs === ms) {
      timer.refresh();
      return;
    }
    if (timer !== null) clearTimeout(timer);
    this.bodyTimerMs = ms;
    this.bodyTimer = newTimer(this, ms, T_BODY);
  }

  private armIdle(ms: number): void {
    const timer = this.idleTimer;
    if (timer !== null && this.idleTimerMs === ms) {
      timer.refresh();
      return;
    }
    if (timer !== null) clearTimeout(timer);
    this.idleTimerMs = ms;
    this.idleTimer = newTimer(this, ms, T_IDLE);
  }

  /** A timer ran out; it only counts if the connection is still in the phase it was armed for. */
  onTimer(kind: number): void {
    const r = this.request;
    switch (kind) {
      case T_CONNECT:
        if (this.state === CONNECTING) {
          const err = new Http1ClientError('UND_ERR_CONNECT_TIMEOUT', `connecting to ${this.pool.host}:${this.pool.port} timed out after ${this.pool.connectTimeout} ms`);
          if (r !== null && r.state === QUEUED) this.fail(err);
          else this.destroy();
        }
        return;
      case T_HEADERS:
        if (this.state === BUSY && r !== null && r.state === RUNNING && this.response === AWAITING && r.headersTimeout > 0) {
          this.fail(new Http1ClientError('UND_ERR_HEADERS_TIMEOUT', `no response head within ${r.headersTimeout} ms`));
        }
        return;
      case T_BODY:
        if (this.state === IDLE) {
          if (this.idleOnBodyTimer) this.destroy();
          return;
        }
        if (this.state === BUSY && r !== null && this.response === BODY && r.bodyTimeout > 0 && !this.readPaused) {
          this.fail(new Http1ClientError('UND_ERR_BODY_TIMEOUT', `no response body data for ${r.bodyTimeout} ms`));
        }
        return;
      case T_IDLE:
        // Stale when the body timer stands for it (see idleOnBodyTimer).
        if (this.state === IDLE && !this.idleOnBodyTimer) this.destroy();
        return;
    }
  }
}

function newTimer(conn: Connection, ms: number, kind: number): NodeJS.Timeout {
  const timer = setTimeout(onTimer, Math.min(ms, MAX_DELAY), conn, kind);
  timer.unref();
  return timer;
}

function lengthMismatch(): Http1ClientError {
  return new Http1ClientError('UND_ERR_REQ_CONTENT_LENGTH_MISMATCH', 'request body length does not match content-length header');
}

function bodyClosedError(): Http1ClientError {
  return new Http1ClientError('UND_ERR_ABORTED', 'the request body ended before it was complete');
}

/**
 * Where the body begins in a read that began at the start of a response and completed
 * `heads` heads (1xx ones, then the final one): after the last one's blank line. llhttp
 * skips blank lines before a head and takes no line ending but CRLF, and a head holds no
 * blank line, so each head ends at the first CRLF CRLF after its first byte. -1 if not.
 */
function bodyStart(data: Buffer, heads: number): number {
  let at = 0;
  for (let i = 0; i < heads; i++) {
    while (at < data.length && (data[at] === 0x0d || data[at] === 0x0a)) at++;
    const end = data.indexOf(HEAD_END, at);
    if (end === -1) return -1;
    at = end + HEAD_END.length;
  }
  return at;
}

/** Bytes of a read, copied out of READ_BUFFER (small ones into Buffer's shared pool). */
function copyOf(data: Buffer, start: number, end: number): Buffer {
  const out = Buffer.allocUnsafe(end - start);
  data.copy(out, 0, start, end);
  return out;
}

function parseError(err: ParserError): Http1ClientError {
  return new Http1ClientError(err.code || 'HPE_ERROR', `invalid response from the pod: ${err.reason ?? err.message}`);
}

// ---- event handlers (no closures: `this` leads to the connection) ----

function ignoreError(): void {}

const kIgnoresErrors = Symbol('portico.http1.client.ignoresErrors');

/**
 * Watches a Readable request body for errors from dispatch on (as undici does): one
 * while the connection is being made fails the request at once. Returns false, and
 * watches nothing, for a body that is already destroyed.
 */
export function watchBody(r: ClientRequest): boolean {
  const stream = r.body as BodyStream;
  if (stream.destroyed) return false;
  stream[kBodyRequest] = r;
  stream.on('error', onBodyError);
  return true;
}

/**
 * Stops reading a request body. With `abandon` (the request failed after it was
 * written, or the pod answered before the body was all sent) a body not at its end is
 * destroyed, as undici does. A body never read (the connection was still being made)
 * is left as it is, so the caller can send it elsewhere. Either way a later error of
 * it is swallowed: nobody else may be listening, and an unheard 'error' would crash
 * the process.
 */
function unwatchBody(r: ClientRequest, abandon: boolean): void {
  const body = r.body;
  if (body === null || Buffer.isBuffer(body)) return;
  const stream = body as BodyStream & { [kIgnoresErrors]?: boolean };
  if (stream[kBodyRequest] !== r) return;
  stream[kBodyRequest] = null;
  stream.removeListener('data', onBodyData);
  stream.removeListener('end', onBodyEnd);
  stream.removeListener('error', onBodyError);
  stream.removeListener('close', onBodyClose);
  if (stream.readableEnded) return;
  if (stream[kIgnoresErrors] !== true) {
    stream[kIgnoresErrors] = true;
    stream.on('error', ignoreError);
  }
  if (abandon) stream.destroy();
}

function onTimer(conn: Connection, kind: number): void {
  conn.onTimer(kind);
}

function onSocketConnect(this: ConnSocket): void {
  this[kConnection]?.onConnect();
}
function onSocketData(this: ConnSocket, data: Buffer): void {
  this[kConnection]?.onData(data);
}
function onSocketRead(this: ConnSocket, nread: number, buf: Uint8Array): boolean {
  const conn = this[kConnection];
  if (conn != null) conn.onRead(nread, buf as Buffer);
  else this.destroy();
  return true;
}
function onSocketEnd(this: ConnSocket): void {
  this[kConnection]?.onEnd();
}
function onSocketError(this: ConnSocket, err: Error): void {
  this[kConnection]?.onError(err);
}
function onSocketClose(this: ConnSocket): void {
  this[kConnection]?.onClose();
}
function onSocketDrain(this: ConnSocket): void {
  this[kConnection]?.onDrain();
}

function onParserHeaders(this: OwnedParser, headers: string[]): void {
  this.conn?.collectHeaders(headers);
}
function onParserHeadersComplete(
  this: OwnedParser,
  versionMajor: number,
  versionMinor: number,
  headers: string[] | undefined,
  _method: number,
  _url: string | undefined,
  statusCode: number,
  statusMessage: string,
  upgrade: boolean,
  keepAlive: boolean,
): number {
  const conn = this.conn;
  return conn === null ? 1 : conn.headersComplete(versionMajor, versionMinor, headers, statusCode, statusMessage, upgrade, keepAlive);
}
function onParserBody(this: OwnedParser, chunk: Buffer): void {
  this.conn?.body(chunk);
}
function onParserMessageComplete(this: OwnedParser): void {
  this.conn?.messageComplete();
}
function onParserExecute(this: OwnedParser, result: number | ParserError): void {
  this.conn?.executed(result);
}

function onBodyData(this: BodyStream, chunk: Buffer | string): void {
  const r = this[kBodyRequest];
  if (r != null) (r.conn as Connection | null)?.bodyData(r, chunk);
}
function onBodyEnd(this: BodyStream): void {
  const r = this[kBodyRequest];
  if (r != null) (r.conn as Connection | null)?.bodyEnded(r);
}
function onBodyError(this: BodyStream, err: Error): void {
  const r = this[kBodyRequest];
  if (r == null) return;
  if (r.state === QUEUED) {
    // Still connecting: nothing was sent, the request fails now.
    unwatchBody(r, false);
    r.abort(err);
    return;
  }
  (r.conn as Connection | null)?.bodyFailed(r, err);
}
function onBodyClose(this: BodyStream): void {
  const r = this[kBodyRequest];
  if (r != null) (r.conn as Connection | null)?.bodyFailed(r, null);
}
