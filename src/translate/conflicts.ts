// Who wins what several Ingresses claim at once (the same path, the default backend,
// a host's certificate): the oldest Ingress (creationTimestamp, then namespace/name).
// assembly.ts applies it host by host and tells every loser who won.
import type { IngressEntry } from './ingress.ts';

/** Oldest first; Ingresses without creationTimestamp count as the newest; then by "ns/name". */
export function compareEntries(a: IngressEntry, b: IngressEntry): number {
  if (a.age !== b.age) return a.age < b.age ? -1 : 1;
  return a.order < b.order ? -1 : a.order > b.order ? 1 : 0;
}

/**
 * Why `winner` beat `loser`, for messages: the older creationTimestamp, or, when they
 * have none (standalone mode) or the same one, the name order.
 */
export function precedence(winner: IngressEntry, loser: IngressEntry): string {
  return winner.age < loser.age ? 'which is older' : 'which comes first (same or no creationTimestamp: namespace/name order)';
}
