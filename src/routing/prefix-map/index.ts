// The production route matcher: hash lookups only, built for tables of 10,000+ hosts.
//
// Host: one Map for exact hosts, one for wildcards keyed by the suffix after "*."
// (for Ingress a wildcard covers exactly one label, so the request's first label is cut
// off and the rest looked up; for Gateway API, one or more, so each shorter suffix is
// looked up in turn), and one group for rules without host. The first group that
// exists decides (no fall-through), as the Matcher contract says.
//
// Path, within a group: an exact-path Map, then a prefix Map keyed by the normalized
// prefix (trailing slashes removed, "/" -> ""). A Prefix rule matches element-wise on
// '/', so the only keys that can match are the request path itself (trailing slashes
// removed) and each of its shorter '/'-boundary prefixes; those are looked up longest
// first, so the first hit is the longest match. An exact hit always wins: its length is
// the whole request path, which no prefix can exceed, and Exact wins ties.
// RegularExpression paths (Gateway API) are tried between the two.
//
// Each path key holds a short list of entries by rank (Gateway API precedence after
// the path: method, headers, query, age...); the first whose conditions hold wins.
// GRPCRoute entries (byRank) compete by rank alone, apart from the others (RankedPaths).
import { compileRegex, guardOf, type Guard } from '../conditions.ts';
import { INGRESS_MATCHING, type MatchRequest, type Matcher, type MatcherFactory, type MatcherOptions, type RouteEntry } from '../matcher.ts';
import { PatchedMap } from '../../util/patched-map.ts';
import { SmallMap } from '../../util/small-map.ts';

const SLASH = 0x2f;

/** "/foo/" -> "/foo", "/" -> "": the key a Prefix rule is stored under. */
export function normalizePrefix(path: string): string {
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === SLASH) end--;
  return end === path.length ? path : path.slice(0, end);
}

/**
 * The entries of one path key, by rank then insertion order. An Ingress key has one
 * slot without guard, so the walk costs one property read.
 */
interface Slot<T> {
  readonly value: T;
  readonly guard: Guard | undefined;
  readonly rank: string;
  next: Slot<T> | undefined;
}

function insert<T>(head: Slot<T> | undefined, entry: RouteEntry<T>): Slot<T> {
  const slot: Slot<T> = { value: entry.value, guard: guardOf(entry.conditions), rank: entry.rank ?? '', next: undefined };
  if (head === undefined || slot.rank < head.rank) {
    slot.next = head;
    return slot;
  }
  let at = head;
  while (at.next !== undefined && at.next.rank <= slot.rank) at = at.next;
  slot.next = at.next;
  at.next = slot;
  return head;
}

/** The first slot of the list whose conditions hold. */
function firstHolding<T>(slot: Slot<T> | undefined, request: MatchRequest | undefined, query: string): Slot<T> | undefined {
  for (let s = slot; s !== undefined; s = s.next) {
    if (s.guard === undefined || s.guard.test(request, query)) return s;
  }
  return undefined;
}

function pick<T>(slot: Slot<T> | undefined, request: MatchRequest | undefined, query: string): T | undefined {
  return firstHolding(slot, request, query)?.value;
}

/**
 * Entries that compete by rank alone (byRank: GRPCRoute), whatever their path type: the
 * lowest rank whose path matches and whose conditions hold wins. Exact and Prefix paths
 * stay hash lookups (the path itself, then each of its '/'-boundary prefixes); only the
 * RegularExpression paths ranked ahead of the best found that way are tested.
 */
class RankedPaths<T> {
  readonly exact = new Map<string, Slot<T>>();
  readonly prefixes = new Map<string, Slot<T>>();
  /** The lowest rank among the prefixes: an exact hit ranked before it needs no walk. */
  private firstPrefixRank: string | undefined = undefined;
  /** In rank order. */
  readonly regexes: { readonly regex: RegExp; readonly slot: Slot<T> }[] = [];

