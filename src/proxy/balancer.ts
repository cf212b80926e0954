// Chooses the pod for a request: power of two choices on requests in flight, and
// round robin when the two candidates are equally busy (so an idle backend is
// spread evenly rather than at random).
import type { Endpoint } from './upstreams.ts';

let maxInflight = 1000;

/**
 * --max-requests-per-endpoint: requests in flight to one pod address, from this
 * process, beyond which another pod is chosen, or, when every pod is that busy, the
 * request gets 503 with Retry-After instead of queueing without bound. 0: no limit.
 */
export function configureEndpointLimit(limit: number): void {
  maxInflight = limit > 0 ? limit : Infinity;
}

export function endpointLimit(): number {
  return maxInflight;
}

export class Balancer {
  private readonly endpoints: readonly Endpoint[];
  private cursor = 0;

  constructor(endpoints: readonly Endpoint[]) {
    this.endpoints = endpoints;
  }

  get size(): number {
    return this.endpoints.length;
  }

  /** An endpoint other than `exclude` (the one a retry moves away from); undefined when there is none. */
  pick(exclude?: Endpoint): Endpoint | undefined {
    const list = this.endpoints;
    const n = list.length;
    if (n === 0) return undefined;
    if (n === 1) return list[0] === exclude ? undefined : list[0];
    let a: Endpoint;
    let b: Endpoint;
    if (n === 2) {
      a = list[0]!;
      b = list[1]!;
    } else {
      const i = (Math.random() * n) | 0;
      const j = (i + 1 + ((Math.random() * (n - 1)) | 0)) % n;
      a = list[i]!;
      b = list[j]!;
    }
    if (a === exclude) return b;
    if (b === exclude) return a;
    const inflightA = a.stats.inflight;
    const inflightB = b.stats.inflight;
    if (inflightA < inflightB) return a;
    if (inflightB < inflightA) return b;
    return this.roundRobin(exclude);
  }

  /**
   * `picked` when it is below the per-endpoint limit; else the least busy endpoint
   * below it; undefined when every one is at the limit (the caller answers 503).
   */
  withinLimit(picked: Endpoint): Endpoint | undefined {
    if (picked.stats.inflight < maxInflight && picked.stats.ejectedUntil === 0) return picked;
    return this.fallback(picked);
  }

  /**
   * The pick was at its limit or ejected (it failed to connect several times): the least
   * busy endpoint that is neither; if every one is ejected, the pick anyway (better to
   * try than to answer 503 for pods that may be back).
   */
  private fallback(picked: Endpoint): Endpoint | undefined {
    const now = performance.now();
    let best: Endpoint | undefined;
    let anyLive = false;
    for (const e of this.endpoints) {
      const ejected = e.stats.ejectedUntil > now;
      if (!ejected) anyLive = true;
      if (ejected || e.stats.inflight >= maxInflight) continue;
      if (best === undefined || e.stats.inflight < best.stats.inflight) best = e;
    }
    if (best !== undefined) return best;
    if (!anyLive && picked.stats.inflight < maxInflight) return picked;
    return undefined;
  }

  private roundRobin(exclude: Endpoint | undefined): Endpoint {
    const list = this.endpoints;
    let e = list[this.cursor % list.length]!;
    this.cursor = (this.cursor + 1) % list.length;
    if (e === exclude) {
      e = list[this.cursor]!;
      this.cursor = (this.cursor + 1) % list.length;
    }
    return e;
  }
}
