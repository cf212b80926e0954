// Structured logging: one JSON object per line on stdout, the format log
// collectors in a cluster (Fluent Bit, Vector, Loki) read without configuration.
import { pino, type DestinationStream, type Logger } from 'pino';
import { jsonBytes } from './line-bytes.ts';
import { bufferedFd, streamLines, type LineSink } from './line-sinks.ts';

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
  /**
   * performance.now() when the request finished, which the proxy has read already for
   * durationMs: the logger reads the wall clock for the line's time only when this enters
   * a new millisecond. Absent: the logger reads the clock for every line.
   */
  finishedAt?: number | undefined;
}

/**
 * The access log: one info line per request with msg "access" and kind "access", in the
 * same JSON shape as the other log lines. Written as bytes into a reused buffer
 * (src/util/line-bytes.ts), without pino's per-call object work or a string per line,
 * and to stdout about 64 KiB at a time (src/util/line-sinks.ts), where a synchronous
 * write per request cost a third of the throughput. Silent when the logger's level is
 * above info.
 */
export interface AccessLogger {
  /** Writes the line of `fields` and keeps nothing of them: a caller may refill and reuse one entry. */
  (fields: AccessLogEntry): void;
  /** Writes out what is buffered; call before exiting (stop does). */
  flush(): Promise<void>;
}

/**
 * `maxWriteBytes`: workers share one stdout pipe, where only writes up to PIPE_BUF
 * (4096 bytes) are atomic, so their lines go out in writes of whole lines below it.
 */
export function createAccessLogger(logger: Logger, destination?: DestinationStream, maxWriteBytes?: number): AccessLogger {
  if (!logger.isLevelEnabled('info')) return Object.assign(() => {}, { flush: () => Promise.resolve() });
  const own = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as (DestinationStream & { fd?: number }) | undefined;
  const sink: LineSink =
    destination !== undefined ? streamLines(destination) : own === undefined || own.fd === 1 ? bufferedFd(1, maxWriteBytes) : streamLines(own);
  const line = sink.line;
  const pid = `,"pid":${process.pid},"kind":"access","method":`;
  // Many requests share a millisecond: the line's start, up to its method, is made once for it.
  let lastMs = 0;
  let lineStart = NOTHING;
  // With finishedAt, the wall clock is read once per millisecond of it rather than per line:
  // a line's time is then at most 1 ms before the clock's at its finish.
  let lastTick = -1;
  // Values that repeat from line to line (method, host, route, pod, client address) are
  // checked and encoded once, and the runs of them that repeat from one request to the
  // next (method and host; pod, route and client address) are kept as one run of bytes
  // while they do, with the keys around them. Bounded: many distinct values (hosts of
  // unrouted requests) only empty the map now and then.
  const encoded = new Map<string, Buffer>();
  const json = (text: string): Buffer => {
    let out = encoded.get(text);
    if (out === undefined) {
      out = jsonBytes(text);
      if (encoded.size >= 10_000) encoded.clear();
      encoded.set(text, out);
    }
    return out;
  };
  let segMethod: string | undefined;
  let segHost: string | undefined;
  let methodHostPath = NOTHING;
  let segUpstream: string | undefined;
  let segRoute: string | undefined;
  let segClientIp: string | undefined;
  let segRequestId = false;
  let peers = NOTHING;
  // ',"status":N,"bytes":' for each status seen, made once (filled, so that V8 keeps the array's elements dense).
  const statusBytes = new Array<Buffer | undefined>(1000).fill(undefined);
  const log = (f: AccessLogEntry) => {
    const tick = f.finishedAt === undefined ? -1 : Math.floor(f.finishedAt);
    if (tick === -1 || tick !== lastTick) {
      lastTick = tick;
      const ms = Date.now();
      if (ms !== lastMs) {
        lastMs = ms;
        lineStart = Buffer.from('{"level":"info","time":"' + new Date(ms).toISOString() + '"' + pid, 'latin1');
      }
    }
    if (f.method !== segMethod || f.host !== segHost) {
      segMethod = f.method;
      segHost = f.host;
      methodHostPath = Buffer.concat([json(f.method), HOST, json(f.host), PATH]);
    }
    const hasRequestId = f.requestId !== undefined;
    if (f.upstream !== segUpstream || f.route !== segRoute || f.clientIp !== segClientIp || hasRequestId !== segRequestId) {
      segUpstream = f.upstream;
      segRoute = f.route;
      segClientIp = f.clientIp;
      segRequestId = hasRequestId;
      const parts: Buffer[] = [];
      if (f.upstream !== undefined) parts.push(UPSTREAM, json(f.upstream));
      if (f.route !== undefined) parts.push(ROUTE, json(f.route));
      parts.push(CLIENT_IP, json(f.clientIp));
      if (hasRequestId) parts.push(REQUEST_ID);
      peers = Buffer.concat(parts);
    }
    line.bytes(lineStart);
    line.bytes(methodHostPath);
    line.jsonString(f.path);
    const status = f.status;
    if (status >= 100 && status <= 999 && Math.floor(status) === status) {
      line.bytes((statusBytes[status] ??= Buffer.from(`,"status":${status},"bytes":`)));
    } else {
      line.bytes(STATUS);
      line.number(status);
      line.bytes(BYTES);
    }
    line.number(f.bytes);
    line.bytes(DURATION_MS);
    line.millis(f.durationMs);
    if (f.upstreamMs !== undefined) {
      line.bytes(UPSTREAM_MS);
      line.millis(f.upstreamMs);
    }
    line.bytes(peers);
    if (hasRequestId) line.jsonString(f.requestId!);
    if (f.error !== undefined) {
      line.bytes(ERROR);
      line.jsonString(f.error);
    }
    line.bytes(LINE_END);
    sink.endLine();
  };
  return Object.assign(log, { flush: () => sink.flush() });
}

// The keys, as bytes: copied into a line faster than their text is written.
const NOTHING = Buffer.alloc(0);
const HOST = Buffer.from(',"host":');
const PATH = Buffer.from(',"path":');
const STATUS = Buffer.from(',"status":');
const BYTES = Buffer.from(',"bytes":');
const DURATION_MS = Buffer.from(',"durationMs":');
const UPSTREAM_MS = Buffer.from(',"upstreamMs":');
const UPSTREAM = Buffer.from(',"upstream":');
const ROUTE = Buffer.from(',"route":');
const CLIENT_IP = Buffer.from(',"clientIp":');
const REQUEST_ID = Buffer.from(',"requestId":');
const ERROR = Buffer.from(',"error":');
const LINE_END = Buffer.from(',"msg":"access"}\n');

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
