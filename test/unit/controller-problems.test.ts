// The controller reports a problem once (a log line, and onNewProblems for the Events),
// and again only after it went away and came back; after the first build it works from
// the translator's delta, and its metrics see the same problems as a recount.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Logger } from 'pino';
import { Controller } from '../../src/controller.ts';
import { createMetrics } from '../../src/admin/metrics.ts';
import type { Problem, ProblemDelta } from '../../src/model/config.ts';
import { buildRouteTable, type RouteTable } from '../../src/routing/table.ts';
import { ObjectStore } from '../../src/sources/store.ts';
import { compileForTest, scanMatcher } from './admin/fixtures.ts';
import { OPTIONS, ingress, ingressClass, service, simpleIngress, slice } from './translate/fixtures.ts';

const settle = () => new Promise((resolve) => setImmediate(resolve));

function harness() {
  const store = new ObjectStore();
  store.upsert(ingressClass('portico'));
  store.upsert(service('a'));
  store.upsert(slice('a-1', 'a', [{ ip: '10.0.0.1' }]));
  store.upsert(simpleIngress('ok', 'ok.example.com', [['/', 'a']]));
  store.upsert(simpleIngress('broken', 'broken.example.com', [['/', 'missing']]));
  const logged: string[] = [];
  const counts: number[] = [];
  const log = {
    info: (fields: { problems?: number }) => counts.push(fields.problems ?? -1),
    debug: () => {},
    warn: (_fields: unknown, message: string) => logged.push(message),
    error: (_fields: unknown, message: string) => logged.push(message),
    isLevelEnabled: () => false,
  } as unknown as Logger;
  const fresh: string[] = [];
  const handed: (readonly Problem[] | ProblemDelta)[] = [];
  let external: readonly Problem[] = [];
  const byDelta = createMetrics();
  let table: RouteTable | undefined;
  let version = 0;
  const controller = new Controller({
    store,
    install: (config) => (table = buildRouteTable(++version, config, compileForTest, scanMatcher, table)),
    current: () => table!,
    updateEndpoints: () => {},
    translateOptions: OPTIONS,
    log,
    debounceMs: 0,
    externalProblems: () => external,
    onNewProblems: (problems) => fresh.push(...problems.map((p) => `${p.object.name} ${p.reason}`)),
    onRebuilt: (built, ms, problems) => {
      handed.push(problems);
      byDelta.recordRebuild(built, ms, problems);
    },
  });
  store.onChange((event) => controller.changed(event));
  return {
    store,
    controller,
    logged,
    fresh,
    handed,
    counts,
    table: () => table!,
    setExternal: (problems: readonly Problem[]) => {
      external = problems;
      controller.changed('problems');
    },
    /** The problem series of the metrics fed by the controller, and those of a recount of the table's problems. */
    gauges: async () => {
      const recount = createMetrics();
      recount.recordRebuild(table!, 1, table!.config.problems);
      const series = async (m: ReturnType<typeof createMetrics>) => (await m.registry.metrics()).split('\n').filter((l) => l.startsWith('portico_config_problems{')).sort();
      return { byDelta: await series(byDelta), recount: await series(recount) };
    },
  };
}

