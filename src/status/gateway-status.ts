// Writes the Gateway API status translation wants (RoutingConfig.gatewayStatus) on
// GatewayClasses, Gateways, HTTPRoutes and GRPCRoutes, through the status subresource, and only
// what differs from what the object already says. Only the leader runs it.
//
// - lastTransitionTime is kept while a condition's status stays the same;
// - route (HTTPRoute, GRPCRoute) status.parents entries of other controllers are never touched: ours
//   are replaced, and removed when the route no longer names our Gateway;
// - a write carries the object's resourceVersion, so a concurrent change gives 409
//   and the next reconcile (after the watch delivers it) starts from fresh data.
import type { Logger } from 'pino';
import type { GatewayApiStatus } from '../model/config.ts';
import type { Condition, Gateway, GatewayClass, GatewayStatusAddress, GRPCRoute, HTTPRoute, ListenerStatus, RouteParentStatus } from '../model/k8s.ts';
import { KubeApiError, type KubeClient } from '../kube/client.ts';
import { deepEqual } from '../util/deep-equal.ts';
import { RetryAfterFailure } from './retry-after-failure.ts';
import type { LoadBalancerIngress } from '../model/k8s.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { setImmediate: nextTurn } = process.getBuiltinModule('node:timers/promises');

export interface GatewayStatusOptions {
  client: KubeClient;
  log: Logger;
  controllerName: string;
  /** The addresses clients reach portico at (as for Ingress status). */
  addresses: () => Promise<LoadBalancerIngress[]>;
  desired: () => GatewayApiStatus;
  gatewayClasses: () => ReadonlyMap<string, GatewayClass>;
  gateways: () => ReadonlyMap<string, Gateway>;
  httpRoutes: () => ReadonlyMap<string, HTTPRoute>;
  grpcRoutes?: () => ReadonlyMap<string, GRPCRoute>;
  /** Gateway listener ports portico could not bind, with why. */
  bindFailures?: () => ReadonlyMap<number, string>;
}

const BASE = '/apis/gateway.networking.k8s.io/v1';

/** Conditions as written: lastTransitionTime from `current` when the status did not change, else now. */
export function withTransitionTimes(desired: readonly Condition[], current: readonly Condition[] | undefined, now: string): Condition[] {
  return desired.map((c) => {
    const before = current?.find((x) => x.type === c.type);
    return { ...c, lastTransitionTime: before !== undefined && before.status === c.status && before.lastTransitionTime ? before.lastTransitionTime : now };
  });
}

/** Equal but for lastTransitionTime (which withTransitionTimes keeps when nothing changed). */
function sameConditions(a: readonly Condition[] | undefined, b: readonly Condition[]): boolean {
  const strip = (list: readonly Condition[]) => list.map(({ lastTransitionTime: _t, ...rest }) => rest);
  return deepEqual(strip(a ?? []), strip(b));
}

function sameParentRef(a: RouteParentStatus['parentRef'], b: RouteParentStatus['parentRef']): boolean {
  return deepEqual({ ...a }, { ...b });
}

function toAddresses(list: LoadBalancerIngress[]): GatewayStatusAddress[] {
  return list.map((a) => (a.ip !== undefined ? { type: 'IPAddress', value: a.ip } : { type: 'Hostname', value: a.hostname ?? '' }));
}

/** What a route was found in sync with when it has no status of ours to want. */
const NOTHING_WANTED = {};

export class GatewayStatusWriter {
  private readonly o: GatewayStatusOptions;
  /**
   * Route object (as stored) -> the desired status (as translated) it was found in sync
   * with. Both are immutable and replaced when they change, so a route whose object and
   * desired status are the ones already compared is skipped without comparing again: a
   * reconcile after one change costs two lookups per route, not a comparison of every
   * route's conditions (at 10,000 HTTPRoutes 17-40 ms on the leader's event loop, after
   * every change).
   */
  private readonly inSync = new WeakMap<object, object>();
  private running: Promise<void> | undefined;
  private again = false;
  private readonly retry = new RetryAfterFailure(() => void this.reconcile());
  active = false;

  constructor(options: GatewayStatusOptions) {
    this.o = options;
  }

