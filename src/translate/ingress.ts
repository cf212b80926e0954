// One Ingress -> its candidate routes, default backend and certificate claims, plus
// the problems found in it. Conflicts between Ingresses are settled later
// (conflicts.ts); everything here depends only on this Ingress and the objects it
// names, which is what makes the result cacheable per Ingress object.
import type { CertificateConfig, MatchType, PolicyConfig, Problem, RouteConfig, RouteSource, Snapshot } from '../model/config.ts';
import type { Ingress, IngressBackend, ObjectRef, PathType, Secret } from '../model/k8s.ts';
import { parsePolicies } from '../middleware/registry.ts';
import type { BackendResolver, BackendResult } from './backends.ts';
import { normalizeHost, wildcardParent } from './hosts.ts';
import type { SecretParser } from './tls.ts';
import { flatString, internString } from '../util/flat-string.ts';
import { exactReadonly } from '../util/exact-length.ts';

/** A route before conflicts with other Ingresses are settled. */
export interface CandidateRoute {
  readonly route: RouteConfig;
  /** Field path in the Ingress, for messages: "spec.rules[0].http.paths[1]". */
  readonly field: string;
}

export interface TlsClaim {
  /** Lowercase host or "*.suffix". */
  readonly host: string;
  readonly certificate: CertificateConfig;
  readonly field: string;
}

export interface IngressEntry {
  /**
   * The parts of the Ingress this entry was made from, compared by identity. Not the object
   * itself: in cluster mode the store keeps the unchanged parts of an updated object, so a
   * status write (a new object, with the same spec and annotations) leaves the entry
   * current, and the entry holds none of the version before it (its metadata and status).
   */
  readonly spec: Ingress['spec'];
  readonly annotations: Ingress['metadata']['annotations'];
  readonly creationTimestamp: string | undefined;
  readonly ref: ObjectRef;
  /** creationTimestamp in ms; Infinity when absent (then the Ingress counts as the newest). */
  readonly age: number;
  /** "ns/name", the tie-breaker after age. */
  readonly order: string;
  readonly routes: readonly CandidateRoute[];
  readonly defaultBackend: CandidateRoute | undefined;
  readonly tlsClaims: readonly TlsClaim[];
  readonly problems: readonly Problem[];
  readonly policies: readonly PolicyConfig[];
  /** What this entry was computed from besides the Ingress; it is stale when any of them changed. */
  readonly backendDeps: readonly { readonly backend: IngressBackend; readonly result: BackendResult }[];
  readonly secretDeps: readonly { readonly key: string; readonly secret: Secret | undefined }[];
}

export interface IngressContext {
  readonly snapshot: Snapshot;
  readonly backends: BackendResolver;
  readonly secrets: SecretParser;
}

const NO_POLICIES: readonly PolicyConfig[] = Object.freeze([]);

const PATH_TYPES: ReadonlySet<string> = new Set<PathType>(['Exact', 'Prefix', 'ImplementationSpecific']);

/** true when `entry` still describes `ingress` given the current Services, EndpointSlices and Secrets. */
export function isCurrent(entry: IngressEntry, ingress: Ingress, ctx: IngressContext): boolean {
  if (entry.spec !== ingress.spec || entry.annotations !== ingress.metadata.annotations || entry.creationTimestamp !== ingress.metadata.creationTimestamp) return false;
  const namespace = entry.ref.namespace!;
  for (const dep of entry.backendDeps) if (!ctx.backends.isCurrent(namespace, dep.backend, dep.result)) return false;
  for (const dep of entry.secretDeps) if (ctx.snapshot.secrets.get(dep.key) !== dep.secret) return false;
  return true;
}

/** "/foo/" and "/foo" match the same requests as Prefix paths (the Ingress spec ignores a trailing slash). */
export function matchKeyOf(host: string, pathType: MatchType, path: string): string {
  return `${host}|${pathKeyOf(pathType, path)}`;
}

/**
 * The routes of one host with equal keys match exactly the same requests. Made when
 * needed (settling a host, checking an Ingress for duplicates), not kept with each
 * route: a key per route held 48 bytes, 1.9 MB at 40,000 routes.
 */
export function pathKeyOf(pathType: MatchType, path: string): string {
  return pathType === 'Prefix' ? `P${path.replace(/\/+$/, '') || '/'}` : `${pathType === 'Exact' ? 'E' : pathType}${path}`;
}

function parseAge(timestamp: string | undefined): number {
  const ms = timestamp === undefined ? NaN : Date.parse(timestamp);
  return Number.isNaN(ms) ? Infinity : ms;
}

function samePolicies(a: readonly PolicyConfig[], b: readonly PolicyConfig[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i]!.name !== b[i]!.name || JSON.stringify(a[i]!.config) !== JSON.stringify(b[i]!.config)) return false;
  }
  return true;
}

