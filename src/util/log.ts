// Structured logging: one JSON object per line on stdout, the format log
// collectors in a cluster (Fluent Bit, Vector, Loki) read without configuration.
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']);

/**
 * A pino logger at `level`. destination defaults to stdout; tests pass a stream
 * to read the lines back.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  if (!LEVELS.has(level)) {
    throw new Error(`unknown log level "${level}": use one of ${[...LEVELS].join(', ')}`);
  }
  const options = {
    level,
    base: { pid: process.pid },
    // ISO time and level names: readable by people and collectors alike.
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  // Without a destination pino writes to stdout through sonic-boom and flushes on exit.
  return destination ? pino(options, destination) : pino(options);
}

/** One finished request, as the proxy reports it (see src/proxy/access-log.ts). */
export interface AccessLogEntry {
  method: string;
  host: string;
  path: string;
  status: number;
  bytes: number;
  durationMs: number;
  /** Absent when no pod answered. */
  upstreamMs: number | undefined;
  /** "host:port" of the pod that answered; absent when none did. */
  upstream: string | undefined;
  /** Route id; absent when the request matched no route (400, 404). */
  route: string | undefined;
  clientIp: string;
  /** Absent when the request was answered before it was forwarded. */
  requestId: string | undefined;
  /** Why portico answered with an error itself (the detail the client is not shown); absent otherwise. */
  error: string | undefined;
}

/**
 * The access log: one info line per request with msg "access" and kind "access".
 * The child logger serializes {kind} once; each call only serializes the fields.
 */
export function createAccessLogger(logger: Logger): (fields: AccessLogEntry) => void {
  const access = logger.child({ kind: 'access' });
  return (fields) => access.info(fields, 'access');
}

/**
 * Logs a recurring event at most once per interval per key, with how many were not
 * logged in between: a flood of bad requests costs one line a minute, not one each.
 */
export function throttledLog(log: (fields: object, msg: string) => void, intervalMs = 60_000): (key: string, fields: object, msg: string) => void {
  const last = new Map<string, { at: number; suppressed: number }>();
  return (key, fields, msg) => {
    const now = Date.now();
    const seen = last.get(key);
    if (seen !== undefined && now - seen.at < intervalMs) {
      seen.suppressed++;
      return;
    }
    const suppressed = seen?.suppressed ?? 0;
    last.set(key, { at: now, suppressed: 0 });
    log(suppressed > 0 ? { ...fields, suppressedSinceLastLine: suppressed } : fields, msg);
  };
}
