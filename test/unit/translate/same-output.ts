// What a RoutingConfig says, for comparing a patched translation with a fresh one: without
// the translator's bookkeeping (serial, delta), and with every map (the patched maps of
// hosts and routes, the status views) made a plain Map in key order, so two configs
// compare by content, not by how their maps were built.
import type { RoutingConfig } from '../../../src/model/config.ts';

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
