// portico's HTTP/1.1 server: one Connection per client socket (plain TCP or TLS),
// driving Node's native parser directly and writing responses straight to the
// socket. It replaces node:http's server on the proxy listeners because that server's
// per-request objects cost more than the whole proxying (see src/http1/parser.ts).
//
// What it does, as node:http would: keep-alive, pipelining (answered in order),
// HTTP/1.0 clients, Expect: 100-continue, upgrade requests (handed over with the
// socket), 400/431 for bad requests, and the client timeouts: headers, whole request,
// idle keep-alive. One sweeper per server checks the timeouts, so no timer is
// armed per request.
import type { TLSSocket } from 'node:tls';
import {
  HTTPParser,
  kOnBody,
  kOnHeaders,
  kOnHeadersComplete,
  kOnMessageComplete,
  LENIENT_NONE,
  METHODS,
  REQUEST,
  attachParser,
  disposeParser,
  pauseInput,
  resumeInput,
  startReading,
  type LlhttpParser,
  type ParserError,
} from './parser.ts';
import { Http1Request, type BodyFlow, type Refusal } from './request.ts';
import { Http1Response, type ResponseOwner } from './response.ts';
import type { Server, Socket } from 'node:net';
import { settle } from './turn-writes.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const net = process.getBuiltinModule('node:net');

export type RequestHandler = (req: Http1Request, res: Http1Response) => void;

export interface Http1ServerOptions {
  /** ms from a request's first byte to the end of its headers */
  headerTimeout: number;
  /** ms from a request's first byte to the end of its body (0: no limit) */
  requestTimeout: number;
  /** ms a keep-alive connection may sit idle between requests (0: no keep-alive; each connection serves one request) */
  idleTimeout: number;
  /** Header lines kept per request; more are ignored (default 256). */
  maxHeaders?: number;
}

// Where a connection is, for the timeout sweeper.
/** Waiting for the first byte of a request. */
const IDLE = 0;
/** A request's head or body is being received. */
const RECEIVING = 1;
/** The request is in; the answer is being produced. */
const ANSWERING = 2;
/** Handed over to an upgrade tunnel (or closing): the sweeper leaves it alone. */
const DETACHED = 3;
/** Answered and closing while the client may still be sending: input is read and dropped. */
const LINGERING = 4;
type Phase = typeof IDLE | typeof RECEIVING | typeof ANSWERING | typeof DETACHED | typeof LINGERING;

/**
 * ms a closing connection keeps reading (and dropping) what the client still sends.
 * Closing a socket with unread input makes the kernel send a reset, which can destroy
 * the answer before the client reads it (RFC 9112 section 9.6; nginx's lingering_close).
 */
const LINGER_MS = 2_000;

/**
 * Pipelined requests held while an earlier one is answered before the socket stops
 * being read. Below it reading goes on, so a client that leaves (FIN, reset) is noticed
 * and the request in flight is cancelled.
 */
const PIPELINE_LIMIT = 32;

/**
 * Body bytes of an answered request that are read and dropped to keep the connection
 * (the pod answered before the client sent it all). Beyond that, the connection closes.
 */
const DISCARD_LIMIT = 1024 * 1024;

const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';

function rejectRequest(status: number, reason: string): string {
  return `HTTP/1.1 ${status} ${reason}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`;
}

/** Requests answered by the server itself, before any handler sees them. */
const refusal = (status: number, reason: string, body: string): Refusal => ({ status, reason, body: body + '\n' });
const BAD_HOST = refusal(400, 'bad_host', 'a request needs exactly one Host header');
const TOO_MANY_HEADERS = refusal(431, 'too_many_headers', 'too many header fields');
const NO_VERSION = refusal(400, 'no_http_version', 'the request line has no HTTP version');
const VERSION_NOT_SUPPORTED = refusal(505, 'http_version_not_supported', 'only HTTP/1.0 and HTTP/1.1 are served on this connection');
const TRANSFER_ENCODING_IN_HTTP10 = refusal(400, 'transfer_encoding_in_http10', 'Transfer-Encoding is not allowed in an HTTP/1.0 request');
const OTHER_TRANSFER_CODING_REFUSAL = refusal(501, 'unsupported_transfer_coding', 'transfer codings other than chunked are not supported');

/** Longest request line (method, target, version) before 414, as nginx's default large_client_header_buffers (8k). */
export const MAX_REQUEST_LINE = 8192;

/** A well-formed request line: method token, target, "HTTP/x.y", CRLF (RFC 9112 section 3). */
const REQUEST_LINE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+ [^ \r\n]+ HTTP\/(\d)\.\d\r$/;

