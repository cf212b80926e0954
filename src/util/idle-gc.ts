// Gives memory back once the process goes quiet, as V8's "memory reducer" is meant to.
//
// V8 shrinks its heap (a full GC that also shrinks the young generation and releases
// emptied pages) when allocation goes quiet after a busy spell. In Node 24 that never
// happens once the ESM loader is up, and portico is ESM: `--trace-memory-reducer` reports
// "high alloc" every 8 s forever, even in a process that does nothing, while a CommonJS
// script that imports nothing reports "low alloc" and collects. So the garbage of start-up,
// of a large rebuild or of a burst of traffic stayed resident for good (at 10,000 Ingresses,
// 70 MB of dead objects and a 128 MB young generation).
//
// This does the same from JavaScript: every 10 s it looks at how busy the event loop was,
// whether clients are connected and whether a change was applied (changeApplied); after a busy spell
// (start-up, a burst of changes, or traffic) followed by an interval with no client
// connected, no change and the loop mostly idle, and if the heap grew since the last
// collection, it runs one memory-reducing GC. That pauses the process (tens of ms idle,
// about 100-150 ms at 10,000 Ingresses), so never while a client is connected, nor while
// changes keep coming: a change that lands during the pause waits for it (this was the
// slowest sample of bench/standalone-latency.ts at 10,000 Ingresses, one change every
// 0.1 s), so only a spell without changes counts as quiet. "Mostly idle" leaves room for
// the periodic rescans of a large manifest tree (up to a fifth of a core at 10,000 files).
import type { Logger } from 'pino';
import { compilersStillOff } from './compilers.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { getHeapStatistics, setFlagsFromString } = process.getBuiltinModule('node:v8');
const { runInNewContext } = process.getBuiltinModule('node:vm');

/** Event-loop utilization (0-1) at or above which an interval counts as busy. */
const BUSY = 0.3;
/** ... and below which it counts as quiet (with no client connected). */
const QUIET = 0.25;
/** Heap growth since the last collection below which a quiet spell is left alone. */
const MIN_GROWTH_BYTES = 4 * 1024 * 1024;
/**
 * Live heap (after the last collection) below which a quiet spell gets V8's memory-reducing
 * collection rather than a plain full GC. Only a memory-reducing GC gives back the pages V8
 * pools for reuse after a GC: after a plain one, a 2,000-Ingress worker's heap fell from
 * 58 to 22 MB but its RSS stayed where the load had left it (the pages pooled). The
 * memory-reducing one compacts the whole heap in two or more passes, so its pause grows
 * with what is live, about three times as fast as a plain GC's: 50-130 ms at 18-20 MB
 * live (a plain one: 130-150 ms), 760 ms at 75 MB (plain: 250 ms), 2.6 s at 10,000
 * Ingresses with their Services and endpoints (0.3-1.1 s at 110 MB live, once routes were
 * compiled at their first request). Above this, a plain GC, except at the first quiet
 * spell (see flavor()).
 */
const REDUCING_MAX_LIVE_BYTES = 32 * 1024 * 1024;
/**
 * A process that stays quiet after a collection, but whose heap grows this much from
 * background work alone, collects again (a small live heap only: see below). The
 * manifest source's safety-net rescan (every 2 s at 2,000 files) stats every file: its
 * garbage survives a scavenge or two while the walk awaits, and V8 grows the young
 * generation by what survives, never shrinking it back while allocation keeps going.
 * In a quiet primary of 2 workers the heap went from 23 MB after the collection to
 * 48-57 MB two minutes later (the young generation 1 → 25-34 MB), RSS 135 MB against
 * 109 MB with the rescan off (2026-11-27): the primary's settled RSS in the one-hour
 * soak was wherever that regrowth stood when sampled, not a leak.
 */
