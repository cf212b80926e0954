// Readers for wire JSON shared by the sanitizers: null counts as absent (YAML "key:"
// with no value), a wrong type throws Invalid with the field and what was expected.

import { flatString, internString } from '../util/flat-string.ts';

export type Json = Record<string, unknown>;

export class Invalid extends Error {}

export function fail(field: string, detail: string): never {
  throw new Invalid(`${field}: ${detail}`);
}

export function isPlainObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}


export function optObject(v: unknown, field: string): Json | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isPlainObject(v)) fail(field, 'must be an object');
  return v;
}

export function reqObject(v: unknown, field: string): Json {
  return optObject(v, field) ?? fail(field, 'is required');
}

export function optArray(v: unknown, field: string): unknown[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) fail(field, 'must be a list');
  return v;
}

export function optString(v: unknown, field: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') fail(field, `must be a string, not ${describe(v)}`);
  return unsliced(v);
}

/** optString for fields whose values repeat across objects (namespaces, names of Services and ports, enumerations): one shared copy. */
export function optSharedString(v: unknown, field: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') fail(field, `must be a string, not ${describe(v)}`);
  return internString(v);
}

export function reqSharedString(v: unknown, field: string): string {
  const s = optSharedString(v, field);
  if (s === undefined || s === '') fail(field, 'is required');
  return s;
}

/**
 * `text`, not holding on to the text it was cut from: a YAML parser's values are slices
 * of the file's text, and at 10,000 Ingress files every stored host held its 2 KB file.
 */
export const unsliced = flatString;

export function reqString(v: unknown, field: string): string {
  const s = optString(v, field);
  if (s === undefined || s === '') fail(field, 'is required');
  return s;
}

export function optBool(v: unknown, field: string): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') fail(field, `must be true or false, not ${describe(v)}`);
  return v;
}

export function optInt(v: unknown, field: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v)) fail(field, `must be an integer, not ${describe(v)}`);
  return v;
}

export function optPort(v: unknown, field: string): number | undefined {
  const n = optInt(v, field);
  if (n !== undefined && (n < 1 || n > 65535)) fail(field, `must be between 1 and 65535, not ${n}`);
  return n;
}

export function reqPort(v: unknown, field: string): number {
  return optPort(v, field) ?? fail(field, 'is required');
}

export function optStringList(v: unknown, field: string): string[] | undefined {
  return optArray(v, field)?.map((item, i) => reqString(item, `${field}[${i}]`));
}

/**
 * `shared`: values are interned (labels: a Service's name on each of its EndpointSlices).
 * Short values are interned either way: annotations such as "true" or "8m" repeat on
 * thousands of Ingresses, and a copy each cost 1 MB at 10,000 Ingresses with four of them.
 */
/** Values this short are kept as interned copies (longer ones, an origin or an allow-list, are mostly one Ingress's own). */
const SHORT_VALUE = 12;

export function optStringMap(v: unknown, field: string, drop?: ReadonlySet<string>, shared = false): Record<string, string> | undefined {
  const obj = optObject(v, field);
  if (!obj) return undefined;
  const keys: string[] = [];
  const values: string[] = [];
  for (const [key, value] of Object.entries(obj)) {
    if (drop?.has(key)) continue;
    // The API server rejects `key: true` in labels and annotations; so do we, with the fix in the message.
    if (typeof value !== 'string') fail(`${field}[${JSON.stringify(key)}]`, `must be a string, not ${describe(value)} (quote the value)`);
    keys.push(key);
    values.push(shared || value.length <= SHORT_VALUE ? internString(value) : unsliced(value));
  }
  return exactObject(keys, values) as Record<string, string>;
}

export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
  return String(v);
}

/**
 * Copies `obj` without its undefined fields, so stored objects compare and print cleanly.
 * A new object rather than `delete`: deleting a field turns an object into a dictionary
 * (about 300 bytes more, and a hidden class of its own once frozen), and the store keeps
 * hundreds of thousands of these at 10,000 Ingresses.
 */
export function compact<T extends object>(obj: T): T {
  const keys: string[] = [];
  const values: unknown[] = [];
  for (const key of Object.keys(obj)) {
    const value = (obj as Record<string, unknown>)[key];
    if (value === undefined) continue;
    keys.push(key);
    values.push(value);
  }
  return exactObject(keys, values) as T;
}

/**
 * Makers of objects of a given list of keys, as object literals: an object filled from
 * `{}` has room for four fields whatever it holds (56 bytes for one or two) and keeps any
 * more in a separate array, where a literal's object is its fields' size. Bounded: keys
 * come from users' objects (labels, annotations); beyond MAX_SHAPES, objects are filled.
 */
const makers = new Map<string, (values: readonly unknown[]) => object>();
const MAX_SHAPES = 500;

/** An object of `keys` (distinct, in this order) and `values`, no bigger than its fields need. */
export function exactObject(keys: readonly string[], values: readonly unknown[]): object {
  if (keys.length === 0) return {};
  const shape = keys.join('\0');
  let make = makers.get(shape);
  if (make === undefined) {
    // "__proto__" in a literal sets the prototype; index-like keys are elements anyway.
    if (makers.size >= MAX_SHAPES || keys.includes('__proto__') || keys.some((k) => k.includes('\0'))) return filled(keys, values);
    make = new Function('v', `return {${keys.map((k, i) => `${JSON.stringify(k)}: v[${i}]`).join(', ')}};`) as (values: readonly unknown[]) => object;
    makers.set(shape, make);
  }
  return make(values);
}

function filled(keys: readonly string[], values: readonly unknown[]): object {
  const out: Record<string, unknown> = {};
  for (let i = 0; i < keys.length; i++) out[keys[i]!] = values[i];
  return out;
}

export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/**
 * Shared values so far, by key; cleared when full, as interned strings are. Small: its keys
 * are JSON (at 20,000 they held 1.3 MB), and what repeats (port lists, the status, the
 * backends of one Ingress's paths) is met again soon after a clear.
 */
const sharedValues = new Map<string, unknown>();
const MAX_SHARED_VALUES = 2_000;

/**
 * One deeply frozen value for every part of a stored object that `key` describes fully:
 * parts that repeat across objects and within one (a Service's port list, an
 * EndpointSlice's, an Ingress path's backend, the load-balancer status portico writes on
 * every Ingress). Nothing reads the identity of such a part (memoization is by whole
 * objects), and stored objects are never mutated, so one copy can serve them all.
 */
export function sharedValue<T>(key: string, make: () => T): T {
  let shared = sharedValues.get(key) as T | undefined;
  if (shared === undefined) {
    if (sharedValues.size >= MAX_SHARED_VALUES) sharedValues.clear();
    shared = deepFreeze(make());
    sharedValues.set(key, shared);
  }
  return shared;
}

/** `value` (as built by a sanitizer), or the equal one already shared: keyed by its JSON under `what`. */
export function shared<T>(what: string, value: T): T {
  return sharedValue(`${what}:${JSON.stringify(value)}`, () => value);
}