/**
 * What a refused head says about itself, from the first line of the read being parsed:
 * whether the request line alone is over MAX_REQUEST_LINE (414 rather than 431), and the
 * major version of a request line that is well-formed (505 for one other than 1; a
 * garbage line stays 400).
 */
interface HeadShape {
  readonly lineTooLong: boolean;
  readonly wellFormedMajor: number | undefined;
}

/** Answers and reasons for requests llhttp refuses, by its error code. */
function parseErrorAnswer(code: string, head: HeadShape): { answer: string; reason: string } {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return head.lineTooLong
        ? { answer: rejectRequest(414, 'URI Too Long'), reason: 'uri_too_long' }
        : { answer: rejectRequest(431, 'Request Header Fields Too Large'), reason: 'header_overflow' };
    case 'HPE_INVALID_VERSION':
      if (head.wellFormedMajor !== undefined && head.wellFormedMajor !== 1) {
        return { answer: rejectRequest(505, 'HTTP Version Not Supported'), reason: 'http_version_not_supported' };
      }
      break;
    case 'HPE_INVALID_METHOD':
      // RFC 9110 section 9.1: a well-formed request with a method not implemented gets
      // 501 (llhttp knows a fixed set, the registered methods); garbage stays 400.
      if (head.wellFormedMajor !== undefined) return { answer: rejectRequest(501, 'Not Implemented'), reason: 'unknown_method' };
      break;
    case 'HPE_INVALID_CHUNK_SIZE':
      return { answer: rejectRequest(400, 'Bad Request'), reason: 'invalid_chunk' };
  }
  return { answer: rejectRequest(400, 'Bad Request'), reason: 'malformed_request' };
}
const EXPECTS_CONTINUE = 1;
const BAD_HOST_FLAG = 2;
const HAS_BODY = 4;
const BAD_TRANSFER_ENCODING = 8;
const OTHER_TRANSFER_CODING = 16;
const HAS_TRANSFER_ENCODING = 32;

/**
 * Transfer-Encoding, over all its header lines in order: BAD_TRANSFER_ENCODING when the
 * last coding is not chunked (llhttp refuses the request), OTHER_TRANSFER_CODING when
 * codings such as gzip come before it (the body cannot be passed on as it was sent).
 */
function inspectTransferEncoding(headers: string[], first: number): number {
  let last = '';
  let others = false;
  for (let i = first; i < headers.length; i += 2) {
    const name = headers[i]!;
    if (name.length !== 17 || name.toLowerCase() !== 'transfer-encoding') continue;
    for (const raw of headers[i + 1]!.split(',')) {
      const coding = raw.trim().toLowerCase();
      if (coding === '') continue;
      if (last !== '' && last !== 'chunked') others = true;
      if (coding !== 'chunked') others = true;
      last = coding;
    }
  }
  return last !== 'chunked' ? BAD_TRANSFER_ENCODING : others ? OTHER_TRANSFER_CODING : 0;
}

/** One pass over a request head for what the server itself must act on. */
function inspectHead(headers: string[], http11: boolean): number {
  let hosts = 0;
  let flags = 0;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    if (name.length === 4) {
      if (name === 'Host' || name === 'host' || name.toLowerCase() === 'host') hosts++;
    } else if (name.length === 6 && http11 && name.toLowerCase() === 'expect' && headers[i + 1]!.toLowerCase() === '100-continue') {
      flags |= EXPECTS_CONTINUE;
    } else if (name.length === 14 && headers[i + 1] !== '0' && name.toLowerCase() === 'content-length') {
      flags |= HAS_BODY;
    } else if (name.length === 17 && (flags & HAS_TRANSFER_ENCODING) === 0 && name.toLowerCase() === 'transfer-encoding') {
      flags |= HAS_BODY | HAS_TRANSFER_ENCODING | inspectTransferEncoding(headers, i);
    }
  }
  if (hosts > 1 || (hosts === 0 && http11)) flags |= BAD_HOST_FLAG;
  return flags;
}

/** The first `length` bytes of `data` are all CR or LF (RFC 9112 2.2: a server ignores blank lines before a request). */
function onlyLineBreaks(data: Buffer, length: number): boolean {
  for (let i = 0; i < length && i < data.length; i++) {
    const c = data[i];
    if (c !== 0x0d && c !== 0x0a) return false;
  }
  return true;
}

/** Connection callbacks run with `this` = the parser; the parser knows its connection. */
interface OwnedParser extends LlhttpParser {
  connection: Connection | null;
}

