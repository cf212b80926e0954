// What the primary and the workers say to each other over the cluster IPC channel
// (advanced serialization: Maps survive). The primary translates once and ships the
// routing config; a change ships only the hosts it touched (a delta on the config a
// worker already has), so a change reaches every worker at the cost of the change.
import type { CertificateConfig, EndpointUpdate, ListenerConfig, RouteConfig, RoutingConfig, SleepPolicy } from '../model/config.ts';
import type { ActivityEntry } from '../scale-to-zero/gates.ts';
import type { InvalidationRequest, InvalidationResult } from '../cache/invalidation.ts';
import { gatewaySourceKey, NO_GATEWAYS, withLazyRoutes } from '../model/config.ts';
import { PatchedMap } from '../util/patched-map.ts';
import { insertSorted, removeSorted } from '../util/sorted.ts';
import { changedKeys, sameItems } from '../util/changed-keys.ts';

export interface ConfigMessage {
  readonly t: 'config';
  readonly serial: number;
  /** Apply on top of the config with this serial; absent: a whole config. */
  readonly base?: number;
  /** Ingress routes per host: every host, or the changed ones (an empty list removes the host). */
  readonly hosts: readonly (readonly [string, readonly RouteConfig[]])[];
  /**
   * Gateway routes by route ("<kind>/<ns>/<name>", so an HTTPRoute and a GRPCRoute of
   * one name stay apart; an empty list removes it) and the listeners, when they
   * changed: every route in a whole config, the changed ones in a delta.
   */
  readonly gateway?: { readonly routes: readonly (readonly [string, readonly RouteConfig[]])[]; readonly listeners: ReadonlyMap<number, ListenerConfig> };
  /** null: none; absent: unchanged (always present in a whole config). */
  readonly defaultBackend?: RouteConfig | null;
  /** Every host's certificate: a whole config. */
  readonly certificates?: ReadonlyMap<string, CertificateConfig>;
  /**
   * A delta: the hosts whose certificate changed (null: the host has none now). Not the
   * whole map: at 10,000 certificates that shipped every PEM on each renewal, and the
   * worker's TLS layer hashed them all again (new objects).
   */
  readonly certificateChanges?: readonly (readonly [string, CertificateConfig | null])[];
}

export type ToWorker =
  | ConfigMessage
  /**
   * Backends whose ready addresses moved (EndpointSlice changes): applied to the routes
   * in service without a new config. `replace`: these are all the moved backends (sent
   * on hello, before the whole config).
   */
  | { readonly t: 'endpoints'; readonly updates: readonly EndpointUpdate[]; readonly replace?: boolean }
  /** The key that signs under-attack challenges (base64), sent before the first config: every worker signs with the primary's key. */
  | { readonly t: 'challenge-key'; readonly key: string }
  | { readonly t: 'metrics'; readonly id: number } | { readonly t: 'stop'; readonly graceMs: number }
  /** Apply a (validated) cache invalidation to the worker's cache and answer 'invalidated' with this id. */
  | { readonly t: 'invalidate'; readonly id: number; readonly request: InvalidationRequest }
  /** The answer to a worker's 'invalidate-all' (every worker applied it). */
  | { readonly t: 'invalidated-all'; readonly id: number; readonly result: InvalidationResult };

export type ToPrimary =
  /** A worker installed config `serial`; it serves on these ports, and could not bind these Gateway ports. */
  | { readonly t: 'installed'; readonly serial: number; readonly ports: { http?: number; https?: number }; readonly bindFailures: ReadonlyMap<number, string> }
  | { readonly t: 'metrics'; readonly id: number; readonly metrics: unknown }
  /** A worker started (or restarted) and needs a whole config. */
  | { readonly t: 'hello' }
  /** Scale-to-zero: what the worker's sleepable Services did lately, and what it needs (src/scale-to-zero/gates.ts). */
  | SleepMessage
  /** The worker applied invalidation `id` to its cache. */
  | { readonly t: 'invalidated'; readonly id: number; readonly result: InvalidationResult }
  /** PURGE/BAN reached this worker: the primary applies it to every worker and answers 'invalidated-all'. */
  | { readonly t: 'invalidate-all'; readonly id: number; readonly request: InvalidationRequest };

