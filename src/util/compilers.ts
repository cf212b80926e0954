// V8's compilers past the interpreter (Sparkplug, Maglev, TurboFan) are turned off by
// bin/portico.js before it resolves any other module, unless the operator named a compiler
// flag, and come back with the first work after start-up (a client connection,
// a changed object, a routing or endpoint change a worker receives), or during start-up
// once it has run for a second.
//
// Why: start-up is code that runs once, yet loading ~160 modules runs Node's path
// resolution hot enough to be optimised, and compiling it left every process holding the
// compilers' code pages and their output for good (bench/memory.ts idle: one process
// 83.5-84.6 MiB, each worker 69.5-70.1; now 63.5-63.7 and 60.6). An idle process compiles
// nothing: even one call after start-up of a function that was hot during it had V8
// compile it at once, which kept about 2 MiB more.
//
// At run time, not with --no-maglev etc. on Node's command line: a V8 started without
// Maglev and given it back tiered the YAML parser up only after ready at 10,000 manifest
// files, and the first changes waited 43-95 ms for a core (bench/standalone-latency.ts
// p99 42-84 ms, against 12-25 ms this way), even with the flags V8 derived from its
// absence set back (COMPILERS_ON_FLAGS).
import type { Logger } from 'pino';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { setFlagsFromString } = process.getBuiltinModule('node:v8');

/** What bin/portico.js turns off (it spells them out itself, before any import of ours). */
export const STARTUP_COMPILER_FLAGS = ['--no-sparkplug', '--no-maglev', '--no-turbofan'] as const;

/**
 * What they come back with: the three compilers, and the flags V8 derives from their
 * absence (with --no-maglev it tiers up to TurboFan after 3,000 invocations instead of
 * 10,000; without TurboFan Maglev inlines more) at V8's defaults, in case it derives them
 * when they are set at run time too. A unit test derives the list from the node binary
 * (--print-flag-values with and without STARTUP_COMPILER_FLAGS).
 */
export const COMPILERS_ON_FLAGS = [
  '--sparkplug',
  '--maglev',
  '--turbofan',
  '--invocation-count-for-turbofan=10000',
  '--maglev-overwrite-budget',
  '--osr-from-maglev',
  '--max-maglev-inlined-bytecode-size=100',
  '--min-maglev-inlining-frequency=0.95',
] as const;

/** How long start-up runs without the compilers at most (ms since the process started). */
export const STARTUP_BUDGET_MS = 1000;

let deferred = false;
let startedUp = false;
let budget: NodeJS.Timeout | undefined;

/**
 * bin/portico.js set STARTUP_COMPILER_FLAGS before loading this module (it sets them
 * before resolving any module of portico's, so not through a function of this one):
 * they are this module's to turn back on.
 */
export function compilersDeferredAtStart(): void {
  deferred = true;
}

function turnOn(log: Logger, why: string): void {
  deferred = false;
  clearTimeout(budget);
  for (const flag of COMPILERS_ON_FLAGS) setFlagsFromString(flag);
  log.debug({ why, sinceStartMs: Math.round(performance.now()) }, 'optimizing compilers on');
}

/** Start-up begins: the compilers come on STARTUP_BUDGET_MS after the process started unless it is over by then. */
export function startingUp(log: Logger): void {
  if (!deferred || budget !== undefined) return;
  budget = setTimeout(() => turnOn(log, `start-up took over ${STARTUP_BUDGET_MS} ms`), Math.max(0, STARTUP_BUDGET_MS - performance.now())).unref();
}

/** Start-up is over (ready; a worker's first routing config): from now on work turns the compilers on. */
export function startUpOver(): void {
  startedUp = true;
  clearTimeout(budget);
}

/** Whether the compilers are still off: no work since start-up, so nothing was optimized. */
export function compilersStillOff(): boolean {
  return deferred;
}

/**
 * Work arrived: the compilers come on (once). Before start-up is over this does nothing
 * (start-up has its budget). Returns whether they are on now, so a caller can stop asking.
 */
export function workArrived(log: Logger, why: string): boolean {
  if (deferred && startedUp) turnOn(log, why);
  return !deferred;
}