function onHeaders(this: OwnedParser, headers: string[], url: string): void {
  this.connection?.collectHeaders(headers, url);
}

function onHeadersComplete(
  this: OwnedParser,
  versionMajor: number,
  versionMinor: number,
  headers: string[] | undefined,
  method: number,
  url: string | undefined,
  _statusCode: number,
  _statusMessage: string,
  upgrade: boolean,
  keepAlive: boolean,
): number {
  this.connection?.headersComplete(versionMajor, versionMinor, headers, method, url, upgrade, keepAlive);
  return 0;
}

function onBody(this: OwnedParser, chunk: Buffer): void {
  this.connection?.bodyChunk(chunk);
}

function onMessageComplete(this: OwnedParser): void {
  this.connection?.messageComplete();
}

function onExecute(this: OwnedParser, result: number | ParserError): void {
  this.connection?.executed(result, null);
}

class Connection implements BodyFlow, ResponseOwner {
  readonly socket: Socket;
  private readonly server: Http1Server;
  private parser: OwnedParser | null;
  phase: Phase = IDLE;
  /** ms timestamp: when the current phase's clock started. */
  since: number;
  /** The request whose head or body is being received. */
  private receiving: Http1Request | null = null;
  /** The response being produced (requests are answered one at a time, in order). */
  private active: Http1Response | null = null;
  /** Pipelined requests waiting for `active` to finish. */
  private queue: Http1Response[] | undefined = undefined;
  /** An answered request whose body is still coming: it is read and dropped. */
  private discarding: Http1Request | null = null;
  private discarded = 0;
  /** Header pairs of a head that came in pieces (over 32 headers). */
  private pendingHeaders: string[] | undefined = undefined;
  private pendingUrl = '';
  /** The read being parsed, when it was fed (not read by the parser itself): for requestLineTooLong. */
  private lastData: Buffer | undefined = undefined;
  /** The head being received has more header fields than maxHeaders: it is refused (431). */
  private headerOverflow = false;
  /** The socket is paused for back-pressure (body reader) or pipelining. */
  private pausedForBody = false;
  private pausedForQueue = false;
  /** No more requests on this connection: close it after the current answer. */
  closing = false;
  /** The client half-closed: answer what was received, then close. */
  private peerEnded = false;
  /** Inside parser.execute(): the parser must not be freed now. */
  private executing = false;
  private closed = false;
  private upgradeTaken = false;
  /** A CONNECT (or an upgrade refused for its Host) was received: later bytes are not parsed (the parser is freed). */
  private inputDone = false;
  /** The parser reads the socket itself (attachParser); else 'data' is fed to it. */
  private attached = false;
  /** parser[kOnMessageComplete] is set (see callMessageComplete). */
  private messageCompleteCalled = true;
  /** Request heads completed, and whether a request's message ended, in the read being parsed (see readLeftIdle). */
  private headsInRead = 0;
  private messageEndedInRead = false;

  constructor(server: Http1Server, socket: Socket) {
    this.server = server;
    this.socket = socket;
    this.since = server.now;
    const parser = new HTTPParser() as OwnedParser;
    parser.initialize(REQUEST, {}, 0, LENIENT_NONE);
    parser.connection = this;
    parser[kOnHeaders] = onHeaders;
    parser[kOnHeadersComplete] = onHeadersComplete;
    parser[kOnBody] = onBody;
    parser[kOnMessageComplete] = onMessageComplete;
    this.parser = parser;
    this.attached = attachParser(parser, socket, onExecute);
    socket.setNoDelay(true);
    socket.on('data', onSocketData);
    socket.on('end', onSocketEnd);
    socket.on('error', onSocketError);
    socket.on('close', onSocketClose);
    socket.on('drain', onSocketDrain);
    (socket as ConnectionSocket)[kConnection] = this;
  }

  // ---- input ----

  onData(data: Buffer): void {
    const parser = this.parser;
    if (parser === null || this.phase === DETACHED || this.phase === LINGERING) return;
    this.executing = true;
    const result = parser.execute(data);
    this.executing = false;
    this.executed(result, data);
  }

