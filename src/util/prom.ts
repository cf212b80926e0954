// prom-client, module by module. Its index also loads the Pushgateway client and
// Summary, and its collectDefaultMetrics() loads @opentelemetry/api (about 50 modules,
// 5 MB per process) for the trace exemplars of the process CPU counters, which portico
// never enables. The same classes and default metrics are taken from prom-client's own
// modules here, and the three CPU counters are registered as it registers them.
import type * as PromClient from 'prom-client';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { createRequire } = process.getBuiltinModule('node:module');

const require = createRequire(import.meta.url);

export const Registry = require('prom-client/lib/registry') as typeof PromClient.Registry;
export const Counter = require('prom-client/lib/counter') as typeof PromClient.Counter;
export const Gauge = require('prom-client/lib/gauge') as typeof PromClient.Gauge;
export const Histogram = require('prom-client/lib/histogram') as typeof PromClient.Histogram;
export const AggregatorRegistry = require('prom-client/lib/cluster') as typeof PromClient.AggregatorRegistry;
export type Registry = PromClient.Registry;
export type Counter<T extends string = string> = PromClient.Counter<T>;
export type Gauge<T extends string = string> = PromClient.Gauge<T>;
export type Histogram<T extends string = string> = PromClient.Histogram<T>;

/** prom-client's default metrics but its processCpuTotal module (see above). */
const DEFAULT_METRIC_MODULES = [
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  'processResources',
  'processHandles',
  'processRequests',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
  'gc',
] as const;

type DefaultMetric = (registry: PromClient.Registry, config: { eventLoopMonitoringPrecision: number }) => void;

/** What collectDefaultMetrics({ register: registry }) registers, in the same order and with the same names and help. */
export function collectDefaultMetrics(registry: PromClient.Registry): void {
  processCpuTotal(registry);
  for (const name of DEFAULT_METRIC_MODULES) (require(`prom-client/lib/metrics/${name}`) as DefaultMetric)(registry, { eventLoopMonitoringPrecision: 10 });
}

/** prom-client's process_cpu_* counters (lib/metrics/processCpuTotal.js) without exemplars. */
function processCpuTotal(registry: PromClient.Registry): void {
  const registers = [registry];
  let last = process.cpuUsage();
  const user = new Counter({
    name: 'process_cpu_user_seconds_total',
    help: 'Total user CPU time spent in seconds.',
    registers,
    // This one metric's collect sets all three, as in prom-client.
    collect() {
      const now = process.cpuUsage();
      const userMicros = now.user - last.user;
      const systemMicros = now.system - last.system;
      last = now;
      user.inc(userMicros / 1e6);
      system.inc(systemMicros / 1e6);
      total.inc((userMicros + systemMicros) / 1e6);
    },
  });
  const system = new Counter({ name: 'process_cpu_system_seconds_total', help: 'Total system CPU time spent in seconds.', registers });
  const total = new Counter({ name: 'process_cpu_seconds_total', help: 'Total user and system CPU time spent in seconds.', registers });
}
