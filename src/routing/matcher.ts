// The contract every route matcher implements (see test/unit/routing/cases.ts for
// the shared table of cases they all must pass).
import type { MatchType } from '../model/config.ts';

export interface RouteEntry<T> {
  /** Lowercase host, "*.suffix" for a single-label wildcard, or "" for a rule without host. */
  readonly host: string;
  /** Starts with "/". */
  readonly path: string;
  readonly pathType: MatchType;
  readonly value: T;
}

export interface Matcher<T> {
  /**
   * host: lowercase, without port or trailing dot. path: the request path without query.
   * Host groups are tried most specific first: the exact host, else the wildcard of its
   * parent domain, else the rules without host; the first group that exists decides
   * (no fall-through to a less specific group, as in nginx and Envoy). Within the group,
   * the longest matching path wins; for the same path, Exact beats Prefix.
   * Returns undefined when nothing matches (the caller then uses the default backend).
   */
  match(host: string, path: string): T | undefined;
  readonly size: number;
}

export type MatcherFactory = <T>(entries: readonly RouteEntry<T>[]) => Matcher<T>;
