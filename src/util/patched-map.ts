// An immutable map that a change copies in proportion to the change, not to the map: a
// shared base plus a small patch of the keys changed since the base was made. A route
// table of 20,000 hosts patched for one Ingress must not copy 20,000 entries. Lookups
// cost one more (small) map probe while a patch exists; the patch is folded into a new
// base once it outgrows the square root of the base, so the copies stay amortized
// O(sqrt(n)) per changed key.
const GONE: unique symbol = Symbol('gone');
type Gone = typeof GONE;

export class PatchedMap<K, V> implements ReadonlyMap<K, V> {
  readonly size: number;
  private readonly base: ReadonlyMap<K, V>;
  private readonly patch: ReadonlyMap<K, V | Gone>;

  private constructor(base: ReadonlyMap<K, V>, patch: ReadonlyMap<K, V | Gone>, size: number) {
    this.base = base;
    this.patch = patch;
    this.size = size;
  }

  /** A PatchedMap holding the entries of `map` (taken over: do not change it afterwards). */
  static of<K, V>(map: ReadonlyMap<K, V> = new Map()): PatchedMap<K, V> {
    return map instanceof PatchedMap ? (map as PatchedMap<K, V>) : new PatchedMap(map, new Map(), map.size);
  }

  get(key: K): V | undefined {
    if (this.patch.size !== 0) {
      const value = this.patch.get(key);
      if (value !== undefined) return value === GONE ? undefined : value;
    }
    return this.base.get(key);
  }

  has(key: K): boolean {
    return this.get(key) !== undefined;
  }

  /** A new map with these changes (undefined: delete the key); this one is unchanged. */
  with(changes: Iterable<readonly [K, V | undefined]>): PatchedMap<K, V> {
    const patch = new Map(this.patch);
    let size = this.size;
    for (const [key, value] of changes) {
      const has = value !== undefined;
      const before = patch.get(key);
      const existed = before === undefined ? this.base.get(key) !== undefined : before !== GONE;
      if (has) patch.set(key, value);
      else if (this.base.get(key) !== undefined) patch.set(key, GONE);
      else patch.delete(key);
      size += (has ? 1 : 0) - (existed ? 1 : 0);
    }
    if (patch.size * patch.size <= Math.max(this.base.size, 1024)) return new PatchedMap(this.base, patch, size);
    // Fold the patch into a new base.
    const base = new Map(this.base);
    for (const [key, value] of patch) {
      if (value === GONE) base.delete(key);
      else base.set(key, value);
    }
    return new PatchedMap(base, new Map(), base.size);
  }

  *entries(): MapIterator<[K, V]> {
    for (const entry of this.base) if (!this.patch.has(entry[0])) yield entry;
    for (const [key, value] of this.patch) if (value !== GONE) yield [key, value];
  }

  *keys(): MapIterator<K> {
    for (const [key] of this.entries()) yield key;
  }

  *values(): MapIterator<V> {
    for (const [, value] of this.entries()) yield value;
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  forEach(callback: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.entries()) callback.call(thisArg, value, key, this);
  }
}
