// Deferred compilers (src/util/compilers.ts): turned off as bin/portico.js turns them off,
// a hot function runs in the interpreter until work arrives after start-up, and V8
// optimises it after; a process that did not defer them (an operator's own compiler
// flags) is left as it is.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { COMPILERS_ON_FLAGS, STARTUP_COMPILER_FLAGS } from '../../../src/util/compilers.ts';

const MODULE = new URL('../../../src/util/compilers.ts', import.meta.url).href;

/** Runs a hot function before and after start-up is over and work arrives, in a node with `flags`, deferring first if `defer`; V8's own view of it. */
function run(defer: boolean, flags: readonly string[] = []): { deferredBefore: boolean; workBeforeStartUpOver: boolean; optimizedBefore: boolean; optimizedAfter: boolean; logged: unknown[] } {
  const script = `
    const { compilersDeferredAtStart, startUpOver, workArrived, STARTUP_COMPILER_FLAGS } = await import(${JSON.stringify(MODULE)});
    // As bin/portico.js does.
    if (${defer}) {
      for (const flag of STARTUP_COMPILER_FLAGS) (await import('node:v8')).setFlagsFromString(flag);
      compilersDeferredAtStart();
    }
    function sum(s) { let n = 0; for (let i = 0; i < s.length; i++) n += s.charCodeAt(i); return n; }
    const hot = (times) => { for (let i = 0; i < times; i++) sum('portico' + i); };
    // V8's OptimizationStatus: bit 4 is "optimized" (Maglev or TurboFan code).
    const optimized = () => (%GetOptimizationStatus(sum) & 16) !== 0;
    const logged = [];
    const log = { debug: (fields, msg) => logged.push({ ...fields, msg }) };
    // Before start-up is over, workArrived only says whether they are on.
    const deferredBefore = !workArrived(log, 'probe');
    hot(300000);
    const optimizedBefore = optimized();
    // Work during start-up does not count: start-up has its own budget.
    const workBeforeStartUpOver = workArrived(log, 'too early');
    startUpOver();
    workArrived(log, 'test');
    workArrived(log, 'again');
    hot(1000000);
    console.log(JSON.stringify({ deferredBefore, workBeforeStartUpOver, optimizedBefore, optimizedAfter: optimized(), logged }));
  `;
  const out = execFileSync(process.execPath, [...flags, '--allow-natives-syntax', '--input-type=module', '-e', script], { encoding: 'utf8' });
  return JSON.parse(out);
}

test('deferred, a hot function stays unoptimised until work arrives after start-up', () => {
  const result = run(true);
  assert.equal(result.deferredBefore, true);
  assert.equal(result.workBeforeStartUpOver, false, 'still off');
  assert.equal(result.optimizedBefore, false);
  assert.equal(result.optimizedAfter, true);
  assert.equal(result.logged.length, 1);
  assert.deepEqual((result.logged[0] as { why: string; msg: string }).why, 'test');
});

test('a start-up that runs past its budget turns the compilers on by itself', () => {
  const script = `
    const { compilersDeferredAtStart, startingUp, workArrived, STARTUP_BUDGET_MS, STARTUP_COMPILER_FLAGS } = await import(${JSON.stringify(MODULE)});
    for (const flag of STARTUP_COMPILER_FLAGS) (await import('node:v8')).setFlagsFromString(flag);
    compilersDeferredAtStart();
    const logged = [];
    startingUp({ debug: (fields, msg) => logged.push({ ...fields, msg }) });
    const on = () => workArrived({ debug() {} }, 'probe'); // start-up not over: only says whether they are on
    const before = !on();
    setTimeout(() => console.log(JSON.stringify({ before, after: !on(), logged })), STARTUP_BUDGET_MS + 100);
  `;
  const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }));
  assert.equal(out.before, true);
  assert.equal(out.after, false);
  assert.match(out.logged[0].why, /^start-up took over/);
});

test('not deferred (an operator\'s own compiler flags), nothing is turned on or off', () => {
  const plain = run(false);
  assert.equal(plain.deferredBefore, false);
  assert.equal(plain.optimizedBefore, true);
  assert.deepEqual(plain.logged, []);
  const own = run(false, ['--no-maglev', '--no-turbofan']);
  assert.equal(own.deferredBefore, false);
  assert.equal(own.optimizedAfter, false, 'the operator turned the optimising compilers off; they stay off');
  assert.deepEqual(own.logged, []);
});

test('turned on, every flag V8 derived from the start-up flags is back at its default (this node binary)', () => {
  const values = (flags: readonly string[]) =>
    new Set(execFileSync(process.execPath, [...flags, '--print-flag-values', '-e', '0'], { encoding: 'utf8' }).split('\n').filter((l) => l.startsWith('--')));
  const defaults = values([]);
  const started = values(STARTUP_COMPILER_FLAGS);
  // --opt is an alias of --turbofan.
  const changed = [...defaults].filter((flag) => !started.has(flag) && flag !== '--opt');
  assert.ok(changed.includes('--maglev'), 'the diff sees the start-up flags themselves');
  assert.deepEqual(new Set(changed), new Set(COMPILERS_ON_FLAGS));
});

test('bin/portico.js turns off exactly STARTUP_COMPILER_FLAGS (it spells them out before any import)', () => {
  const bin = readFileSync(new URL('../../../bin/portico.js', import.meta.url), 'utf8');
  assert.ok(bin.includes(JSON.stringify(STARTUP_COMPILER_FLAGS).replaceAll('"', "'").replaceAll(',', ', ')), 'the same list in bin/portico.js');
});