  /**
   * After the parser went through one read: `data` is that read, or null when the
   * parser read the socket itself (it then has a copy of the read, for an upgrade).
   */
  executed(result: number | ParserError, data: Buffer | null): void {
    const parser = this.parser;
    if (this.phase === IDLE && parser !== null && typeof result === 'number') this.readLeftIdle(result, data);
    this.headsInRead = 0;
    this.messageEndedInRead = false;
    if (parser === null) return;
    if (this.closed) {
      this.freeParser();
      return;
    }
    if (typeof result !== 'number') {
      this.lastData = data ?? undefined;
      this.parseError(result);
      this.lastData = undefined;
      return;
    }
    if (this.inputDone) {
      this.freeParser();
      return;
    }
    const upgraded = this.receiving;
    if (upgraded !== null && upgraded.upgrade && (this.phase as Phase) !== DETACHED) this.handOver(upgraded, (data ?? parser.getCurrentBuffer()).subarray(result));
  }

  /** Whether llhttp calls messageComplete(): only requests with a body (and upgrades) need it. */
  private callMessageComplete(call: boolean): void {
    if (this.messageCompleteCalled === call) return;
    this.messageCompleteCalled = call;
    this.parser![kOnMessageComplete] = call ? onMessageComplete : undefined;
  }

  /**
   * After a read on an IDLE connection: when it brought the start of a request head, the
   * header timeout starts. llhttp could say so itself (kOnMessageBegin), but through a
   * native-to-JS call per request; this looks only at what the read left behind: still
   * IDLE, no head completed and no message ended in it, and more than blank lines (which
   * may precede a request and begin none). A read that also completed a request answered
   * at once may hold the start of the next head unseen: that connection keeps the idle
   * timeout, which bounds it as it bounds one that sends nothing.
   */
  private readLeftIdle(parsed: number, data: Buffer | null): void {
    if (parsed > 0 && this.headsInRead === 0 && !this.messageEndedInRead && !onlyLineBreaks(data ?? this.parser!.getCurrentBuffer(), parsed)) {
      this.phase = RECEIVING;
      this.since = this.server.now;
    }
  }

  collectHeaders(headers: string[], url: string): void {
    // During a body these are the trailers of a chunked request, which are not passed
    // on: kept, they became header lines of the next request on the connection.
    if (this.receiving !== null) return;
    const pending = (this.pendingHeaders ??= []);
    if (pending.length + headers.length <= this.server.maxHeaderFields) for (let i = 0; i < headers.length; i++) pending.push(headers[i]!);
    else this.headerOverflow = true;
    this.pendingUrl += url;
  }

  headersComplete(
    versionMajor: number,
    versionMinor: number,
    headers: string[] | undefined,
    method: number,
    url: string | undefined,
    upgrade: boolean,
    keepAlive: boolean,
  ): void {
    this.headsInRead++;
    if (headers === undefined) {
      headers = this.pendingHeaders ?? [];
      this.pendingHeaders = undefined;
    }
    // Closing: what the rest of this read holds is dropped, never served.
    if (this.phase === LINGERING) return;
    if (url === undefined) {
      url = this.pendingUrl;
      this.pendingUrl = '';
    }
    // Never a head with fields dropped: Content-Length or Transfer-Encoding could be among them.
    const overflow = this.headerOverflow || headers.length > this.server.maxHeaderFields;
    this.headerOverflow = false;
    if (overflow) headers.length = Math.min(headers.length, this.server.maxHeaderFields);
    const methodName = METHODS[method] ?? 'GET';
    const http11 = versionMajor === 1 && versionMinor >= 1;
    const flags = inspectHead(headers, http11);
    const refused = overflow
      ? TOO_MANY_HEADERS
      : versionMajor === 0
        ? NO_VERSION // "GET /" (HTTP/0.9)
        : versionMajor !== 1
          ? VERSION_NOT_SUPPORTED // "HTTP/2.0" in a request line
          : !http11 && (flags & HAS_TRANSFER_ENCODING) !== 0
            ? TRANSFER_ENCODING_IN_HTTP10 // RFC 9112 section 6.1: the framing is faulty
            : (flags & BAD_HOST_FLAG) !== 0
              ? BAD_HOST
              : (flags & OTHER_TRANSFER_CODING) !== 0
                ? OTHER_TRANSFER_CODING_REFUSAL
                : undefined;
    // CONNECT is no upgrade for a reverse proxy: it is answered (405) like any request.
    // A refused upgrade (a bad Host...) is answered like any request, not handed over.
    const isUpgrade = upgrade && methodName !== 'CONNECT' && refused === undefined;
    if (upgrade && !isUpgrade) {
      // What follows such a head is the client's tunnel data, never a request (llhttp
      // stops there and would parse the next packet as one): read no more, and close
      // after the answer, as node:http does for CONNECT.
      keepAlive = false;
      this.inputDone = true;
    }
    // --client-idle-timeout 0: no keep-alive (as nginx keepalive_timeout 0): one request per connection, answered with Connection: close.
    if (this.server.options.idleTimeout === 0) keepAlive = false;
    if ((flags & BAD_TRANSFER_ENCODING) !== 0 && refused === undefined) {
      // A request whose last transfer coding is not chunked has no knowable length: llhttp
      // fails it right after this callback (RFC 9112 6.3: 400, close), and parseError
      // answers. The handler must not see it first (it could have answered or proxied it).
      return;
    }
    const req = new Http1Request(this, this.socket, methodName, url, headers, versionMajor, versionMinor, keepAlive, isUpgrade);
    const res = new Http1Response(this, req, this.socket);
    if (isUpgrade) {
      this.receiving = req;
      this.callMessageComplete(true);
      // Dispatched once execute() returns, with the bytes after the head.
      this.pendingUpgrade = res;
      return;
    }
    req.expectsContinue = (flags & EXPECTS_CONTINUE) !== 0;
    req.refusal = refused;
    if ((flags & HAS_BODY) === 0) {
      // Without Content-Length or Transfer-Encoding a request has no body (RFC 9112 6.3):
      // it is complete with its head, so a handler answering at once keeps the connection
      // instead of closing it for an "unread body". What messageComplete() would do is
      // done here, and llhttp's message-complete, which follows at once, calls no JS.
      req.complete = true;
      this.callMessageComplete(false);
      if (this.phase === RECEIVING) {
        this.phase = this.active === null ? IDLE : ANSWERING;
        this.since = this.server.now;
      }
    } else {
      this.receiving = req;
      this.callMessageComplete(true);
      if (this.phase === IDLE) {
        // Its body is still to come, under the request timeout.
        this.phase = RECEIVING;
        this.since = this.server.now;
      }
    }
    if (this.active === null) {
      this.start(res);
    } else {
      const queue = (this.queue ??= []);
      queue.push(res);
      // Enough queued: stop reading until the earlier answers are out.
      if (queue.length >= PIPELINE_LIMIT && !this.pausedForQueue) {
        this.pausedForQueue = true;
        this.pauseInput();
      }
    }
  }

