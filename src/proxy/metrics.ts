// Proxy metrics. The hot path only bumps plain numbers on objects bound to the route
// at compile time; prom-client sees them when /metrics is scraped (collect hooks and
// a small histogram that formats itself), so a request never hashes label sets.
import { Counter, type Registry } from 'prom-client';
import type { RouteConfig } from '../model/config.ts';

export type UpstreamErrorKind = 'connect' | 'reset' | 'timeout' | 'no_endpoints' | 'service_unavailable';

/** Seconds; from sub-millisecond pod answers to the default 60 s response timeout. */
export const LATENCY_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

type Labels = Record<string, string>;

/** Route labels of requests answered before a route was found (400, 404): all empty. */
const UNROUTED_LABELS: Readonly<Labels> = Object.freeze({ namespace: '', ingress: '', host: '', path: '', service: '' });

interface MetricValue {
  metricName?: string;
  labels: Labels;
  value: number;
}

/** One label set of the latency histogram: non-cumulative bucket counts, summed at scrape time. */
class HistogramSeries {
  readonly labels: Labels;
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(labels: Labels, buckets: number) {
    this.labels = labels;
    this.counts = new Float64Array(buckets);
  }
}

/**
 * A histogram in the shape prom-client's Registry reads (name, help, type, get(), reset()).
 * observe() is a short loop over the bounds and three additions.
 */
class RouteLatencyHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly bounds: readonly number[];
  private readonly series = new Map<string, HistogramSeries>();

  constructor(name: string, help: string, bounds: readonly number[]) {
    this.name = name;
    this.help = help;
    this.bounds = bounds;
  }

  seriesFor(labels: Labels): HistogramSeries {
    const key = Object.values(labels).join('\u0000');
    let s = this.series.get(key);
    if (!s) {
      s = new HistogramSeries(labels, this.bounds.length);
      this.series.set(key, s);
    }
    return s;
  }

  observe(s: HistogramSeries, seconds: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i++;
    if (i < bounds.length) s.counts[i]!++;
    s.sum += seconds;
    s.count++;
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: MetricValue[] }> {
    const values: MetricValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += s.counts[i]!;
        values.push({ metricName: bucketName, labels: { ...s.labels, le: String(this.bounds[i]) }, value: cumulative });
      }
      values.push({ metricName: bucketName, labels: { ...s.labels, le: '+Inf' }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  getForPromString(): ReturnType<RouteLatencyHistogram['get']> {
    return this.get();
  }

  reset(): void {
    for (const s of this.series.values()) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}

/** Response counts of one (namespace, ingress, host, path, service): status codes seen, and counts not yet handed to prom-client. */
class RequestCounts {
  readonly labels: Labels;
  readonly statuses: number[] = [];
  readonly pending: number[] = [];

  constructor(labels: Labels) {
    this.labels = labels;
  }
}

/** The metrics of one route, bound when the route is compiled. */
export class RouteMetrics {
  private readonly owner: ProxyMetrics;
  private readonly requests: RequestCounts;
  private readonly latency: HistogramSeries;
  private readonly errorLabels: Labels;
  private readonly errorChildren = new Map<UpstreamErrorKind, Counter.Internal>();

  constructor(owner: ProxyMetrics, requests: RequestCounts, latency: HistogramSeries, errorLabels: Labels) {
    this.owner = owner;
    this.requests = requests;
    this.latency = latency;
    this.errorLabels = errorLabels;
  }

  countResponse(status: number): void {
    const r = this.requests;
    const statuses = r.statuses;
    for (let i = 0; i < statuses.length; i++) {
      if (statuses[i] === status) {
        r.pending[i]!++;
        return;
      }
    }
    statuses.push(status);
    r.pending.push(1);
  }

  /** Time from sending the request to the response headers. */
  observeLatency(seconds: number): void {
    this.owner.latency.observe(this.latency, seconds);
  }

  countError(kind: UpstreamErrorKind): void {
    let child = this.errorChildren.get(kind);
    if (!child) {
      child = this.owner.errors.labels({ ...this.errorLabels, kind });
      this.errorChildren.set(kind, child);
    }
    child.inc();
  }
}

/** The proxy's metrics in a given registry (never the global one). */
export class ProxyMetrics {
  readonly requests: Counter;
  readonly latency: RouteLatencyHistogram;
  readonly errors: Counter;
  private readonly counts = new Map<string, RequestCounts>();
  /** Requests answered before a route was found: counted under UNROUTED_LABELS. */
  readonly unrouted: RouteMetrics;

  constructor(registry: Registry) {
    const counts = this.counts;
    this.requests = new Counter({
      name: 'portico_requests_total',
      help: 'Requests answered, by Ingress rule and status code (499: the client went away first; empty route labels: no route was found).',
      labelNames: ['namespace', 'ingress', 'host', 'path', 'service', 'status'],
      registers: [registry],
      collect(this: Counter) {
        for (const c of counts.values()) {
          for (let i = 0; i < c.statuses.length; i++) {
            const n = c.pending[i]!;
            if (n === 0) continue;
            c.pending[i] = 0;
            this.inc({ ...c.labels, status: String(c.statuses[i]) }, n);
          }
        }
      },
    });
    this.latency = new RouteLatencyHistogram(
      'portico_upstream_latency_seconds',
      'Time from sending a request to a pod to its response headers.',
      LATENCY_BUCKETS,
    );
    // The Registry only needs name/get/reset; the cast is the one place that relies on it.
    registry.registerMetric(this.latency as unknown as Counter);
    this.errors = new Counter({
      name: 'portico_upstream_errors_total',
      help: 'Requests that could not be served by a pod, by kind: connect, reset, timeout, no_endpoints, service_unavailable.',
      labelNames: ['namespace', 'ingress', 'service', 'kind'],
      registers: [registry],
    });
    // Nothing unrouted reaches a pod: its latency series is never exported.
    const unrouted = new RequestCounts({ ...UNROUTED_LABELS });
    this.counts.set(Object.values(UNROUTED_LABELS).join('\u0000'), unrouted);
    this.unrouted = new RouteMetrics(this, unrouted, new HistogramSeries({}, LATENCY_BUCKETS.length), {});
  }

  /** Metrics handles for a route; routes with the same labels share their series. */
  forRoute(config: RouteConfig): RouteMetrics {
    const namespace = config.ingress.namespace;
    const ingress = config.ingress.name;
    const service = config.backend.service;
    const requestLabels = { namespace, ingress, host: config.host, path: config.path, service };
    const key = `${namespace}\u0000${ingress}\u0000${config.host}\u0000${config.path}\u0000${service}`;
    let requests = this.counts.get(key);
    if (!requests) {
      requests = new RequestCounts(requestLabels);
      this.counts.set(key, requests);
    }
    const latency = this.latency.seriesFor({ namespace, ingress, service });
    return new RouteMetrics(this, requests, latency, { namespace, ingress, service });
  }
}
