// Deferred compilers (src/util/compilers.ts): a process started with the start-up flags
// runs a hot function in the interpreter until work arrives after start-up, and V8
// optimises it after; a process started without them is left as it is.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { STARTUP_COMPILER_FLAGS } from '../../../src/util/compilers.ts';

const MODULE = new URL('../../../src/util/compilers.ts', import.meta.url).href;

/** Runs a hot function before and after start-up is over and work arrives, in a node with `flags`; V8's own view of it. */
function run(flags: readonly string[]): { deferredBefore: boolean; workBeforeStartUpOver: boolean; optimizedBefore: boolean; optimizedAfter: boolean; logged: unknown[] } {
  const script = `
    const { compilersDeferred, startUpOver, workArrived } = await import(${JSON.stringify(MODULE)});
    function sum(s) { let n = 0; for (let i = 0; i < s.length; i++) n += s.charCodeAt(i); return n; }
    const hot = (times) => { for (let i = 0; i < times; i++) sum('portico' + i); };
    // V8's OptimizationStatus: bit 4 is "optimized" (Maglev or TurboFan code).
    const optimized = () => (%GetOptimizationStatus(sum) & 16) !== 0;
    const deferredBefore = compilersDeferred();
    hot(300000);
    const optimizedBefore = optimized();
    const logged = [];
    const log = { debug: (fields, msg) => logged.push({ ...fields, msg }) };
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

test('with the start-up flags, a hot function stays unoptimised until work arrives after start-up', () => {
  const result = run(STARTUP_COMPILER_FLAGS);
  assert.equal(result.deferredBefore, true);
  assert.equal(result.workBeforeStartUpOver, false, 'still off');
  assert.equal(result.optimizedBefore, false);
  assert.equal(result.optimizedAfter, true);
  assert.equal(result.logged.length, 1);
  assert.deepEqual((result.logged[0] as { why: string; msg: string }).why, 'test');
});

test('a start-up that runs past its budget turns the compilers on by itself', () => {
  const script = `
    const { startingUp, compilersDeferred, STARTUP_BUDGET_MS } = await import(${JSON.stringify(MODULE)});
    const logged = [];
    startingUp({ debug: (fields, msg) => logged.push({ ...fields, msg }) });
    const before = compilersDeferred();
    setTimeout(() => console.log(JSON.stringify({ before, after: compilersDeferred(), logged })), STARTUP_BUDGET_MS + 100);
  `;
  const out = JSON.parse(execFileSync(process.execPath, [...STARTUP_COMPILER_FLAGS, '--input-type=module', '-e', script], { encoding: 'utf8' }));
  assert.equal(out.before, true);
  assert.equal(out.after, false);
  assert.match(out.logged[0].why, /^start-up took over/);
});

test('without them (or with an operator flag of its own) nothing is turned on', () => {
  const plain = run([]);
  assert.equal(plain.deferredBefore, false);
  assert.equal(plain.optimizedBefore, true);
  assert.deepEqual(plain.logged, []);
  const own = run(['--no-maglev', '--no-turbofan']);
  assert.equal(own.deferredBefore, false);
  assert.equal(own.optimizedAfter, false, 'the operator turned the optimising compilers off; they stay off');
  assert.deepEqual(own.logged, []);
});