  private pendingUpgrade: Http1Response | null = null;
  /** Inside startQueued(): the next queued request to start, once the current start() returns. */
  private startingQueued = false;
  private nextQueued: Http1Response | null = null;

  bodyChunk(chunk: Buffer): void {
    const req = this.receiving;
    if (req === null) return;
    if (req === this.discarding) {
      this.discarded += chunk.length;
      if (this.discarded > DISCARD_LIMIT) {
        // Too much to drop: close, gently (the answer may still be on its way out).
        this.discarding = null;
        this.receiving = null;
        this.linger();
      }
      return;
    }
    if (!req.pushBody(chunk) && !this.pausedForBody) {
      this.pausedForBody = true;
      this.pauseInput();
    }
  }

  messageComplete(): void {
    this.messageEndedInRead = true;
    const req = this.receiving;
    if (req === null) return;
    if (req.upgrade) return;
    this.receiving = null;
    req.endBody();
    // A body stream that ended gets no more _read() calls: whatever paused the socket
    // for this body must not keep it paused for the next request.
    this.resumeBody();
    if (req === this.discarding) {
      // Its answer went out before; now the connection goes on.
      this.discarding = null;
      this.next();
      return;
    }
    if (this.phase === RECEIVING) {
      this.phase = this.active === null ? IDLE : ANSWERING;
      this.since = this.server.now;
    }
  }

  resumeBody(): void {
    if (this.pausedForBody) {
      this.pausedForBody = false;
      if (!this.pausedForQueue) this.resumeInput();
    }
  }

  private parseError(err: ParserError): void {
    const code = err.code;
    // Before the parser is freed: it holds the bytes of the read.
    const head = this.headShape();
    if (code === 'HPE_CLOSED_CONNECTION') {
      // Bytes after a request that closes the connection (Connection: close, HTTP/1.0):
      // no further request is served (RFC 9112 9.6), but that request's answer is still
      // owed, so ignore the rest instead of cutting the connection.
      this.closing = true;
      this.freeParser();
      return;
    }
    this.closing = true;
    const receiving = this.receiving;
    receiving?.abort();
    this.receiving = null;
    this.freeParser();
    this.phase = DETACHED;
    const active = this.active;
    if (active !== null) {
      if (active.req !== receiving || active.headersSent || (this.queue !== undefined && this.queue.length > 0)) {
        // Answers are still owed for earlier requests, or this one's started: cut the connection, no guessing.
        this.destroySocket();
        return;
      }
      // The request being answered turned out malformed mid-body (a bad chunk size)
      // before its answer started: the client gets 400 instead of a silent close.
      this.active = null;
      active.supersede();
    }
    const { answer, reason } = parseErrorAnswer(code, head);
    this.server.onClientError?.(err, this.socket);
    this.server.onRefused?.(reason, this.socket);
    this.writeNow(answer);
    this.linger();
  }

