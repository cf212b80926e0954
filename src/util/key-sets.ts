// A Map from a key to a set of strings, for indexes where most keys have one member (the
// Ingresses that read a Service: usually one). A key with one member holds the string
// itself, not a Set: at 10,000 Services, 10,000 one-member Sets cost about 2 MB.

const NONE: readonly string[] = Object.freeze([]);

export class KeySets {
  private readonly map = new Map<string, string | Set<string>>();

  get size(): number {
    return this.map.size;
  }

  add(key: string, member: string): void {
    const now = this.map.get(key);
    if (now === undefined) this.map.set(key, member);
    else if (typeof now === 'string') {
      if (now !== member) this.map.set(key, new Set([now, member]));
    } else now.add(member);
  }

  delete(key: string, member: string): void {
    const now = this.map.get(key);
    if (now === undefined) return;
    if (typeof now === 'string') {
      if (now === member) this.map.delete(key);
      return;
    }
    now.delete(member);
    if (now.size === 1) this.map.set(key, now.values().next().value!);
  }

  /** The members of `key` (none: an empty list). */
  members(key: string): Iterable<string> {
    const now = this.map.get(key);
    return now === undefined ? NONE : typeof now === 'string' ? [now] : now;
  }

  has(key: string): boolean {
    return this.map.has(key);
  }
}