export type SleepMessage =
  | { readonly t: 'activity'; readonly entries: readonly ActivityEntry[] }
  | { readonly t: 'wake'; readonly service: string; readonly policy: SleepPolicy }
  | { readonly t: 'wake-timeout'; readonly service: string; readonly count: number };

/** Gateway routes grouped by the route (kind, namespace, name) they come from. */
function gatewayGroups(config: RoutingConfig): ReadonlyMap<string, readonly RouteConfig[]> {
  if (config.gatewayRoutes !== undefined) return config.gatewayRoutes;
  const groups = new Map<string, RouteConfig[]>();
  for (const r of config.routes) {
    if (r.port === undefined) continue;
    const key = gatewaySourceKey(r.source);
    let list = groups.get(key);
    if (list === undefined) groups.set(key, (list = []));
    list.push(r);
  }
  return groups;
}

/** The routes whose RouteConfigs are not the very objects shipped before (and those gone: an empty list). */
function changedGroups(now: ReadonlyMap<string, readonly RouteConfig[]>, before: ReadonlyMap<string, readonly RouteConfig[]>): [string, readonly RouteConfig[]][] {
  return changedKeys(now, before, sameItems).map((key) => [key, now.get(key) ?? []]);
}

/**
 * The hosts whose certificate is not the very object shipped before, and those that lost
 * theirs (null): the hosts the translator's delta names (`changed`), or, without it, what
 * a walk over both maps finds.
 */
function certificateChanges(now: ReadonlyMap<string, CertificateConfig>, before: ReadonlyMap<string, CertificateConfig>, changed: ReadonlySet<string> | undefined): [string, CertificateConfig | null][] {
  return Array.from(changed ?? changedKeys(now, before), (host): [string, CertificateConfig | null] => [host, now.get(host) ?? null]);
}

/** A plain Map of `map` (the translator's is a PatchedMap, which the IPC serializer would not keep a map). */
function plainMap<K, V>(map: ReadonlyMap<K, V>): ReadonlyMap<K, V> {
  return map instanceof Map ? map : new Map(map);
}

/** The primary's side: what to send for `config`, given the one the worker has. */
export function configMessage(config: RoutingConfig, shipped: RoutingConfig | undefined): ConfigMessage {
  const serial = config.serial ?? 0;
  const delta = config.delta;
  if (shipped !== undefined && delta !== undefined && shipped.serial === delta.base && config.ingressHosts !== undefined) {
    return {
      t: 'config',
      serial,
      base: delta.base,
      hosts: [...delta.hosts].map((host) => [host, config.ingressHosts!.get(host) ?? []] as const),
      ...(delta.gateway || config.listeners !== shipped.listeners
        ? {
            gateway: {
              // The delta names the routes that changed; without it, compare them all.
              routes:
                delta.gatewayRoutes !== undefined && config.gatewayRoutes !== undefined
                  ? [...delta.gatewayRoutes].map((key) => [key, config.gatewayRoutes!.get(key) ?? []] as const)
                  : changedGroups(gatewayGroups(config), gatewayGroups(shipped)),
              listeners: config.listeners,
            },
          }
        : {}),
      // The same object ships once, so workers keep its compiled route.
      ...(config.defaultBackend !== shipped.defaultBackend ? { defaultBackend: config.defaultBackend ?? null } : {}),
      ...(config.certificates !== shipped.certificates ? { certificateChanges: certificateChanges(config.certificates, shipped.certificates, delta.certificates) } : {}),
    };
  }
  const hosts = new Map<string, RouteConfig[]>();
  for (const r of config.routes) {
    if (r.port !== undefined) continue;
    let list = hosts.get(r.host);
    if (list === undefined) hosts.set(r.host, (list = []));
    list.push(r);
  }
  return {
    t: 'config',
    serial,
    hosts: [...hosts],
    gateway: { routes: [...gatewayGroups(config)], listeners: config.listeners },
    defaultBackend: config.defaultBackend ?? null,
    certificates: plainMap(config.certificates),
  };
}

/**
 * A worker's copy of the primary's config, rebuilt from messages. Hosts that a message
 * does not name keep their RouteConfig objects, so the worker's route table reuses
 * what it compiled for them.
 */