  /** See HeadShape: read from the read being parsed, which holds the head's start unless the client sent it in pieces. */
  private headShape(): HeadShape {
    let data: Buffer | undefined;
    try {
      data = this.lastData ?? this.parser?.getCurrentBuffer();
    } catch {
      data = undefined;
    }
    if (data === undefined) return { lineTooLong: false, wellFormedMajor: undefined };
    const end = data.indexOf(0x0a);
    const lineTooLong = end === -1 ? data.length > MAX_REQUEST_LINE : end > MAX_REQUEST_LINE;
    if (end === -1 || lineTooLong) return { lineTooLong, wellFormedMajor: undefined };
    const match = REQUEST_LINE.exec(data.toString('latin1', 0, end));
    return { lineTooLong, wellFormedMajor: match === null ? undefined : Number(match[1]) };
  }

  // ---- answering ----

  private start(res: Http1Response): void {
    this.active = res;
    const req = res.req;
    const refused = req.refusal;
    if (refused !== undefined) {
      res.shouldKeepAlive = false;
      this.server.onRefused?.(refused.reason, this.socket);
      res.writeHead(refused.status, ['content-type', 'text/plain; charset=utf-8', 'content-length', String(refused.body.length)]);
      res.end(refused.body);
      return;
    }
    // As node:http does: the client may send the body right away.
    if (req.expectsContinue && !req.complete) this.writeNow(CONTINUE);
    if (this.phase === IDLE) {
      this.phase = ANSWERING;
      this.since = this.server.now;
    }
    this.server.dispatch(res.req, res);
  }

  /**
   * Starts queued requests in a loop: a handler answering at once would otherwise start
   * the next one from inside its end(), one stack level per pipelined request, and a
   * few thousand tiny pipelined requests behind a slow one overflowed the stack.
   */
  private startQueued(res: Http1Response): void {
    if (this.startingQueued) {
      this.nextQueued = res;
      return;
    }
    this.startingQueued = true;
    try {
      let next: Http1Response | null = res;
      while (next !== null) {
        this.nextQueued = null;
        this.start(next);
        next = this.nextQueued;
      }
    } finally {
      this.startingQueued = false;
    }
  }

  responseDone(res: Http1Response, keepAlive: boolean): void {
    if (this.active !== res) return;
    this.active = null;
    const req = res.req;
    if (!keepAlive) this.closing = true;
    if (!req.complete && (this.closing || this.server.draining)) {
      // FIN after the answer, and drop what the client still sends.
      this.closing = true;
      this.linger();
      return;
    }
    if (!req.complete) {
      // Answered (by the pod, say) before the client sent the whole body: read the rest
      // and drop it, as nginx does, so the connection and the requests pipelined behind
      // it go on. The request timeout still bounds it, and DISCARD_LIMIT its size.
      this.discarding = req;
      this.discarded = 0;
      this.phase = RECEIVING;
      if (this.pausedForBody) {
        this.pausedForBody = false;
        if (!this.pausedForQueue) this.resumeInput();
      }
      return;
    }
    this.next();
  }

  /** The answer is out and the request all read: the next request, or idle, or close. */
  private next(): void {
    if (this.closing || this.server.draining) {
      this.closing = true;
      this.phase = DETACHED;
      this.endSocket();
      this.socket.destroySoon();
      return;
    }
    const next = this.queue?.shift();
    if (next !== undefined) {
      // Fewer queued now, and `next`'s body may still be on the way: read again (it
      // stayed paused, and a pipelined POST or 100-continue body hung).
      if (this.queue!.length < PIPELINE_LIMIT && this.pausedForQueue) {
        this.pausedForQueue = false;
        if (!this.pausedForBody) this.resumeInput();
      }
      if (!next.req.complete) {
        // Its head came in while the earlier answer was produced; its body is still to
        // come, under the request timeout (else a stalled body was never timed out).
        this.phase = RECEIVING;
        this.since = this.server.now;
      }
      this.startQueued(next);
      return;
    }
    if (this.peerEnded) {
      this.phase = DETACHED;
      this.endSocket();
      return;
    }
    if (this.pausedForQueue) {
      this.pausedForQueue = false;
      if (!this.pausedForBody) this.resumeInput();
    }
    if (this.receiving === null) {
      this.phase = IDLE;
      this.since = this.server.now;
    }
  }

