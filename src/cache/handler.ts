// What the cache policy does with a request: answer from the store (fresh: HIT; stale
// within stale-while-revalidate: STALE, and one background refresh), or fetch through
// the rest of the chain with a CacheFill in place of the response. Concurrent fetches of
// one URL are collapsed into one: the others wait for it, then look again (a HIT if it
// was stored; else each goes to the pod itself). PURGE and BAN from allowed addresses
// invalidate; from others they get 405.
import type { Handler, RequestContext } from '../proxy/context.ts';
import { RequestContext as Context } from '../proxy/context.ts';
import type { ProxyRequest } from '../proxy/exchange-types.ts';
import { sendError } from '../proxy/errors.ts';
import { withHeaders, type HeaderList } from '../middleware/header-list.ts';
import type { CacheEntry } from './entry.ts';
import { CacheFill, type FillTarget } from './fill.ts';
import { currentAge, mayServeStale } from './freshness.ts';
import { cacheCounts } from './metrics.ts';
import { cacheStore, invalidate, purgeAllowed } from './runtime.ts';
import { Conditionals, NO_CONDITIONALS, serveEntry } from './serve.ts';
import type { InvalidationRequest } from './invalidation.ts';

export interface CachePolicyConfig {
  /** portico.dev/cache-ttl in seconds: freshness of cacheable responses that say nothing (0: none). */
  readonly defaultTtl: number;
}

/** The header that makes a PURGE a ban (HTTP/1.1 cannot carry the BAN method: llhttp does not know it). */
export const BAN_PATTERN_HEADER = 'x-ban-pattern';

/** Fetches in flight, by variant key: later requests for the key wait for them. */
const inflight = new Map<string, CacheFill>();
/** Requests waiting for a fetch in flight, by the fill. */
const waiting = new WeakMap<CacheFill, { ctx: RequestContext; next: Handler }[]>();

/** What the cache reads of the request's headers, in one pass. */
class RequestFacts {
  authorization = false;
  range = false;
  body = false;
  ifNoneMatch: string | undefined = undefined;
  ifModifiedSince: string | undefined = undefined;
  banPattern: string | undefined = undefined;
  constructor(raw: readonly string[]) {
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!;
      switch (name.length) {
        case 5:
          if (name.toLowerCase() === 'range') this.range = true;
          break;
        case 13:
          if (name.toLowerCase() === 'authorization') this.authorization = true;
          else if (name.toLowerCase() === 'if-none-match') this.ifNoneMatch = this.ifNoneMatch === undefined ? raw[i + 1]! : `${this.ifNoneMatch}, ${raw[i + 1]!}`;
          else if (name.toLowerCase() === BAN_PATTERN_HEADER) this.banPattern = raw[i + 1]!;
          break;
        case 14:
          if (name.toLowerCase() === 'content-length' && raw[i + 1]!.trim() !== '0') this.body = true;
          break;
        case 17:
          if (name.toLowerCase() === 'if-modified-since') this.ifModifiedSince = raw[i + 1]!;
          else if (name.toLowerCase() === 'transfer-encoding') this.body = true;
          break;
      }
    }
  }
  conditionals(): Conditionals {
    return this.ifNoneMatch === undefined && this.ifModifiedSince === undefined ? NO_CONDITIONALS : new Conditionals(this.ifNoneMatch, this.ifModifiedSince);
  }
}

/** The request's values of the Vary fields, normalised: Accept-Encoding as a sorted token set, others with whitespace collapsed. */
export function varyValues(raw: readonly string[], names: string): string {
  let out = '';
  for (const name of names.split(',')) {
    let value: string | undefined;
    for (let i = 0; i < raw.length; i += 2) {
      if (raw[i]!.length === name.length && raw[i]!.toLowerCase() === name) value = value === undefined ? raw[i + 1]! : `${value},${raw[i + 1]!}`;
    }
    let normal = '';
    if (value !== undefined) {
      normal = name === 'accept-encoding'
        ? [...new Set(value.toLowerCase().split(',').map((t) => t.trim().replace(/\s+/g, '')).filter((t) => t !== ''))].sort().join(',')
        : value.trim().replace(/\s+/g, ' ');
    }
    out += `\n${name}=${value === undefined ? '\u0000' : normal}`;
  }
  return out;
}

/** Takes the client's conditionals off the request to the pod; the cache answers them itself. */
const NO_CLIENT_CONDITIONALS: HeaderList = [['if-none-match', '', 'remove'], ['if-modified-since', '', 'remove']];