test('a problem is logged and handed on once, and again only after it went away and came back', async () => {
  const h = harness();
  h.controller.start();
  assert.deepEqual(h.fresh, ['broken ServiceNotFound']);
  assert.equal(h.logged.length, 1);
  assert.match(h.logged[0]!, /^Ingress default\/broken: .*missing/);
  assert.ok(Array.isArray(h.handed[0]), 'the first build hands every problem');

  // Another Ingress, fine: nothing new; the rebuild hands a delta, not the whole list.
  h.store.upsert(simpleIngress('more', 'more.example.com', [['/', 'a']]));
  await settle();
  assert.equal(h.handed.length, 2);
  assert.ok(!Array.isArray(h.handed[1]), 'a change hands a delta');
  assert.deepEqual(h.fresh, ['broken ServiceNotFound']);

  // The broken Ingress changes but keeps its problem (a new Problem object): not new.
  h.store.upsert(simpleIngress('broken', 'broken.example.com', [['/', 'missing'], ['/x', 'a']]));
  await settle();
  assert.deepEqual(h.fresh, ['broken ServiceNotFound']);
  assert.equal(h.logged.length, 1);

  // A second problem appears on another Ingress: only it is new.
  h.store.upsert(simpleIngress('more', 'more.example.com', [['/', 'gone']]));
  await settle();
  assert.deepEqual(h.fresh, ['broken ServiceNotFound', 'more ServiceNotFound']);
  assert.equal(h.logged.length, 2);
  assert.deepEqual(h.counts.at(-1), 2, 'the log line counts the problems');

  // Fixed, then broken again: logged again.
  h.store.upsert(simpleIngress('broken', 'broken.example.com', [['/', 'a']]));
  await settle();
  assert.equal(h.logged.length, 2);
  assert.deepEqual(h.counts.at(-1), 1);
  h.store.upsert(simpleIngress('broken', 'broken.example.com', [['/', 'missing']]));
  await settle();
  assert.deepEqual(h.fresh, ['broken ServiceNotFound', 'more ServiceNotFound', 'broken ServiceNotFound']);
  assert.equal(h.logged.length, 3);
  assert.ok(h.handed.slice(1).every((p) => !Array.isArray(p)), 'every change after the first build handed a delta');
  const { byDelta, recount } = await h.gauges();
  assert.deepEqual(byDelta, recount);
  assert.deepEqual(byDelta, ['portico_config_problems{kind="Ingress",reason="ServiceNotFound",severity="error"} 2']);
});

test('external problems (manifest files) are reported once, go with the table, and come back as new', async () => {
  const h = harness();
  h.controller.start();
  const file: Problem = { object: { kind: 'File', name: 'bad.yaml' }, severity: 'error', reason: 'InvalidManifest', message: 'bad.yaml:1: not YAML' };
  h.setExternal([file]);
  await settle();
  assert.deepEqual(h.fresh, ['broken ServiceNotFound', 'bad.yaml InvalidManifest']);
  assert.deepEqual(h.table().config.problems.map((p) => p.reason).sort(), ['InvalidManifest', 'ServiceNotFound']);
  // The same problem in a new list (the file read again): not new.
  h.setExternal([{ ...file }]);
  await settle();
  h.store.upsert(simpleIngress('more', 'more.example.com', [['/', 'a']]));
  await settle();
  assert.deepEqual(h.fresh, ['broken ServiceNotFound', 'bad.yaml InvalidManifest']);
  assert.deepEqual(h.table().config.problems.map((p) => p.reason).sort(), ['InvalidManifest', 'ServiceNotFound']);
  let gauges = await h.gauges();
  assert.deepEqual(gauges.byDelta, gauges.recount);
  h.setExternal([]);
  await settle();
  assert.deepEqual(h.table().config.problems.map((p) => p.reason), ['ServiceNotFound']);
  gauges = await h.gauges();
  assert.deepEqual(gauges.byDelta, gauges.recount);
  h.setExternal([file]);
  await settle();
  assert.deepEqual(h.fresh, ['broken ServiceNotFound', 'bad.yaml InvalidManifest', 'bad.yaml InvalidManifest']);
  assert.ok(h.handed.slice(1).every((p) => !Array.isArray(p)), 'every change after the first build handed a delta');
  h.controller.stop();
});

test('a problem two sources report at once is known while either does', async () => {
  const h = harness();
  h.controller.start();
  const [translated] = h.table().config.problems;
  // The same problem (same object, reason and message) from outside translation too: not new.
  h.setExternal([{ ...translated! }]);
  await settle();
  assert.deepEqual(h.fresh, ['broken ServiceNotFound']);
  // One source stops reporting it: the other still does, so it is not new when the first reports it again.
  h.store.upsert(simpleIngress('broken', 'broken.example.com', [['/', 'a']]));
  await settle();
  h.store.upsert(simpleIngress('broken', 'broken.example.com', [['/', 'missing']]));
  await settle();
  assert.deepEqual(h.fresh, ['broken ServiceNotFound']);
  // Both stop: gone; back: new.
  h.store.upsert(simpleIngress('broken', 'broken.example.com', [['/', 'a']]));
  h.setExternal([]);
  await settle();
  assert.deepEqual(h.counts.at(-1), 0);
  h.setExternal([{ ...translated! }]);
  await settle();
  assert.deepEqual(h.fresh, ['broken ServiceNotFound', 'broken ServiceNotFound']);
  assert.equal(h.logged.length, 2);
  assert.ok(h.handed.slice(1).every((p) => !Array.isArray(p)), 'every change after the first build handed a delta');
  const { byDelta, recount } = await h.gauges();
  assert.deepEqual(byDelta, recount);
  h.controller.stop();
});