const QUIET_REGROWTH_BYTES = 16 * 1024 * 1024;
/** ... at most once in this many intervals (the pause: 50-140 ms at 20 MB live). */
const QUIET_RECOLLECT_INTERVALS = 6;
/** Collections pausing this long (ms) are logged at info, shorter ones at debug. */
const NOTABLE_PAUSE_MS = 50;

/** The decision, apart from the timers (unit-tested). */
export class IdleCollectionPolicy {
  private busySinceCollection = true; // start-up counts as a busy spell
  /**
   * The smallest heap seen since the last collection. Not the size right after it: V8
   * releases and shrinks after the GC returns (69 MB right after one, 28 MB ten seconds
   * later), and against 69 MB a heap back at 46 MB looked as if it had not grown, so the
   * second quiet spell of a process never collected.
   */
  private heapLow = 0;
  /** Live bytes after the last collection (undefined before the first). */
  private liveAfterLast: number | undefined = undefined;
  private intervalsSinceCollection = 0;

  /** Called once an interval; `changed`: a change was applied in it. true: collect now. */
  shouldCollect(utilization: number, clientsConnected: boolean, changed: boolean, heapBytes: number): boolean {
    this.intervalsSinceCollection++;
    this.heapLow = Math.min(this.heapLow, heapBytes);
    if (utilization >= BUSY || clientsConnected || changed) this.busySinceCollection = true;
    if (clientsConnected || changed || utilization >= QUIET) return false;
    const growth = heapBytes - this.heapLow;
    if (this.busySinceCollection) return growth >= MIN_GROWTH_BYTES;
    // Quiet all along: only background garbage regrowing a small heap by much, now and then.
    return (
      this.liveAfterLast !== undefined &&
      this.liveAfterLast < REDUCING_MAX_LIVE_BYTES &&
      this.intervalsSinceCollection >= QUIET_RECOLLECT_INTERVALS &&
      growth >= QUIET_REGROWTH_BYTES
    );
  }

  /**
   * Which collection to run: 'last-resort' (V8's memory-reducing one) at the first quiet
   * spell after start-up, whatever the heap's size, and later while the live heap is small
   * enough for its pause. Start-up leaves the most behind (the garbage of parsing and the
   * first translation, a young generation at its largest, pages pooled), and a plain GC
   * gave little of it back: at 10,000 Ingresses RSS 231-241 MB after a plain one (a
   * scavenge before it shrank the young generation but not the pooled pages), 184-207 MB
   * after the memory-reducing one, which paused 0.3 s on a quiet machine and 0.9-1.1 s at
   * load 2.4-4 (a plain one: 0.24-0.67 s), once in the process's life (2026-11-27).
   */
  flavor(): GcFlavor {
    if (this.liveAfterLast === undefined) return 'last-resort';
    return this.liveAfterLast < REDUCING_MAX_LIVE_BYTES ? 'last-resort' : 'regular';
  }

  collected(heapBytes: number, liveBytes: number): void {
    this.busySinceCollection = false;
    this.intervalsSinceCollection = 0;
    this.heapLow = heapBytes;
    this.liveAfterLast = liveBytes;
  }
}

/**
 * V8 drops the bytecode of a function not run in its last 6 full GCs and compiles it
 * again if it runs. An idle collection of a process that has had no work since start-up
 * (the compilers still off: src/util/compilers.ts) asks for 1, then gives V8 its 6 back:
 * start-up's code (module bodies, flag and manifest parsing, the first translation)
 * seldom runs again, and an idle process kept its bytecode (0.2-0.7 MB of anonymous
 * memory, bench/memory.ts idle, 2026-11-29). Not once work came: dropping bytecode also drops the
 * optimized code built on it, and a busy worker would start again in the interpreter
 * after each quiet spell. Nor when the operator set the age (in either spelling).
 */
const QUIET_BYTECODE_OLD_AGE = 1;
const V8_BYTECODE_OLD_AGE = 6;
const BYTECODE_AGE_FLAG = /^--bytecode[-_]old[-_]age(=|$)/;

