// V8's compilers past the interpreter (Sparkplug, Maglev, TurboFan) start off in a process
// that bin/portico.js started (STARTUP_COMPILER_FLAGS, bin/node-flags.js says why) and are
// turned on here: once the process serves (a single process or the primary at ready, a
// worker at its first routing config), or once it has been starting for a second,
// whichever comes first. Only those three flags, exactly as bin/node-flags.js spells
// them, mean "deferred": an operator's own compiler flags are never overridden.
import { setFlagsFromString } from 'node:v8';
import type { Logger } from 'pino';

/** Also in bin/node-flags.js (a unit test keeps the two equal). */
export const STARTUP_COMPILER_FLAGS = ['--no-sparkplug', '--no-maglev', '--no-turbofan'] as const;

/** How long start-up runs without the compilers at most (ms since the process started). */
export const STARTUP_BUDGET_MS = 1000;

let deferred = STARTUP_COMPILER_FLAGS.every((flag) => process.execArgv.includes(flag));

/** Whether the compilers are still off, waiting for turnOnCompilers(). */
export function compilersDeferred(): boolean {
  return deferred;
}

/** Turns the deferred compilers on (once; nothing if they were not deferred). */
export function turnOnCompilers(log: Logger, why: string): void {
  if (!deferred) return;
  deferred = false;
  for (const flag of STARTUP_COMPILER_FLAGS) setFlagsFromString(flag.replace('--no-', '--'));
  log.debug({ why, sinceStartMs: Math.round(performance.now()) }, 'optimizing compilers on');
}

/** Turns them on STARTUP_BUDGET_MS after the process started, unless something did before. */
export function turnOnCompilersAfterBudget(log: Logger): void {
  if (!deferred) return;
  setTimeout(() => turnOnCompilers(log, `start-up took over ${STARTUP_BUDGET_MS} ms`), Math.max(0, STARTUP_BUDGET_MS - performance.now())).unref();
}