  private handOver(req: Http1Request, rest: Buffer): void {
    const res = this.pendingUpgrade!;
    this.pendingUpgrade = null;
    this.receiving = null;
    this.upgradeTaken = true;
    this.phase = DETACHED;
    this.socket.removeListener('data', onSocketData);
    this.socket.removeListener('drain', onSocketDrain);
    this.freeParser();
    if (rest.length > 0) req.upgradeHead = rest;
    this.socket.pause();
    req.complete = true;
    if (this.active === null) {
      this.active = res;
      this.server.dispatch(req, res);
    } else {
      // An upgrade pipelined behind other requests: not worth supporting.
      this.destroySocket();
    }
  }

  onDrain(): void {
    this.active?.emit('drain');
  }

  private pauseInput(): void {
    pauseInput(this.socket, this.attached);
  }

  private resumeInput(): void {
    resumeInput(this.socket, this.attached);
  }

  onEnd(): void {
    if (this.phase === LINGERING) {
      // The client is done too: close once the answer is out.
      settle(this.socket);
      this.socket.destroySoon();
      return;
    }
    // The client will send nothing more; answer what is in flight, then close.
    const parser = this.parser;
    if (parser !== null && !this.upgradeTaken) {
      const result = parser.finish();
      const cut = this.receiving;
      if (result instanceof Error && cut !== null) {
        // A request cut short can never be complete (a half-close comes after a whole
        // request): the client gave up, so close at once, and the response gets its
        // 'close' now rather than whenever its handler next writes.
        cut.abort();
        this.destroySocket();
        return;
      }
    }
    this.peerEnded = true;
    if (this.upgradeTaken) return;
    if (this.active === null) {
      this.endSocket();
      return;
    }
    // A FIN while an answer is pending means the client left, as node:http and nginx
    // take it (clients do not half-close HTTP connections): abort, so the request to
    // the pod is cancelled now and not when its answer finally fails to write.
    this.destroySocket();
  }

  onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.phase = DETACHED;
    this.server.forget(this);
    this.receiving?.abort();
    this.receiving = null;
    if (!this.executing) this.freeParser();
    const active = this.active;
    this.active = null;
    active?.req.abort();
    active?.connectionClosed();
    const queue = this.queue;
    this.queue = undefined;
    if (queue !== undefined) for (const res of queue) res.connectionClosed();
  }

  private freeParser(): void {
    const parser = this.parser;
    if (parser === null || this.executing) return;
    this.detachParser();
    this.parser = null;
    parser.connection = null;
    disposeParser(parser);
  }

  /**
   * The socket's reads go back to its stream ('data'), reading again if paused here:
   * the stream never asked for data while the parser read, so it would not restart.
   */
  private detachParser(): void {
    if (!this.attached) return;
    this.attached = false;
    startReading(this.socket);
    this.parser?.unconsume();
  }

  /** Destroys the connection, once the bytes waiting for the end of the turn are written (turn-writes.ts). */
  destroySocket(): void {
    settle(this.socket);
    this.socket.destroy();
  }

  /** Ends the connection (FIN) after the bytes waiting for the end of the turn. */
  private endSocket(): void {
    settle(this.socket);
    this.socket.end();
  }

  /** Writes `text` at once, after the bytes waiting for the end of the turn. */
  private writeNow(text: string): void {
    settle(this.socket);
    this.socket.write(text, 'latin1');
  }

  /** Called by the sweeper. */
  checkTimeout(now: number, options: Http1ServerOptions): void {
    const elapsed = now - this.since;
    switch (this.phase) {
      case IDLE:
        // Without keep-alive (idleTimeout 0) a connection is only idle before its first request: the header timeout bounds that wait.
        if (elapsed >= (options.idleTimeout > 0 ? options.idleTimeout : options.headerTimeout)) this.destroySocket();
        return;
      case LINGERING:
        if (elapsed >= LINGER_MS) this.destroySocket();
        return;
      case RECEIVING:
        if (this.receiving === null || !this.receiving.complete) {
          const headersIn = this.receiving !== null;
          const limit = headersIn ? options.requestTimeout : options.headerTimeout;
          if (limit > 0 && elapsed >= limit) this.requestTimedOut();
        }
        return;
      default:
        return;
    }
  }

  /** FIN after the answer, then drop input until the client closes or LINGER_MS passes. */
  private linger(): void {
    this.phase = LINGERING;
    this.since = this.server.now;
    this.closing = true;
    this.endSocket();
    this.pausedForBody = false;
    this.pausedForQueue = false;
    // What still comes goes to the socket's stream, which drops it (onData ignores it).
    this.detachParser();
    this.socket.resume();
  }

  private requestTimedOut(): void {
    this.phase = DETACHED;
    if (this.active === null && (this.receiving === null || this.receiving.complete)) {
      this.writeNow(rejectRequest(408, 'Request Timeout'));
      this.linger();
    } else {
      this.destroySocket();
    }
  }

  /** Draining: close now if nothing is owed on this connection. */
  closeIfIdle(): void {
    this.closing = true;
    if (this.phase === IDLE && this.active === null) this.destroySocket();
  }
}

