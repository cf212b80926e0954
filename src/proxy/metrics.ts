// Proxy metrics. The hot path only bumps plain numbers on objects bound to the route
// at compile time; prom-client sees them when /metrics is scraped (collect hooks and
// a small histogram that formats itself), so a request never hashes label sets.
//
// Series live as long as a compiled route uses them: each route holds a reference, and
// release() at the last one removes the series. A request still in flight on a removed
// route counts into objects no longer exported, so its count is dropped instead of
// bringing the series back for good.
import { Counter, type Registry } from '../util/prom.ts';
import type { RouteConfig } from '../model/config.ts';
import { labelKey, LatencyHistogram, type HistogramSeries, type Labels } from './latency-histogram.ts';

export type UpstreamErrorKind = 'connect' | 'reset' | 'timeout' | 'no_endpoints' | 'service_unavailable' | 'protocol' | 'overloaded' | 'ejected';

/** Seconds; from sub-millisecond pod answers to the default 60 s response timeout. */
export const LATENCY_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Route labels of requests answered before a route was found (400, 404): all empty. */
const UNROUTED_LABELS: Readonly<Labels> = Object.freeze({ namespace: '', ingress: '', host: '', path: '', service: '' });

/** The labels of a route's latency and error series. */
function backendLabels(config: RouteConfig): Labels {
  return { namespace: config.source.namespace, ingress: config.source.name, service: config.backend.service };
}

/** Counts of one label set by the value of one more label (status, kind), not yet handed to prom-client. */
export class PendingCounts<K extends number | string> {
  readonly labels: Labels;
  /** Compiled routes counting here. */
  refs = 0;
  /**
   * The first value seen and its count not yet flushed: a route usually answers with one
   * status (and a backend fails one way), and two arrays for it cost 112 bytes a route
   * (2.2 MB at 20,000 routes with traffic). undefined: nothing counted yet.
   */
  first: K | undefined = undefined;
  firstPending = 0;
  /**
   * Every further value, so that removing the series removes all of them, and its count
   * not yet flushed. Made at the second value.
   */
  values: K[] | undefined = undefined;
  pending: number[] | undefined = undefined;

  constructor(labels: Labels) {
    this.labels = labels;
  }

  add(value: K): void {
    if (this.first === value) {
      this.firstPending++;
      return;
    }
    if (this.first === undefined) {
      this.first = value;
      this.firstPending = 1;
      return;
    }
    const values = this.values;
    if (values !== undefined) {
      for (let i = 0; i < values.length; i++) {
        if (values[i] === value) {
          this.pending![i]!++;
          return;
        }
      }
      values.push(value);
      this.pending!.push(1);
      return;
    }
    this.values = [value];
    this.pending = [1];
  }

  flush(counter: Counter, label: string): void {
    if (this.first === undefined) return;
    if (this.firstPending !== 0) {
      const n = this.firstPending;
      this.firstPending = 0;
      counter.inc({ ...this.labels, [label]: String(this.first) }, n);
    }
    const { values, pending } = this;
    if (values === undefined || pending === undefined) return;
    for (let i = 0; i < values.length; i++) {
      const n = pending[i]!;
      if (n === 0) continue;
      pending[i] = 0;
      counter.inc({ ...this.labels, [label]: String(values[i]) }, n);
    }
  }

  removeFrom(counter: Counter, label: string): void {
    if (this.first === undefined) return;
    counter.remove({ ...this.labels, [label]: String(this.first) });
    for (const value of this.values ?? []) counter.remove({ ...this.labels, [label]: String(value) });
  }
}

/** A prom-client Counter filled at scrape time from PendingCounts bound to routes. */
class ScrapedCounter<K extends number | string> {
  readonly counter: Counter;
  private readonly label: string;
  private readonly sets = new Map<string, PendingCounts<K>>();

  constructor(registry: Registry, name: string, help: string, labelNames: readonly string[], label: string) {
    const sets = this.sets;
    this.label = label;
    this.counter = new Counter({
      name,
      help,
      labelNames: [...labelNames, label],
      registers: [registry],
      collect(this: Counter) {
        for (const c of sets.values()) c.flush(this, label);
      },
    });
  }

  /** The counts of a label set, one more reference to them; routes with the same labels share them. */
  countsFor(labels: Labels): PendingCounts<K> {
    const key = labelKey(labels);
    let c = this.sets.get(key);
    if (!c) {
      c = new PendingCounts<K>(labels);
      this.sets.set(key, c);
    }
    c.refs++;
    return c;
  }

  /** Counts that are never exported (for handles that must exist but never count). */
  unexported(): PendingCounts<K> {
    return new PendingCounts<K>({});
  }

