// Connections to pods: one pool per (upstream profile, connect timeout, pod address),
// created on first use and kept alive between requests. HTTP/1.1 pods (profiles http
// and https) get portico's own client (src/http1/client.ts), h2c/h2 pods its own HTTP/2
// client (src/http2/client.ts); both take the forwarder's dispatch(options, handler). Pools whose address
// left the route table are closed after a grace period; closing a pool lets the
// requests it is serving finish.
import type { Dispatcher } from 'undici';
import { Http1Pool } from '../http1/client.ts';
import { Http2Pool } from '../http2/client.ts';
import type { BackendConfig, RouteConfig, RoutingConfig, UpstreamAddress } from '../model/config.ts';
import { routeChanges } from '../routing/route-changes.ts';
import type { UpstreamProfile } from './context.ts';
import { EndpointRegistry } from './endpoint-registry.ts';
import { Balancer } from './balancer.ts';
import { flatString } from '../util/flat-string.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { createRequire } = process.getBuiltinModule('node:module');

/** What the forwarder sends requests through: an Http1Pool or an Http2Pool. */
export interface UpstreamDispatcher {
  dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean;
  /** Takes no new requests; resolves once those in flight are done and the connections closed. */
  close(): Promise<void>;
  /** Closes every connection now. */
  destroy(): Promise<void>;
}

export interface UpstreamPoolsOptions {
  /** ms; default connect timeout (a request can ask for another, which gets its own pool) */
  connectTimeout: number;
  /** ms an idle keep-alive connection to a pod is kept */
  keepAliveTimeout: number;
  /** ms a pool whose address is no longer routed stays open (default 30 s) */
  retireGraceMs?: number;
}

/**
 * undici, loaded when first needed (request mirroring; pods get portico's own clients):
 * it costs about 8 MB a process that never mirrors.
 */
export const undici = (() => {
  let loaded: typeof import('undici') | undefined;
  return () => (loaded ??= createRequire(import.meta.url)('undici') as typeof import('undici'));
})();

/** "host:port", with brackets around IPv6 hosts. */
export function addressKey(address: UpstreamAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}

/** Live counters of one pod address, shared by every route and profile that uses it. */
export class AddressStats {
  readonly key: string;
  /** Requests sent to this address and not finished yet. */
  inflight = 0;
  /** Connection attempts that failed in a row (refused, unreachable, timed out). */
  connectFailures = 0;
  /** performance.now() until which the balancer avoids this address (passive ejection); 0: not ejected. */
  ejectedUntil = 0;

  constructor(key: string) {
    this.key = key;
  }

  /** A connection could not be made: after EJECT_AFTER in a row, the address is avoided for a while, longer each time. Returns whether it was ejected. */
  connectFailed(now: number): boolean {
    this.connectFailures++;
    if (this.connectFailures < EJECT_AFTER) return false;
    const times = this.connectFailures - EJECT_AFTER;
    this.ejectedUntil = now + Math.min(EJECT_BASE_MS * 2 ** times, EJECT_MAX_MS);
    return true;
  }

  /** The pod answered: whatever failed before is forgotten. */
  answered(): void {
    this.connectFailures = 0;
    this.ejectedUntil = 0;
  }
}

/** Passive ejection, as nginx's max_fails/fail_timeout: 3 failed connects in a row, then 5 s, doubling up to 60 s. */
const EJECT_AFTER = 3;
const EJECT_BASE_MS = 5_000;
const EJECT_MAX_MS = 60_000;

class PoolEntry {
  readonly key: string;
  readonly addressKey: string;
  readonly pool: UpstreamDispatcher;
  retireTimer: NodeJS.Timeout | undefined = undefined;
  closed = false;

  constructor(key: string, addressKey: string, pool: UpstreamDispatcher) {
    this.key = key;
    this.addressKey = addressKey;
    this.pool = pool;
  }
}

/**
 * One pod address as a route sees it. Remembers the last pool it used, so the common
 * case (every request of a route uses the same profile) needs no map lookup.
 */