export class ConfigReplica {
  /** A PatchedMap: a delta copies the hosts it names, not the 20,000 others. */
  private hosts = PatchedMap.of<string, readonly RouteConfig[]>();
  private sortedHosts: string[] = [];
  private routeCount = 0;
  /** By gatewaySourceKey; a PatchedMap for the same reason as hosts. */
  private gatewayRoutes = PatchedMap.of<string, readonly RouteConfig[]>();
  private gatewayCount = 0;
  private listeners: ReadonlyMap<number, ListenerConfig> = new Map();
  /** A PatchedMap too: a renewed Secret copies its hosts, not every TLS host. */
  private certificates = PatchedMap.of<string, CertificateConfig>();
  private defaultBackend: RouteConfig | undefined;
  serial: number | undefined;

  /** The config after `message`, or undefined when it is a delta on a config this replica does not have. */
  apply(message: ConfigMessage): RoutingConfig | undefined {
    const isDelta = message.base !== undefined;
    if (isDelta && message.base !== this.serial) return undefined;
    if (!isDelta) {
      this.sortedHosts = [];
      this.routeCount = 0;
      this.hosts = PatchedMap.of();
    }
    const changes: [string, readonly RouteConfig[] | undefined][] = [];
    for (const [host, routes] of message.hosts) {
      this.routeCount += routes.length - (this.hosts.get(host)?.length ?? 0);
      if (routes.length === 0) {
        changes.push([host, undefined]);
        removeSorted(this.sortedHosts, host);
      } else {
        changes.push([host, routes]);
        insertSorted(this.sortedHosts, host);
      }
    }
    const hosts = (this.hosts = this.hosts.with(changes));
    if (message.gateway !== undefined) {
      if (!isDelta) {
        this.gatewayRoutes = PatchedMap.of();
        this.gatewayCount = 0;
      }
      for (const [key, routes] of message.gateway.routes) this.gatewayCount += routes.length - (this.gatewayRoutes.get(key)?.length ?? 0);
      this.gatewayRoutes = this.gatewayRoutes.with(message.gateway.routes.map(([key, routes]) => [key, routes.length > 0 ? routes : undefined] as const));
      this.listeners = message.gateway.listeners;
    }
    if (message.certificates !== undefined) this.certificates = PatchedMap.of(message.certificates);
    if (message.certificateChanges !== undefined) {
      // The hosts not named keep their objects, so the TLS layer knows them (CertificateStore).
      this.certificates = this.certificates.with(message.certificateChanges.map(([host, certificate]) => [host, certificate ?? undefined] as const));
    }
    if (message.defaultBackend !== undefined) this.defaultBackend = message.defaultBackend ?? undefined;
    const previous = this.serial;
    this.serial = message.serial;
    // The whole route list is made only if read (a full rebuild); a delta patches the host maps.
    const hostOrder = this.sortedHosts.slice();
    const gatewayRoutes = this.gatewayRoutes;
    return withLazyRoutes(
      {
        routeCount: this.routeCount + this.gatewayCount,
        ...(this.defaultBackend !== undefined ? { defaultBackend: this.defaultBackend } : {}),
        certificates: this.certificates,
        // What only the primary uses (status, /routes) is not shipped.
        servedIngresses: [],
        ignoredIngresses: [],
        problems: [],
        gatewayStatus: NO_GATEWAYS.gatewayStatus,
        listeners: this.listeners,
        ingressHosts: hosts,
        gatewayRoutes,
        serial: message.serial,
        ...(isDelta && previous !== undefined
          ? {
              delta: {
                base: previous,
                hosts: new Set(message.hosts.map(([h]) => h)),
                gateway: message.gateway !== undefined,
                // A delta message names the routes that changed (and those gone, with no routes).
                ...(message.gateway !== undefined ? { gatewayRoutes: new Set(message.gateway.routes.map(([key]) => key)) } : {}),
                // And the hosts whose certificate changed (the TLS layer updates those alone).
                ...(message.certificateChanges !== undefined ? { certificates: new Set(message.certificateChanges.map(([host]) => host)) } : {}),
              },
            }
          : {}),
      },
      () => {
        const routes: RouteConfig[] = [];
        for (const host of hostOrder) for (const r of hosts.get(host)!) routes.push(r);
        for (const list of gatewayRoutes.values()) for (const r of list) routes.push(r);
        return routes;
      },
    );
  }
}
