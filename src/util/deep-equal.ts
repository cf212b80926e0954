// Equality of plain data (what JSON or YAML parsing makes, and what translation builds from it).

/**
 * Plain objects and arrays compared by content, primitives by value; anything else (a Map,
 * a Set, a RegExp, a Buffer) only when it is the very object: their contents are not
 * enumerable keys, and comparing those would call any two of a kind equal.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b) || !isPlain(a) || !isPlain(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = Object.keys(x);
  if (keys.length !== Object.keys(y).length) return false;
  for (const key of keys) if (!Object.hasOwn(y, key) || !deepEqual(x[key], y[key])) return false;
  return true;
}

function isPlain(o: object): boolean {
  const proto = Object.getPrototypeOf(o) as unknown;
  return proto === Object.prototype || proto === null;
}