export class Endpoint {
  readonly address: UpstreamAddress;
  /** "host:port" */
  readonly key: string;
  readonly stats: AddressStats;
  private cachedProfile: UpstreamProfile | undefined = undefined;
  private cachedConnect = -1;
  private cachedEntry: PoolEntry | undefined = undefined;
  private readonly pools: UpstreamPools;

  constructor(pools: UpstreamPools, address: UpstreamAddress, key: string, stats: AddressStats) {
    this.pools = pools;
    this.address = address;
    this.key = key;
    this.stats = stats;
  }

  /** The pool to send a request with this profile and connect timeout through. */
  pool(profile: UpstreamProfile, connectTimeout: number): UpstreamDispatcher {
    const cached = this.cachedEntry;
    if (cached !== undefined && !cached.closed && this.cachedProfile === profile && this.cachedConnect === connectTimeout) {
      return cached.pool;
    }
    const entry = this.pools.entry(profile, connectTimeout, this.address, this.key);
    this.cachedEntry = entry;
    this.cachedProfile = profile;
    this.cachedConnect = connectTimeout;
    return entry.pool;
  }
}

/** A backend as the pools count it: how many route backends use it, and the addresses counted for them. */
interface BackendUse {
  uses: number;
  addresses: readonly string[];
}

export class UpstreamPools {
  /** The live addresses of each backend: routes read them here, and endpoint changes move them. */
  readonly registry = new EndpointRegistry();
  private readonly options: Required<UpstreamPoolsOptions>;
  private readonly entries = new Map<string, PoolEntry>();
  private readonly stats = new Map<string, AddressStats>();
  /** Balancers by the address list they balance over; forgotten with the list. */
  private readonly balancers = new WeakMap<readonly UpstreamAddress[], Balancer>();
  /** Addresses of the current route table; undefined until the first retain(). */
  /** Routes using each pod address ("host:port"); undefined until the first retain(). */
  private refs: Map<string, number> | undefined = undefined;
  /** The backends ("ns/service:port") the counts come from. */
  private backends = new Map<string, BackendUse>();
  /** The config the counts follow (a delta is relative to it). */
  private retained: RoutingConfig | undefined = undefined;
  private closed = false;

  constructor(options: UpstreamPoolsOptions) {
    this.options = { retireGraceMs: 30_000, ...options };
    this.registry.onMove((key, addresses) => this.moveBackend(key, addresses));
  }

  get defaultConnectTimeout(): number {
    return this.options.connectTimeout;
  }

  /** Number of open pools (for tests and /debug output). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * The balancer over a backend's addresses. Every route to a backend reads the same
   * address list (the translator makes one per backend, the registry one per move), so
   * they share one balancer and its endpoints: at 10,000 Ingresses of 4 routes each, a
   * balancer per route held 200,000 endpoints for 50,000 addresses.
   */
  balancer(addresses: readonly UpstreamAddress[]): Balancer {
    let balancer = this.balancers.get(addresses);
    if (balancer === undefined) {
      balancer = new Balancer(addresses.map((a) => this.endpoint(a)));
      this.balancers.set(addresses, balancer);
    }
    return balancer;
  }

  /** An Endpoint for a route's address; cheap, called when routes are compiled. */
  endpoint(address: UpstreamAddress): Endpoint {
    const key = addressKey(address);
    let stats = this.stats.get(key);
    if (!stats) {
      // Flat: "host:port" is a 32-byte tree of its pieces otherwise, kept with every address
      // (1.6 MB at 50,000). The same string is the map's key: keyed by the tree, the map kept
      // the tree and the flat copy its hash made besides (1.6 MB more at 50,000 compiled).
      const flat = flatString(key);
      stats = new AddressStats(flat);
      this.stats.set(flat, stats);
    }
    // The stats' key: one string per address, not one per route that uses it.
    return new Endpoint(this, address, stats.key, stats);
  }

