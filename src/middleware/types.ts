// A policy is a middleware: parsed from annotations during translation (pure), then
// instantiated once per route when the route table is built, never per request.
import type { Handler } from '../proxy/context.ts';
import type { Problem, RouteConfig } from '../model/config.ts';
import type { ObjectRef } from '../model/k8s.ts';

/** Wraps the next handler; called once when a route is compiled. */
export type Middleware = (next: Handler) => Handler;

/**
 * State that must survive route-table rebuilds (rate-limit buckets...), keyed by the policy.
 * Call get() when the middleware is created, not per request: the keys a route read then
 * keep that state alive for as long as the route is in the live table.
 */
export interface SharedState {
  get<T>(key: string, create: () => T): T;
}

/** The proxy's SharedState, which forgets what no live route uses. */
export interface SharedStateStore extends SharedState {
  /** Drops a key's state (no live route uses it any more). */
  delete(key: string): void;
}

export interface PolicyParseInput {
  /** All annotations of the Ingress. */
  readonly annotations: Readonly<Record<string, string>>;
  readonly ingress: ObjectRef;
  /** Report a problem with one annotation; the policy decides whether it stays on, off or fails closed. */
  report(problem: Omit<Problem, 'object'>): void;
  /**
   * A Secret of the Ingress' namespace, by name (data base64-encoded, as on the wire);
   * undefined when it does not exist. Provided by the translator, which records the
   * read as a dependency of the Ingress; absent where Secrets cannot be read.
   */
  secret?(name: string): { readonly data?: Readonly<Record<string, string>> } | undefined;
}

export interface PolicyDefinition<C = unknown> {
  /** Unique name, also the key in RouteConfig.policies. */
  readonly name: string;
  /** The portico.dev/* annotations this policy reads (so unknown ones can be warned about). */
  readonly annotations: readonly string[];
  /**
   * Parsed for every Ingress, also one without portico.dev/* annotations (the others are
   * parsed only when it has some): it reads annotations of another controller.
   */
  readonly readsForeignAnnotations?: true;
  /** Position in the chain: lower runs first (filters before rewrites). */
  readonly order: number;
  /** undefined when the Ingress does not use this policy. Pure: no I/O, no clock. */
  parse(input: PolicyParseInput): C | undefined;
  /**
   * Config used when the Ingress does not mention this policy at all: the policy is then
   * still created for every route, so a default that depends on the route (tls-redirect
   * on TLS hosts) applies. Absent: such routes do not get this policy.
   */
  readonly defaultConfig?: C;
  /**
   * Build the middleware for one route. `key` identifies the Ingress, for SharedState.
   * `route` is the route being compiled (matched path, tls flag...); callers that have
   * it pass it, policies that need it do nothing without it.
   */
  create(config: C, shared: SharedState, key: string, route?: RouteConfig): Middleware;
  /**
   * Its SharedState must outlive a change of the Ingress (rate-limit buckets): once a
   * compiled route of an Ingress holds some, that Ingress' new routes are compiled with the
   * table, so they hold the state before the old ones let go of it. Other routes are
   * compiled at their first request (src/proxy/compile.ts).
   */
  readonly keepsState?: boolean;
  /**
   * Its create() reads `route` (its path, its match type): each route gets a chain of its
   * own. Without it, the routes of one source with the same backend, policies and tls flag
   * share one chain (src/proxy/compile.ts): create() and applies() may read `route.tls`,
   * nothing else of it.
   */
  readonly readsRoute?: true;
  /**
   * Whether the policy does anything on `route` with `config` (default: yes). A policy
   * that does not apply is left out of the chain, and out of /routes.
   */
  applies?(config: C, route: RouteConfig | undefined): boolean;
}
