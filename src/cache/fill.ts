// The tee between the forwarder and the client: it passes the pod's answer on (with
// X-Cache: MISS) while keeping a copy, and stores the copy when the answer ends if RFC
// 9111 allows and it stayed within the per-object cap (bigger objects pass uncached).
// It also decides what the client gets when a stale entry was being revalidated: a 304
// from the pod refreshes the entry and the client is answered from it; a 5xx (or the
// pod unreachable) within stale-if-error serves the stale copy. Without a client (a
// background refresh for stale-while-revalidate) it only stores.
//
// It is a ProxyResponse, so the forwarder (HTTP/1.1 or HTTP/2 pods) and sendError write
// to it unchanged, whichever front end (HTTP/1.1 or HTTP/2) the client came in on.
import type { HeaderInput } from '../http1/response.ts';
import type { ProxyRequest, ProxyResponse } from '../proxy/exchange-types.ts';
import { kContext, type RequestContext } from '../proxy/context.ts';
import type { HeaderEntry } from '../middleware/header-list.ts';
import { parseCacheControl } from './cache-control.ts';
import { CacheEntry, type StoredHeaders } from './entry.ts';
import { ageValue, currentAge, freshnessLifetime, httpDate, mayServeStale, notStorableReason, varyNames } from './freshness.ts';
import { cacheCounts } from './metrics.ts';
import { serveEntry, clientHead, type Conditionals } from './serve.ts';
import type { CacheStore } from './store.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { EventEmitter } = process.getBuiltinModule('node:events');

/** Where the answer is filed, and what the request said. */
export interface FillTarget {
  readonly host: string;
  /** path and query */
  readonly path: string;
  readonly primary: string;
  /** URL + route: the Vary names are kept per base */
  readonly base: string;
  readonly routeId: string;
  readonly defaultTtl: number;
  readonly authorization: boolean;
  /** The client's If-None-Match / If-Modified-Since (taken off the request to the pod). */
  readonly conditionals: Conditionals;
  /** The stale entry being revalidated, if any. */
  readonly stale: CacheEntry | undefined;
  /** Computes the variant key from the request's headers, once the response's Vary is known. */
  readonly variantKey: (names: string) => string;
}

export type FillOutcome = 'stored' | 'answered' | 'abandoned';

type Mode = 'pending' | 'store' | 'pass' | 'revalidated' | 'stale-error' | 'done';

/** Response headers that a 304 does not update in the stored ones (RFC 9111 section 3.2). */
const NOT_UPDATED = new Set(['content-length', 'content-encoding', 'content-range', 'transfer-encoding']);

export class CacheFill extends EventEmitter implements ProxyResponse {
  readonly req: ProxyRequest;
  /** The client's response; undefined for a background refresh. */
  readonly client: ProxyResponse | undefined;
  /** The request whose res this tee stands in for; set by attach(). */
  ctx!: RequestContext;
  private keepAliveOwn = true;
  headersChecked = false;
  trailersExpected = false;
  headersSent = false;
  writableEnded = false;
  private status = 200;
  private mode: Mode = 'pending';
  private readonly store: CacheStore;
  private readonly target: FillTarget;
  private readonly requestTime = Date.now();
  private chunks: Buffer[] = [];
  private bytes = 0;
  private headers: StoredHeaders = {};
  private reason = '';
  /** Body bytes go to the client (not when it was answered 304, or from an entry). */
  private forwardBody = true;
  /** The policies' response headers for the client (the pod's stay pure for the store). */
  private extra: HeaderEntry[] | undefined;
  private ownClosed = false;
  /**
   * Called once when the fill is over (collapsed requests wait for it): "stored", or
   * "answered" (the pod's answer was not stored), or "abandoned" (no complete answer: the
   * client left, the pod broke off).
   */
  onDone: ((outcome: FillOutcome) => void) | undefined;
  private finished = false;

  constructor(req: ProxyRequest, client: ProxyResponse | undefined, store: CacheStore, target: FillTarget) {
    super();
    this.req = req;
    this.client = client;
    this.store = store;
    this.target = target;
    if (client !== undefined) {
      client.on('drain', () => this.emit('drain'));
      client.on('close', () => {
        // The client left before the answer was complete: nothing is stored.
        if (!this.finished) this.finish('abandoned');
        this.emit('close');
      });
    }
  }

  /** Puts this tee in place of ctx.res, the pod's answer free of the policies' headers. */
  attach(ctx: RequestContext): void {
    this.ctx = ctx;
    this.extra = ctx.responseHeaders;
    ctx.responseHeaders = undefined;
    ctx.res = this;
    (this as { [kContext]?: RequestContext })[kContext] = ctx;
  }

