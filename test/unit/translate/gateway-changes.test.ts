// Issue 12: a Gateway-side change (Gateway, GatewayClass, listener, ReferenceGrant,
// Namespace labels) translates only the routes it can change, to the same output as a
// fresh translation: routes, statuses (attachedRoutes included), problems.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keyOf, type KubeObject, type Namespace } from '../../../src/model/k8s.ts';
import { createTranslator } from '../../../src/translate/index.ts';
import { OPTIONS, applyStep, service, slice, snapshotOf, testCerts, tlsSecret } from './fixtures.ts';
import { gateway, gatewayClass, grant, http, httpRoute, toService } from './gateway-fixtures.ts';
import { checkSteps, type Step } from './same-output.ts';

const id = (o: KubeObject) => `${o.kind}/${keyOf(o)}`;
const namespace = (name: string, labels: Record<string, string> = {}): Namespace => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } }) as Namespace;
const COUNT = { a: 10, b: 5, bx: 3, c: 2, d: 3 };
const fromProd = { namespaces: { from: 'Selector' as const, selector: { matchLabels: { env: 'prod' } } } };

/** Gateways a, b (routes from env=prod namespaces), c (another controller's class), d (the oldest); routes naming each. */
function world(): Map<string, KubeObject> {
  const objects: KubeObject[] = [
    gatewayClass(),
    gatewayClass('other', 'example.com/other'),
    namespace('team1', { env: 'prod' }),
    namespace('team2'),
    service('web'),
    slice('web-1', 'web', [{ ip: '10.0.0.1' }]),
    service('web', [{ name: 'http', port: 80 }], 'team2'),
    gateway('a', [http('web', 8081, { allowedRoutes: { namespaces: { from: 'All' } } })], { created: '2024-01-01T00:00:00Z' }),
    gateway('b', [http('web', 8082, { allowedRoutes: fromProd })], { created: '2024-01-01T00:00:00Z' }),
    gateway('c', [http('web', 8084)], { className: 'other', created: '2024-01-01T00:00:00Z' }),
    gateway('d', [http('web', 8083)], { created: '2020-01-01T00:00:00Z' }),
  ];
  for (let i = 0; i < COUNT.a; i++) objects.push(httpRoute(`a${i}`, [{ name: 'a' }], [{ backendRefs: [toService('web')] }], { hostnames: [`a${i}.test`] }));
  for (let i = 0; i < COUNT.b; i++) objects.push(httpRoute(`b${i}`, [{ name: 'b', namespace: 'default' }], [{ backendRefs: [toService('web', 80, { namespace: 'default' })] }], { namespace: 'team1', hostnames: [`b${i}.test`] }));
  for (let i = 0; i < COUNT.bx; i++) objects.push(httpRoute(`bx${i}`, [{ name: 'b', namespace: 'default' }], [{ backendRefs: [toService('web')] }], { namespace: 'team2', hostnames: [`bx${i}.test`] }));
  for (let i = 0; i < COUNT.c; i++) objects.push(httpRoute(`c${i}`, [{ name: 'c' }], [{ backendRefs: [toService('web')] }], { hostnames: [`c${i}.test`] }));
  for (let i = 0; i < COUNT.d; i++) objects.push(httpRoute(`d${i}`, [{ name: 'd' }], [{ backendRefs: [toService('web')] }], { hostnames: [`d${i}.test`] }));
  return new Map(objects.map((o) => [id(o), o]));
}

test('a Gateway-side change translates only the routes it can change, to the same output as a fresh translation', () => {
  const memo = createTranslator();
  const objects = world();
  memo(snapshotOf([...objects.values()]), OPTIONS);
  const n = COUNT;
  // [what, change, routes that must be translated again (from the groups above)]
  const steps: Step[] = [
    ['a listener is added to Gateway a', (o) => o.set('Gateway/default/a', gateway('a', [http('web', 8081, { allowedRoutes: { namespaces: { from: 'All' } } }), http('more', 8090)], { created: '2024-01-01T00:00:00Z' })), n.a],
    ['the oldest Gateway d takes port 8081: Gateway a\'s listener there is now conflicted, and a\'s routes lose it', (o) => o.set('Gateway/default/d', gateway('d', [http('web', 8083), http('taken', 8081)], { created: '2020-01-01T00:00:00Z' })), n.d + n.a],
    ['namespace team2 gets the label Gateway b selects: its routes attach', (o) => o.set('Namespace/team2', namespace('team2', { env: 'prod' })), n.bx],
    ['a ReferenceGrant lets team1\'s routes reach Services in default', (o) => o.set('ReferenceGrant/default/allow-team1', grant('default', { kind: 'HTTPRoute', namespace: 'team1' }, { kind: 'Service' })), n.b],
    ['the other class becomes portico\'s: Gateway c and its routes join', (o) => o.set('GatewayClass/other', gatewayClass('other')), n.c],
    ['an unrelated label on team1: its routes are looked at, and come out the same', (o) => o.set('Namespace/team1', namespace('team1', { env: 'prod', team: 'one' })), n.b],
    ['a route changes while Gateway d drops its conflicting listener', (o) => {
      o.set('Gateway/default/d', gateway('d', [http('web', 8083)], { created: '2020-01-01T00:00:00Z' }));
      o.set('HTTPRoute/default/c0', httpRoute('c0', [{ name: 'c' }], [{ matches: [{ path: { type: 'PathPrefix', value: '/x' } }], backendRefs: [toService('web')] }], { hostnames: ['c0.test'] }));
    }, n.d + n.a + 1],
    ['the ReferenceGrant goes', (o) => o.delete('ReferenceGrant/default/allow-team1'), n.b],
    ['Gateway b is deleted', (o) => o.delete('Gateway/default/b'), n.b + n.bx],
    ['Gateway b comes back', (o) => o.set('Gateway/default/b', gateway('b', [http('web', 8082, { allowedRoutes: fromProd })], { created: '2024-01-01T00:00:00Z' })), n.b + n.bx],
  ];
  checkSteps(memo, objects, steps, () => memo.gatewayRoutesTranslated(), 'routes translated');
});

