// Node's own HTTP/1.1 parser (llhttp, native), as node:http uses it. portico's proxy
// listeners and its connections to pods drive it directly: node:http's server and
// client objects cost more per request than the whole rest of the proxy (measured:
// a raw-socket proxy on this parser serves 1.75x the requests of one on node:http).
// The binding is internal to Node, so everything portico needs from it is named here,
// and checked once at load: a Node without it fails at start with one clear line.
import type { Socket } from 'node:net';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { createRequire } = process.getBuiltinModule('node:module');

export interface LlhttpParser {
  initialize(type: number, resource: object, maxHeaderSize: number, lenient: number): void;
  /** Bytes parsed, or an Error with `code` (HPE_*) and `bytesParsed`. */
  execute(data: Buffer): number | ParserError;
  /** End of input: an Error if a message was cut short. */
  finish(): number | ParserError | undefined;
  pause(): void;
  resume(): void;
  /** Reads the stream straight into the parser, in C++ (see attachParser). */
  consume(handle: object): void;
  unconsume(): void;
  /** A copy of the bytes of the read being handled (inside kOnExecute only). */
  getCurrentBuffer(): Buffer;
  close(): void;
  free(): void;
  remove(): void;
  [callback: number]: unknown;
}

export interface ParserError extends Error {
  code: string;
  reason?: string;
  bytesParsed: number;
}

interface ParserConstructor {
  new (): LlhttpParser;
  REQUEST: number;
  RESPONSE: number;
  kOnMessageBegin: number;
  kOnHeaders: number;
  kOnHeadersComplete: number;
  kOnBody: number;
  kOnMessageComplete: number;
  kOnExecute: number;
  kLenientNone: number;
}

function load(): ParserConstructor {
  const require = createRequire(import.meta.url);
  const parser = (require('_http_common') as { HTTPParser?: ParserConstructor }).HTTPParser;
  if (typeof parser !== 'function' || typeof parser.REQUEST !== 'number' || typeof parser.kOnHeadersComplete !== 'number') {
    throw new Error(`portico needs Node's built-in HTTP parser (_http_common.HTTPParser), which Node ${process.version} does not provide; run it on Node 24`);
  }
  return parser;
}

export const HTTPParser = load();
export const REQUEST = HTTPParser.REQUEST;
export const RESPONSE = HTTPParser.RESPONSE;
export const kOnMessageBegin = HTTPParser.kOnMessageBegin;
export const kOnHeaders = HTTPParser.kOnHeaders;
export const kOnHeadersComplete = HTTPParser.kOnHeadersComplete;
export const kOnBody = HTTPParser.kOnBody;
export const kOnMessageComplete = HTTPParser.kOnMessageComplete;
export const kOnExecute = HTTPParser.kOnExecute;
export const LENIENT_NONE = HTTPParser.kLenientNone;

/** llhttp's method codes (HTTP_ALL_METHOD_MAP) to names; RTSP ones never parse as HTTP requests. */
export const METHODS: readonly string[] = [
  'DELETE', 'GET', 'HEAD', 'POST', 'PUT', 'CONNECT', 'OPTIONS', 'TRACE', 'COPY', 'LOCK',
  'MKCOL', 'MOVE', 'PROPFIND', 'PROPPATCH', 'SEARCH', 'UNLOCK', 'BIND', 'REBIND', 'UNBIND', 'ACL',
  'REPORT', 'MKACTIVITY', 'CHECKOUT', 'MERGE', 'M-SEARCH', 'NOTIFY', 'SUBSCRIBE', 'UNSUBSCRIBE', 'PATCH', 'PURGE',
  'MKCALENDAR', 'LINK', 'UNLINK', 'SOURCE', 'PRI', 'DESCRIBE', 'ANNOUNCE', 'SETUP', 'PLAY', 'PAUSE',
  'TEARDOWN', 'GET_PARAMETER', 'SET_PARAMETER', 'REDIRECT', 'RECORD', 'FLUSH', 'QUERY',
];

