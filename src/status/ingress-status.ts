// Writes status.loadBalancer.ingress on the Ingresses portico serves, and clears it
// from Ingresses it stopped serving (a class change, say). Only the leader runs it.
import type { Logger } from 'pino';
import type { Ingress, LoadBalancerIngress, Service } from '../model/k8s.ts';
import { KubeApiError, type KubeClient } from '../kube/client.ts';
import { lowerBound } from '../util/sorted.ts';
import { RetryAfterFailure } from './retry-after-failure.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { setImmediate: nextTurn } = process.getBuiltinModule('node:timers/promises');
const { isIP } = process.getBuiltinModule('node:net');

export interface IngressStatusOptions {
  client: KubeClient;
  log: Logger;
  /** --publish-address: comma-separated IPs or hostnames. */
  publishAddress?: string;
  /** --publish-service: "ns/name". */
  publishService?: string;
  /** Current Ingress objects, keyed "ns/name". */
  ingresses: () => ReadonlyMap<string, Ingress>;
  /** "ns/name" of the Ingresses portico serves now. */
  /** "ns/name" of the served Ingresses, sorted. */
  served: () => readonly string[];
}

/** Parses --publish-address into status entries (IPs as ip, names as hostname). */
export function parsePublishAddress(text: string): LoadBalancerIngress[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((a) => (isIP(a) ? { ip: a } : { hostname: a }));
}

/** The publish Service's load-balancer addresses, else its ClusterIP. */
export function serviceAddresses(svc: Service): LoadBalancerIngress[] {
  const lb: LoadBalancerIngress[] = [];
  for (const e of svc.status?.loadBalancer?.ingress ?? []) {
    if (e.ip) lb.push({ ip: e.ip });
    else if (e.hostname) lb.push({ hostname: e.hostname });
  }
  if (lb.length) return lb;
  const ip = svc.spec?.clusterIP;
  return ip && ip !== 'None' ? [{ ip }] : [];
}

function addressesKey(list: readonly LoadBalancerIngress[]): string {
  return list.map((e) => `${e.ip ?? ''}|${e.hostname ?? ''}`).sort().join(',');
}

export class IngressStatusWriter {
  private readonly o: IngressStatusOptions;
  private running: Promise<void> | undefined;
  private again = false;
  private readonly retry = new RetryAfterFailure(() => void this.reconcile());
  /** What the next pass checks: every Ingress, or these keys. */
  private nextAll = false;
  private nextKeys = new Set<string>();
  private cached: { at: number; addresses: LoadBalancerIngress[] } | undefined;
  /**
   * Ingress object (as stored) -> the state it was found in sync with (served or not,
   * and the addresses). Objects are replaced when they change, so a full pass skips,
   * without comparing addresses, each Ingress already checked against the same state:
   * at 10,000 Ingresses a full pass (every 10 s while changes come, on the leader's loop,
   * right after a swap) took 6-16 ms, and now about a millisecond.
   */
  private readonly inSync = new WeakMap<object, string>();
  active = false;

  constructor(options: IngressStatusOptions) {
    this.o = options;
  }

  /**
   * Brings every Ingress' status in line (only those of `keys` when given: a status
   * that changed by itself); coalesces calls made while one runs.
   */
  reconcile(keys?: Iterable<string>): Promise<void> {
    if (!this.active) return Promise.resolve();
    if (keys === undefined) this.nextAll = true;
    else for (const key of keys) this.nextKeys.add(key);
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      // Status is background work: the requests already waiting (the first ones on the
      // route just swapped in) go first.
      await nextTurn();
      do {
        this.again = false;
        const keys = this.nextAll ? undefined : this.nextKeys;
        this.nextAll = false;
        this.nextKeys = new Set();
        try {
          await this.reconcileOnce(keys);
          this.retry.succeeded();
        } catch (err) {
          // The retry checks everything: the in-sync marks make that cheap.
          this.o.log.warn({ err: (err as Error).message, retryInMs: this.retry.failed() }, 'could not update Ingress status; will retry');
        }
      } while (this.again && this.active);
      this.running = undefined;
    })();
    return this.running;
  }

  async addresses(): Promise<LoadBalancerIngress[]> {
    if (this.o.publishAddress) return parsePublishAddress(this.o.publishAddress);
    if (!this.o.publishService) return [];
    if (this.cached && Date.now() - this.cached.at < 5000) return this.cached.addresses;
    const [ns, name] = this.o.publishService.split('/');
    const svc = await this.o.client.request<Service>('GET', `/api/v1/namespaces/${ns}/services/${name}`);
    this.cached = { at: Date.now(), addresses: serviceAddresses(svc) };
    return this.cached.addresses;
  }

  private async reconcileOnce(keys: ReadonlySet<string> | undefined): Promise<void> {
    const addresses = await this.addresses();
    // Sorted ("ns/name"): one lookup per checked Ingress, not a set of 10,000 per change.
    const servedList = this.o.served();
    const served = { has: (key: string) => servedList[lowerBound(servedList, key)] === key };
    const work: (() => Promise<boolean>)[] = [];
    const all = this.o.ingresses();
    const checked = keys === undefined ? all : [...keys].flatMap((key) => {
      const ing = all.get(key);
      return ing === undefined ? [] : [[key, ing] as const];
    });
    const wanted = addressesKey(addresses);
    const servedState = `served ${wanted}`;
    const notServedState = `not served ${wanted}`;
    for (const [key, ing] of checked) {
      const isServed = served.has(key);
      const state = isServed ? servedState : notServedState;
      if (this.inSync.get(ing) === state) continue;
      const current = ing.status?.loadBalancer?.ingress;
      let desired: LoadBalancerIngress[] | undefined;
      if (isServed) {
        if (addresses.length && addressesKey(current ?? []) !== wanted) desired = addresses;
      } else if (current?.length && addresses.length && addressesKey(current) === wanted) {
        // Ours, but no longer served by portico: take our address back.
        desired = [];
      }
      if (desired) work.push(() => this.patch(ing, desired));
      else this.inSync.set(ing, state);
    }
    // A few writes at a time: thousands of Ingresses must not flood the API server.
    let next = 0;
    let written = 0;
    await Promise.all(
      Array.from({ length: Math.min(4, work.length) }, async () => {
        while (next < work.length) if (await work[next++]!()) written++;
      }),
    );
    // One line per pass, not one per Ingress (a leader's first pass at 10,000 Ingresses); each write is at debug.
    if (written > 0) this.o.log.info({ count: written, addresses }, `Ingress status written on ${written} Ingress${written === 1 ? '' : 'es'}`);
  }

  /** Whether it was written (false: the Ingress was deleted meanwhile). */
  private async patch(ing: Ingress, addresses: LoadBalancerIngress[]): Promise<boolean> {
    const { namespace, name } = ing.metadata;
    try {
      await this.o.client.write('PATCH', `/apis/networking.k8s.io/v1/namespaces/${namespace}/ingresses/${name}/status`, {
        body: { status: { loadBalancer: { ingress: addresses } } },
        contentType: 'application/merge-patch+json',
      });
      this.o.log.debug({ ingress: `${namespace}/${name}`, addresses }, addresses.length ? 'Ingress status updated' : 'Ingress status cleared');
      return true;
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return false; // deleted meanwhile
      throw err;
    }
  }
}