export function cacheHandler(config: CachePolicyConfig, next: Handler): Handler {
  return (ctx) => {
    const method = ctx.req.method;
    if (method === 'GET' || method === 'HEAD') lookup(ctx, next, config, true);
    else if (method === 'PURGE' || method === 'BAN') invalidateFromListener(ctx, method);
    else if (method === 'OPTIONS' || method === 'TRACE') next(ctx);
    else unsafe(ctx, next);
  };
}

/**
 * RFC 9111 section 4.4: a successful unsafe request (POST, PUT, DELETE...) invalidates
 * what is stored for its URL, in this process' cache (other workers' copies expire or are
 * purged as usual).
 */
function unsafe(ctx: RequestContext, next: Handler): void {
  const res = ctx.res;
  const host = ctx.host;
  const path = ctx.query === '' ? ctx.path : ctx.path + ctx.query;
  res.once('close', () => {
    if (res.statusCode < 400 && res.writableFinished) cacheStore().purge(host, [path]);
  });
  next(ctx);
}

/** Passed straight to the pod (never stored): said with X-Cache: MISS. */
function pass(ctx: RequestContext, next: Handler): void {
  cacheCounts.misses++;
  ctx.responseHeaders = withHeaders(ctx.responseHeaders, X_CACHE_MISS);
  next(ctx);
}
const X_CACHE_MISS: HeaderList = [['x-cache', 'MISS']];

function lookup(ctx: RequestContext, next: Handler, config: CachePolicyConfig, collapse: boolean): void {
  if (ctx.res.destroyed) return;
  const raw = ctx.req.rawHeaders;
  const facts = new RequestFacts(raw);
  // Ranges, bodies and upgrades are not cached: straight to the pod.
  if (facts.range || facts.body || ctx.req.upgrade) {
    pass(ctx, next);
    return;
  }
  const store = cacheStore();
  const path = ctx.query === '' ? ctx.path : ctx.path + ctx.query;
  const primary = `${ctx.host} ${path}`;
  const base = `${primary}\n${ctx.route.config.id}`;
  const names = store.varyNames(base);
  const key = names === '' ? base : base + varyValues(raw, names);
  const entry = store.get(key);
  // RFC 9111 section 3.5: a request with Authorization gets a stored answer only if it said public or s-maxage.
  const usable = entry !== undefined && (!facts.authorization || entry.authorizedOk) ? entry : undefined;
  if (usable !== undefined) {
    const age = currentAge(usable, Date.now());
    if (usable.lifetime > age) {
      cacheCounts.hits++;
      serveEntry(ctx, ctx.res, usable, 'HIT', facts.conditionals());
      return;
    }
    const cc = usable.cc;
    if (cc.staleWhileRevalidate >= 0 && mayServeStale(cc) && age <= usable.lifetime + cc.staleWhileRevalidate) {
      cacheCounts.stale++;
      serveEntry(ctx, ctx.res, usable, 'STALE', facts.conditionals());
      refreshInBackground(ctx, next, config, key, base, primary, path, facts, usable);
      return;
    }
  }
  if (collapse) {
    const leader = inflight.get(key);
    if (leader !== undefined) {
      waiting.get(leader)!.push({ ctx, next });
      return;
    }
  }
  // A HEAD answer has no body to store: it goes to the pod as it is.
  if (ctx.req.method === 'HEAD') {
    pass(ctx, next);
    return;
  }
  const target = fillTarget(ctx, config, base, primary, path, facts, usable);
  const fill = new CacheFill(ctx.req, ctx.res, store, target);
  if (collapse) track(fill, key, config);
  fill.attach(ctx);
  ctx.requestHeaders = conditionalHeaders(ctx.requestHeaders, usable);
  next(ctx);
}

function fillTarget(ctx: RequestContext, config: CachePolicyConfig, base: string, primary: string, path: string, facts: RequestFacts, stale: CacheEntry | undefined): FillTarget {
  const raw = ctx.req.rawHeaders;
  return {
    host: ctx.host,
    path,
    primary,
    base,
    routeId: ctx.route.config.id,
    defaultTtl: config.defaultTtl,
    authorization: facts.authorization,
    conditionals: facts.conditionals(),
    stale,
    variantKey: (names) => (names === '' ? base : base + varyValues(raw, names)),
  };
}

