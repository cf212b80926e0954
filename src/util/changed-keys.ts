// What a delta names: the keys of a map whose value is not the one of before, and those
// gone. Shared by the translator (which Gateway routes changed) and the primary's messages
// to its workers (which route groups and certificates to ship).

/** Each item the very object of the other list, in the same place. */
export function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  return a === b || (a.length === b.length && a.every((item, i) => item === b[i]));
}

/** The keys of `now` whose value is not `same` as in `before` (or new), then the keys only `before` has. */
export function changedKeys<K, V>(now: ReadonlyMap<K, V>, before: ReadonlyMap<K, V>, same: (a: V, b: V) => boolean = Object.is): K[] {
  const out: K[] = [];
  for (const [key, value] of now) {
    const old = before.get(key);
    if (old === undefined || !same(value, old)) out.push(key);
  }
  for (const key of before.keys()) if (!now.has(key)) out.push(key);
  return out;
}
