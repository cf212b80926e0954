import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createMetrics } from '../../../src/admin/metrics.ts';
import { buildRouteTable } from '../../../src/routing/table.ts';
import type { Problem } from '../../../src/model/config.ts';
import { compileForTest, sampleConfig, sampleProblem, scanMatcher } from './fixtures.ts';

/** The value of one sample line in Prometheus text, or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith(series + ' ')) return Number(line.slice(series.length + 1));
  }
  return undefined;
}

describe('controller metrics', () => {
  test('exposes process metrics and every controller metric', async () => {
    const { registry } = createMetrics();
    const text = await registry.metrics();
    for (const name of [
      'process_cpu_seconds_total',
      'nodejs_eventloop_lag_seconds',
      'portico_route_table_routes',
      'portico_route_table_hosts',
      'portico_route_table_rebuild_seconds',
      'portico_route_table_version',
      'portico_route_table_last_rebuild_timestamp_seconds',
      'portico_config_problems',
      'portico_kubernetes_api_connected',
      'portico_ready',
    ]) {
      assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name);
    }
    assert.equal(sample(text, 'portico_ready'), 0);
  });

  test("the process and Node metrics are prom-client's default metrics, and the CPU counters count", async () => {
    const promClient = await import('prom-client');
    const reference = new promClient.Registry();
    promClient.collectDefaultMetrics({ register: reference });
    const heads = (text: string) => text.split('\n').filter((line) => line.startsWith('# HELP') || line.startsWith('# TYPE'));
    const ours = heads(await createMetrics().registry.metrics()).filter((line) => !/ portico_/.test(line));
    assert.deepEqual(ours, heads(await reference.metrics()));
    const { registry } = createMetrics();
    const before = sample(await registry.metrics(), 'process_cpu_seconds_total')!;
    // Burn 50 ms of CPU, counted as CPU: 50 ms of wall clock on a loaded machine held less (a flaky failure).
    const start = process.cpuUsage();
    for (let used = 0; used < 50_000; ) {
      const u = process.cpuUsage(start);
      used = u.user + u.system;
    }
    const text = await registry.metrics();
    assert.ok(sample(text, 'process_cpu_seconds_total')! >= before + 0.03, text.slice(0, 500));
    assert.ok(sample(text, 'process_cpu_user_seconds_total')! + sample(text, 'process_cpu_system_seconds_total')! >= 0.03);
  });

  test('a rebuild records size, version, duration, time, problems and readiness', async () => {
    const metrics = createMetrics();
    const table = buildRouteTable(42, sampleConfig(), compileForTest, scanMatcher);
    const before = Date.now() / 1000;
    const warning2: Problem = { ...sampleProblem, object: { kind: 'Ingress', namespace: 'a', name: 'b' } };
    const error: Problem = { ...sampleProblem, severity: 'error', reason: 'InvalidAnnotation' };
    metrics.recordRebuild(table, 250, [sampleProblem, warning2, error]);
    const text = await metrics.registry.metrics();

    assert.equal(sample(text, 'portico_route_table_routes'), 6);
    assert.equal(sample(text, 'portico_route_table_hosts'), 3);
    assert.equal(sample(text, 'portico_route_table_version'), 42);
    assert.equal(sample(text, 'portico_route_table_rebuild_seconds_count'), 1);
    assert.ok(sample(text, 'portico_route_table_rebuild_seconds_sum')! >= 0.25);
    assert.ok(sample(text, 'portico_route_table_last_rebuild_timestamp_seconds')! >= Math.floor(before));
    assert.equal(sample(text, 'portico_config_problems{kind="Ingress",reason="ServiceNotFound",severity="warning"}'), 2);
    assert.equal(sample(text, 'portico_config_problems{kind="Ingress",reason="InvalidAnnotation",severity="error"}'), 1);
    assert.equal(sample(text, 'portico_ready'), 1);
  });

  test('problems fixed since the last rebuild disappear', async () => {
    const metrics = createMetrics();
    const table = buildRouteTable(1, sampleConfig(), compileForTest, scanMatcher);
    metrics.recordRebuild(table, 1, [sampleProblem]);
    metrics.recordRebuild(table, 1, []);
    const text = await metrics.registry.metrics();
    assert.doesNotMatch(text, /^portico_config_problems\{/m);
    assert.equal(sample(text, 'portico_route_table_rebuild_seconds_count'), 2);
  });

  test('a rebuild given a delta moves the problems gauge to what a recount gives, and a fixed series disappears', async () => {
    const byDelta = createMetrics();
    const recounted = createMetrics();
    const table = buildRouteTable(1, sampleConfig(), compileForTest, scanMatcher);
    const problemLines = async (m: ReturnType<typeof createMetrics>) => (await m.registry.metrics()).split('\n').filter((l) => l.startsWith('portico_config_problems{')).sort();
    const warning2: Problem = { ...sampleProblem, object: { kind: 'Ingress', namespace: 'a', name: 'b' } };
    const error: Problem = { ...sampleProblem, severity: 'error', reason: 'InvalidAnnotation' };
    const route: Problem = { object: { kind: 'HTTPRoute', namespace: 'a', name: 'r' }, severity: 'error', reason: 'BackendNotFound', message: 'x' };
    // [problems after the step, the delta from the previous step]
    const steps: [Problem[], { added: Problem[]; removed: Problem[] }][] = [
      [[sampleProblem, warning2, error, route], { added: [warning2, error, route], removed: [] }],
      [[warning2, error, route], { added: [], removed: [sampleProblem] }],
      // The last problem of a series goes: the series disappears, as after a recount.
      [[warning2, route], { added: [], removed: [error] }],
      // A problem found again in a new object: removed and added at once.
      [[{ ...warning2 }, route], { added: [{ ...warning2 }], removed: [warning2] }],
      [[route, error], { added: [error], removed: [warning2] }],
      [[route, error], { added: [], removed: [] }],
    ];
    byDelta.recordRebuild(table, 1, [sampleProblem]);
    for (const [all, delta] of steps) {
      byDelta.recordRebuild(table, 1, delta);
      recounted.recordRebuild(table, 1, all);
      assert.deepEqual(await problemLines(byDelta), await problemLines(recounted), JSON.stringify(all.map((p) => p.reason)));
    }
    assert.deepEqual(await problemLines(byDelta), [
      'portico_config_problems{kind="HTTPRoute",reason="BackendNotFound",severity="error"} 1',
      'portico_config_problems{kind="Ingress",reason="InvalidAnnotation",severity="error"} 1',
    ]);
  });

  test('API connection state follows setApiConnected', async () => {
    const metrics = createMetrics();
    metrics.setApiConnected(true);
    assert.equal(sample(await metrics.registry.metrics(), 'portico_kubernetes_api_connected'), 1);
    metrics.setApiConnected(false);
    assert.equal(sample(await metrics.registry.metrics(), 'portico_kubernetes_api_connected'), 0);
  });

  test('readiness can be read at scrape time', async () => {
    const metrics = createMetrics();
    let ready = false;
    metrics.trackReadiness(() => ready);
    metrics.recordRebuild(buildRouteTable(1, sampleConfig(), compileForTest, scanMatcher), 1, []);
    assert.equal(sample(await metrics.registry.metrics(), 'portico_ready'), 0);
    ready = true;
    assert.equal(sample(await metrics.registry.metrics(), 'portico_ready'), 1);
  });

  test('each instance has its own registry', async () => {
    const a = createMetrics();
    const b = createMetrics();
    a.setApiConnected(true);
    assert.equal(sample(await b.registry.metrics(), 'portico_kubernetes_api_connected'), 0);
  });
});