/** `key`: the Ingress's key in the snapshot ("ns/name"), kept as the entry's order when it is that text. */
export function buildIngressEntry(ingress: Ingress, ctx: IngressContext, previous: IngressEntry | undefined, key?: string): IngressEntry {
  const namespace = ingress.metadata.namespace ?? 'default';
  const name = ingress.metadata.name;
  // One object says which Ingress, for its problems and as its routes' source (two of the
  // same were 0.4 MB at 10,000 Ingresses); an entry built again keeps its predecessor's.
  const self: ObjectRef & RouteSource = { kind: 'Ingress', namespace, name };
  const ref: ObjectRef = previous?.ref ?? self;
  const owner: RouteSource = previous?.routes[0]?.route.source ?? previous?.defaultBackend?.route.source ?? self;
  const order = `${namespace}/${name}`;
  const spec = ingress.spec ?? {};
  const problems: Problem[] = [];
  const report = (severity: Problem['severity'], reason: string, message: string) => problems.push({ object: ref, severity, reason, message });
  const backendDeps: { backend: IngressBackend; result: BackendResult }[] = [];
  const secretDeps: { key: string; secret: Secret | undefined }[] = [];

  const resolve = (backend: IngressBackend, field: string): BackendResult => {
    const result = ctx.backends.resolve(namespace, backend);
    // Once per backend and result: the paths of an Ingress usually name one Service (the
    // same object when written alike), and each held a dependency of its own (4 at
    // 40 bytes each, plus the list's room, for an Ingress of two hosts and two paths).
    if (!backendDeps.some((d) => d.backend === backend && d.result === result)) backendDeps.push({ backend, result });
    if (result.issue) report(result.issue.severity, result.issue.reason, `${field}${result.issue.field}: ${result.issue.detail}`);
    return result;
  };

  // Policies may read Secrets of the Ingress' namespace (upstream CA bundles): each read is a dependency.
  const readSecret = (secretName: string) => {
    const key = `${namespace}/${secretName}`;
    const secret = ctx.snapshot.secrets.get(key);
    secretDeps.push({ key, secret });
    return secret && ctx.secrets.wireView(secret);
  };
  let policies: readonly PolicyConfig[] = parsePolicies(ingress.metadata.annotations, ref, problems, readSecret);
  // No policy (most Ingresses): one shared empty list for the entry and its routes, not an empty array each.
  if (policies.length === 0) policies = NO_POLICIES;
  else if (previous && samePolicies(previous.policies, policies)) policies = previous.policies;

  // Keep the identity of routes that did not change, so the proxy can reuse what it compiled.
  const previousRoutes = new Map<string, RouteConfig>();
  for (const c of previous?.routes ?? []) previousRoutes.set(c.route.id, c.route);
  if (previous?.defaultBackend) previousRoutes.set(previous.defaultBackend.route.id, previous.defaultBackend.route);
  const makeRoute = (id: string, host: string, path: string, pathType: MatchType, result: BackendResult, tls: boolean): RouteConfig => {
    const before = previousRoutes.get(id);
    if (before && before.backend === result.config && before.policies === policies && before.tls === tls) return before;
    return { id, source: owner, host, path, pathType, backend: result.config, policies, tls };
  };

  // spec.defaultBackend
  let defaultBackend: CandidateRoute | undefined;
  if (spec.defaultBackend) {
    const field = 'spec.defaultBackend';
    const result = resolve(spec.defaultBackend, field);
    defaultBackend = { route: makeRoute(`${namespace}/${name}|default`, '', '/', 'Prefix', result, false), field };
  }

  // Rule hosts, needed by tls entries without hosts.
  const rules = spec.rules ?? [];
  const ruleHosts = rules.map((rule) => normalizeHost(rule.host));
  // A certificate counts only for hosts this Ingress routes: an Ingress with a spec.tls
  // entry and no rule for the host cannot claim (and so take over) another's certificate.
  const routed = new Set<string>();
  const routedParents = new Set<string>();
  for (const h of ruleHosts) {
    if (!h.ok || h.host === '') continue;
    routed.add(h.host);
    const parent = wildcardParent(h.host);
    if (parent !== undefined) routedParents.add(parent);
  }
  const routesHost = (host: string): boolean => routed.has(host) || routedParents.has(host) || routed.has(wildcardParent(host) ?? '');

  // spec.tls
  const tlsClaims: TlsClaim[] = [];
  const tlsHosts = new Set<string>();
  (spec.tls ?? []).forEach((entry, i) => {
    // The same few fields in every Ingress, kept with each claim: one shared copy of each.
    const field = internString(`spec.tls[${i}]`);
    if (!entry.secretName) {
      report('warning', 'TLSSecretNotFound', `${field}.secretName: not set; these hosts get the default certificate`);
      return;
    }
    const secretKey = `${namespace}/${entry.secretName}`;
    const secret = ctx.snapshot.secrets.get(secretKey);
    if (!secret) {
      secretDeps.push({ key: secretKey, secret });
      // Other Secret types never reach portico (cluster mode lists only these), so say so.
      report('error', 'TLSSecretNotFound', `${field}.secretName: Secret ${secretKey} not found (only Secrets of type kubernetes.io/tls are read); its hosts get the default certificate`);
      return;
    }
    const parsed = ctx.secrets.parse(secret);
    // The key kept as the certificate's own copy of the same text (one per Secret, not one more per Ingress).
    secretDeps.push({ key: parsed.ok && parsed.certificate.secret === secretKey ? parsed.certificate.secret : secretKey, secret });
    if (!parsed.ok) {
      report('error', 'InvalidTLSSecret', `${field}.secretName: ${parsed.error}; its hosts get the default certificate`);
      return;
    }
    const hosts: { host: string; field: string }[] = [];
    if (entry.hosts && entry.hosts.length > 0) {
      entry.hosts.forEach((raw, j) => {
        const normalized = normalizeHost(raw);
        if (!normalized.ok) report('error', 'InvalidHost', `${field}.hosts[${j}]: ${normalized.error}`);
        else if (normalized.host === '') report('error', 'InvalidHost', `${field}.hosts[${j}]: empty host`);
        else hosts.push({ host: normalized.host, field: internString(`${field}.hosts[${j}]`) });
      });
    } else {
      const seen = new Set<string>();
      for (const h of ruleHosts) {
        if (h.ok && h.host !== '' && !seen.has(h.host)) {
          seen.add(h.host);
          hosts.push({ host: h.host, field });
        }
      }
    }
    for (const { host, field: hostField } of hosts) {
      if (!routesHost(host)) {
        report('warning', 'TLSHostNotRouted', `${hostField}: this Ingress has no rule for ${JSON.stringify(host)}; a certificate is only taken from an Ingress that routes the host, so Secret ${secretKey} is not used for it`);
        continue;
      }
      if (!parsed.covers(host)) {
        report('warning', 'CertificateHostMismatch', `${hostField}: the certificate in Secret ${secretKey} does not cover ${JSON.stringify(host)}; it is used anyway`);
      }
      tlsHosts.add(host);
      tlsClaims.push({ host, certificate: parsed.certificate, field: hostField });
    }
  });
  const hostHasTls = (host: string): boolean => {
    if (host === '') return false;
    if (tlsHosts.has(host)) return true;
    const parent = wildcardParent(host);
    return parent !== undefined && tlsHosts.has(parent);
  };

  // spec.rules
  const routes: CandidateRoute[] = [];
  const firstField = new Map<string, string>();
  rules.forEach((rule, i) => {
    const host = ruleHosts[i]!;
    if (!host.ok) {
      report('error', 'InvalidHost', `spec.rules[${i}].host: ${host.error}; the rule is ignored`);
      return;
    }
    (rule.http?.paths ?? []).forEach((p, j) => {
      // The same few fields in every Ingress: one shared copy of each.
      const field = internString(`spec.rules[${i}].http.paths[${j}]`);
      let pathType = p.pathType;
      if (pathType === undefined) {
        report('warning', 'MissingPathType', `${field}.pathType: not set; treated as ImplementationSpecific (served as Prefix)`);
        pathType = 'ImplementationSpecific';
      } else if (!PATH_TYPES.has(pathType)) {
        report('error', 'InvalidPathType', `${field}.pathType: ${JSON.stringify(pathType)} is not Exact, Prefix or ImplementationSpecific; the path is ignored`);
        return;
      }
      const path = p.path === undefined || p.path === '' ? '/' : p.path;
      if (!path.startsWith('/')) {
        report('error', 'InvalidPath', `${field}.path: ${JSON.stringify(path)} must start with '/'; the path is ignored`);
        return;
      }
      const served: MatchType = pathType === 'Exact' ? 'Exact' : 'Prefix';
      const matchKey = matchKeyOf(host.host, served, path);
      const earlier = firstField.get(matchKey);
      if (earlier !== undefined) {
        report('warning', 'DuplicatePath', `${field}: same host, path and type as ${earlier} of this Ingress, which is used instead`);
        return;
      }
      firstField.set(matchKey, field);
      const result = resolve(p.backend ?? {}, `${field}.backend`);
      const id = flatString(`${namespace}/${name}|${host.host}|${served}|${path}`);
      routes.push({ route: makeRoute(id, host.host, path, served, result, hostHasTls(host.host)), field });
    });
  });

  return {
    spec: ingress.spec,
    annotations: ingress.metadata.annotations,
    creationTimestamp: ingress.metadata.creationTimestamp,
    ref,
    age: parseAge(ingress.metadata.creationTimestamp),
    // The snapshot's key or the predecessor's copy of the same text, not one more.
    order: previous?.order === order ? previous.order : key === order ? key : flatString(order),
    routes: exactReadonly(routes),
    defaultBackend,
    tlsClaims: exactReadonly(tlsClaims),
    problems: exactReadonly(problems),
    policies,
    backendDeps: exactReadonly(backendDeps),
    secretDeps: exactReadonly(secretDeps),
  };
}
