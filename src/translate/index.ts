// Translation: Kubernetes objects -> what to serve (RoutingConfig), plus the problems
// found per object. Pure: no I/O, no clock; the output depends only on the snapshot
// and the options. Modelled on Contour's internal/dag: one processor per kind
// (ingress-class.ts, ingress.ts, backends.ts, tls.ts), then conflicts.ts settles
// what several Ingresses claim at once. Gateway API objects go through their own
// processors (gateway-api/) into the same model.
//
// createTranslator() memoizes by object identity (the store replaces objects on
// change, never mutates them), so after one change only the touched Ingresses and
// Services are recomputed and unchanged RouteConfig objects keep their identity.
import type { IgnoredIngress, Problem, RouteConfig, RoutingConfig, Snapshot, TranslateOptions } from '../model/config.ts';
import type { Ingress } from '../model/k8s.ts';
import { NO_GATEWAYS } from '../model/config.ts';
import { BackendResolver } from './backends.ts';
import { translateGatewayApi } from './gateway-api/index.ts';
import { compareEntries, resolveConflicts } from './conflicts.ts';
import { buildIngressEntry, isCurrent, type IngressContext, type IngressEntry } from './ingress.ts';
import { selectClasses, type ClassSelection } from './ingress-class.ts';
import { SecretParser } from './tls.ts';
import { wildcardParent } from './hosts.ts';

export type Translator = (snapshot: Snapshot, options: TranslateOptions) => RoutingConfig;

/** One-shot translation, without memoization across calls. */
export function translate(snapshot: Snapshot, options: TranslateOptions): RoutingConfig {
  return createTranslator()(snapshot, options);
}

interface TranslatorState {
  readonly options: TranslateOptions;
  readonly backends: BackendResolver;
  readonly secrets: SecretParser;
  /** By snapshot key of the Ingress; an entry is reused while it is current (see isCurrent). */
  entries: Map<string, IngressEntry>;
  /** Why an Ingress object is not served, kept while the object and the classes are the same. */
  ignoredReasons: WeakMap<Ingress, { readonly classes: unknown; readonly entry: IgnoredIngress }>;
  /** A route with its tls flag set by its host (see withHostTls), by the route as its Ingress made it. */
  readonly tlsVariants: WeakMap<RouteConfig, RouteConfig>;
  /** The last output and what it was made from, returned again when nothing it depends on changed. */
  last:
    | { readonly ordered: readonly IngressEntry[]; readonly classProblems: readonly Problem[]; readonly config: RoutingConfig; readonly gatewayApi: unknown }
    | undefined;
}

function sameOptions(a: TranslateOptions, b: TranslateOptions): boolean {
  return (
    a.ingressClass === b.ingressClass &&
    a.controllerName === b.controllerName &&
    a.allowExternalName === b.allowExternalName &&
    a.gatewayControllerName === b.gatewayControllerName &&
    a.ingressPorts === b.ingressPorts
  );
}

