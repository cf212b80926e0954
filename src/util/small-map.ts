// A string-keyed map for the many small maps of a large table: the path keys of one
// host's group (most hosts have one to a few paths), the resolved ports of one Service.
// An empty Map costs about 250 bytes: at 20,000 hosts the two Maps of each group held
// 10 MB. Up to SMALL keys are a flat [key, value, key, value...] list, searched in order
// (comparing a handful of strings costs no more than hashing the request path for a
// Map); more become a Map.

const SMALL = 8;

export class SmallMap<V> {
  private list: (string | V)[] | undefined = undefined;
  private map: Map<string, V> | undefined = undefined;

  get size(): number {
    return this.map !== undefined ? this.map.size : this.list !== undefined ? this.list.length >> 1 : 0;
  }

  get(key: string): V | undefined {
    const list = this.list;
    if (list !== undefined) {
      for (let i = 0; i < list.length; i += 2) if (list[i] === key) return list[i + 1] as V;
      return undefined;
    }
    return this.map?.get(key);
  }

  /** Whether `key` has a value (undefined is never stored as one). */
  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** The keys in insertion order, as Map.keys(). */
  *keys(): IterableIterator<string> {
    for (const [key] of this.entries()) yield key;
  }

  /** [key, value] pairs in insertion order, as Map.entries(). */
  *entries(): IterableIterator<[string, V]> {
    const list = this.list;
    if (list !== undefined) {
      for (let i = 0; i < list.length; i += 2) yield [list[i] as string, list[i + 1] as V];
      return;
    }
    if (this.map !== undefined) yield* this.map.entries();
  }

  set(key: string, value: V): void {
    if (this.map !== undefined) {
      this.map.set(key, value);
      return;
    }
    const list = this.list ?? [];
    for (let i = 0; i < list.length; i += 2) {
      if (list[i] === key) {
        list[i + 1] = value;
        return;
      }
    }
    if (list.length < SMALL * 2) {
      // A new list of exactly this length: push() would leave room for 17 entries.
      this.list = list.concat(key, value);
      return;
    }
    this.map = new Map();
    for (let i = 0; i < list.length; i += 2) this.map.set(list[i] as string, list[i + 1] as V);
    this.map.set(key, value);
    this.list = undefined;
  }
}
