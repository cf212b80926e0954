// The cache's memory: entries in least-recently-used order, bounded in bytes (headers,
// body and keys of every entry), and the lazy bans. One store per process (worker).
//
// An entry is one variant of a URL: the key is the URL, the route and the request's
// values of the fields the response's Vary names. Purge removes every variant of a URL.
// A ban is not applied when issued: it is kept in a list, and an entry older than a ban
// that matches it is dropped when a lookup finds it (as Varnish's bans); bans older than
// every entry are trimmed, and a long list is applied to all entries at once.
import type { CacheEntry } from './entry.ts';

interface Ban {
  readonly host: string;
  readonly pattern: RegExp;
  /** Sequence number when issued: it applies to entries stored before. */
  readonly seq: number;
}

/** Beyond this many pending bans, they are applied to every entry and the list emptied. */
const MAX_PENDING_BANS = 128;

export interface StoreCounters {
  evictions: number;
}

export class CacheStore {
  readonly maxBytes: number;
  /** Larger responses pass through uncached. */
  readonly maxObjectBytes: number;
  bytes = 0;
  /** Least recently used first (Map order: a hit moves its entry to the end). */
  private readonly entries = new Map<string, CacheEntry>();
  /** The variants of each URL ("host path?query"). */
  private readonly variants = new Map<string, Set<string>>();
  /** Vary field names of a URL on a route, with how many entries use them. */
  private readonly vary = new Map<string, { names: string; count: number }>();
  private bans: Ban[] = [];
  private seq = 0;
  readonly counters: StoreCounters = { evictions: 0 };

  constructor(maxBytes: number, maxObjectBytes = defaultMaxObjectBytes(maxBytes)) {
    this.maxBytes = maxBytes;
    this.maxObjectBytes = maxObjectBytes;
  }

  get size(): number {
    return this.entries.size;
  }

  get pendingBans(): number {
    return this.bans.length;
  }

  /** The Vary field names stored for `base` (URL and route); "" when none (or nothing stored). */
  varyNames(base: string): string {
    return this.vary.get(base)?.names ?? '';
  }

  /** The entry under `key`, unless a ban covers it (then it is dropped); marks it recently used. */
  get(key: string): CacheEntry | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (this.bans.length !== 0 && this.banned(entry)) {
      this.remove(entry);
      return undefined;
    }
    // Move to the most recently used end.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry;
  }

  /** Stores `entry` (replacing its key), then evicts the least recently used until within bounds. */
  put(entry: CacheEntry, base: string, varyNames: string): boolean {
    if (entry.size > this.maxObjectBytes || entry.size > this.maxBytes) return false;
    const old = this.entries.get(entry.key);
    if (old !== undefined) this.remove(old);
    entry.storedAt = ++this.seq;
    this.entries.set(entry.key, entry);
    this.bytes += entry.size;
    let keys = this.variants.get(entry.primary);
    if (keys === undefined) this.variants.set(entry.primary, (keys = new Set()));
    keys.add(entry.key);
    const v = this.vary.get(base);
    if (v === undefined) this.vary.set(base, { names: varyNames, count: 1 });
    else {
      v.names = varyNames;
      v.count++;
    }
    varyBase.set(entry, base);
    while (this.bytes > this.maxBytes) {
      const oldest = this.entries.values().next().value as CacheEntry;
      this.remove(oldest);
      this.counters.evictions++;
    }
    return true;
  }

  /** Removes every variant of each URL; returns how many entries went. */
  purge(host: string, paths: readonly string[]): number {
    let removed = 0;
    for (const path of paths) {
      const keys = this.variants.get(`${host} ${path}`);
      if (keys === undefined) continue;
      for (const key of [...keys]) {
        const entry = this.entries.get(key);
        if (entry !== undefined) {
          this.remove(entry);
          removed++;
        }
      }
    }
    return removed;
  }

  /** Bans the entries of `host` whose path (with query) matches `pattern`, lazily. */
  ban(host: string, pattern: RegExp): void {
    if (this.entries.size === 0) return;
    this.bans.push({ host, pattern, seq: ++this.seq });
    if (this.bans.length > MAX_PENDING_BANS) this.applyBans();
    else this.trimBans();
  }

  /** Removes one entry (evicted, purged, banned or replaced). */
  remove(entry: CacheEntry): void {
    if (this.entries.get(entry.key) !== entry) return;
    this.entries.delete(entry.key);
    this.bytes -= entry.size;
    const keys = this.variants.get(entry.primary);
    if (keys !== undefined) {
      keys.delete(entry.key);
      if (keys.size === 0) this.variants.delete(entry.primary);
    }
    const base = varyBase.get(entry);
    const v = base === undefined ? undefined : this.vary.get(base);
    if (v !== undefined && --v.count === 0) this.vary.delete(base!);
    if (this.entries.size === 0) this.bans = [];
  }

  private banned(entry: CacheEntry): boolean {
    const bans = this.bans;
    // Newest last: stop at the first ban issued before the entry was stored.
    for (let i = bans.length - 1; i >= 0; i--) {
      const ban = bans[i]!;
      if (ban.seq < entry.storedAt) return false;
      if (ban.host === entry.host && ban.pattern.test(entry.path)) return true;
    }
    return false;
  }

  /** Drops the bans issued before the oldest entry was stored: nothing left for them to cover. */
  private trimBans(): void {
    let oldest = Infinity;
    for (const entry of this.entries.values()) if (entry.storedAt < oldest) oldest = entry.storedAt;
    this.bans = this.bans.filter((b) => b.seq > oldest);
  }

  /** Tests every entry against the pending bans now (the lurker's walk, all at once), then forgets them. */
  private applyBans(): void {
    for (const entry of [...this.entries.values()]) if (this.banned(entry)) this.remove(entry);
    this.bans = [];
  }
}

/** Each entry's Vary base (URL and route), for the reference count. */
const varyBase = new WeakMap<CacheEntry, string>();

/** Objects up to an eighth of the cache, at most 64 MiB: one object never empties the cache. */
export function defaultMaxObjectBytes(maxBytes: number): number {
  return Math.min(Math.floor(maxBytes / 8), 64 * 1024 * 1024);
}
