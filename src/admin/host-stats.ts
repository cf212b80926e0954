// Per-host traffic figures for the dashboard, derived from the series portico already
// keeps (no counter on the request path): portico_requests_total by its host label
// (the host as written in the rule), and portico_upstream_latency_seconds, which is
// labelled by Ingress and Service, attributed to the hosts of the rules that use that
// Ingress and Service. Totals only: the page takes the difference between two polls
// for rates, error rates and the mean latency over the interval.
import type { RoutingConfig } from '../model/config.ts';

/** prom-client's getMetricsAsJSON() shape, the part read here. */
export interface MetricJson {
  readonly name: string;
  readonly values: readonly { readonly labels: Partial<Record<string, string | number>>; readonly value: number; readonly metricName?: string }[];
}

export interface HostTotals {
  requests: number;
  /** 5xx answers (portico's own or the pod's). */
  errors: number;
  latencySum: number;
  latencyCount: number;
}

/** Key of unrouted requests (404, 400 before a route was found). */
export const UNROUTED = '(no route)';
/** Key of rules without host. */
export const ANY_HOST = '*';

export function hostTotals(metrics: readonly MetricJson[], config: RoutingConfig): Record<string, HostTotals> {
  const out: Record<string, HostTotals> = Object.create(null);
  const totals = (host: string): HostTotals => (out[host] ??= { requests: 0, errors: 0, latencySum: 0, latencyCount: 0 });
  // Every host of the live table shows, with or without traffic.
  const hostsOf = new Map<string, Set<string>>();
  for (const r of config.routes) {
    const host = r.host === '' ? ANY_HOST : r.host;
    totals(host);
    const key = `${r.source.namespace}\u0000${r.source.name}\u0000${r.backend.service}`;
    let set = hostsOf.get(key);
    if (set === undefined) hostsOf.set(key, (set = new Set()));
    set.add(host);
  }
  for (const metric of metrics) {
    if (metric.name === 'portico_requests_total') {
      for (const v of metric.values) {
        const host = v.labels.namespace === '' ? UNROUTED : v.labels.host === '' ? ANY_HOST : String(v.labels.host);
        const t = totals(host);
        t.requests += v.value;
        if (Number(v.labels.status) >= 500) t.errors += v.value;
      }
    } else if (metric.name === 'portico_upstream_latency_seconds') {
      for (const v of metric.values) {
        const sum = v.metricName?.endsWith('_sum') === true;
        if (!sum && v.metricName?.endsWith('_count') !== true) continue;
        const hosts = hostsOf.get(`${v.labels.namespace}\u0000${v.labels.ingress}\u0000${v.labels.service}`);
        if (hosts === undefined) continue;
        for (const host of hosts) {
          if (sum) totals(host).latencySum += v.value;
          else totals(host).latencyCount += v.value;
        }
      }
    }
  }
  return out;
}