  /** The pool for (profile, connect timeout, address), created on first use. */
  entry(profile: UpstreamProfile, connectTimeout: number, address: UpstreamAddress, key = addressKey(address)): PoolEntry {
    if (this.closed) throw new Error('upstream pools are closed');
    const poolKey = `${profile.key}|${connectTimeout}|${key}`;
    let entry = this.entries.get(poolKey);
    if (!entry) {
      entry = new PoolEntry(poolKey, key, this.createPool(profile, connectTimeout, address, key));
      this.entries.set(poolKey, entry);
      // A pool created for an address the table no longer has (a request that matched
      // the previous table) is retired like the others.
      if (this.refs && !this.refs.has(key)) this.scheduleRetire(entry);
    }
    return entry;
  }

  private createPool(profile: UpstreamProfile, connectTimeout: number, address: UpstreamAddress, key: string): UpstreamDispatcher {
    switch (profile.protocol) {
      case 'http':
        return new Http1Pool(address, { connectTimeout, keepAliveTimeout: this.options.keepAliveTimeout });
      case 'https':
        // The SNI name comes with each request (see forward.ts); connections are reused per name.
        return new Http1Pool(address, { connectTimeout, keepAliveTimeout: this.options.keepAliveTimeout, tls: tlsOptions(profile) });
    }
    // h2c, h2: sessions multiplex; a pool opens another when the pod's stream limit is reached.
    const tls = profile.protocol === 'h2' ? tlsOptions(profile) : undefined;
    return new Http2Pool(address, { connectTimeout, keepAliveTimeout: this.options.keepAliveTimeout, tls });
  }

  /**
   * Keeps the pools of the addresses `config` routes to; the others are closed after the
   * grace period (unless their address comes back), letting requests in flight finish.
   */
  retain(config: RoutingConfig | Iterable<string>): void {
    if (isRoutingConfig(config)) {
      // With a delta, only the addresses of the routes it added and removed are counted again.
      const changes = routeChanges(this.retained, config);
      this.retained = config;
      if (changes !== undefined && this.refs !== undefined) {
        const touched = new Set<string>();
        for (const r of changes.added) this.countRoute(r, 1, touched);
        for (const r of changes.removed) this.countRoute(r, -1, touched);
        for (const key of touched) this.settle(key);
        return;
      }
      this.refs = new Map();
      this.backends = new Map();
      const ignored = new Set<string>();
      for (const route of config.routes) this.countRoute(route, 1, ignored);
      if (config.defaultBackend) this.countRoute(config.defaultBackend, 1, ignored);
    } else {
      this.retained = undefined;
      this.backends = new Map();
      this.refs = new Map([...config].map((key) => [key, 1]));
    }
    for (const entry of this.entries.values()) this.settlePool(entry);
    for (const key of this.stats.keys()) {
      const stats = this.stats.get(key)!;
      if (!this.refs.has(key) && stats.inflight === 0) this.stats.delete(key);
    }
  }

  /** A route's backends (its split's included) start or stop being used. */
  private countRoute(route: RouteConfig, by: 1 | -1, touched: Set<string>): void {
    this.countBackend(route.backend, by, touched);
    if (route.backends !== undefined) for (const wb of route.backends) this.countBackend(wb.backend, by, touched);
  }

  /**
   * Counted by backend: a route stops using the very addresses it was counted with, even
   * when its backend's addresses moved in between (moveBackend).
   */
  private countBackend(backend: BackendConfig, by: 1 | -1, touched: Set<string>): void {
    if (backend.error !== undefined) return;
    let use = this.backends.get(backend.key);
    if (by > 0) {
      const addresses = this.registry.addresses(backend).map(addressKey);
      if (use === undefined) this.backends.set(backend.key, (use = { uses: 0, addresses }));
      else if (!sameList(use.addresses, addresses)) this.move(use, addresses, touched);
      use.uses++;
      for (const key of use.addresses) this.addRef(key, 1, touched);
    } else if (use !== undefined) {
      use.uses--;
      for (const key of use.addresses) this.addRef(key, -1, touched);
      if (use.uses <= 0) this.backends.delete(backend.key);
    }
  }