test('a change the controller does not track (a full re-check) compares every problem, and reports none twice', async () => {
  const h = harness();
  h.controller.start();
  h.controller.changed(); // unknown: everything is checked
  h.store.upsert(simpleIngress('more', 'more.example.com', [['/', 'gone']]));
  await settle();
  assert.ok(Array.isArray(h.handed.at(-1)), 'a full re-check hands every problem');
  assert.deepEqual(h.fresh, ['broken ServiceNotFound', 'more ServiceNotFound']);
  const { byDelta, recount } = await h.gauges();
  assert.deepEqual(byDelta, recount);
  h.controller.stop();
});

test('a bad IP list is one log line naming the Ingress, the annotation, the entry and what portico does', async () => {
  const h = harness();
  h.controller.start();
  h.store.upsert(simpleIngress('locked', 'locked.example.com', [['/', 'a']], { annotations: { 'portico.dev/ip-allow': 'nonsense' } }));
  await settle();
  assert.deepEqual(h.logged.slice(1), [
    'Ingress default/locked: annotation portico.dev/ip-allow: invalid entry "nonsense": expected IPv4 or IPv6 addresses or CIDRs such as 10.0.0.0/8 or 2001:db8::/32; ' +
      'ip-allow is not applied and every client gets 403 until it is fixed (an IP list with a mistake fails closed)',
  ]);
  assert.deepEqual(h.fresh, ['broken ServiceNotFound', 'locked InvalidAnnotation']);
  h.controller.stop();
});

test('an Ingress naming an IngressClass that does not exist is one warning (no Event), again only after it changed; other controllers\' Ingresses log nothing above debug', async () => {
  const h = harness();
  h.store.upsert(ingressClass('nginx', { controller: 'k8s.io/ingress-nginx' }));
  h.store.upsert(ingress('theirs', { ingressClassName: 'nginx', rules: simpleIngress('x', 'theirs.example.com', [['/', 'a']]).spec!.rules! }));
  h.store.upsert(ingress('typo', { ingressClassName: 'portcio', rules: simpleIngress('x', 'typo.example.com', [['/', 'a']]).spec!.rules! }));
  h.controller.start();
  const typoLine = 'Ingress default/typo is not served: spec.ingressClassName "portcio" names no IngressClass (portico serves: portico)';
  assert.deepEqual(h.logged.slice(1), [typoLine]);
  assert.deepEqual(h.fresh, ['broken ServiceNotFound'], 'not a problem: no Event or status for an Ingress portico does not serve');

  // Rebuilds for other changes: not logged again.
  h.store.upsert(simpleIngress('more', 'more.example.com', [['/', 'a']]));
  await settle();
  assert.deepEqual(h.logged.slice(1), [typoLine]);

  // The class appears (portico's): served, nothing logged; it goes: the warning is back.
  h.store.upsert(ingressClass('portcio'));
  await settle();
  assert.ok(h.table().config.servedIngresses.includes('default/typo'));
  assert.deepEqual(h.logged.slice(1), [typoLine]);
  h.store.delete('IngressClass', 'portcio');
  await settle();
  assert.ok(!h.table().config.servedIngresses.includes('default/typo'));
  assert.deepEqual(h.logged.slice(1), [typoLine, typoLine]);
  assert.deepEqual(h.fresh, ['broken ServiceNotFound']);
  h.controller.stop();
});

test('many Ingresses naming IngressClasses that do not exist: 20 warnings, then one line counting the rest by class', async () => {
  const h = harness();
  for (let i = 0; i < 30; i++) h.store.upsert(ingress(`gone${String(i).padStart(2, '0')}`, { ingressClassName: i < 25 ? 'gone' : 'old', rules: [] }));
  h.controller.start();
  const lines = h.logged.slice(1);
  assert.equal(lines.length, 21);
  assert.ok(lines.slice(0, 20).every((l) => /^Ingress default\/gone\d\d is not served: spec\.ingressClassName "(gone|old)" names no IngressClass/.test(l)));
  assert.equal(lines[20], '10 more Ingresses are not served: their spec.ingressClassName names no IngressClass ("gone": 5, "old": 5); /routes lists them under ignoredIngresses');
  h.controller.stop();
});
