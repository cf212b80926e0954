// Condition helpers for Gateway API status (types and reasons as the spec names them).
import type { Condition } from '../../model/k8s.ts';

export function condition(type: string, ok: boolean, reason: string, message: string, generation: number | undefined): Condition {
  const c: Condition = { type, status: ok ? 'True' : 'False', reason, message };
  if (generation !== undefined) c.observedGeneration = generation;
  return c;
}

/** Creation time for ordering: objects without one (standalone manifests) sort last, then by name. */
export function createdAt(meta: { creationTimestamp?: string }): string {
  return meta.creationTimestamp ?? '9999';
}

export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
