// Deferred compilers (src/util/compilers.ts): a process started with the start-up flags
// runs a hot function in the interpreter until turnOnCompilers(), and V8 optimises it
// after; a process started without them is left as it is.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { STARTUP_COMPILER_FLAGS } from '../../../src/util/compilers.ts';

const MODULE = new URL('../../../src/util/compilers.ts', import.meta.url).href;

/** Runs a hot function before and after turnOnCompilers() in a node with `flags`; V8's own view of it. */
function run(flags: readonly string[]): { deferredBefore: boolean; optimizedBefore: boolean; optimizedAfter: boolean; logged: unknown[] } {
  const script = `
    const { compilersDeferred, turnOnCompilers } = await import(${JSON.stringify(MODULE)});
    function sum(s) { let n = 0; for (let i = 0; i < s.length; i++) n += s.charCodeAt(i); return n; }
    const hot = (times) => { for (let i = 0; i < times; i++) sum('portico' + i); };
    // V8's OptimizationStatus: bit 4 is "optimized" (Maglev or TurboFan code).
    const optimized = () => (%GetOptimizationStatus(sum) & 16) !== 0;
    const deferredBefore = compilersDeferred();
    hot(300000);
    const optimizedBefore = optimized();
    const logged = [];
    turnOnCompilers({ debug: (fields, msg) => logged.push({ ...fields, msg }) }, 'test');
    hot(1000000);
    console.log(JSON.stringify({ deferredBefore, optimizedBefore, optimizedAfter: optimized(), logged }));
  `;
  const out = execFileSync(process.execPath, [...flags, '--allow-natives-syntax', '--input-type=module', '-e', script], { encoding: 'utf8' });
  return JSON.parse(out);
}

test('with the start-up flags, a hot function stays unoptimised until the compilers are turned on', () => {
  const result = run(STARTUP_COMPILER_FLAGS);
  assert.equal(result.deferredBefore, true);
  assert.equal(result.optimizedBefore, false);
  assert.equal(result.optimizedAfter, true);
  assert.equal(result.logged.length, 1);
  assert.deepEqual((result.logged[0] as { why: string; msg: string }).why, 'test');
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
