// Every policy portico knows, and the two places they are used: parsing annotations
// during translation, and composing a route's handler chain when the table is built.
// Adding a policy means adding its module to POLICIES; the proxy core does not change.
import type { PolicyConfig, Problem, RouteConfig } from '../model/config.ts';
import type { ObjectRef } from '../model/k8s.ts';
import { exactLength } from '../util/exact-length.ts';
import type { Handler } from '../proxy/context.ts';
import type { PolicyDefinition, PolicyParseInput, SharedState, SharedStateStore } from './types.ts';
import { allowedUpgradesPolicy } from './allowed-upgrades.ts';
import { corsPolicy } from './cors.ts';
import { nginxAnnotationProblems } from './nginx-annotations.ts';
import { sharedPolicyConfig } from './shared-configs.ts';
import { nginxAccessPolicy } from './nginx-access.ts';
import { headersPolicy } from './headers.ts';
import { headerModifierPolicy } from './header-modifier.ts';
import { requestMirrorPolicy } from './request-mirror.ts';
import { requestRedirectPolicy } from './request-redirect.ts';
import { urlRewritePolicy } from './url-rewrite.ts';
import { hstsPolicy } from './hsts.ts';
import { ipAllowPolicy, ipDenyPolicy } from './ip-filter.ts';
import { maxBodySizePolicy } from './max-body-size.ts';
import { rateLimitPolicy } from './rate-limit.ts';
import { rewriteTargetPolicy } from './rewrite-target.ts';
import { timeoutsPolicy } from './timeouts.ts';
import { tlsRedirectPolicy } from './tls-redirect.ts';
import { upstreamProtocolPolicy } from './upstream-protocol.ts';
import { underAttackPolicy } from './under-attack.ts';
import { cachePolicy } from './cache.ts';

export const ANNOTATION_PREFIX = 'portico.dev/';

// Sorted by order when used; see each module for what it does.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const POLICIES: readonly PolicyDefinition<any>[] = [
  nginxAccessPolicy,
  ipDenyPolicy,
  ipAllowPolicy,
  rateLimitPolicy,
  underAttackPolicy,
  tlsRedirectPolicy,
  requestRedirectPolicy,
  hstsPolicy,
  corsPolicy,
  maxBodySizePolicy,
  allowedUpgradesPolicy,
  rewriteTargetPolicy,
  urlRewritePolicy,
  headersPolicy,
  headerModifierPolicy,
  requestMirrorPolicy,
  timeoutsPolicy,
  upstreamProtocolPolicy,
  cachePolicy,
];

const byName = new Map(POLICIES.map((p) => [p.name, p]));
const sorted = [...POLICIES].sort((a, b) => a.order - b.order);
const known = new Set(POLICIES.flatMap((p) => p.annotations));

/**
 * Pure: the policies an Ingress' annotations ask for, plus problems for bad or unknown
 * portico.dev/* annotations. `secret` reads a Secret of the Ingress' namespace (for
 * portico.dev/upstream-ca-secret); the caller records what was read as a dependency.
 */
export function parsePolicies(
  annotations: Readonly<Record<string, string>> | undefined,
  ingress: ObjectRef,
  problems: Problem[],
  secret?: PolicyParseInput['secret'],
): PolicyConfig[] {
  const out: PolicyConfig[] = [];
  if (!annotations) return out;
  nginxAnnotationProblems(annotations, ingress, problems);
  const input: PolicyParseInput = {
    annotations,
    ingress,
    report: (p: Omit<Problem, 'object'>) => problems.push({ object: ingress, ...p }),
    secret,
  };
  let any = false;
  for (const name in annotations) {
    if (!name.startsWith(ANNOTATION_PREFIX)) continue;
    any = true;
    if (!known.has(name)) {
      problems.push({ object: ingress, severity: 'warning', reason: 'UnknownAnnotation', message: `annotation ${name} is not a portico annotation and is ignored` });
    }
  }
  for (const policy of sorted) {
    if (!any && policy.readsForeignAnnotations !== true) continue;
    const config = policy.parse(input);
    if (config !== undefined) out.push(sharedPolicyConfig(policy.name, config));
  }
  // Kept with the Ingress's entry and its routes: a store of its length, not push()'s 17.
  return exactLength(out);
}

/**
 * Wraps `terminal` (the forwarder) in the route's policies, first policy outermost.
 * Policies with a defaultConfig that the route does not list are added with it (they
 * usually decide from `route` whether to do anything). Pass `route`: policies that
 * need it (rewrite-target, the tls-redirect default) do nothing without it.
 */
export function composeChain(policies: readonly PolicyConfig[], terminal: Handler, shared: SharedState, key: string, route?: RouteConfig): Handler {
  let handler = terminal;
  const active = activeConfigs(policies, route);
  for (let i = active.length - 1; i >= 0; i--) {
    const { def, config } = active[i]!;
    handler = def.create(config, shared, key, route)(handler);
  }
  return handler;
}

/**
 * Wraps `terminal` in exactly the listed policies (no defaults): the filters of one
 * backend of a weighted split, which run after the route's own chain.
 */
export function composeListed(policies: readonly PolicyConfig[], terminal: Handler, shared: SharedState, key: string, route?: RouteConfig): Handler {
  let handler = terminal;
  const listed = sorted.filter((def) => policies.some((p) => p.name === def.name));
  for (let i = listed.length - 1; i >= 0; i--) {
    const def = listed[i]!;
    handler = def.create(policies.find((p) => p.name === def.name)!.config, shared, key, route)(handler);
  }
  return handler;
}

/** Whether `route` (or a backend of its split) lists a policy whose state must outlive a rebuild. */
export function keepsState(route: RouteConfig): boolean {
  const listed = (policies: readonly PolicyConfig[]) => policies.some((p) => byName.get(p.name)?.keepsState === true);
  return listed(route.policies) || (route.backends?.some((wb) => listed(wb.policies)) ?? false);
}

/** Whether a policy of the list reads more of its route than `tls` when its middleware is made (readsRoute). */
export function readsRoute(policies: readonly PolicyConfig[]): boolean {
  for (const p of policies) if (byName.get(p.name)?.readsRoute === true) return true;
  return false;
}

/** Names of the policies that act on `route`, in chain order (what /routes shows). */
export function activePolicies(route: RouteConfig): string[] {
  return activeConfigs(route.policies, route).map((a) => a.def.name);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function activeConfigs(policies: readonly PolicyConfig[], route: RouteConfig | undefined): { def: PolicyDefinition<any>; config: unknown }[] {
  for (const p of policies) if (!byName.has(p.name)) throw new Error(`unknown policy ${p.name}`);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const out: { def: PolicyDefinition<any>; config: unknown }[] = [];
  for (const def of sorted) {
    const listed = policies.find((p) => p.name === def.name);
    const config = listed !== undefined ? listed.config : def.defaultConfig;
    if (config === undefined || def.applies?.(config, route) === false) continue;
    out.push({ def, config });
  }
  return out;
}

/** SharedState backed by a Map; the proxy keeps one for the life of the process. */
export class SharedStateMap implements SharedStateStore {
  private readonly values = new Map<string, unknown>();
  get<T>(key: string, create: () => T): T {
    let v = this.values.get(key) as T | undefined;
    if (v === undefined) {
      v = create();
      this.values.set(key, v);
    }
    return v;
  }

  has(key: string): boolean {
    return this.values.has(key);
  }

  get size(): number {
    return this.values.size;
  }

  delete(key: string): void {
    this.values.delete(key);
  }
}
