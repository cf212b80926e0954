// Route matcher benchmark (not a test): build time and match() throughput on a table of
// 10,000 hosts x 3 paths plus 1,000 wildcard hosts x 2 paths, plus 1,000 gRPC hosts whose
// GRPCRoute rules compete by rank (byRank): 5 services, 5 exact methods, one method-only
// regular expression and a catch-all each.
// Run: node_modules/.bin/node bench/routing.ts   (add --expose-gc to also see heap size)
import type { RouteEntry } from '../src/routing/matcher.ts';
import { createLinearMatcher } from '../src/routing/linear/index.ts';
import { createPrefixMapMatcher } from '../src/routing/prefix-map/index.ts';

const HOSTS = 10_000;
const WILDCARDS = 1_000;
const GRPC_HOSTS = 1_000;
const MATCHES = 2_000_000;
const LINEAR_MATCHES = 200;

function buildEntries(): RouteEntry<string>[] {
  const entries: RouteEntry<string>[] = [];
  for (let i = 0; i < HOSTS; i++) {
    const host = `host-${i}.example.com`;
    entries.push({ host, path: '/api', pathType: 'Prefix', value: `${host}|api` });
    entries.push({ host, path: '/app/v1/', pathType: 'Prefix', value: `${host}|app` });
    entries.push({ host, path: '/healthz', pathType: 'Exact', value: `${host}|healthz` });
  }
  for (let i = 0; i < WILDCARDS; i++) {
    const host = `*.tenant-${i}.example.net`;
    entries.push({ host, path: '/', pathType: 'Prefix', value: `${host}|root` });
    entries.push({ host, path: '/static', pathType: 'Prefix', value: `${host}|static` });
  }
  // Ranks as GRPCRoute translation makes them: more characters of service, then of method, first.
  const rank = (service: number, method: number) => `${String(9999 - service).padStart(4, '0')}${String(9999 - method).padStart(4, '0')}`;
  for (let i = 0; i < GRPC_HOSTS; i++) {
    const host = `grpc-${i}.example.io`;
    for (let s = 0; s < 5; s++) {
      const service = `pkg.v1.Service${s}`;
      entries.push({ host, path: `/${service}/`, pathType: 'Prefix', rank: rank(service.length, 0), byRank: true, value: `${host}|${service}` });
      entries.push({ host, path: `/${service}/Get`, pathType: 'Exact', rank: rank(service.length, 3), byRank: true, value: `${host}|${service}/Get` });
    }
    entries.push({ host, path: '/[^/]+/Health', pathType: 'RegularExpression', rank: rank(0, 6), byRank: true, value: `${host}|Health` });
    entries.push({ host, path: '/', pathType: 'Prefix', rank: rank(0, 0), byRank: true, value: `${host}|any` });
  }
  return entries;
}

interface Scenario {
  name: string;
  requests: { host: string; path: string }[];
  /** Whether every request should find a route (checked once, so the figures measure real work). */
  hits: boolean;
}

