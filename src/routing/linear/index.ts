// The reference matcher: scans every entry and applies the rules of the Matcher contract
// as literally as possible, so it is obviously correct by reading. It costs O(entries)
// per request: it is the oracle the fast matchers are tested against, not for production.
import { compileRegex, guardOf } from '../conditions.ts';
import { INGRESS_MATCHING, type MatchRequest, type Matcher, type MatcherFactory, type MatcherOptions, type RouteEntry } from '../matcher.ts';

/** "/foo/" -> "/foo", "/" -> "": trailing slashes do not count for Prefix rules. */
function withoutTrailingSlashes(path: string): string {
  let end = path.length;
  while (end > 0 && path[end - 1] === '/') end--;
  return path.slice(0, end);
}

/** Element-wise prefix on '/': "/foo" matches "/foo", "/foo/", "/foo/bar", not "/foobar". */
function prefixMatches(rulePath: string, requestPath: string): boolean {
  const prefix = withoutTrailingSlashes(rulePath);
  return requestPath === prefix || requestPath.startsWith(prefix + '/');
}

function pathMatches<T>(entry: RouteEntry<T>, requestPath: string): boolean {
  if (!requestPath.startsWith('/')) return false;
  if (entry.pathType === 'RegularExpression') return compileRegex(entry.path).test(requestPath);
  return entry.pathType === 'Exact' ? entry.path === requestPath : prefixMatches(entry.path, requestPath);
}

/** Exact beats RegularExpression beats Prefix. */
const KIND_ORDER = { Exact: 0, RegularExpression: 1, Prefix: 2 } as const;

/** The length that decides "longest path wins" (a Prefix rule's trailing slashes do not count). */
function matchLength<T>(entry: RouteEntry<T>): number {
  return entry.pathType === 'Exact' ? entry.path.length : withoutTrailingSlashes(entry.path).length;
}

/**
 * True when `candidate` should replace `best`: byRank entries before the others, and
 * among them the lower rank; then Exact, then RegularExpression, then Prefix; the longer
 * Prefix; then the lower rank; else the earlier stays.
 */
function isBetter<T>(candidate: RouteEntry<T>, best: RouteEntry<T> | undefined): boolean {
  if (best === undefined) return true;
  const byRank = candidate.byRank === true;
  if (byRank !== (best.byRank === true)) return byRank;
  if (byRank && (candidate.rank ?? '') !== (best.rank ?? '')) return (candidate.rank ?? '') < (best.rank ?? '');
  const kindDifference = KIND_ORDER[candidate.pathType] - KIND_ORDER[best.pathType];
  if (kindDifference !== 0) return kindDifference < 0;
  if (candidate.pathType === 'Prefix') {
    const lengthDifference = matchLength(candidate) - matchLength(best);
    if (lengthDifference !== 0) return lengthDifference > 0;
  }
  const a = candidate.rank ?? '';
  const b = best.rank ?? '';
  if (a !== b) return a < b;
  // Same rank (only when several host groups apply): the more specific host.
  return hostSpecificity(candidate.host) > hostSpecificity(best.host);
}

/** Exact hosts first, then longer wildcards, then rules without host. */
function hostSpecificity(host: string): number {
  if (host === '') return 0;
  return host.startsWith('*.') ? host.length : 1000 + host.length;
}

/** The host groups to try, most specific first. */
function hostGroups(host: string, options: MatcherOptions): string[] {
  if (host === '') return [''];
  const groups = [host];
  for (let dot = host.indexOf('.'); dot > 0; dot = host.indexOf('.', dot + 1)) {
    groups.push('*' + host.slice(dot));
    if (options.wildcard === 'one-label') break;
  }
  groups.push('');
  return groups;
}

class LinearMatcher<T> implements Matcher<T> {
  readonly size: number;
  private readonly entries: readonly RouteEntry<T>[];

  private readonly options: MatcherOptions;

  constructor(entries: readonly RouteEntry<T>[], options: MatcherOptions) {
    this.entries = entries.slice();
    this.size = entries.length;
    this.options = options;
  }

  withHosts(changes: ReadonlyMap<string, readonly RouteEntry<T>[]>): Matcher<T> {
    const kept = this.entries.filter((entry) => !changes.has(entry.host));
    for (const entries of changes.values()) kept.push(...entries);
    return new LinearMatcher(kept, this.options);
  }

  match(host: string, path: string, request?: MatchRequest, query = ''): T | undefined {
    if (this.options.hosts === 'all-applicable') {
      // Every rule whose host covers the request's competes, by path then rank.
      const groups = new Set(hostGroups(host, this.options));
      return this.best(this.entries.filter((entry) => groups.has(entry.host)), path, request, query);
    }
    for (const group of hostGroups(host, this.options)) {
      const inGroup = this.entries.filter((entry) => entry.host === group);
      // The first group with any rule decides, even when none of its paths match.
      if (inGroup.length === 0) continue;
      return this.best(inGroup, path, request, query);
    }
    return undefined;
  }

  private best(candidates: readonly RouteEntry<T>[], path: string, request: MatchRequest | undefined, query: string): T | undefined {
    let best: RouteEntry<T> | undefined;
    for (const entry of candidates) {
      if (!pathMatches(entry, path) || !isBetter(entry, best)) continue;
      const guard = guardOf(entry.conditions);
      if (guard === undefined || guard.test(request, query)) best = entry;
    }
    return best?.value;
  }
}

export const createLinearMatcher: MatcherFactory = <T>(entries: readonly RouteEntry<T>[], options: MatcherOptions = INGRESS_MATCHING): Matcher<T> =>
  new LinearMatcher(entries, options);
