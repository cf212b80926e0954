// Ingress entries -> the routes, certificates and default backend of the whole
// config, settled per host so that a change costs work in proportion to the hosts it
// touches: what several Ingresses claim at once (the same path, a host's certificate,
// the default backend) goes to the oldest (conflicts.ts), a host with a certificate is
// HTTPS for every path on it, and the output keeps each unchanged host's routes.
import { diffProblems, NO_PROBLEM_CHANGES, problemChanges, problemDelta, type CertificateConfig, type Problem, type ProblemDelta, type RouteConfig } from '../model/config.ts';
import { compareEntries, precedence } from './conflicts.ts';
import { wildcardParent } from './hosts.ts';
import { pathKeyOf, type IngressEntry, type TlsClaim } from './ingress.ts';
import { insertSorted, removeSorted } from '../util/sorted.ts';
import { exactLength } from '../util/exact-length.ts';
import { PatchedMap } from '../util/patched-map.ts';

interface HostState {
  /** Served routes on this host, tls flag settled, sorted by path, type and id. */
  routes: RouteConfig[];
  /** The certificate of the claim that won the host (only the certificate is kept: an object per TLS host, 0.8 MB at 20,000, was the claim and its Ingress). */
  certificate: CertificateConfig | undefined;
  /** Conflicts settled on this host, with the losing entry's key and an order within it. */
  conflicts: readonly Conflict[];
}

/** A conflict problem, with the key of the Ingress it is reported on and its order there. */
export interface Conflict {
  readonly key: string;
  readonly seq: number;
  readonly problem: Problem;
}

export interface AssemblyResult {
  /** Every route, host by host in host order: made on first use (one change must not cost a pass over 30,000 routes). */
  routes(): readonly RouteConfig[];
  readonly routeCount: number;
  /** Ingress routes by host ("" for rules without host); a change copies only the hosts it touched (PatchedMap). */
  readonly byHost: ReadonlyMap<string, readonly RouteConfig[]>;
  readonly defaultBackend: RouteConfig | undefined;
  /** Certificate per TLS host; a change copies only the hosts whose certificate changed (PatchedMap). */
  readonly certificates: ReadonlyMap<string, CertificateConfig>;
  /** Conflict problems, each with the key of the Ingress it is reported on and its order there: made on first use. */
  conflicts(): readonly Conflict[];
  /** How the conflict problems differ from the previous result's (the hosts settled again and the default backend's). */
  readonly conflictDelta: ProblemDelta;
  /** Hosts whose routes changed since the previous result; undefined after a full build. */
  readonly changedHosts: ReadonlySet<string> | undefined;
  /** Hosts whose certificate is not the very object of the previous result (or gone); undefined after a full build. */
  readonly changedCertificates: ReadonlySet<string> | undefined;
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareRoutes(a: RouteConfig, b: RouteConfig): number {
  return compareStrings(a.path, b.path) || compareStrings(a.pathType, b.pathType) || compareStrings(a.id, b.id);
}

/** Hosts an entry touches: those of its routes and of its certificate claims. */
function hostsOf(entry: IngressEntry): Set<string> {
  const hosts = new Set<string>();
  for (const c of entry.routes) hosts.add(c.route.host);
  for (const claim of entry.tlsClaims) hosts.add(claim.host);
  return hosts;
}

const CONFLICT_SEQ_TLS = 1_000_000;
const NO_HOSTS: ReadonlySet<string> = new Set();
const NO_CONFLICTS: readonly Conflict[] = [];

export class IngressAssembly {
  private readonly entries = new Map<string, IngressEntry>();
  /** host -> keys of the entries that touch it: the key itself while there is one (most hosts; a Set each cost 4 MB at 20,000 hosts) */
  private readonly hostEntries = new Map<string, string | Set<string>>();
  private readonly hosts = new Map<string, HostState>();
  /** "*.foo.com" -> route hosts under it, whose tls flag follows its certificate */
  private readonly underWildcard = new Map<string, Set<string>>();
  /** Hosts that have routes, sorted. */
  private sortedHosts: string[] = [];
  /** The routes of each host with routes, as last given out (each result keeps its own version). */
  private byHost = PatchedMap.of<string, readonly RouteConfig[]>();
  private routeCount = 0;
  /** The conflicts of the hosts that have some, as last given out (each result keeps its own version). */
  private conflictsByHost = PatchedMap.of<string, readonly Conflict[]>();
  /** A PatchedMap: a renewed Secret copies its hosts, not the 20,000 others. */
  private certificates = PatchedMap.of<string, CertificateConfig>();
  private readonly withDefault = new Set<string>();
  private defaultBackend: RouteConfig | undefined;
  private defaultConflicts: readonly Conflict[] = [];
  /** A route with its tls flag set by its host, by the route as its Ingress made it (identity kept across rebuilds). */
  private readonly tlsVariants = new WeakMap<RouteConfig, RouteConfig>();
  private last: AssemblyResult | undefined;

