// Which routes a config added and removed relative to the one before it, from its
// delta: the hosts it names and the Gateway routes it names (or all of them when it
// does not say which changed). What keeps
// state per route (compiled chains, pools per pod address) updates only those, so a
// change costs in proportion to it, not to the table.
import type { RouteConfig, RoutingConfig } from '../model/config.ts';

export interface RouteChanges {
  readonly added: readonly RouteConfig[];
  readonly removed: readonly RouteConfig[];
}

/** undefined when `config` does not say what changed since `previous` (then compare everything). */
export function routeChanges(previous: RoutingConfig | undefined, config: RoutingConfig): RouteChanges | undefined {
  const delta = config.delta;
  if (previous === undefined || delta === undefined || previous.serial !== delta.base || config.ingressHosts === undefined || previous.ingressHosts === undefined) {
    return undefined;
  }
  const added: RouteConfig[] = [];
  const removed: RouteConfig[] = [];
  const diff = (before: readonly RouteConfig[], after: readonly RouteConfig[]) => {
    const old = new Set(before);
    const now = new Set(after);
    for (const r of after) if (!old.has(r)) added.push(r);
    for (const r of before) if (!now.has(r)) removed.push(r);
  };
  for (const host of delta.hosts) diff(previous.ingressHosts.get(host) ?? [], config.ingressHosts.get(host) ?? []);
  if (delta.gateway && delta.gatewayRoutes !== undefined && previous.gatewayRoutes !== undefined && config.gatewayRoutes !== undefined) {
    for (const source of delta.gatewayRoutes) diff(previous.gatewayRoutes.get(source) ?? [], config.gatewayRoutes.get(source) ?? []);
  } else if (delta.gateway) {
    diff(
      previous.routes.filter((r) => r.port !== undefined),
      config.routes.filter((r) => r.port !== undefined),
    );
  }
  if (previous.defaultBackend !== config.defaultBackend) {
    if (previous.defaultBackend !== undefined) removed.push(previous.defaultBackend);
    if (config.defaultBackend !== undefined) added.push(config.defaultBackend);
  }
  return { added, removed };
}