/**
 * Callback signatures, as the binding calls them (`this` is the parser):
 * - kOnHeaders(headers: string[], url: string): more header pairs than fit one call
 *   (over 32); they arrive in pieces before kOnHeadersComplete, which then gets
 *   `headers` and `url` undefined and must use what was collected.
 * - kOnHeadersComplete(versionMajor, versionMinor, headers | undefined, method: number
 *   (requests), url | undefined, statusCode (responses), statusMessage, upgrade: boolean,
 *   shouldKeepAlive: boolean): return 0, or 1 to skip the body (a response to HEAD),
 *   or 2 to skip the body and stop (a 101/CONNECT tunnel).
 * - kOnBody(chunk: Buffer): a body chunk (chunked encoding already decoded).
 * - kOnMessageComplete(): the message ended (trailers, if any, came through kOnHeaders).
 */
export type HeadersCompleteCallback = (
  this: LlhttpParser,
  versionMajor: number,
  versionMinor: number,
  headers: string[] | undefined,
  method: number,
  url: string | undefined,
  statusCode: number,
  statusMessage: string,
  upgrade: boolean,
  shouldKeepAlive: boolean,
) => number;

/** The native stream under a net.Socket (TCPWrap, or TLSWrap for a TLS socket). */
interface StreamHandle {
  isStreamBase?: boolean;
  reading?: boolean;
  readStart(): number;
  readStop(): number;
}

function streamHandle(socket: Socket): StreamHandle | null {
  const handle = (socket as Socket & { _handle?: StreamHandle | null })._handle;
  return handle != null && handle.isStreamBase === true ? handle : null;
}

/**
 * Lets `parser` read `socket` itself, as node:http's server does: each read goes from
 * libuv into llhttp in C++, then `onExecute(bytesParsed | error)` is called. This skips
 * the socket's stream machinery (a Buffer, push, 'data') on every read. The socket
 * still emits 'end', 'error' and 'close'. Returns false, changing nothing, when the
 * socket has no native stream or already holds unread data (then feed 'data' to
 * parser.execute() instead).
 */
export function attachParser<P extends LlhttpParser>(parser: P, socket: Socket, onExecute: (this: P, result: number | ParserError) => void): boolean {
  if (socket.readableLength > 0) return false;
  const handle = streamHandle(socket);
  if (handle === null) return false;
  parser[kOnExecute] = onExecute;
  parser.consume(handle);
  return true;
}

/**
 * Stops and restarts reading an attached socket. socket.pause() would not do it: the
 * stream never sees the data, so it does not stop the handle. `reading` is kept as
 * net.Socket keeps it, so the socket's own code agrees.
 */
function stopReading(socket: Socket): void {
  const handle = streamHandle(socket);
  if (handle !== null && handle.reading !== false) {
    handle.reading = false;
    handle.readStop();
  }
}

export function startReading(socket: Socket): void {
  const handle = streamHandle(socket);
  if (handle !== null && handle.reading === false && !socket.destroyed) {
    handle.reading = true;
    handle.readStart();
  }
}

/** Back-pressure on a socket read by an attached parser (`attached`) or through 'data'. */
export function pauseInput(socket: Socket, attached: boolean): void {
  if (attached) stopReading(socket);
  else socket.pause();
}

export function resumeInput(socket: Socket, attached: boolean): void {
  if (attached) startReading(socket);
  else socket.resume();
}

/**
 * Lets go of a parser for good (after unconsume). free() only runs its destroy hooks;
 * close() deletes the native parser, which garbage collection never does (without it
 * every connection leaked about 6 KB). Closed once the stack, which may be inside the
 * parser's own callbacks, has unwound, as node:http does.
 */
export function disposeParser(parser: LlhttpParser): void {
  parser.remove();
  parser.free();
  setImmediate(closeParser, parser);
}

function closeParser(parser: LlhttpParser): void {
  parser.close();
}
