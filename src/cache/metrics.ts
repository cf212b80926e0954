// Cache counters: plain numbers on the request path, read by prom-client at scrape time
// (with --workers the primary adds up the workers', as for every other metric).
import { Counter, Gauge, type Registry } from '../util/prom.ts';
import { cacheStore } from './runtime.ts';

export const cacheCounts = { hits: 0, misses: 0, stale: 0, revalidated: 0 };

/** Registers portico_cache_* on `registry` (once per process). */
export function registerCacheMetrics(registry: Registry): void {
  const counter = (name: string, help: string, read: () => number) => {
    let reported = 0;
    new Counter({
      name: `portico_cache_${name}_total`,
      help,
      registers: [registry],
      collect(this: Counter) {
        const now = read();
        this.inc(now - reported);
        reported = now;
      },
    });
  };
  counter('hits', 'Requests answered from the cache (fresh entries, and 304s to conditional requests).', () => cacheCounts.hits);
  counter('misses', 'Cacheable-route GET/HEAD requests that went to the pod (not in the cache, stale, or not servable from it).', () => cacheCounts.misses);
  counter('stale', 'Stale entries served: stale-while-revalidate, or stale-if-error when the pod failed.', () => cacheCounts.stale);
  counter('revalidated', 'Stale entries the pod confirmed with 304 (served from the cache after a conditional request).', () => cacheCounts.revalidated);
  counter('evictions', 'Entries evicted, least recently used first, to stay within --cache-size.', () => cacheStore().counters.evictions);
  new Gauge({
    name: 'portico_cache_bytes',
    help: 'Bytes held by the cache (headers, bodies and keys), per process; --cache-size bounds it.',
    registers: [registry],
    collect(this: Gauge) {
      this.set(cacheStore().bytes);
    },
  });
  new Gauge({
    name: 'portico_cache_entries',
    help: 'Entries in the cache (each variant of a URL is one).',
    registers: [registry],
    collect(this: Gauge) {
      this.set(cacheStore().size);
    },
  });
}
