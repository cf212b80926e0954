// V8's compilers past the interpreter (Sparkplug, Maglev, TurboFan) start off in a process
// that bin/portico.js started (STARTUP_COMPILER_FLAGS; bin/node-flags.js says why). They
// come on with the first work after start-up (a client connection, a changed object, a
// routing change a worker receives), or during start-up once it has run for a second. An
// idle process compiles nothing: a single call, after start-up, of a function that was hot
// while modules loaded (node:path's normaliser) had V8 compile it at once, and that one
// compilation kept about 2 MiB of the compilers' code resident.
// Only those three flags, exactly as bin/node-flags.js spells them, mean "deferred": an
// operator's own compiler flags are never overridden.
import { setFlagsFromString } from 'node:v8';
import type { Logger } from 'pino';

/** Also in bin/node-flags.js (a unit test keeps the two equal). */
export const STARTUP_COMPILER_FLAGS = ['--no-sparkplug', '--no-maglev', '--no-turbofan'] as const;

/** How long start-up runs without the compilers at most (ms since the process started). */
export const STARTUP_BUDGET_MS = 1000;

let deferred = STARTUP_COMPILER_FLAGS.every((flag) => process.execArgv.includes(flag));
let startedUp = false;
let budget: NodeJS.Timeout | undefined;

/** Whether the compilers are still off. */
export function compilersDeferred(): boolean {
  return deferred;
}

function turnOn(log: Logger, why: string): void {
  deferred = false;
  clearTimeout(budget);
  for (const flag of STARTUP_COMPILER_FLAGS) setFlagsFromString(flag.replace('--no-', '--'));
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

/**
 * Work arrived: the compilers come on (once). Before start-up is over this does nothing
 * (start-up has its budget). Returns whether they are on now, so a caller can stop asking.
 */
export function workArrived(log: Logger, why: string): boolean {
  if (deferred && startedUp) turnOn(log, why);
  return !deferred;
}