/** A translate function that remembers its previous work; keep one per controller. */
export function createTranslator(): Translator {
  let state: TranslatorState | undefined;

  return (snapshot, options) => {
    if (!state || !sameOptions(state.options, options)) {
      state = { options, backends: new BackendResolver(), secrets: new SecretParser(), entries: new Map(), tlsVariants: new WeakMap(), ignoredReasons: new WeakMap(), last: undefined };
    }
    state.backends.begin(snapshot, options);
    const ctx: IngressContext = { snapshot, backends: state.backends, secrets: state.secrets };
    const classes = selectClasses(snapshot, options);

    const entries = new Map<string, IngressEntry>();
    const served: { key: string; entry: IngressEntry }[] = [];
    const ignored: IgnoredIngress[] = [];
    for (const [key, ingress] of snapshot.ingresses) {
      if (!classes.serves(ingress)) {
        ignored.push(ignoredEntry(state, key, ingress, classes));
        continue;
      }
      const previous = state.entries.get(key);
      const entry = previous && isCurrent(previous, ingress, ctx) ? previous : buildIngressEntry(ingress, ctx, previous);
      entries.set(key, entry);
      served.push({ key, entry });
    }
    state.entries = entries;
    state.backends.prune();

    served.sort((a, b) => compareEntries(a.entry, b.entry));
    const ordered = served.map((s) => s.entry);
    // Changes that touched no served Ingress (a slice update with the same ready
    // addresses, an unrelated Secret...) need no conflict pass at all.
    const last = state.last;
    ignored.sort((a, b) => compareStrings(a.ingress, b.ingress));
    const gatewayApi = usesGatewayApi(snapshot)
      ? translateGatewayApi(snapshot, { backends: state.backends, secrets: state.secrets, controllerName: options.gatewayControllerName, reservedPorts: options.ingressPorts ?? new Map() })
      : undefined;
    if (
      gatewayApi === undefined &&
      last &&
      last.gatewayApi === undefined &&
      sameEntries(last.ordered, ordered) &&
      sameProblems(last.classProblems, classes.problems) &&
      sameIgnored(last.config.ignoredIngresses, ignored)
    ) {
      return last.config;
    }

    const resolved = resolveConflicts(ordered);
    const routes = withHostTls(resolved.routes, resolved.certificates, state.tlsVariants);

    const problems: Problem[] = [...classes.problems];
    for (const entry of ordered) for (const p of entry.problems) problems.push(p);
    for (const p of resolved.problems) problems.push(p);
    if (gatewayApi !== undefined) for (const p of gatewayApi.problems) problems.push(p);
    // Stable: an object's problems stay in the order they were found (spec order, then conflicts).
    problems.sort(compareProblemObjects);

    if (gatewayApi !== undefined) for (const r of gatewayApi.routes) routes.push(r);
    const config: RoutingConfig = {
      routes: routes.sort(compareRoutes),
      ...(resolved.defaultBackend ? { defaultBackend: resolved.defaultBackend } : {}),
      certificates: resolved.certificates,
      servedIngresses: served.map((s) => s.key).sort(compareStrings),
      ignoredIngresses: ignored,
      problems,
      ...(gatewayApi !== undefined ? { listeners: gatewayApi.listeners, gatewayStatus: gatewayApi.status } : NO_GATEWAYS),
    };
    state.last = { ordered, classProblems: classes.problems, config, gatewayApi };
    return config;
  };
}

/**
 * HTTPS is a property of the host: when a host has a usable certificate (from any
 * Ingress that routes it), every path on it is tls (so redirected from HTTP unless its
 * own Ingress says portico.dev/tls-redirect: "false"), including paths added by
 * Ingresses without spec.tls, which would otherwise stay reachable over plain HTTP.
 * Variants are cached so an unchanged route keeps its identity across rebuilds.
 */
function withHostTls(routes: RouteConfig[], certificates: ReadonlyMap<string, unknown>, variants: WeakMap<RouteConfig, RouteConfig>): RouteConfig[] {
  const hasCertificate = (host: string) => host !== '' && (certificates.has(host) || certificates.has(wildcardParent(host) ?? ''));
  for (let i = 0; i < routes.length; i++) {
    const route = routes[i]!;
    const tls = hasCertificate(route.host);
    if (route.tls === tls) continue;
    let variant = variants.get(route);
    if (variant === undefined || variant.tls !== tls) {
      variant = { ...route, tls };
      variants.set(route, variant);
    }
    routes[i] = variant;
  }
  return routes;
}

function ignoredEntry(state: TranslatorState, key: string, ingress: Ingress, classes: ClassSelection): IgnoredIngress {
  const known = state.ignoredReasons.get(ingress);
  if (known !== undefined && known.classes === classes.signature) return known.entry;
  const entry = { ingress: key, reason: classes.ignoredReason(ingress) };
  state.ignoredReasons.set(ingress, { classes: classes.signature, entry });
  return entry;
}

/** Gateway API objects that can produce routes or status. */
function usesGatewayApi(snapshot: Snapshot): boolean {
  return snapshot.gatewayClasses.size > 0 || snapshot.gateways.size > 0;
}

function sameIgnored(a: readonly IgnoredIngress[], b: readonly IgnoredIngress[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameEntries(a: readonly IngressEntry[], b: readonly IngressEntry[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameProblems(a: readonly Problem[], b: readonly Problem[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.object.kind !== y.object.kind || x.object.name !== y.object.name || x.reason !== y.reason || x.message !== y.message || x.severity !== y.severity) return false;
  }
  return true;
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareRoutes(a: RouteConfig, b: RouteConfig): number {
  return compareStrings(a.host, b.host) || compareStrings(a.path, b.path) || compareStrings(a.pathType, b.pathType) || compareStrings(a.id, b.id);
}

function compareProblemObjects(a: Problem, b: Problem): number {
  return (
    compareStrings(a.object.kind, b.object.kind) ||
    compareStrings(a.object.namespace ?? '', b.object.namespace ?? '') ||
    compareStrings(a.object.name, b.object.name)
  );
}