  add(entry: RouteEntry<T>): void {
    if (entry.pathType === 'Exact') this.exact.set(entry.path, insert(this.exact.get(entry.path), entry));
    else if (entry.pathType === 'Prefix') {
      const key = normalizePrefix(entry.path);
      this.prefixes.set(key, insert(this.prefixes.get(key), entry));
      const rank = entry.rank ?? '';
      if (this.firstPrefixRank === undefined || rank < this.firstPrefixRank) this.firstPrefixRank = rank;
    } else {
      this.regexes.push({ regex: compileRegex(entry.path), slot: insert(undefined, entry) });
      this.regexes.sort((a, b) => (a.slot.rank < b.slot.rank ? -1 : a.slot.rank > b.slot.rank ? 1 : 0));
    }
  }

  match(path: string, request: MatchRequest | undefined, query: string): T | undefined {
    // On equal ranks: Exact, then RegularExpression, then the longer Prefix (the path order).
    let best = this.exact.size > 0 ? firstHolding(this.exact.get(path), request, query) : undefined;
    let bestIsPrefix = false;
    if (this.firstPrefixRank !== undefined && (best === undefined || this.firstPrefixRank < best.rank)) {
      let end = path.length;
      while (end > 0 && path.charCodeAt(end - 1) === SLASH) end--;
      for (;;) {
        const slot = firstHolding(this.prefixes.get(end === path.length ? path : path.slice(0, end)), request, query);
        if (slot !== undefined && (best === undefined || slot.rank < best.rank)) {
          best = slot;
          bestIsPrefix = true;
        }
        if (end === 0) break;
        end = path.lastIndexOf('/', end - 1);
        while (end > 0 && path.charCodeAt(end - 1) === SLASH) end--;
      }
    }
    for (const r of this.regexes) {
      if (best !== undefined && (r.slot.rank > best.rank || (r.slot.rank === best.rank && !bestIsPrefix))) break;
      if (!r.regex.test(path)) continue;
      const hit = firstHolding(r.slot, request, query);
      if (hit !== undefined) return hit.value;
    }
    return best?.value;
  }
}

class PathGroup<T> {
  readonly exact = new SmallMap<Slot<T>>();
  readonly prefixes = new SmallMap<Slot<T>>();
  /** RegularExpression paths, tried in rank order after Exact and before Prefix. */
  regexes: { readonly regex: RegExp; readonly slot: Slot<T> }[] | undefined = undefined;
  /** Length of the longest prefix key: longer candidates cannot match, so they are skipped. */
  longestPrefix = -1;
  /** Entries that compete by rank alone, tried before the others. */
  ranked: RankedPaths<T> | undefined = undefined;

  add(entry: RouteEntry<T>): void {
    if (entry.byRank === true) {
      (this.ranked ??= new RankedPaths<T>()).add(entry);
      return;
    }
    if (entry.pathType === 'Exact') {
      this.exact.set(entry.path, insert(this.exact.get(entry.path), entry));
      return;
    }
    if (entry.pathType === 'RegularExpression') {
      // One item per entry, in rank order (stable: equal ranks keep insertion order).
      const regexes = (this.regexes ??= []);
      regexes.push({ regex: compileRegex(entry.path), slot: insert(undefined, entry) });
      regexes.sort((a, b) => (a.slot.rank < b.slot.rank ? -1 : a.slot.rank > b.slot.rank ? 1 : 0));
      return;
    }
    const key = normalizePrefix(entry.path);
    this.prefixes.set(key, insert(this.prefixes.get(key), entry));
    if (key.length > this.longestPrefix) this.longestPrefix = key.length;
  }

  match(path: string, request: MatchRequest | undefined, query: string): T | undefined {
    if (this.ranked !== undefined) {
      const ranked = this.ranked.match(path, request, query);
      if (ranked !== undefined) return ranked;
    }
    if (this.exact.size > 0) {
      const exact = pick(this.exact.get(path), request, query);
      if (exact !== undefined) return exact;
    }
    if (this.regexes !== undefined) {
      for (const r of this.regexes) {
        if (!r.regex.test(path)) continue;
        const hit = pick(r.slot, request, query);
        if (hit !== undefined) return hit;
      }
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
      const slot = this.prefixes.get(end === path.length ? path : path.slice(0, end));
      if (slot !== undefined) {
        const hit = slot.guard === undefined ? slot.value : pick(slot, request, query);
        if (hit !== undefined) return hit;
      }
      if (end === 0) return undefined;
      // path starts with '/', so there is always a boundary at or before end - 1.
      end = path.lastIndexOf('/', end - 1);
      while (end > 0 && path.charCodeAt(end - 1) === SLASH) end--;
    }
  }
}

