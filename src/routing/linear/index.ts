// The reference matcher: scans every entry and applies the rules of the Matcher contract
// as literally as possible, so it is obviously correct by reading. It costs O(entries)
// per request: it is the oracle the fast matchers are tested against, not for production.
import type { Matcher, MatcherFactory, RouteEntry } from '../matcher.ts';

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
  return entry.pathType === 'Exact' ? entry.path === requestPath : prefixMatches(entry.path, requestPath);
}

/** The length that decides "longest path wins" (a Prefix rule's trailing slashes do not count). */
function matchLength<T>(entry: RouteEntry<T>): number {
  return entry.pathType === 'Exact' ? entry.path.length : withoutTrailingSlashes(entry.path).length;
}

/** True when `candidate` should replace `best`: longer wins, then Exact over Prefix; else the earlier stays. */
function isBetter<T>(candidate: RouteEntry<T>, best: RouteEntry<T> | undefined): boolean {
  if (best === undefined) return true;
  const lengthDifference = matchLength(candidate) - matchLength(best);
  if (lengthDifference !== 0) return lengthDifference > 0;
  return candidate.pathType === 'Exact' && best.pathType === 'Prefix';
}

/** The host groups to try, most specific first. */
function hostGroups(host: string): string[] {
  if (host === '') return [''];
  const groups = [host];
  const dot = host.indexOf('.');
  if (dot > 0) groups.push('*' + host.slice(dot));
  groups.push('');
  return groups;
}

class LinearMatcher<T> implements Matcher<T> {
  readonly size: number;
  private readonly entries: readonly RouteEntry<T>[];

  constructor(entries: readonly RouteEntry<T>[]) {
    this.entries = entries.slice();
    this.size = entries.length;
  }

  match(host: string, path: string): T | undefined {
    for (const group of hostGroups(host)) {
      const inGroup = this.entries.filter((entry) => entry.host === group);
      // The first group with any rule decides, even when none of its paths match.
      if (inGroup.length === 0) continue;
      let best: RouteEntry<T> | undefined;
      for (const entry of inGroup) {
        if (pathMatches(entry, path) && isBetter(entry, best)) best = entry;
      }
      return best?.value;
    }
    return undefined;
  }
}

export const createLinearMatcher: MatcherFactory = <T>(entries: readonly RouteEntry<T>[]): Matcher<T> =>
  new LinearMatcher(entries);