/** The request to the pod: without the client's conditionals; with the stale entry's validators, to revalidate it. */
function conditionalHeaders(current: RequestContext['requestHeaders'], stale: CacheEntry | undefined) {
  const etag = stale?.headers.etag;
  const lastModified = stale?.headers['last-modified'];
  if (typeof etag !== 'string' && typeof lastModified !== 'string') return withHeaders(current, NO_CLIENT_CONDITIONALS);
  return withHeaders(current, [
    typeof etag === 'string' ? ['if-none-match', etag] : ['if-none-match', '', 'remove'],
    typeof lastModified === 'string' ? ['if-modified-since', lastModified] : ['if-modified-since', '', 'remove'],
  ]);
}

/**
 * While `fill` runs, requests for `key` wait, then look again. When the answer was not
 * stored, each then asks the pod itself (no second wait: an uncacheable URL must not
 * queue its requests one behind the other). When it was stored, those of another
 * variant (Vary) collapse again, one fetch per variant; when there was no complete
 * answer (its client left, the pod broke off), the first of them fetches for the rest.
 */
function track(fill: CacheFill, key: string, config: CachePolicyConfig): void {
  inflight.set(key, fill);
  waiting.set(fill, []);
  fill.onDone = (outcome) => {
    if (inflight.get(key) === fill) inflight.delete(key);
    const waiters = waiting.get(fill)!;
    waiting.delete(fill);
    for (const w of waiters) lookup(w.ctx, w.next, config, outcome !== 'answered');
  };
}

/** stale-while-revalidate: one refresh per key at a time, with no client attached. */
function refreshInBackground(ctx: RequestContext, next: Handler, config: CachePolicyConfig, key: string, base: string, primary: string, path: string, facts: RequestFacts, stale: CacheEntry): void {
  if (inflight.has(key)) return;
  const req = backgroundRequest(ctx.req);
  const store = cacheStore();
  const target = fillTarget(ctx, config, base, primary, path, facts, stale);
  const fill = new CacheFill(req, undefined, store, { ...target, conditionals: NO_CONDITIONALS });
  const bg = new Context(req, fill, ctx.route, ctx.clientIp, ctx.secure, ctx.host, ctx.path, ctx.query, ctx.timeouts, performance.now());
  bg.targetAuthority = ctx.targetAuthority;
  bg.upstreamPath = ctx.upstreamPath;
  bg.requestHeaders = conditionalHeaders(ctx.requestHeaders, stale);
  bg.upstream = ctx.upstream;
  bg.maxBodyBytes = ctx.maxBodyBytes;
  track(fill, key, config);
  fill.attach(bg);
  try {
    next(bg);
  } catch {
    fill.destroy();
  }
}

/** The client's request as a GET with no body, for a refresh that outlives it. */
function backgroundRequest(req: ProxyRequest): ProxyRequest {
  return {
    method: 'GET',
    url: req.url,
    rawHeaders: req.rawHeaders,
    socket: req.socket,
    upgrade: false,
    upgradeHead: undefined,
    body: () => {
      throw new Error('a background refresh has no body');
    },
  };
}

// ---- PURGE and BAN on the public listeners ----

function invalidateFromListener(ctx: RequestContext, method: string): void {
  const res = ctx.res;
  if (!purgeAllowed(ctx.clientIp)) {
    sendError(res, 405, `${method} is only accepted from the addresses in --cache-purge-allow`, { expose: true, headers: [['allow', 'GET, HEAD']] });
    return;
  }
  const facts = new RequestFacts(ctx.req.rawHeaders);
  const path = ctx.query === '' ? ctx.path : ctx.path + ctx.query;
  let request: InvalidationRequest;
  if (method === 'BAN' || facts.banPattern !== undefined) {
    // BAN without a pattern bans everything under the path.
    const pattern = facts.banPattern ?? `^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`;
    request = { type: 'Ban', host: ctx.host, pattern };
  } else {
    request = { type: 'Purge', host: ctx.host, paths: [path] };
  }
  invalidate(request).then(
    (result) => {
      if (!result.ok) {
        sendError(res, 400, result.message, { expose: true });
        return;
      }
      if (res.headersSent || res.destroyed) return;
      const body = `${JSON.stringify(result)}\n`;
      ctx.responseBytes = Buffer.byteLength(body);
      res.writeHead(200, ['content-type', 'application/json; charset=utf-8', 'content-length', String(ctx.responseBytes), 'cache-control', 'no-store']);
      res.end(body);
    },
    (err: unknown) => sendError(res, 500, `invalidation failed: ${err instanceof Error ? err.message : String(err)}`),
  );
}
