// The production route matcher: hash lookups only, built for tables of 10,000+ hosts.
//
// Host: one Map for exact hosts, one for wildcards keyed by the suffix after "*."
// (a wildcard covers exactly one label, so the request's first label is cut off and
// the rest looked up), and one group for rules without host. The first group that
// exists decides (no fall-through), as the Matcher contract says.
//
// Path, within a group: an exact-path Map, then a prefix Map keyed by the normalized
// prefix (trailing slashes removed, "/" -> ""). A Prefix rule matches element-wise on
// '/', so the only keys that can match are the request path itself (trailing slashes
// removed) and each of its shorter '/'-boundary prefixes; those are looked up longest
// first, so the first hit is the longest match. An exact hit always wins: its length is
// the whole request path, which no prefix can exceed, and Exact wins ties.
import type { Matcher, MatcherFactory, RouteEntry } from '../matcher.ts';

const SLASH = 0x2f;

/** "/foo/" -> "/foo", "/" -> "": the key a Prefix rule is stored under. */
export function normalizePrefix(path: string): string {
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === SLASH) end--;
  return end === path.length ? path : path.slice(0, end);
}

class PathGroup<T> {
  readonly exact = new Map<string, T>();
  readonly prefixes = new Map<string, T>();
  /** Length of the longest prefix key: longer candidates cannot match, so they are skipped. */
  longestPrefix = -1;

  add(entry: RouteEntry<T>): void {
    // The first entry for a (pathType, path) wins: translation ordered conflicts already.
    if (entry.pathType === 'Exact') {
      if (!this.exact.has(entry.path)) this.exact.set(entry.path, entry.value);
      return;
    }
    const key = normalizePrefix(entry.path);
    if (this.prefixes.has(key)) return;
    this.prefixes.set(key, entry.value);
    if (key.length > this.longestPrefix) this.longestPrefix = key.length;
  }

  match(path: string): T | undefined {
    if (this.exact.size > 0) {
      const exact = this.exact.get(path);
      if (exact !== undefined) return exact;
    }
    if (this.longestPrefix < 0) return undefined;

    // `end` is the length of the candidate prefix path.slice(0, end); it never ends in '/'.
    let end = path.length;
    if (end > this.longestPrefix) {
      // Start at the last '/' boundary that leaves a candidate short enough to exist.
      end = path.lastIndexOf('/', this.longestPrefix);
    }
    while (end > 0 && path.charCodeAt(end - 1) === SLASH) end--;
    for (;;) {
      const hit = this.prefixes.get(end === path.length ? path : path.slice(0, end));
      if (hit !== undefined) return hit;
      if (end === 0) return undefined;
      // path starts with '/', so there is always a boundary at or before end - 1.
      end = path.lastIndexOf('/', end - 1);
      while (end > 0 && path.charCodeAt(end - 1) === SLASH) end--;
    }
  }
}

class PrefixMapMatcher<T> implements Matcher<T> {
  readonly size: number;
  private readonly exactHosts = new Map<string, PathGroup<T>>();
  /** "*.foo.com" is stored under "foo.com". */
  private readonly wildcardHosts = new Map<string, PathGroup<T>>();
  private readonly hostless: PathGroup<T> | undefined;

  constructor(entries: readonly RouteEntry<T>[]) {
    this.size = entries.length;
    let hostless: PathGroup<T> | undefined;
    for (const entry of entries) {
      const host = entry.host;
      if (host === '') {
        hostless ??= new PathGroup<T>();
        hostless.add(entry);
      } else if (host.startsWith('*.')) {
        groupFor(this.wildcardHosts, host.slice(2)).add(entry);
      } else {
        groupFor(this.exactHosts, host).add(entry);
      }
    }
    this.hostless = hostless;
  }

  match(host: string, path: string): T | undefined {
    // Only origin-form paths can match a rule ("*" from OPTIONS * never does).
    if (path.charCodeAt(0) !== SLASH) return undefined;
    let group = this.exactHosts.get(host);
    if (group === undefined) {
      if (this.wildcardHosts.size > 0) {
        const dot = host.indexOf('.');
        // dot > 0: the wildcard must replace a non-empty label.
        if (dot > 0) group = this.wildcardHosts.get(host.slice(dot + 1));
      }
      group ??= this.hostless;
      if (group === undefined) return undefined;
    }
    return group.match(path);
  }
}

function groupFor<T>(groups: Map<string, PathGroup<T>>, key: string): PathGroup<T> {
  let group = groups.get(key);
  if (group === undefined) {
    group = new PathGroup<T>();
    groups.set(key, group);
  }
  return group;
}

export const createPrefixMapMatcher: MatcherFactory = <T>(entries: readonly RouteEntry<T>[]): Matcher<T> =>
  new PrefixMapMatcher(entries);