  get size(): number {
    return this.entries.size;
  }

  entry(key: string): IngressEntry | undefined {
    return this.entries.get(key);
  }

  keys(): IterableIterator<string> {
    return this.entries.keys();
  }

  /**
   * Applies changed entries (undefined: the Ingress is gone or no longer served) and
   * re-settles the hosts they touch. `full`: the changes are every entry (a first build).
   */
  apply(changes: ReadonlyMap<string, IngressEntry | undefined>, full = false): AssemblyResult {
    const dirty = new Set<string>();
    let defaultsChanged = false;
    for (const [key, next] of changes) {
      const before = this.entries.get(key);
      if (before === next) continue;
      if (before !== undefined) {
        for (const host of hostsOf(before)) {
          dirty.add(host);
          const keys = this.hostEntries.get(host)!;
          if (typeof keys === 'string') {
            if (keys === key) this.hostEntries.delete(host);
          } else {
            keys.delete(key);
            if (keys.size === 1) this.hostEntries.set(host, keys.values().next().value!);
          }
        }
        if (before.defaultBackend) defaultsChanged = true;
      }
      if (next === undefined) {
        this.entries.delete(key);
        this.withDefault.delete(key);
        continue;
      }
      this.entries.set(key, next);
      for (const host of hostsOf(next)) {
        dirty.add(host);
        const keys = this.hostEntries.get(host);
        if (keys === undefined || keys === key) this.hostEntries.set(host, key);
        else if (typeof keys === 'string') this.hostEntries.set(host, new Set([keys, key]));
        else keys.add(key);
      }
      if (next.defaultBackend) {
        this.withDefault.add(key);
        defaultsChanged = true;
      } else this.withDefault.delete(key);
    }
    if (dirty.size === 0 && !defaultsChanged && this.last !== undefined) {
      // Nothing of the Ingress side changed: the same output, saying so (an empty delta).
      if ((!full && (this.last.changedHosts?.size !== 0 || this.last.changedCertificates?.size !== 0)) || this.last.conflictDelta !== NO_PROBLEM_CHANGES) {
        this.last = { ...this.last, ...(full ? {} : { changedHosts: NO_HOSTS, changedCertificates: NO_HOSTS }), conflictDelta: NO_PROBLEM_CHANGES };
      }
      return this.last;
    }

    // Certificates first: a changed certificate changes the tls flag of the hosts it covers.
    const certificateChanges: [string, CertificateConfig | undefined][] = [];
    const settled = new Map<string, HostState>();
    for (const host of dirty) {
      const state = this.settle(host);
      settled.set(host, state);
      const before = this.hosts.get(host)?.certificate;
      const now = state.certificate;
      if (before !== now) certificateChanges.push([host, now]);
    }
    if (certificateChanges.length > 0) {
      this.certificates = this.certificates.with(certificateChanges);
      // Routes under a wildcard whose certificate changed get their tls flag again.
      for (const host of [...settled.keys()]) {
        if (!host.startsWith('*.')) continue;
        for (const under of this.underWildcard.get(host) ?? []) if (!settled.has(under)) settled.set(under, this.settle(under));
      }
    }
    const changedHosts = new Set<string>();
    const hostChanges: [string, readonly RouteConfig[] | undefined][] = [];
    const conflictChanges: [string, readonly Conflict[] | undefined][] = [];
    const conflictDelta = problemChanges();
    for (const [host, state] of settled) {
      state.routes = state.routes.map((r) => this.withTls(r));
      const before = this.hosts.get(host);
      if (state.routes.length === 0 && state.certificate === undefined && state.conflicts.length === 0) {
        if (before !== undefined) this.forgetHost(host, before);
      } else {
        if (before === undefined || before.routes.length === 0) this.indexHost(host, state);
        else if (state.routes.length === 0) this.unindexRoutes(host);
        this.hosts.set(host, state);
      }
      const conflictsBefore = before?.conflicts ?? NO_CONFLICTS;
      const conflictsNow = this.hosts.has(host) ? state.conflicts : NO_CONFLICTS;
      if (conflictsBefore.length > 0 || conflictsNow.length > 0) {
        diffProblems(conflictsBefore.map((c) => c.problem), conflictsNow.map((c) => c.problem), conflictDelta);
        conflictChanges.push([host, conflictsNow.length > 0 ? conflictsNow : undefined]);
      }
      if (!sameRoutes(before?.routes, state.routes)) {
        changedHosts.add(host);
        hostChanges.push([host, state.routes.length > 0 ? state.routes : undefined]);
        this.routeCount += state.routes.length - (before?.routes.length ?? 0);
      }
    }
    if (defaultsChanged) {
      const before = this.defaultConflicts;
      this.settleDefault();
      if (before.length > 0 || this.defaultConflicts.length > 0) diffProblems(before.map((c) => c.problem), this.defaultConflicts.map((c) => c.problem), conflictDelta);
    }

    const byHost = (this.byHost = this.byHost.with(hostChanges));
    const conflictsByHost = conflictChanges.length === 0 ? this.conflictsByHost : (this.conflictsByHost = this.conflictsByHost.with(conflictChanges));
    const defaultConflicts = this.defaultConflicts;
    let conflicts: Conflict[] | undefined;
    // The host order of this result (the array is copied, the routes are read when asked for).
    const hostOrder = this.sortedHosts.slice();
    let routes: RouteConfig[] | undefined;
    this.last = {
      routes: () => {
        if (routes === undefined) {
          routes = [];
          for (const host of hostOrder) for (const r of byHost.get(host)!) routes.push(r);
        }
        return routes;
      },
      routeCount: this.routeCount,
      byHost,
      defaultBackend: this.defaultBackend,
      certificates: this.certificates,
      conflicts: () => {
        if (conflicts === undefined) {
          conflicts = [...defaultConflicts];
          for (const list of conflictsByHost.values()) for (const c of list) conflicts.push(c);
        }
        return conflicts;
      },
      conflictDelta: problemDelta(conflictDelta),
      changedHosts: full ? undefined : changedHosts,
      changedCertificates: full ? undefined : certificateChanges.length === 0 ? NO_HOSTS : new Set(certificateChanges.map(([host]) => host)),
    };
    return this.last;
  }