  /** One reference less; the last one removes the series. */
  release(c: PendingCounts<K>): void {
    if (--c.refs > 0) return;
    const key = labelKey(c.labels);
    if (this.sets.get(key) !== c) return;
    this.sets.delete(key);
    c.removeFrom(this.counter, this.label);
  }
}

/**
 * What a route's forwarder counts into: the latency and error series of its source and
 * Service, bound when the route is compiled. Routes that share a forwarder (compile.ts)
 * share one; a route's request counts are its own (ProxyMetrics.requestsFor).
 */
export class RouteMetrics {
  readonly latency: HistogramSeries;
  readonly errors: PendingCounts<UpstreamErrorKind>;
  private readonly histogram: LatencyHistogram;

  constructor(histogram: LatencyHistogram, latency: HistogramSeries, errors: PendingCounts<UpstreamErrorKind>) {
    this.histogram = histogram;
    this.latency = latency;
    this.errors = errors;
  }

  /** Time from sending the request to the response headers. */
  observeLatency(seconds: number): void {
    this.histogram.observe(this.latency, seconds);
  }

  countError(kind: UpstreamErrorKind): void {
    this.errors.add(kind);
  }
}

/** The proxy's metrics in a given registry (never the global one). */
export class ProxyMetrics {
  private readonly requests: ScrapedCounter<number>;
  private readonly latency: LatencyHistogram;
  private readonly errors: ScrapedCounter<UpstreamErrorKind>;
  /** Requests answered before a route was found: counted under UNROUTED_LABELS, never removed. */
  readonly unroutedRequests: PendingCounts<number>;
  /** The unrouted pseudo-route's latency and errors: never exported. */
  readonly unrouted: RouteMetrics;

  constructor(registry: Registry) {
    this.requests = new ScrapedCounter(
      registry,
      'portico_requests_total',
      'Requests answered, by Ingress rule and status code (499: the client went away first; empty route labels: no route was found).',
      ['namespace', 'ingress', 'host', 'path', 'service'],
      'status',
    );
    this.latency = new LatencyHistogram(
      'portico_upstream_latency_seconds',
      'Time from sending a request to a pod to its response headers.',
      LATENCY_BUCKETS,
    );
    registry.registerMetric(this.latency.asMetric());
    this.errors = new ScrapedCounter(
      registry,
      'portico_upstream_errors_total',
      'Requests that could not be served by a pod, by kind: connect, reset, timeout, no_endpoints, service_unavailable, protocol (an upgrade the pod did not switch to).',
      ['namespace', 'ingress', 'service'],
      'kind',
    );
    // Nothing unrouted reaches a pod: its latency and errors are never exported.
    this.unroutedRequests = this.requests.countsFor({ ...UNROUTED_LABELS });
    this.unrouted = new RouteMetrics(this.latency, this.latency.newSeries({}), this.errors.unexported());
  }

  /**
   * The latency series of a route, one more reference to it: taken when the route enters
   * the table, so /metrics lists it (with zeros) before the route's first request, as
   * it did when every route was compiled with the table.
   */
  latencyFor(config: RouteConfig): HistogramSeries {
    return this.latency.seriesFor(backendLabels(config));
  }

  /** The route of `latency` left the table. */
  releaseLatency(latency: HistogramSeries): void {
    this.latency.release(latency);
  }

  /**
   * A route's request counts, one more reference to them; routes with the same labels
   * share them. Taken when the route is compiled (its first request).
   */
  requestsFor(config: RouteConfig): PendingCounts<number> {
    return this.requests.countsFor({ namespace: config.source.namespace, ingress: config.source.name, host: config.host, path: config.path, service: config.backend.service });
  }

  /**
   * The handles a forwarder of `config` counts into, over the latency series latencyFor()
   * gave the route, and one more reference to its error counts (release with release()).
   */
  forRoute(config: RouteConfig, latency: HistogramSeries): RouteMetrics {
    return new RouteMetrics(this.latency, latency, this.errors.countsFor(backendLabels(config)));
  }

  /**
   * One more reference to the error counts of a forwarder's RouteMetrics, for another
   * route of `config` that counts into it: a shared forwarder's routes have its source and
   * Service, so the same label set, whose counts are that forwarder's while it is used.
   */
  retainErrors(config: RouteConfig): void {
    this.errors.countsFor(backendLabels(config));
  }

  /** A compiled route is gone: series no other route uses are removed (the latency series goes with releaseLatency). */
  release(requests: PendingCounts<number>, m: RouteMetrics): void {
    this.requests.release(requests);
    this.errors.release(m.errors);
  }
}