/** Whether an idle collection may flush bytecode: the operator did not set the age. */
export function flushesBytecode(nodeArgs: readonly string[]): boolean {
  return !nodeArgs.some((arg) => BYTECODE_AGE_FLAG.test(arg));
}

export type GcFlavor = 'regular' | 'last-resort';
type Gc = (options: { type: 'major'; execution: 'sync'; flavor: GcFlavor }) => void;
let gc: Gc | undefined;

/** V8's gc() without --expose-gc on the command line: the flag, then a context that has it. */
function gcFunction(): Gc {
  if (gc === undefined) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as Gc;
  }
  return gc;
}

let changesApplied = 0;

/** Says a change (objects, routes, endpoints) was applied: no collection in that interval. */
export function changeApplied(): void {
  changesApplied++;
}

let connectionsAccepted = 0;

/**
 * Says a client connected. An interval in which one did is not quiet even if no
 * connection is open when the collector looks: a worker serving a request a few ms long
 * every 10 ms has none open most of the time, and a collection there (0.3-0.5 s with
 * 10,000 routes) stalled the connections that came during it.
 */
export function clientConnected(): void {
  connectionsAccepted++;
}

/** Whether clients were there in an interval: connected at either end of it, or in it. */
export class ClientActivity {
  private openBefore = false;
  private acceptedBefore = connectionsAccepted;

  /** Called once an interval with the connections open now. */
  look(openNow: number): boolean {
    const seen = openNow > 0 || this.openBefore || connectionsAccepted !== this.acceptedBefore;
    this.openBefore = openNow > 0;
    this.acceptedBefore = connectionsAccepted;
    return seen;
  }
}

/**
 * Starts watching; returns a function that stops it. `openConnections`: the client
 * connections this process serves now (none for a primary with workers).
 */
export function collectWhenIdle(log: Logger, openConnections: () => number, intervalMs = 10_000): () => void {
  const policy = new IdleCollectionPolicy();
  const flushing = flushesBytecode([...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)]);
  let last = performance.eventLoopUtilization();
  const clients = new ClientActivity();
  let changesBefore = changesApplied;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(now, last);
    last = now;
    // Connected at either end of the interval, or in it: a pause would stall someone's request.
    const clientsConnected = clients.look(openConnections());
    const changed = changesApplied !== changesBefore;
    changesBefore = changesApplied;
    const heapBytes = getHeapStatistics().total_heap_size;
    // Every 10 s at debug: why it did or did not collect.
    log.debug({ utilization: Math.round(utilization * 1000) / 1000, clientsConnected, changed, heapMB: Math.round(heapBytes / 1e6) }, 'idle collector: looked');
    if (!policy.shouldCollect(utilization, clientsConnected, changed, heapBytes)) return;
    const stats = getHeapStatistics();
    const before = stats.total_heap_size;
    const flavor = policy.flavor();
    const started = performance.now();
    const flush = flushing && compilersStillOff();
    if (flush) setFlagsFromString(`--bytecode-old-age=${QUIET_BYTECODE_OLD_AGE}`);
    try {
      gcFunction()({ type: 'major', execution: 'sync', flavor });
    } finally {
      if (flush) setFlagsFromString(`--bytecode-old-age=${V8_BYTECODE_OLD_AGE}`);
    }
    const afterStats = getHeapStatistics();
    const after = afterStats.total_heap_size;
    policy.collected(after, afterStats.used_heap_size);
    const ms = Math.round(performance.now() - started);
    // A pause a change could notice is worth a line; the usual few ms are not.
    log[ms >= NOTABLE_PAUSE_MS ? 'info' : 'debug']({ heapBeforeMB: Math.round(before / 1e6), heapAfterMB: Math.round(after / 1e6), liveMB: Math.round(afterStats.used_heap_size / 1e6), flavor, ...(flush ? { bytecodeFlushed: true } : {}), ms }, 'quiet: gave unused heap memory back');
    // The collection's own pause does not count as busy in the next interval.
    last = performance.eventLoopUtilization();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
