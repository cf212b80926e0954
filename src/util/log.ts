// Structured logging: one JSON object per line on stdout, the format log
// collectors in a cluster (Fluent Bit, Vector, Loki) read without configuration.
import { pino, type DestinationStream, type Logger } from 'pino';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { write, writeSync } = process.getBuiltinModule('node:fs');

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

/** A string that can go into JSON as it is: printable ASCII without '"' or '\\'. */
function plain(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

function jsonString(text: string): string {
  return plain(text) ? '"' + text + '"' : JSON.stringify(text);
}

/** ".001" ... ".999" without trailing zeros, and "" for 0: the decimals of a whole number of µs. */
const MS_FRACTIONS: readonly string[] = Array.from({ length: 1000 }, (_, i) => (i === 0 ? '' : ('.' + String(i).padStart(3, '0')).replace(/0+$/, '')));

/**
 * String(ms) for the durations (milliseconds rounded to the µs), without the general
 * number-to-text conversion, which costs a few hundred ns per call for a fraction:
 * a whole number of µs below 10^15 is written as JavaScript writes it (at most 15
 * significant digits: the shortest text that reads back as the same number).
 */
export function msText(ms: number): string {
  const micros = Math.round(ms * 1000);
  if (micros >= 0 && micros < 1e15 && micros / 1000 === ms) {
    const whole = Math.floor(micros / 1000);
    return whole + MS_FRACTIONS[micros - whole * 1000]!;
  }
  return '' + ms;
}

/** Where access lines go: portico's stdout through a 64 KiB buffer, or the logger's own stream (tests). */
interface LineSink {
  write(line: string): void;
  /** Resolves once every line written so far is out (the write in flight included). */
  flush?(): Promise<void>;
}

/**
 * stdout, buffered: lines are gathered and written in one write of about 64 KiB (or once
 * a second when quiet) instead of one per request; at most one write is in flight, and
 * what is buffered is written synchronously at exit, so no line is lost.
 */
function bufferedStdout(maxWrite = Infinity): LineSink {
  const FLUSH_AT = 64 * 1024;
  let lines: string[] = [];
  let size = 0;
  let writing = false;
  const idle: (() => void)[] = [];
  const flush = () => {
    if (writing) return;
    if (lines.length === 0) {
      for (const resolve of idle.splice(0)) resolve();
      return;
    }
    // Whole lines, at most maxWrite bytes per write (one line may exceed it alone).
    let take = lines.length;
    if (maxWrite !== Infinity) {
      let bytes = 0;
      take = 0;
      while (take < lines.length && (take === 0 || bytes + lines[take]!.length <= maxWrite)) bytes += lines[take++]!.length;
    }
    const text = take === lines.length ? lines.join('') : lines.slice(0, take).join('');
    lines = take === lines.length ? [] : lines.slice(take);
    size = 0;
    for (const line of lines) size += line.length;
    writing = true;
    write(1, text, () => {
      // An error (stdout gone, EPIPE) drops those lines rather than grow without bound.
      writing = false;
      if (size >= FLUSH_AT || idle.length > 0 || (maxWrite !== Infinity && lines.length > 0)) flush();
    });
  };
  const timer = setInterval(flush, 1000);
  timer.unref();
  process.once('exit', () => {
    if (lines.length === 0) return;
    try {
      writeSync(1, lines.join(''));
    } catch {
      // stdout gone: nothing to save
    }
  });
  return {
    write(line) {
      lines.push(line);
      size += line.length;
      if (size >= FLUSH_AT) flush();
    },
    flush() {
      return new Promise<void>((resolve) => {
        idle.push(resolve);
        flush();
      });
    },
  };
}

/**
 * The access log: one info line per request with msg "access" and kind "access", in the
 * same JSON shape as the other log lines. Built as one string, without pino's
 * per-call object work, and written to stdout through a 64 KiB buffer: logging costs a
 * few percent of throughput, where a synchronous write per request cost a third.
 * Silent when the logger's level is above info.
 */
export interface AccessLogger {
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
  const own = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as (LineSink & { fd?: number }) | undefined;
  const sink: LineSink = destination ?? (own === undefined || own.fd === 1 ? bufferedStdout(maxWriteBytes) : own);
  const pid = `,"pid":${process.pid},"kind":"access"`;
  // Many requests share a millisecond: the line's start, up to its time, is built once for it.
  let lastMs = 0;
  let lineStart = '';
  // Values that repeat from line to line (method, host, route, pod, client address) are
  // checked and quoted once: a fifth less CPU per line in a micro-benchmark. Bounded:
  // many distinct values (hosts of unrouted requests) only empty it now and then.
  const quoted = new Map<string, string>();
  const json = (text: string): string => {
    let out = quoted.get(text);
    if (out === undefined) {
      out = jsonString(text);
      if (quoted.size >= 10_000) quoted.clear();
      quoted.set(text, out);
    }
    return out;
  };
  // A line is some 30 pieces joined, and joining (before the write) costs by the piece:
  // the runs of fields that repeat from one request to the next (method and host; pod,
  // route and client address) are kept as one flat string while they do repeat.
  let segMethod: string | undefined;
  let segHost: string | undefined;
  let methodHost = '';
  let segUpstream: string | undefined;
  let segRoute: string | undefined;
  let segClientIp: string | undefined;
  let peers = '';
  const log = (f: AccessLogEntry) => {
    const ms = Date.now();
    if (ms !== lastMs) {
      lastMs = ms;
      lineStart = ['{"level":"info","time":"', new Date(ms).toISOString(), '"', pid, ',"method":'].join('');
    }
    if (f.method !== segMethod || f.host !== segHost) {
      segMethod = f.method;
      segHost = f.host;
      methodHost = [json(f.method), ',"host":', json(f.host)].join('');
    }
    if (f.upstream !== segUpstream || f.route !== segRoute || f.clientIp !== segClientIp) {
      segUpstream = f.upstream;
      segRoute = f.route;
      segClientIp = f.clientIp;
      peers = [
        f.upstream === undefined ? '' : ',"upstream":' + json(f.upstream),
        f.route === undefined ? '' : ',"route":' + json(f.route),
        ',"clientIp":',
        json(f.clientIp),
      ].join('');
    }
    const path = f.path;
    let line = lineStart + methodHost + (plain(path) ? ',"path":"' + path + '","status":' : ',"path":' + JSON.stringify(path) + ',"status":');
    line += f.status + ',"bytes":' + f.bytes + ',"durationMs":' + msText(f.durationMs);
    if (f.upstreamMs !== undefined) line += ',"upstreamMs":' + msText(f.upstreamMs);
    line += peers;
    if (f.requestId !== undefined) line += ',"requestId":' + jsonString(f.requestId);
    if (f.error !== undefined) line += ',"error":' + jsonString(f.error);
    sink.write(line + ',"msg":"access"}\n');
  };
  return Object.assign(log, { flush: () => sink.flush?.() ?? Promise.resolve() });
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
