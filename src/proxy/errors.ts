// Answers the proxy (and middleware) produces itself: short text/plain bodies that
// say which case it was, never a stack trace.
import type { Http1Response } from '../http1/response.ts';

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

export interface SendErrorOptions {
  /** Close the client connection after the answer (e.g. a request body was left unread). */
  close?: boolean;
  /** Extra headers (e.g. Retry-After, WWW-Authenticate). */
  headers?: readonly (readonly [string, string])[];
}

/**
 * Answers `status` with a one-line text body. Does nothing when the response already
 * started (the caller then has to destroy it) or the client is gone.
 * Returns true when the answer was written.
 */
export function sendError(res: Http1Response, status: number, message: string, options?: SendErrorOptions): boolean {
  if (res.headersSent || res.writableEnded || res.destroyed) return false;
  const body = message + '\n';
  const headers: string[] = [
    'content-type', 'text/plain; charset=utf-8',
    'content-length', String(Buffer.byteLength(body)),
    'cache-control', 'no-store',
    'x-content-type-options', 'nosniff',
  ];
  if (options?.headers) for (const [name, value] of options.headers) headers.push(name, value);
  if (options?.close) {
    headers.push('connection', 'close');
    res.shouldKeepAlive = false;
  }
  res.writeHead(status, STATUS_TEXT[status] ?? '', headers);
  res.end(res.req.method === 'HEAD' ? undefined : body);
  return true;
}
