// What a RoutingConfig says, for comparing a patched translation with a fresh one: without
// the translator's bookkeeping (serial, delta), and with every map (the patched maps of
// hosts and routes, the status views) made a plain Map in key order, so two configs
// compare by content, not by how their maps were built.
import assert from 'node:assert/strict';
import { problemKey, type Problem, type RoutingConfig } from '../../../src/model/config.ts';
import type { KubeObject } from '../../../src/model/k8s.ts';
import { translate, type IncrementalTranslator } from '../../../src/translate/index.ts';
import { OPTIONS, applyStep, snapshotOf } from './fixtures.ts';

function plain(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(plain);
  if (value instanceof Set) return value;
  if (value instanceof Map || (typeof (value as Map<unknown, unknown>).entries === 'function' && typeof (value as Map<unknown, unknown>).get === 'function')) {
    const entries = [...(value as Map<unknown, unknown>).entries()].sort(([a], [b]) => (String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0));
    return new Map(entries.map(([k, v]) => [k, plain(v)]));
  }
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) out[key] = plain((value as Record<string, unknown>)[key]);
  return out;
}

export function sameOutput(config: RoutingConfig): unknown {
  const { serial: _serial, delta: _delta, routes, ...rest } = config;
  return plain({ ...rest, routes });
}

const problemId = (p: Problem) => `${problemKey(p)}|${p.severity}`;

/** Problems as a multiset: "problemKey|severity" -> how many. */
function problemCounts(problems: readonly Problem[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const p of problems) counts.set(problemId(p), (counts.get(problemId(p)) ?? 0) + 1);
  return counts;
}

/**
 * `after` says how its problems differ from `before`'s (delta.problems), or is `before`
 * (nothing changed); and says it
 * exactly: the previous list, less what it removes, plus what it adds, is the new list;
 * what it removes was there, and nothing is both removed and added.
 */
export function assertProblemDelta(before: RoutingConfig, after: RoutingConfig, name: string): void {
  if (after === before) return; // nothing changed: the translator's previous config again
  const delta = after.delta?.problems;
  assert.ok(delta !== undefined, `${name}: a problem delta`);
  assert.equal(after.delta!.base, before.serial, `${name}: the delta follows the previous config`);
  const counts = problemCounts(before.problems);
  for (const p of delta.removed) {
    const n = counts.get(problemId(p)) ?? 0;
    assert.ok(n > 0, `${name}: removes ${problemId(p)}, which was there`);
    if (n === 1) counts.delete(problemId(p));
    else counts.set(problemId(p), n - 1);
  }
  for (const p of delta.added) counts.set(problemId(p), (counts.get(problemId(p)) ?? 0) + 1);
  assert.deepEqual(counts, problemCounts(after.problems), `${name}: the previous problems with the delta applied are the new ones`);
  const added = new Set(delta.added.map(problemId));
  for (const p of delta.removed) assert.ok(!added.has(problemId(p)), `${name}: ${problemId(p)} is both removed and added`);
}

/** [what, the change, how many objects the translator must look at or translate again] */
export type Step = [string, (objects: Map<string, KubeObject>) => void, number];

/**
 * Applies each step to `objects` and translates it with `memo`, checking the output against
 * a fresh translation and `work()` (a counter of the translator) against the step's count.
 * Returns the objects after the last step.
 */
export function checkSteps(memo: IncrementalTranslator, objects: ReadonlyMap<string, KubeObject>, steps: readonly Step[], work: () => number, what: string): ReadonlyMap<string, KubeObject> {
  // The config the first step follows (nothing changed since: the translator's last config).
  let previous: RoutingConfig | undefined;
  for (const [name, change, expected] of steps) {
    const { next, changes, snapshot } = applyStep(objects, change);
    previous ??= memo(snapshotOf([...objects.values()]), OPTIONS, []);
    objects = next;
    const before = work();
    const config = memo(snapshot, OPTIONS, changes);
    assert.deepEqual(sameOutput(config), sameOutput(translate(snapshot, OPTIONS)), `${name}: the same output as a fresh translation`);
    assert.equal(work() - before, expected, `${name}: ${what}`);
    assert.ok(config.delta !== undefined, `${name}: a delta of the previous config`);
    assertProblemDelta(previous, config, name);
    previous = config;
  }
  return objects;
}