  /** Brings every object's status in line; coalesces calls made while one runs. */
  reconcile(): Promise<void> {
    if (!this.active) return Promise.resolve();
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
        try {
          await this.reconcileOnce();
          this.retry.succeeded();
        } catch (err) {
          // The retry checks everything: the in-sync marks make that cheap.
          this.o.log.warn({ err: (err as Error).message, retryInMs: this.retry.failed() }, 'could not update Gateway API status; will retry');
        }
      } while (this.again && this.active);
      this.running = undefined;
    })();
    return this.running;
  }

  private async reconcileOnce(): Promise<void> {
    const desired = this.o.desired();
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const work: (() => Promise<void>)[] = [];

    for (const [key, want] of desired.gatewayClasses) {
      const obj = this.o.gatewayClasses().get(key);
      if (obj === undefined || sameConditions(obj.status?.conditions, [...want.conditions])) continue;
      const conditions = withTransitionTimes(want.conditions, obj.status?.conditions, now);
      work.push(() => this.write(`${BASE}/gatewayclasses/${obj.metadata.name}/status`, obj, { conditions }));
    }

    const addresses = desired.gateways.size > 0 ? toAddresses(await this.o.addresses()) : [];
    const failures = this.o.bindFailures?.() ?? new Map<number, string>();
    for (const [key, want] of desired.gateways) {
      const obj = this.o.gateways().get(key);
      if (obj === undefined) continue;
      const listeners: ListenerStatus[] = want.listeners.map((l) => {
        const port = obj.spec?.listeners?.find((x) => x.name === l.name)?.port;
        const failure = port === undefined ? undefined : failures.get(port);
        if (failure === undefined) return { ...l, conditions: [...l.conditions] };
        // Translation cannot know a bind failed: the listener is accepted but not programmed.
        return {
          ...l,
          conditions: l.conditions.map((c) => (c.type === 'Programmed' ? { ...c, status: 'False' as const, reason: 'PortUnavailable', message: failure } : c)),
        };
      });
      const current = obj.status;
      const sameListeners =
        (current?.listeners?.length ?? 0) === listeners.length &&
        listeners.every((l, i) => {
          const c = current!.listeners![i]!;
          return c.name === l.name && c.attachedRoutes === l.attachedRoutes && deepEqual(c.supportedKinds, l.supportedKinds) && sameConditions(c.conditions, l.conditions);
        });
      if (sameListeners && sameConditions(current?.conditions, [...want.conditions]) && deepEqual(current?.addresses ?? [], addresses)) continue;
      const status = {
        addresses,
        conditions: withTransitionTimes(want.conditions, current?.conditions, now),
        listeners: listeners.map((l) => ({ ...l, conditions: withTransitionTimes(l.conditions, current?.listeners?.find((c) => c.name === l.name)?.conditions, now) })),
      };
      work.push(() => this.write(`${BASE}/namespaces/${obj.metadata.namespace}/gateways/${obj.metadata.name}/status`, obj, status));
    }

    this.routeParents(work, 'httproutes', this.o.httpRoutes(), desired.httpRoutes, now);
    if (this.o.grpcRoutes !== undefined) this.routeParents(work, 'grpcroutes', this.o.grpcRoutes(), desired.grpcRoutes, now);

    // A few writes at a time: thousands of routes must not flood the API server.
    const queue = work.slice();
    await Promise.all(
      Array.from({ length: Math.min(4, queue.length) }, async () => {
        for (let job = queue.shift(); job; job = queue.shift()) await job();
      }),
    );
  }

  /** Queues a write of status.parents for each route whose parents of ours differ from `desired`. */
  private routeParents(
    work: (() => Promise<void>)[],
    plural: string,
    routes: ReadonlyMap<string, HTTPRoute | GRPCRoute>,
    desired: GatewayApiStatus['httpRoutes'],
    now: string,
  ): void {
    for (const [key, obj] of routes) {
      const entry = desired.get(key);
      const wanted = entry ?? NOTHING_WANTED;
      if (this.inSync.get(obj) === wanted) continue;
      const want = entry?.parents ?? [];
      const current = obj.status?.parents ?? [];
      const others = current.filter((p) => p.controllerName !== this.o.controllerName);
      const ours = current.filter((p) => p.controllerName === this.o.controllerName);
      const same = ours.length === want.length && want.every((w, i) => sameParentRef(ours[i]!.parentRef, w.parentRef) && sameConditions(ours[i]!.conditions, w.conditions));
      if (same) {
        this.inSync.set(obj, wanted);
        continue;
      }
      const parents = [
        ...others,
        ...want.map((w) => ({
          ...w,
          conditions: withTransitionTimes(w.conditions, ours.find((o) => sameParentRef(o.parentRef, w.parentRef))?.conditions, now),
        })),
      ];
      work.push(() => this.write(`${BASE}/namespaces/${obj.metadata.namespace}/${plural}/${obj.metadata.name}/status`, obj, { parents }));
    }
  }

  private async write(path: string, obj: { metadata: { resourceVersion?: string; name: string; namespace?: string }; kind: string }, status: unknown): Promise<void> {
    try {
      await this.o.client.write('PATCH', path, {
        body: { metadata: { resourceVersion: obj.metadata.resourceVersion }, status },
        contentType: 'application/merge-patch+json',
      });
      this.o.log.debug({ object: `${obj.kind} ${obj.metadata.namespace ?? ''}/${obj.metadata.name}` }, 'Gateway API status updated');
    } catch (err) {
      // Deleted meanwhile, or changed meanwhile (the watch brings the new version and another reconcile).
      if (err instanceof KubeApiError && (err.status === 404 || err.status === 409)) return;
      throw err;
    }
  }
}
