// What a RoutingConfig says, for comparing a patched translation with a fresh one: without
// the translator's bookkeeping (serial, delta), and with every map (the patched maps of
// hosts and routes, the status views) made a plain Map in key order, so two configs
// compare by content, not by how their maps were built.
import assert from 'node:assert/strict';
import type { RoutingConfig } from '../../../src/model/config.ts';
import type { KubeObject } from '../../../src/model/k8s.ts';
import { translate, type IncrementalTranslator } from '../../../src/translate/index.ts';
import { OPTIONS, applyStep } from './fixtures.ts';

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

/** [what, the change, how many objects the translator must look at or translate again] */
export type Step = [string, (objects: Map<string, KubeObject>) => void, number];

/**
 * Applies each step to `objects` and translates it with `memo`, checking the output against
 * a fresh translation and `work()` (a counter of the translator) against the step's count.
 * Returns the objects after the last step.
 */
export function checkSteps(memo: IncrementalTranslator, objects: ReadonlyMap<string, KubeObject>, steps: readonly Step[], work: () => number, what: string): ReadonlyMap<string, KubeObject> {
  for (const [name, change, expected] of steps) {
    const { next, changes, snapshot } = applyStep(objects, change);
    objects = next;
    const before = work();
    const config = memo(snapshot, OPTIONS, changes);
    assert.deepEqual(sameOutput(config), sameOutput(translate(snapshot, OPTIONS)), `${name}: the same output as a fresh translation`);
    assert.equal(work() - before, expected, `${name}: ${what}`);
    assert.ok(config.delta !== undefined, `${name}: a delta of the previous config`);
  }
  return objects;
}