test('the steps move what a user sees: attachedRoutes of a Gateway not named in the change, route conditions', () => {
  const memo = createTranslator();
  let objects = world();
  const first = memo(snapshotOf([...objects.values()]), OPTIONS);
  assert.equal(first.gatewayStatus.gateways.get('default/a')!.listeners[0]!.attachedRoutes, COUNT.a);
  const { next, changes, snapshot } = applyStep(objects, (o) => o.set('Gateway/default/d', gateway('d', [http('web', 8083), http('taken', 8081)], { created: '2020-01-01T00:00:00Z' })));
  objects = next;
  const config = memo(snapshot, OPTIONS, changes);
  const a = config.gatewayStatus.gateways.get('default/a')!;
  assert.equal(a.listeners[0]!.attachedRoutes, 0, 'Gateway a lost its port to d: no route attached there');
  const route = config.gatewayStatus.httpRoutes.get('default/a0')!;
  assert.equal(route.parents[0]!.conditions.find((c) => c.type === 'Accepted')!.status, 'False');
  assert.ok(!config.routes.some((r) => r.host === 'a0.test'));
});

test('a certificate Secret of a listener appears, changes and goes: the routes of its Gateway are translated again, the others not', async () => {
  const certs = await testCerts();
  const memo = createTranslator();
  const secure = gateway('e', [{ name: 'secure', port: 9443, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'e-tls' }] } }], { created: '2024-01-01T00:00:00Z' });
  const objects = world();
  objects.set(id(secure), secure);
  for (let i = 0; i < 4; i++) {
    const route = httpRoute(`e${i}`, [{ name: 'e' }], [{ backendRefs: [toService('web')] }], { hostnames: [`e${i}.test`] });
    objects.set(id(route), route);
  }
  memo(snapshotOf([...objects.values()]), OPTIONS);
  const steps: Step[] = [
    ['the Secret appears: the listener is ready, its routes attach', (o) => o.set('Secret/default/e-tls', tlsSecret('e-tls', certs.foo.cert, certs.foo.key)), 4],
    ['another certificate in it: the listener stays ready, its routes come out the same', (o) => o.set('Secret/default/e-tls', tlsSecret('e-tls', certs.wildcard.cert, certs.wildcard.key)), 0],
    ['a key that does not fit: the listener is not ready', (o) => o.set('Secret/default/e-tls', tlsSecret('e-tls', certs.foo.cert, certs.bar.key)), 4],
    ['the Secret goes', (o) => o.delete('Secret/default/e-tls'), 0],
  ];
  checkSteps(memo, objects, steps, () => memo.gatewayRoutesTranslated(), 'routes translated');
});

test('a Service that a route names appears: its ResolvedRefs moves even where the route makes no routes (not attached, every match rejected)', () => {
  const memo = createTranslator();
  const objects = world();
  // team2 is not a prod namespace: Gateway b does not take its routes, but writes their status.
  const unattached = httpRoute('lost', [{ name: 'b', namespace: 'default' }], [{ backendRefs: [toService('later')] }], { namespace: 'team2', hostnames: ['lost.test'] });
  const rejected = httpRoute('odd', [{ name: 'a', namespace: 'default' }], [{ matches: [{ path: { type: 'RegularExpression', value: '/x' } }], backendRefs: [toService('later')] }], { namespace: 'team2', hostnames: ['odd.test'] });
  for (const route of [unattached, rejected]) objects.set(id(route), route);
  const first = memo(snapshotOf([...objects.values()]), OPTIONS);
  const resolved = (config: typeof first, key: string) => config.gatewayStatus.httpRoutes.get(key)!.parents[0]!.conditions.find((c) => c.type === 'ResolvedRefs')!;
  assert.equal(resolved(first, 'team2/lost').reason, 'BackendNotFound');
  assert.equal(resolved(first, 'team2/odd').reason, 'BackendNotFound');
  const steps: Step[] = [
    ['the Service appears', (o) => o.set('Service/team2/later', service('later', [{ name: 'http', port: 80 }], 'team2')), 2],
    ['it goes again', (o) => o.delete('Service/team2/later'), 2],
  ];
  checkSteps(memo, objects, steps, () => memo.gatewayRoutesTranslated(), 'routes translated');
});