  // ---- what the forwarder reads ----

  get statusCode(): number {
    return this.client?.headersSent ? this.client.statusCode : this.status;
  }
  set statusCode(value: number) {
    this.status = value;
  }
  get shouldKeepAlive(): boolean {
    return this.client?.shouldKeepAlive ?? this.keepAliveOwn;
  }
  set shouldKeepAlive(value: boolean) {
    if (this.client !== undefined) this.client.shouldKeepAlive = value;
    else this.keepAliveOwn = value;
  }
  get writableFinished(): boolean {
    return this.client?.writableFinished ?? this.writableEnded;
  }
  get destroyed(): boolean {
    return this.client?.destroyed ?? this.ownClosed;
  }

  writeEarlyHints(hints: Record<string, string | readonly string[]>): void {
    this.client?.writeEarlyHints(hints);
  }

  writeHead(status: number, reasonOrHeaders?: string | HeaderInput, headers?: HeaderInput): this {
    if (this.headersSent) throw new Error('response headers were already sent');
    this.headersSent = true;
    this.status = status;
    const ctx = this.ctx;
    ctx.responseHeaders = this.extra;
    if (typeof reasonOrHeaders === 'string') this.reason = reasonOrHeaders;
    else headers = reasonOrHeaders;
    this.headers = toObject(headers);
    // A cache behind portico says what it did; the client is told what portico did.
    delete this.headers['x-cache'];
    const stale = this.target.stale;
    if (status === 304 && stale !== undefined) {
      this.mode = 'revalidated';
      return this;
    }
    if (status >= 500 && stale !== undefined && this.client !== undefined && withinStaleIfError(stale)) {
      this.mode = 'stale-error';
      return this;
    }
    // An error never replaces the stale copy it was meant to refresh.
    this.mode = (status < 500 || stale === undefined) && this.storable() ? 'store' : 'pass';
    const client = this.client;
    if (client === undefined || client.destroyed) return this;
    cacheCounts.misses++;
    client.headersChecked = this.headersChecked;
    client.trailersExpected = this.trailersExpected;
    const c = this.target.conditionals;
    // The client asked conditionally and the new answer satisfies it: 304, and the body only goes to the store.
    if (status === 200 && c.present && c.satisfiedBy(this.headers)) {
      this.forwardBody = false;
      const out = clientHead(this.headers, this.extra, 'MISS', undefined, true);
      client.writeHead(304, out);
      return this;
    }
    const out = clientHead(this.headers, this.extra, 'MISS', undefined, false);
    if (this.reason !== '') client.writeHead(status, this.reason, out);
    else client.writeHead(status, out);
    return this;
  }

  write(chunk: Buffer | string): boolean {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (this.mode === 'store') {
      this.bytes += buf.length;
      if (this.bytes > this.store.maxObjectBytes) {
        this.mode = 'pass';
        this.chunks = [];
      } else {
        this.chunks.push(buf);
      }
    }
    if (this.mode !== 'store' && this.mode !== 'pass') return true;
    const client = this.client;
    if (client === undefined || !this.forwardBody) return true;
    return client.write(buf);
  }

  end(chunk?: Buffer | string): this {
    if (this.writableEnded) return this;
    if (!this.headersSent) this.writeHead(this.status);
    if (chunk !== undefined && chunk.length > 0) this.write(chunk);
    this.writableEnded = true;
    const ctx = this.ctx;
    const client = this.client;
    switch (this.mode) {
      case 'store': {
        const stored = this.storeEntry();
        if (!this.forwardBody) ctx.responseBytes = 0;
        this.finish(stored ? 'stored' : 'answered');
        if (client !== undefined) {
          ctx.res = client;
          client.end();
        }
        break;
      }
      case 'revalidated': {
        const entry = this.freshen(this.target.stale!);
        cacheCounts.revalidated++;
        this.finish('stored');
        if (client !== undefined) {
          ctx.res = client;
          ctx.error = '';
          serveEntry(ctx, client, entry, 'REVALIDATED', this.target.conditionals);
        }
        break;
      }
      case 'stale-error': {
        cacheCounts.stale++;
        this.finish('answered');
        ctx.res = client!;
        // The access log keeps the pod's failure in `error`; the client gets the stale copy.
        ctx.error = ctx.error === '' ? 'served stale (stale-if-error)' : `${ctx.error}; served stale (stale-if-error)`;
        serveEntry(ctx, client!, this.target.stale!, 'STALE', this.target.conditionals);
        break;
      }
      default:
        this.finish('answered');
        if (client !== undefined) {
          ctx.res = client;
          client.end();
        }
    }
    return this;
  }