  /** A backend's addresses moved (the registry): what its routes use follows. */
  private moveBackend(backendKey: string, addresses: readonly UpstreamAddress[]): void {
    const use = this.backends.get(backendKey);
    if (use === undefined || this.refs === undefined) return;
    const touched = new Set<string>();
    this.move(use, addresses.map(addressKey), touched);
    for (const key of touched) this.settle(key);
  }

  private move(use: BackendUse, addresses: readonly string[], touched: Set<string>): void {
    for (const key of use.addresses) this.addRef(key, -use.uses, touched);
    for (const key of addresses) this.addRef(key, use.uses, touched);
    use.addresses = addresses;
  }

  private addRef(key: string, by: number, touched: Set<string>): void {
    const n = (this.refs!.get(key) ?? 0) + by;
    if (n > 0) this.refs!.set(key, n);
    else this.refs!.delete(key);
    touched.add(key);
  }

  /** A pool of a routed address stays; one no route uses any more is retired after the grace. */
  private settlePool(entry: PoolEntry): void {
    if (this.refs!.has(entry.addressKey)) {
      if (entry.retireTimer) {
        clearTimeout(entry.retireTimer);
        entry.retireTimer = undefined;
      }
    } else if (!entry.retireTimer) {
      this.scheduleRetire(entry);
    }
  }

  /** After an address' routes changed: its pools and stats follow. */
  private settle(addressKey: string): void {
    for (const entry of this.entriesByAddress(addressKey)) this.settlePool(entry);
    const stats = this.stats.get(addressKey);
    if (stats !== undefined && !this.refs!.has(addressKey) && stats.inflight === 0) this.stats.delete(addressKey);
  }

  private *entriesByAddress(addressKey: string): IterableIterator<PoolEntry> {
    for (const entry of this.entries.values()) if (entry.addressKey === addressKey) yield entry;
  }

  private scheduleRetire(entry: PoolEntry): void {
    entry.retireTimer = setTimeout(() => {
      entry.retireTimer = undefined;
      this.retire(entry);
    }, this.options.retireGraceMs);
    entry.retireTimer.unref();
  }

  private retire(entry: PoolEntry): void {
    if (this.entries.get(entry.key) === entry) this.entries.delete(entry.key);
    entry.closed = true;
    // close() waits for queued and running requests, then ends the sockets.
    entry.pool.close().catch(() => {});
  }

  /** Shutdown: closes every pool, waiting up to `graceMs` for requests in flight, then destroys what is left. */
  async close(graceMs = 5_000): Promise<void> {
    this.closed = true;
    const entries = [...this.entries.values()];
    this.entries.clear();
    for (const entry of entries) {
      if (entry.retireTimer) clearTimeout(entry.retireTimer);
      entry.closed = true;
    }
    await Promise.all(
      entries.map(async (entry) => {
        let timer: NodeJS.Timeout | undefined;
        const expired = new Promise<'expired'>((resolve) => {
          timer = setTimeout(() => resolve('expired'), graceMs);
        });
        const outcome = await Promise.race([entry.pool.close().then(() => 'closed' as const, () => 'closed' as const), expired]);
        clearTimeout(timer);
        if (outcome === 'expired') await entry.pool.destroy().catch(() => {});
      }),
    );
  }
}

/** TLS to pods; the SNI name comes with each request (see forward.ts), as pods are addressed by IP. */
function tlsOptions(profile: UpstreamProfile): { ca?: string; rejectUnauthorized: boolean } {
  return { ca: profile.ca, rejectUnauthorized: !profile.insecureSkipVerify };
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Without reading `routes`: a config may make that list on first use only (withLazyRoutes). */
function isRoutingConfig(value: RoutingConfig | Iterable<string>): value is RoutingConfig {
  return 'routes' in (value as object) && !(Symbol.iterator in (value as object));
}
