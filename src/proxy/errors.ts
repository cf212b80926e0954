// Answers the proxy (and middleware) produces itself: short text/plain bodies that
// say which case it was, never a stack trace.
import type { ProxyResponse } from './exchange-types.ts';
import { contextOf } from './context.ts';

/** Reason phrases for the statuses portico answers with itself. */
const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  404: 'Not Found',
  413: 'Content Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/**
 * What an anonymous client is told: the case, never the internals (Service and port
 * names, pod addresses, parser codes), which go to the access log's `error` field.
 */
const PUBLIC_TEXT: Record<number, string> = {
  400: 'bad request',
  403: 'forbidden',
  404: 'no route for this host and path',
  413: 'request body too large',
  429: 'too many requests',
  500: 'internal error',
  502: 'the backend failed to answer',
  503: 'no backend available for this route',
  504: 'the backend did not answer in time',
};

export interface SendErrorOptions {
  /** Close the client connection after the answer (e.g. a request body was left unread). */
  close?: boolean;
  /** Extra headers (e.g. Retry-After, WWW-Authenticate). */
  headers?: readonly (readonly [string, string])[];
  /** The detail is about the client's own request (a bad path, its body size) and safe to show it. */
  expose?: boolean;
}

/**
 * Answers `status` with a one-line text body: the generic case for the status, or
 * `detail` itself when `expose` says it is about the client's own request. The detail
 * goes to the access log. Does nothing when the response already started (the caller
 * then has to destroy it) or the client is gone. Returns true when the answer was written.
 */
export function sendError(res: ProxyResponse, status: number, detail: string, options?: SendErrorOptions): boolean {
  if (res.headersSent || res.writableEnded || res.destroyed) return false;
  if (isGrpcRequest(res.req.rawHeaders)) return sendGrpcError(res, status, detail, options);
  const body = (options?.expose === true ? detail : (PUBLIC_TEXT[status] ?? STATUS_TEXT[status] ?? 'error')) + '\n';
  const length = Buffer.byteLength(body);
  const headers: string[] = [
    'content-type', 'text/plain; charset=utf-8',
    'content-length', String(length),
    'cache-control', 'no-store',
    'x-content-type-options', 'nosniff',
  ];
  if (options?.headers) for (const [name, value] of options.headers) headers.push(name, value);
  if (options?.close) {
    headers.push('connection', 'close');
    res.shouldKeepAlive = false;
  }
  const head = res.req.method === 'HEAD';
  const ctx = contextOf(res);
  if (ctx !== undefined) {
    ctx.error = detail;
    ctx.responseBytes = head ? 0 : length;
  }
  res.writeHead(status, STATUS_TEXT[status] ?? '', headers);
  res.end(head ? undefined : body);
  return true;
}

// ---- gRPC ----
// A gRPC client reads its outcome from grpc-status, not the HTTP status: an HTML (or
// text) 503 is "UNKNOWN" to it, and it will not retry. So portico answers a gRPC
// request (content-type application/grpc...) as Envoy does: HTTP 200, and grpc-status
// in a trailers-only response (one HEADERS frame that ends the stream).

/** gRPC status codes (grpc/doc/statuscodes.md). */
export const GRPC_STATUS = {
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DEADLINE_EXCEEDED: 4,
  UNIMPLEMENTED: 12,
  PERMISSION_DENIED: 7,
  UNAUTHENTICATED: 16,
  RESOURCE_EXHAUSTED: 8,
} as const;

/** The request's content-type is application/grpc (with +proto, +json... or parameters). */
export function isGrpcRequest(raw: readonly string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length !== 12 || name.toLowerCase() !== 'content-type') continue;
    const value = raw[i + 1]!;
    return value.length >= 16 && value.slice(0, 16).toLowerCase() === 'application/grpc' && (value.length === 16 || value[16] === '+' || value[16] === ';');
  }
  return false;
}

/**
 * The grpc-status for an answer portico gives itself, after grpc/doc/http-grpc-status-mapping.md,
 * except that timeouts (504) are DEADLINE_EXCEEDED, as Envoy maps them.
 */
export function grpcStatusFor(status: number): number {
  switch (status) {
    case 400: return GRPC_STATUS.INTERNAL;
    case 401: return GRPC_STATUS.UNAUTHENTICATED;
    case 403: return GRPC_STATUS.PERMISSION_DENIED;
    case 404: return GRPC_STATUS.UNIMPLEMENTED;
    case 413: return GRPC_STATUS.RESOURCE_EXHAUSTED;
    case 429: case 502: case 503: return GRPC_STATUS.UNAVAILABLE;
    case 504: return GRPC_STATUS.DEADLINE_EXCEEDED;
    default: return GRPC_STATUS.INTERNAL;
  }
}

/** grpc-message is percent-encoded (printable ASCII but "%" as is). */
function grpcMessage(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

function sendGrpcError(res: ProxyResponse, status: number, detail: string, options?: SendErrorOptions): boolean {
  const message = options?.expose === true ? detail : (PUBLIC_TEXT[status] ?? STATUS_TEXT[status] ?? 'error');
  const headers: string[] = [
    'content-type', 'application/grpc',
    'grpc-status', String(grpcStatusFor(status)),
    'grpc-message', grpcMessage(message),
  ];
  if (options?.headers) for (const [name, value] of options.headers) headers.push(name, value);
  if (options?.close) {
    headers.push('connection', 'close');
    res.shouldKeepAlive = false;
  }
  const ctx = contextOf(res);
  if (ctx !== undefined) {
    ctx.error = detail;
    ctx.responseBytes = 0;
  }
  res.writeHead(200, 'OK', headers);
  res.end();
  return true;
}