const kConnection = Symbol('portico.connection');
type ConnectionSocket = Socket & { [kConnection]?: Connection };

function onSocketData(this: ConnectionSocket, data: Buffer): void {
  this[kConnection]?.onData(data);
}
function onSocketEnd(this: ConnectionSocket): void {
  this[kConnection]?.onEnd();
}
function onSocketError(this: ConnectionSocket): void {
  // Resets and timeouts of clients are normal; 'close' follows and cleans up.
}
function onSocketClose(this: ConnectionSocket): void {
  this[kConnection]?.onClose();
}
function onSocketDrain(this: ConnectionSocket): void {
  this[kConnection]?.onDrain();
}

/**
 * Serves HTTP/1.1 on the connections of a net.Server (or the secure connections of a
 * tls.Server): call `accept` for each.
 */
export class Http1Server {
  readonly options: Http1ServerOptions;
  readonly maxHeaderFields: number;
  private readonly handler: RequestHandler;
  private readonly connections = new Set<Connection>();
  private sweeper: NodeJS.Timeout | undefined = undefined;
  /** Coarse clock (ms) for the timeouts, advanced by the sweeper. */
  now = Date.now();
  draining = false;
  onClientError: ((err: Error, socket: Socket) => void) | undefined = undefined;
  /** Told about each request the server answers itself (parse errors, 4xx/5xx refusals), with a short reason. */
  onRefused: ((reason: string, socket: Socket) => void) | undefined = undefined;

  constructor(handler: RequestHandler, options: Http1ServerOptions) {
    this.handler = handler;
    this.options = options;
    this.maxHeaderFields = 2 * (options.maxHeaders ?? 256);
    this.accept = this.accept.bind(this);
  }

  /**
   * Starts serving a client connection. `head`: its first bytes, already read by whoever
   * looked at them to pick the protocol (the socket is then paused; the caller resumes it).
   */
  accept(socket: Socket | TLSSocket, head?: Buffer): void {
    if (this.draining) {
      socket.destroy();
      return;
    }
    this.now = Date.now();
    const connection = new Connection(this, socket);
    this.connections.add(connection);
    this.sweeper ??= this.startSweeper();
    if (head !== undefined) connection.onData(head);
  }

  dispatch(req: Http1Request, res: Http1Response): void {
    this.handler(req, res);
  }

  forget(connection: Connection): void {
    this.connections.delete(connection);
    if (this.connections.size === 0 && this.sweeper !== undefined) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  /** Open client connections. */
  get size(): number {
    return this.connections.size;
  }

  /** Stop taking requests: idle connections close now, busy ones after their answer. */
  drain(): void {
    this.draining = true;
    for (const connection of this.connections) connection.closeIfIdle();
  }

  /** Closes every connection, whatever it is doing. */
  destroyAll(): void {
    for (const connection of this.connections) connection.destroySocket();
  }

  private startSweeper(): NodeJS.Timeout {
    const o = this.options;
    const shortest = Math.min(o.headerTimeout, o.idleTimeout > 0 ? o.idleTimeout : Infinity, o.requestTimeout > 0 ? o.requestTimeout : Infinity);
    const period = Math.max(20, Math.min(1000, Math.floor(shortest / 10)));
    const timer = setInterval(() => this.sweep(), period);
    timer.unref();
    return timer;
  }

  private sweep(): void {
    const now = (this.now = Date.now());
    for (const connection of this.connections) connection.checkTimeout(now, this.options);
  }
}

/** A net.Server whose connections are served by `http1`. */
export function createHttp1Listener(http1: Http1Server): Server {
  return net.createServer({ allowHalfOpen: true, noDelay: true }, http1.accept);
}
