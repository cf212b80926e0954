// The contract every route matcher implements (see test/unit/routing/cases.ts for
// the shared table of cases they all must pass).
import type { MatchType, RouteConditions } from '../model/config.ts';
import type { MatchRequest } from './conditions.ts';

export type { MatchRequest } from './conditions.ts';

export interface RouteEntry<T> {
  /** Lowercase host, "*.suffix" for a wildcard, or "" for a rule without host. */
  readonly host: string;
  /** Starts with "/" (a regular expression for RegularExpression). */
  readonly path: string;
  readonly pathType: MatchType;
  /** Method, header and query conditions (Gateway API); all must hold. */
  readonly conditions?: RouteConditions;
  /** Among entries with the same host and path, lower ranks (compared as strings) are tried first; then the earlier entry. Default "". */
  readonly rank?: string;
  /**
   * Competes by rank alone, whatever its path type (GRPCRoute: its spec orders rules by
   * hostname, then characters of service and method, then headers, not by path kind).
   * Such entries are tried before the others of the same host group(s): the lowest rank
   * whose path matches and whose conditions hold wins; on equal ranks, the usual path
   * order. Default false.
   */
  readonly byRank?: boolean;
  readonly value: T;
}

export interface MatcherOptions {
  /**
   * How many labels "*." stands for: one, as Ingress says ("*.foo.com" matches
   * "bar.foo.com", not "baz.bar.foo.com"), or one or more, as Gateway API says (the
   * longest matching suffix wins).
   */
  readonly wildcard: 'one-label' | 'any-labels';
  /**
   * Ingress: the most specific host group decides alone. Gateway API: every rule whose
   * host covers the request's is applicable (an exact host, the wildcards covering it,
   * the rules without host), and path precedence then rank decide among them, as the
   * HTTPRoute spec says ("across all rules specified on applicable Routes").
   */
  readonly hosts: 'most-specific-group' | 'all-applicable';
}

export const INGRESS_MATCHING: MatcherOptions = { wildcard: 'one-label', hosts: 'most-specific-group' };
export const GATEWAY_MATCHING: MatcherOptions = { wildcard: 'any-labels', hosts: 'all-applicable' };

export interface Matcher<T> {
  /**
   * host: lowercase, without port or trailing dot. path: the request path without query.
   * Host groups are tried most specific first: the exact host, else the wildcard of its
   * parent domain(s), else the rules without host; the first group that exists decides
   * (no fall-through to a less specific group, as in nginx and Envoy), or with
   * hosts: 'all-applicable' the rules of every group covering the host. Among them:
   * an Exact path, else the first RegularExpression path that matches, else the longest
   * Prefix. Among entries with the same path, the first by rank whose conditions hold
   * (`request` and `query` are read only for entries that have conditions); when none
   * does, the search goes on as if the path had not matched. Entries with byRank are
   * tried first, by rank alone.
   * Returns undefined when nothing matches (the caller then uses the default backend).
   */
  match(host: string, path: string, request?: MatchRequest, query?: string): T | undefined;
  readonly size: number;
  /**
   * A new matcher with the entries of the given hosts replaced (an empty list removes a
   * host); this one is unchanged. Costs work for those hosts, not the whole table.
   */
  withHosts(changes: ReadonlyMap<string, readonly RouteEntry<T>[]>): Matcher<T>;
}

export type MatcherFactory = <T>(entries: readonly RouteEntry<T>[], options?: MatcherOptions) => Matcher<T>;
