// portico.dev/rate-limit (requests per second) and portico.dev/rate-limit-burst: a token
// bucket per client address per Ingress. A client over the limit gets 429 with
// Retry-After. "0" turns it off.
//
// Limits are per replica: with N replicas behind a load balancer a client can get up to
// N times the limit. Within a replica the limit is split between its worker processes
// (--workers W: each enforces rate/W, and burst/W rounded up): a client's connections
// are spread over the workers, so together they allow about the limit; one keep-alive
// connection, which stays on one worker, gets its share. Buckets live in the process
// and survive route-table rebuilds (SharedState) while the Ingress is served, not
// restarts; the proxy drops them when the Ingress leaves the table.
//
// Memory stays bounded under a flood of distinct addresses: there is no timer per
// bucket; every SWEEP_INTERVAL_MS a request sweeps out the buckets that have refilled
// (a full bucket is indistinguishable from a missing one, so dropping it is lossless),
// and a hard cap per Ingress evicts the oldest bucket when a new address arrives at
// the cap (that client starts over with a full bucket: a little lenient, never unbounded).
//
// Invalid values: rate limiting is a capacity guard, not an access control, so an
// invalid rate-limit turns the limit off for the Ingress (error reported: log, metric,
// Event) rather than failing closed, which would turn a typo into an outage (429 for
// everyone). An invalid burst falls back to the default burst (= the rate).
import { sendError } from '../proxy/errors.ts';
import type { Handler } from '../proxy/context.ts';
import { annotation, reportIgnored, reportInvalid } from './annotations.ts';
import { canonicalIp } from './cidr.ts';
import type { Middleware, PolicyDefinition } from './types.ts';

export const RATE_LIMIT = 'portico.dev/rate-limit';
export const RATE_LIMIT_BURST = 'portico.dev/rate-limit-burst';

export interface RateLimitConfig {
  /** Tokens added per second. */
  readonly rate: number;
  /** Bucket size: requests a client may send at once after being idle. */
  readonly burst: number;
}

/** Upper bound for both values: beyond this a per-IP limit is meaningless. */
const MAX_VALUE = 1_000_000;
export const DEFAULT_MAX_BUCKETS = 10_000;
export const SWEEP_INTERVAL_MS = 10_000;

let workerShare = 1;

/** Set once in each worker process: the number of workers the limits are split between. */
export function configureRateLimitWorkers(workers: number): void {
  workerShare = Number.isInteger(workers) && workers > 1 ? workers : 1;
}

/** A burst as one of `workerShare` workers enforces it: a whole number of requests, at least 1. */
function burstPerWorker(burst: number): number {
  return workerShare === 1 ? burst : Math.max(1, Math.ceil(burst / workerShare));
}

interface Bucket {
  tokens: number;
  /** ms (performance.now()) of the last refill */
  last: number;
}

/** Token buckets of one Ingress, keyed by client address. */
export class TokenBuckets {
  rate = 1;
  burst = 1;
  /**
   * Made at the first request and dropped when a sweep empties it: an Ingress's buckets
   * without clients cost nothing (an empty Map kept about 180 bytes an Ingress: 1.8 MB
   * at 10,000 Ingresses with a rate limit).
   */
  private buckets: Map<string, Bucket> | undefined = undefined;
  private readonly maxBuckets: number;
  private lastSweep = 0;

  constructor(maxBuckets = DEFAULT_MAX_BUCKETS) {
    this.maxBuckets = maxBuckets;
  }

  configure(rate: number, burst: number): void {
    this.rate = rate;
    this.burst = burst;
  }

  get size(): number {
    return this.buckets?.size ?? 0;
  }

  /** Takes a token for `client` at time `now` (ms). Returns 0 when allowed, else seconds until a token is available. */
  take(client: string, now: number): number {
    if (now - this.lastSweep >= SWEEP_INTERVAL_MS) this.sweep(now);
    const perMs = this.rate / 1000;
    const buckets = (this.buckets ??= new Map());
    let bucket = buckets.get(client);
    if (bucket === undefined) {
      if (buckets.size >= this.maxBuckets) this.evictOldest(buckets);
      bucket = { tokens: this.burst, last: now };
      buckets.set(client, bucket);
    } else {
      bucket.tokens = Math.min(this.burst, bucket.tokens + (now - bucket.last) * perMs);
      bucket.last = now;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.rate));
  }

  /** Drops the buckets that have refilled completely. */
  sweep(now: number): void {
    this.lastSweep = now;
    const buckets = this.buckets;
    if (buckets === undefined) return;
    const perMs = this.rate / 1000;
    for (const [client, bucket] of buckets) {
      if (bucket.tokens + (now - bucket.last) * perMs >= this.burst) buckets.delete(client);
    }
    if (buckets.size === 0) this.buckets = undefined;
  }

  private evictOldest(buckets: Map<string, Bucket>): void {
    // Map iteration order is insertion order: the first key is the oldest bucket.
    for (const client of buckets.keys()) {
      buckets.delete(client);
      return;
    }
  }
}

function parseCount(text: string): number | undefined {
  if (!/^\d+$/.test(text)) return undefined;
  const n = Number(text);
  return n <= MAX_VALUE ? n : undefined;
}

export const rateLimitPolicy: PolicyDefinition<RateLimitConfig> = {
  name: 'rate-limit',
  annotations: [RATE_LIMIT, RATE_LIMIT_BURST],
  order: 20,
  parse(input) {
    const rateText = annotation(input, RATE_LIMIT);
    const burstText = annotation(input, RATE_LIMIT_BURST);
    if (rateText === undefined) {
      if (burstText !== undefined) reportIgnored(input, RATE_LIMIT_BURST, `has no effect without ${RATE_LIMIT}`);
      return undefined;
    }
    const rate = parseCount(rateText);
    if (rate === undefined) {
      reportInvalid(input, RATE_LIMIT, rateText, `requests per second, an integer from 0 to ${MAX_VALUE}`, 'requests are not rate limited');
      return undefined;
    }
    if (rate === 0) return undefined;
    let burst = rate;
    if (burstText !== undefined) {
      const parsed = parseCount(burstText);
      if (parsed === undefined || parsed === 0) {
        reportInvalid(input, RATE_LIMIT_BURST, burstText, `an integer from 1 to ${MAX_VALUE}`, `the burst is ${rate} (the rate)`, 'warning');
      } else {
        burst = parsed;
      }
    }
    return { rate, burst };
  },
  keepsState: true,
  create(config, shared, key): Middleware {
    // One set of buckets per Ingress, shared by its routes and kept across rebuilds.
    const buckets = shared.get(`rate-limit|${key}`, () => new TokenBuckets());
    buckets.configure(config.rate / workerShare, burstPerWorker(config.burst));
    const rate = config.rate;
    return (next: Handler): Handler => limited(buckets, rate, next);
  },
};

/** A route's handler: one closure over what it needs (not one per scope), the 429 text made when sent. */
function limited(buckets: TokenBuckets, rate: number, next: Handler): Handler {
  return (ctx) => {
    const wait = buckets.take(canonicalIp(ctx.clientIp), performance.now());
    if (wait === 0) next(ctx);
    else sendError(ctx.res, 429, `rate limit of ${rate} requests per second exceeded`, { headers: [['retry-after', String(wait)]], expose: true });
  };
}