// Host maps are PatchedMaps: withHosts() (one Ingress changed) copies in proportion to
// the hosts it changes, not to the table.
class PrefixMapMatcher<T> implements Matcher<T> {
  size: number;
  private exactHosts: PatchedMap<string, PathGroup<T>>;
  /** "*.foo.com" is stored under "foo.com". */
  private wildcardHosts: PatchedMap<string, PathGroup<T>>;
  private hostless: PathGroup<T> | undefined;
  private readonly anyLabels: boolean;
  private readonly options: MatcherOptions;
  /** Entries per host as given (for withHosts: a group is rebuilt from its host's entries). */
  private sizes: PatchedMap<string, number>;
  /** With hosts: 'all-applicable', each host's own entries: a merged group is rebuilt from them. */
  private byHost: PatchedMap<string, readonly RouteEntry<T>[]> | undefined;

  constructor(entries: readonly RouteEntry<T>[], options: MatcherOptions) {
    this.options = options;
    this.size = entries.length;
    const sizes = new Map<string, number>();
    for (const entry of entries) sizes.set(entry.host, (sizes.get(entry.host) ?? 0) + 1);
    this.sizes = PatchedMap.of(sizes);
    if (options.hosts === 'all-applicable') {
      const byHost = new Map<string, RouteEntry<T>[]>();
      for (const entry of entries) {
        const list = byHost.get(entry.host);
        if (list === undefined) byHost.set(entry.host, [entry]);
        else list.push(entry);
      }
      this.byHost = PatchedMap.of<string, readonly RouteEntry<T>[]>(byHost);
    }
    this.anyLabels = options.wildcard === 'any-labels';
    let hostless: PathGroup<T> | undefined;
    const exactHosts = new Map<string, PathGroup<T>>();
    const wildcardHosts = new Map<string, PathGroup<T>>();
    for (const entry of entries) {
      const host = entry.host;
      if (host === '') {
        hostless ??= new PathGroup<T>();
        hostless.add(entry);
      } else if (host.startsWith('*.')) {
        groupFor(wildcardHosts, host.slice(2)).add(entry);
      } else {
        groupFor(exactHosts, host).add(entry);
      }
    }
    if (options.hosts === 'all-applicable') {
      // Each group also holds the rules of every group covering it, so the lookup below
      // (most specific group first) finds all applicable rules in one group. Ranks order
      // the entries of a path key, whichever group they came from.
      const wildcardEntries = new Map<string, RouteEntry<T>[]>();
      const hostlessEntries: RouteEntry<T>[] = [];
      for (const entry of entries) {
        if (entry.host === '') hostlessEntries.push(entry);
        else if (entry.host.startsWith('*.')) {
          const list = wildcardEntries.get(entry.host.slice(2));
          if (list === undefined) wildcardEntries.set(entry.host.slice(2), [entry]);
          else list.push(entry);
        }
      }
      /** Adds the rules of the wildcards over `name`'s proper suffixes, and the hostless ones. */
      const addCovering = (group: PathGroup<T>, name: string): void => {
        for (let dot = name.indexOf('.'); dot > 0; dot = name.indexOf('.', dot + 1)) {
          for (const entry of wildcardEntries.get(name.slice(dot + 1)) ?? []) group.add(entry);
        }
        for (const entry of hostlessEntries) group.add(entry);
      };
      for (const [host, group] of exactHosts) addCovering(group, host);
      for (const [suffix, group] of wildcardHosts) addCovering(group, suffix);
    }
    this.exactHosts = PatchedMap.of(exactHosts);
    this.wildcardHosts = PatchedMap.of(wildcardHosts);
    this.hostless = hostless;
  }

