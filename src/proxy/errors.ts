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
