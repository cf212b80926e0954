// The client address a request is attributed to (access log, X-Forwarded-For,
// rate limits, IP filters). Issue 4 extends this with --trusted-proxies.
import type { IncomingMessage } from 'node:http';

export function resolveClientIp(req: IncomingMessage): string {
  return req.socket.remoteAddress ?? '';
}