  endWithTrailers(trailers: Readonly<Record<string, string | string[] | undefined>>): void {
    // An answer with trailers (gRPC) is never stored.
    this.mode = 'pass';
    this.writableEnded = true;
    const client = this.client;
    if (client !== undefined) {
      this.ctx.res = client;
      client.endWithTrailers(trailers);
    }
    this.finish('answered');
  }

  destroy(): void {
    this.mode = 'done';
    const client = this.client;
    if (client !== undefined) {
      this.ctx.res = client;
      client.destroy();
    } else if (!this.ownClosed) {
      this.ownClosed = true;
      process.nextTick(() => this.emit('close'));
    }
    this.finish('abandoned');
  }

  // ---- storing ----

  private storable(): boolean {
    if (this.req.method !== 'GET' || this.trailersExpected) return false;
    const cc = parseCacheControl(this.headers['cache-control']);
    const reason = notStorableReason({
      status: this.status,
      cc,
      headers: this.headers,
      requestHadAuthorization: this.target.authorization,
      defaultTtl: this.target.defaultTtl,
    });
    if (reason !== undefined) return false;
    const length = this.headers['content-length'];
    return !(typeof length === 'string' && Number(length) > this.store.maxObjectBytes);
  }

  private storeEntry(): boolean {
    const t = this.target;
    const headers = this.headers;
    const names = varyNames(headers.vary);
    const body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.bytes);
    this.chunks = [];
    headers['content-length'] = String(body.length);
    const age = ageValue(headers.age);
    delete headers.age;
    const responseTime = Date.now();
    const cc = parseCacheControl(headers['cache-control']);
    const entry = new CacheEntry({
      host: t.host,
      path: t.path,
      primary: t.primary,
      key: t.variantKey(names),
      status: this.status,
      reason: this.reason,
      headers,
      body,
      cc,
      requestTime: this.requestTime,
      responseTime,
      dateValue: httpDate(headers.date),
      ageValue: age,
      lifetime: freshnessLifetime(this.status, cc, headers, t.defaultTtl, responseTime),
      authorizedOk: cc.public || cc.sMaxAge >= 0,
      headersChecked: this.headersChecked,
    });
    return this.store.put(entry, t.base, names);
  }

  /** A 304 refreshes the stale entry: its headers update the stored ones, and its age starts again. */
  private freshen(entry: CacheEntry): CacheEntry {
    const merged: StoredHeaders = { ...entry.headers };
    for (const name in this.headers) {
      if (NOT_UPDATED.has(name)) continue;
      merged[name] = this.headers[name]!;
    }
    delete merged.age;
    const responseTime = Date.now();
    const cc = parseCacheControl(merged['cache-control']);
    entry.setHeaders(merged);
    entry.cc = cc;
    entry.requestTime = this.requestTime;
    entry.responseTime = responseTime;
    entry.dateValue = httpDate(merged.date);
    entry.ageValue = ageValue(this.headers.age);
    entry.lifetime = freshnessLifetime(entry.status, cc, merged, this.target.defaultTtl, responseTime);
    entry.authorizedOk = cc.public || cc.sMaxAge >= 0;
    return entry;
  }

  private finish(outcome: FillOutcome): void {
    if (this.finished) return;
    this.finished = true;
    this.mode = 'done';
    const done = this.onDone;
    this.onDone = undefined;
    done?.(outcome);
  }
}

/** The stale entry may still answer when the pod fails (RFC 5861 stale-if-error). */
export function withinStaleIfError(entry: CacheEntry): boolean {
  const cc = entry.cc;
  if (cc.staleIfError < 0 || !mayServeStale(cc)) return false;
  return currentAge(entry, Date.now()) <= entry.lifetime + cc.staleIfError;
}

/** Flat [name, value...] (names lowercase, as the forwarder and sendError give them) -> object; repeated names become arrays. */
function toObject(headers: HeaderInput | undefined): StoredHeaders {
  const out: StoredHeaders = {};
  if (headers === undefined) return out;
  const add = (name: string, value: string | number | readonly string[]) => {
    const n = name.toLowerCase();
    const v = typeof value === 'number' ? String(value) : value;
    const old = out[n];
    if (old === undefined) out[n] = typeof v === 'string' ? v : [...v];
    else out[n] = [...(typeof old === 'string' ? [old] : old), ...(typeof v === 'string' ? [v] : v)];
  };
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) add(String(headers[i]), headers[i + 1] as string | number | readonly string[]);
  } else {
    const rec = headers as Readonly<Record<string, string | number | readonly string[]>>;
    for (const name in rec) add(name, rec[name]!);
  }
  return out;
}