  /** Settles one host among the entries that touch it, oldest first. */
  private settle(host: string): HostState {
    const keys = this.hostEntries.get(host);
    const touching = (keys === undefined ? [] : typeof keys === 'string' ? [keys] : [...keys]).map((k) => ({ key: k, entry: this.entries.get(k)! }));
    touching.sort((a, b) => compareEntries(a.entry, b.entry));
    const routes: RouteConfig[] = [];
    const conflicts: Conflict[] = [];
    const pathOwners = new Map<string, { field: string; route: RouteConfig; entry: IngressEntry }>();
    let certificate: { readonly entry: IngressEntry; readonly claim: TlsClaim } | undefined;
    for (const { key, entry } of touching) {
      entry.routes.forEach((candidate, index) => {
        if (candidate.route.host !== host) return;
        const pathKey = pathKeyOf(candidate.route.pathType, candidate.route.path);
        const owned = pathOwners.get(pathKey);
        if (owned === undefined) {
          pathOwners.set(pathKey, { field: candidate.field, route: candidate.route, entry });
          routes.push(candidate.route);
          return;
        }
        const r = owned.route;
        conflicts.push({
          key,
          seq: 1 + index,
          problem: {
            object: entry.ref,
            severity: 'error',
            reason: 'PathConflict',
            message: `${candidate.field}: host ${JSON.stringify(r.host)} ${r.pathType} path ${JSON.stringify(r.path)} is already served by Ingress ${r.source.namespace}/${r.source.name} (${owned.field}), ${precedence(owned.entry, entry)}; this path is ignored`,
          },
        });
      });
      entry.tlsClaims.forEach((claim, index) => {
        if (claim.host !== host) return;
        if (certificate === undefined) {
          certificate = { entry, claim };
          return;
        }
        if (certificate.claim.certificate.secret === claim.certificate.secret) return;
        const winner = certificate.entry === entry ? `${certificate.claim.field} of this Ingress` : `Ingress ${certificate.entry.order}, ${precedence(certificate.entry, entry)}`;
        conflicts.push({
          key,
          seq: CONFLICT_SEQ_TLS + index,
          problem: {
            object: entry.ref,
            severity: 'error',
            reason: 'TLSConflict',
            message: `${claim.field}: host ${JSON.stringify(claim.host)} already has a certificate from Secret ${certificate.claim.certificate.secret} (${winner}); Secret ${claim.certificate.secret} is not used for it`,
          },
        });
      });
    }
    routes.sort(compareRoutes);
    // Most hosts have no conflict: one shared empty list, not an empty array each (0.6 MB at 20,000 hosts).
    return { routes: exactLength(routes), certificate: certificate?.claim.certificate, conflicts: conflicts.length === 0 ? NO_CONFLICTS : conflicts };
  }

