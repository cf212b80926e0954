// Logs V8's long garbage-collection pauses at debug level: a change or a request that
// lands in one waits for it, so the latency benches (bench/lib/latency.ts) match them to
// their slow samples, and an operator chasing a tail can turn them on with --log-level debug.
import type { Logger } from 'pino';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { PerformanceObserver, constants } = process.getBuiltinModule('node:perf_hooks');

/** Pauses at least this long (ms) are logged. */
const LONG_PAUSE_MS = 20;

const KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
};

/** Starts logging long pauses when debug is on; returns a function that stops it. */
export function logLongGcPauses(log: Logger): () => void {
  if (!log.isLevelEnabled('debug')) return () => {};
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.duration < LONG_PAUSE_MS) continue;
      const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind;
      log.debug({ ms: Math.round(entry.duration), kind: kind === undefined ? 'unknown' : (KINDS[kind] ?? String(kind)) }, 'long garbage-collection pause');
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return () => observer.disconnect();
}