function scenarios(): Scenario[] {
  const make = (count: number, request: (i: number) => { host: string; path: string }) =>
    Array.from({ length: count }, (_, i) => request(i));
  const spread = (i: number, n: number) => (i * 7919) % n;
  return [
    { name: 'hit: exact host, Prefix, deep path', hits: true, requests: make(1024, (i) => ({ host: `host-${spread(i, HOSTS)}.example.com`, path: `/api/v1/users/${i}/orders` })) },
    { name: 'hit: exact host, Exact path', hits: true, requests: make(1024, (i) => ({ host: `host-${spread(i, HOSTS)}.example.com`, path: '/healthz' })) },
    { name: 'hit: wildcard host, Prefix', hits: true, requests: make(1024, (i) => ({ host: `app${i}.tenant-${spread(i, WILDCARDS)}.example.net`, path: '/static/js/app.js' })) },
    { name: 'hit: gRPC host, service and method (ranked Exact)', hits: true, requests: make(1024, (i) => ({ host: `grpc-${spread(i, GRPC_HOSTS)}.example.io`, path: `/pkg.v1.Service${i % 5}/Get` })) },
    { name: 'hit: gRPC host, service only (ranked Prefix)', hits: true, requests: make(1024, (i) => ({ host: `grpc-${spread(i, GRPC_HOSTS)}.example.io`, path: `/pkg.v1.Service${i % 5}/List` })) },
    { name: 'hit: gRPC host, method only (ranked regex)', hits: true, requests: make(1024, (i) => ({ host: `grpc-${spread(i, GRPC_HOSTS)}.example.io`, path: '/other.Service/Health' })) },
    { name: 'miss: unknown host', hits: false, requests: make(1024, (i) => ({ host: `nobody-${i}.example.org`, path: '/api' })) },
    { name: 'miss: known host, unknown path', hits: false, requests: make(1024, (i) => ({ host: `host-${spread(i, HOSTS)}.example.com`, path: `/nothing/here/${i}/at/all` })) },
  ];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function heapMiB(): number | undefined {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) return undefined;
  gc();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

const entries = buildEntries();
console.log(`routes: ${entries.length} (${HOSTS} hosts x 3 paths + ${WILDCARDS} wildcards x 2 paths + ${GRPC_HOSTS} gRPC hosts x 12 ranked rules), node ${process.version}\n`);

// Build time: median of a few builds (the first one warms up the code).
const buildMillis: number[] = [];
let matcher = createPrefixMapMatcher(entries);
for (let i = 0; i < 7; i++) {
  const started = performance.now();
  matcher = createPrefixMapMatcher(entries);
  buildMillis.push(performance.now() - started);
}
const heapBefore = heapMiB();
const retained = [createPrefixMapMatcher(entries)];
const heapAfter = heapMiB();
console.log(`prefix-map build: ${median(buildMillis).toFixed(1)} ms (median of ${buildMillis.length})`);
if (heapBefore !== undefined && heapAfter !== undefined && retained.length === 1) {
  console.log(`prefix-map heap: ${(heapAfter - heapBefore).toFixed(1)} MiB`);
}

const linear = createLinearMatcher(entries);
const rows: Record<string, string>[] = [];
let sink = 0;
for (const scenario of scenarios()) {
  const { requests } = scenario;
  for (const { host, path } of requests) {
    const found = matcher.match(host, path);
    if ((found !== undefined) !== scenario.hits || linear.match(host, path) !== found) {
      throw new Error(`${scenario.name}: unexpected result for ${host}${path}: ${found}`);
    }
  }
  const mask = requests.length - 1; // 1024 requests: cycle with a mask, no modulo
  for (let i = 0; i < 200_000; i++) if (matcher.match(requests[i & mask]!.host, requests[i & mask]!.path) !== undefined) sink++;

  let started = performance.now();
  for (let i = 0; i < MATCHES; i++) {
    const request = requests[i & mask]!;
    if (matcher.match(request.host, request.path) !== undefined) sink++;
  }
  const fastSeconds = (performance.now() - started) / 1000;

  started = performance.now();
  for (let i = 0; i < LINEAR_MATCHES; i++) {
    const request = requests[i & mask]!;
    if (linear.match(request.host, request.path) !== undefined) sink++;
  }
  const linearSeconds = (performance.now() - started) / 1000;

  rows.push({
    scenario: scenario.name,
    'prefix-map matches/s': Math.round(MATCHES / fastSeconds).toLocaleString('en-US'),
    'ns/match': ((fastSeconds / MATCHES) * 1e9).toFixed(0),
    'linear matches/s': Math.round(LINEAR_MATCHES / linearSeconds).toLocaleString('en-US'),
  });
}
console.table(rows);
if (sink < 0) console.log(sink); // keeps the loops from being optimized away
