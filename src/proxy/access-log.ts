// The proxy's side of the access log: what a finished request reports, turned into
// the fields src/util/log.ts writes. Fields that do not apply are left out, never
// filled with a sentinel: no route, no pod reached, no request id.
import type { AccessLogEntry } from '../util/log.ts';
import type { RequestContext } from './context.ts';

/**
 * Called once per finished request, when set. status is 499 when the client went away
 * first; upstreamMs is -1 when no pod answered; upstreamAddress is "host:port" of the
 * pod that answered (or, on a 502/504, of the last one that failed), or "".
 */
export type AccessLogHook = (ctx: RequestContext, status: number, bytes: number, upstreamMs: number, upstreamAddress: string) => void;

/** One access-log line as a plain object: the shape src/util/log.ts' access logger takes. */
export type AccessLogFields = AccessLogEntry;

/** Adapts a logger of AccessLogFields to the proxy's hook. */
export function accessLogHook(log: (fields: AccessLogFields) => void): AccessLogHook {
  // One entry, refilled for every request: the logger has written the line before it
  // returns and keeps nothing of the entry, so a request makes no object for its line.
  // Every key is always set (undefined when absent, which JSON leaves out), so V8 keeps one shape.
  const entry: AccessLogFields = {
    method: '',
    host: '',
    path: '',
    status: 0,
    bytes: 0,
    durationMs: 0,
    upstreamMs: undefined,
    upstream: undefined,
    route: undefined,
    clientIp: '',
    requestId: undefined,
    error: undefined,
    finishedAt: 0,
  };
  return (ctx, status, bytes, upstreamMs, upstreamAddress) => {
    entry.method = ctx.req.method ?? '';
    entry.host = ctx.host;
    entry.path = ctx.path;
    entry.status = status;
    entry.bytes = bytes;
    const now = performance.now();
    entry.finishedAt = now;
    entry.durationMs = roundMs(now - ctx.startTime);
    entry.upstreamMs = upstreamMs < 0 ? undefined : roundMs(upstreamMs);
    entry.upstream = upstreamAddress === '' ? undefined : upstreamAddress;
    entry.route = ctx.route.config.id === '' ? undefined : ctx.route.config.id;
    entry.clientIp = ctx.clientIp;
    entry.requestId = ctx.requestId === '' ? undefined : ctx.requestId;
    entry.error = ctx.error === '' ? undefined : ctx.error;
    log(entry);
  };
}

/** Milliseconds to the microsecond: what the clock can tell apart, not 15 digits of noise. */
function roundMs(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