  /** HTTPS is a property of the host: its certificate (or its wildcard parent's) makes every path on it tls. */
  private withTls(route: RouteConfig): RouteConfig {
    const host = route.host;
    const tls = host !== '' && (this.certificates.has(host) || this.certificates.has(wildcardParent(host) ?? ''));
    if (route.tls === tls) return route;
    let variant = this.tlsVariants.get(route);
    if (variant === undefined || variant.tls !== tls) {
      variant = { ...route, tls };
      this.tlsVariants.set(route, variant);
    }
    return variant;
  }

  private settleDefault(): void {
    const owners = [...this.withDefault].map((key) => ({ key, entry: this.entries.get(key)! })).sort((a, b) => compareEntries(a.entry, b.entry));
    const owner = owners[0];
    this.defaultBackend = owner?.entry.defaultBackend?.route;
    this.defaultConflicts = owners.slice(1).map(({ key, entry }) => ({
      key,
      seq: 0,
      problem: {
        object: entry.ref,
        severity: 'error',
        reason: 'DefaultBackendConflict',
        message: `spec.defaultBackend: Ingress ${owner!.entry.order}, ${precedence(owner!.entry, entry)}, already provides the default backend; this one is ignored`,
      },
    }));
  }

  private indexHost(host: string, state: HostState): void {
    if (state.routes.length === 0) return;
    insertSorted(this.sortedHosts, host);
    const parent = wildcardParent(host);
    if (parent !== undefined) {
      let set = this.underWildcard.get(parent);
      if (set === undefined) this.underWildcard.set(parent, (set = new Set()));
      set.add(host);
    }
  }

  private unindexRoutes(host: string): void {
    removeSorted(this.sortedHosts, host);
    const parent = wildcardParent(host);
    if (parent !== undefined) {
      const set = this.underWildcard.get(parent);
      set?.delete(host);
      if (set?.size === 0) this.underWildcard.delete(parent);
    }
  }

  private forgetHost(host: string, before: HostState): void {
    if (before.routes.length > 0) this.unindexRoutes(host);
    this.hosts.delete(host);
  }
}

function sameRoutes(a: readonly RouteConfig[] | undefined, b: readonly RouteConfig[]): boolean {
  if (a === undefined) return b.length === 0;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