  withHosts(changes: ReadonlyMap<string, readonly RouteEntry<T>[]>): Matcher<T> {
    if (this.byHost !== undefined) return this.withMergedHosts(changes, this.byHost);
    const next = Object.create(PrefixMapMatcher.prototype) as PrefixMapMatcher<T>;
    Object.assign(next, this);
    const exact: [string, PathGroup<T> | undefined][] = [];
    const wildcard: [string, PathGroup<T> | undefined][] = [];
    const sizes: [string, number | undefined][] = [];
    for (const [host, entries] of changes) {
      let group: PathGroup<T> | undefined;
      if (entries.length > 0) {
        group = new PathGroup<T>();
        for (const entry of entries) group.add(entry);
      }
      next.size += entries.length - (this.sizes.get(host) ?? 0);
      sizes.push([host, entries.length > 0 ? entries.length : undefined]);
      if (host === '') next.hostless = group;
      else if (host.startsWith('*.')) wildcard.push([host.slice(2), group]);
      else exact.push([host, group]);
    }
    next.sizes = this.sizes.with(sizes);
    if (exact.length > 0) next.exactHosts = this.exactHosts.with(exact);
    if (wildcard.length > 0) next.wildcardHosts = this.wildcardHosts.with(wildcard);
    return next;
  }

  /**
   * withHosts for merged groups (Gateway API), where a host's group also holds the rules
   * of the wildcards and the hostless rules covering it. Exact hosts changed: their
   * groups are rebuilt, each from its own entries and the covering ones. A wildcard or
   * hostless rule changed covers groups of other hosts: everything is rebuilt.
   */
  private withMergedHosts(changes: ReadonlyMap<string, readonly RouteEntry<T>[]>, byHost: PatchedMap<string, readonly RouteEntry<T>[]>): Matcher<T> {
    const nextByHost = byHost.with([...changes].map(([host, entries]) => [host, entries.length > 0 ? entries : undefined] as const));
    const covering = [...changes.keys()].some((host) => host === '' || host.startsWith('*.'));
    if (covering) {
      const all: RouteEntry<T>[] = [];
      for (const entries of nextByHost.values()) for (const entry of entries) all.push(entry);
      return new PrefixMapMatcher(all, this.options);
    }
    const next = Object.create(PrefixMapMatcher.prototype) as PrefixMapMatcher<T>;
    Object.assign(next, this);
    const exact: [string, PathGroup<T> | undefined][] = [];
    const sizes: [string, number | undefined][] = [];
    const hostless = nextByHost.get('') ?? [];
    for (const [host, entries] of changes) {
      next.size += entries.length - (this.sizes.get(host) ?? 0);
      sizes.push([host, entries.length > 0 ? entries.length : undefined]);
      if (entries.length === 0) {
        exact.push([host, undefined]);
        continue;
      }
      // As the constructor: the host's own entries, the wildcards over its suffixes, the hostless ones.
      const group = new PathGroup<T>();
      for (const entry of entries) group.add(entry);
      for (let dot = host.indexOf('.'); dot > 0; dot = host.indexOf('.', dot + 1)) {
        for (const entry of nextByHost.get(`*.${host.slice(dot + 1)}`) ?? []) group.add(entry);
      }
      for (const entry of hostless) group.add(entry);
      exact.push([host, group]);
    }
    next.sizes = this.sizes.with(sizes);
    next.byHost = nextByHost;
    next.exactHosts = this.exactHosts.with(exact);
    return next;
  }

  match(host: string, path: string, request?: MatchRequest, query = ''): T | undefined {
    // Only origin-form paths can match a rule ("*" from OPTIONS * never does).
    if (path.charCodeAt(0) !== SLASH) return undefined;
    let group = this.exactHosts.get(host);
    if (group === undefined) {
      if (this.wildcardHosts.size > 0) {
        // dot > 0: the wildcard must replace a non-empty label.
        let dot = host.indexOf('.');
        while (dot > 0 && group === undefined) {
          group = this.wildcardHosts.get(host.slice(dot + 1));
          dot = this.anyLabels ? host.indexOf('.', dot + 1) : -1;
        }
      }
      group ??= this.hostless;
      if (group === undefined) return undefined;
    }
    return group.match(path, request, query);
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

export const createPrefixMapMatcher: MatcherFactory = <T>(entries: readonly RouteEntry<T>[], options: MatcherOptions = INGRESS_MATCHING): Matcher<T> =>
  new PrefixMapMatcher(entries, options);
