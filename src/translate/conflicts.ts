// Settles what several Ingresses claim at once (the same path, the default backend,
// a host's certificate): the oldest Ingress wins (creationTimestamp, then
// namespace/name), and every loser is told who won.
import type { CertificateConfig, Problem, RouteConfig } from '../model/config.ts';
import type { CandidateRoute, IngressEntry, TlsClaim } from './ingress.ts';

/** Oldest first; Ingresses without creationTimestamp count as the newest; then by "ns/name". */
export function compareEntries(a: IngressEntry, b: IngressEntry): number {
  if (a.age !== b.age) return a.age < b.age ? -1 : 1;
  return a.order < b.order ? -1 : a.order > b.order ? 1 : 0;
}

export interface Resolved {
  readonly routes: RouteConfig[];
  readonly defaultBackend: RouteConfig | undefined;
  readonly certificates: Map<string, CertificateConfig>;
  readonly problems: Problem[];
}

/**
 * Why `winner` beat `loser`, for messages: the older creationTimestamp, or, when they
 * have none (standalone mode) or the same one, the name order.
 */
function precedence(winner: IngressEntry, loser: IngressEntry): string {
  return winner.age < loser.age ? 'which is older' : 'which comes first (same or no creationTimestamp: namespace/name order)';
}

/** `entries` must be sorted with compareEntries. */
export function resolveConflicts(entries: readonly IngressEntry[]): Resolved {
  const routes: RouteConfig[] = [];
  const problems: Problem[] = [];
  const pathOwners = new Map<string, { candidate: CandidateRoute; entry: IngressEntry }>();
  const certOwners = new Map<string, { entry: IngressEntry; claim: TlsClaim }>();
  const certificates = new Map<string, CertificateConfig>();
  let defaultOwner: IngressEntry | undefined;
  let defaultBackend: RouteConfig | undefined;

  for (const entry of entries) {
    if (entry.defaultBackend) {
      if (!defaultOwner) {
        defaultOwner = entry;
        defaultBackend = entry.defaultBackend.route;
      } else {
        problems.push({
          object: entry.ref,
          severity: 'error',
          reason: 'DefaultBackendConflict',
          message: `spec.defaultBackend: Ingress ${defaultOwner.order}, ${precedence(defaultOwner, entry)}, already provides the default backend; this one is ignored`,
        });
      }
    }

    for (const candidate of entry.routes) {
      const owned = pathOwners.get(candidate.matchKey);
      if (!owned) {
        pathOwners.set(candidate.matchKey, { candidate, entry });
        routes.push(candidate.route);
        continue;
      }
      const owner = owned.candidate;
      const r = owner.route;
      problems.push({
        object: entry.ref,
        severity: 'error',
        reason: 'PathConflict',
        message: `${candidate.field}: host ${JSON.stringify(r.host)} ${r.pathType} path ${JSON.stringify(r.path)} is already served by Ingress ${r.source.namespace}/${r.source.name} (${owner.field}), ${precedence(owned.entry, entry)}; this path is ignored`,
      });
    }

    for (const claim of entry.tlsClaims) {
      const owner = certOwners.get(claim.host);
      if (!owner) {
        certOwners.set(claim.host, { entry, claim });
        certificates.set(claim.host, claim.certificate);
        continue;
      }
      if (owner.claim.certificate.secret === claim.certificate.secret) continue;
      const winner = owner.entry === entry ? `${owner.claim.field} of this Ingress` : `Ingress ${owner.entry.order}, ${precedence(owner.entry, entry)}`;
      problems.push({
        object: entry.ref,
        severity: 'error',
        reason: 'TLSConflict',
        message: `${claim.field}: host ${JSON.stringify(claim.host)} already has a certificate from Secret ${owner.claim.certificate.secret} (${winner}); Secret ${claim.certificate.secret} is not used for it`,
      });
    }
  }
  return { routes, defaultBackend, certificates, problems };
}
