// A histogram with label sets bound once and observed by reference: observe() is a
// short loop over the bounds and three additions, no label hashing per request.
// prom-client's Registry reads it like one of its own metrics.
import type { Counter } from 'prom-client';

export type Labels = Record<string, string>;

/** One string per label set (values in label order). */
export function labelKey(labels: Labels): string {
  return Object.values(labels).join('\u0000');
}

interface MetricValue {
  metricName?: string;
  labels: Labels;
  value: number;
}

/** One label set: non-cumulative bucket counts, summed at scrape time. */
export class HistogramSeries {
  readonly labels: Labels;
  /** Compiled routes observing here. */
  refs = 0;
  /** Made at the first observation: most series of a large table never see one (10,000 of them held 5 MB of zeros). */
  counts: Float64Array | undefined = undefined;
  sum = 0;
  count = 0;

  constructor(labels: Labels) {
    this.labels = labels;
  }
}

/** In the shape prom-client's Registry reads (name, help, type, get(), reset()). */
export class LatencyHistogram {
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

  /** The Registry only needs name/get/reset; the cast is the one place that relies on it. */
  asMetric(): Counter {
    return this as unknown as Counter;
  }

  /** The series of a label set, one more reference to it. */
  seriesFor(labels: Labels): HistogramSeries {
    const key = labelKey(labels);
    let s = this.series.get(key);
    if (!s) {
      s = this.newSeries(labels);
      this.series.set(key, s);
    }
    s.refs++;
    return s;
  }

  /** A series that is never exported (for handles that must exist but never observe). */
  newSeries(labels: Labels): HistogramSeries {
    return new HistogramSeries(labels);
  }

  /** One reference less; at the last one the series is no longer exported. */
  release(s: HistogramSeries): void {
    if (--s.refs > 0) return;
    const key = labelKey(s.labels);
    if (this.series.get(key) === s) this.series.delete(key);
  }

  observe(s: HistogramSeries, seconds: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i++;
    if (i < bounds.length) (s.counts ??= new Float64Array(bounds.length))[i]!++;
    s.sum += seconds;
    s.count++;
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: MetricValue[] }> {
    const values: MetricValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += s.counts?.[i] ?? 0;
        values.push({ metricName: bucketName, labels: { ...s.labels, le: String(this.bounds[i]) }, value: cumulative });
      }
      values.push({ metricName: bucketName, labels: { ...s.labels, le: '+Inf' }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  getForPromString(): ReturnType<LatencyHistogram['get']> {
    return this.get();
  }

  reset(): void {
    for (const s of this.series.values()) {
      s.counts = undefined;
      s.sum = 0;
      s.count = 0;
    }
  }
}
