// Translation at scale: 10,000 Ingresses (1-2 hosts x 2 paths each), one Service and
// one EndpointSlice of 3 pods per Ingress, TLS on every tenth. Times the first full
// translation, then rebuilds after one Ingress or one EndpointSlice changed (the
// controller's steady state), and prints heap used. With a second argument, that many
// HTTPRoutes too, over 5 Gateways (issue 9: the figures must hold with Gateway API on top).
// Last, the cost of shipping a config to the workers: the message the primary sends (whole,
// the delta of one changed Ingress, and that of one renewed TLS Secret) through v8's
// serializer, as node:cluster's 'advanced' IPC does, and the worker's side (deserialize,
// then rebuild its replica; for the Secret, then its TLS layer's update).
// BENCH_PROBLEMS=1: each Ingress' "/" path has no pathType, so every Ingress carries a
// problem (a MissingPathType warning): what a change costs when the config has many.
// BENCH_TLS=1: TLS (a Secret of its own) on every Ingress, not every tenth. With TLS, the
// first translation is also timed with the Secrets checked ahead (SecretChecks).
//   node_modules/.bin/node bench/translate.ts [ingresses] [httproutes]
import { deserialize, serialize, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { generate } from 'selfsigned';
import { CONTROLLER_NAME, type Snapshot, type TranslateOptions } from '../src/model/config.ts';
import { SERVICE_NAME_LABEL, type EndpointSlice, type Gateway, type GatewayClass, type HTTPRoute, type Ingress, type IngressClass, type Secret, type Service } from '../src/model/k8s.ts';
import { createTranslator } from '../src/translate/index.ts';
import { buildRouteTable } from '../src/routing/table.ts';
import { ConfigReplica, configMessage, type ConfigMessage } from '../src/workers/protocol.ts';
import { CertificateStore } from '../src/tls/certificates.ts';
import { SecretChecks } from '../src/tls/secret-checks.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const COUNT = Number(process.argv[2] ?? 10_000);
const ROUTES = Number(process.argv[3] ?? 0);
const GATEWAYS = 5;
const RUNS = 7;
const PROBLEMS = process.env.BENCH_PROBLEMS === '1';
const TLS_EVERY = process.env.BENCH_TLS === '1' ? 1 : 10;
const options: TranslateOptions = { ingressClass: 'portico', controllerName: CONTROLLER_NAME, allowExternalName: false };

const pems = await generate([{ name: 'commonName', value: '*.bench.test' }], {
  keyType: 'ec',
  curve: 'P-256',
  extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: '*.bench.test' }] }],
});

function makeIngress(i: number, version = 0): Ingress {
  const hosts = i % 2 === 0 ? [`app${i}.bench.test`] : [`app${i}.bench.test`, `www${i}.bench.test`];
  const backend = { service: { name: `svc${i}`, port: { number: 80 } } };
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: `ing${i}`, namespace: `ns${i % 100}`, creationTimestamp: new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString(), resourceVersion: String(version) },
    spec: {
      ingressClassName: 'portico',
      ...(i % TLS_EVERY === 0 ? { tls: [{ hosts, secretName: `tls${i}` }] } : {}),
      rules: hosts.map((host) => ({
        host,
        http: { paths: [{ path: '/', ...(PROBLEMS ? {} : { pathType: 'Prefix' as const }), backend }, { path: `/api/v${version}`, pathType: 'Exact' as const, backend }] },
      })),
    },
  };
}

function makeSlice(i: number, version = 0): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `svc${i}-abc`, namespace: `ns${i % 100}`, labels: { [SERVICE_NAME_LABEL]: `svc${i}` } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: [0, 1, 2].map((p) => ({ addresses: [`10.${(i >> 8) & 255}.${i & 255}.${p + 1 + version}`], conditions: { ready: true } })),
  };
}

function makeHttpRoute(i: number, version = 0): HTTPRoute {
  const backendRefs = [{ name: `svc${i % COUNT}`, namespace: `ns${i % COUNT % 100}`, port: 80 }];
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: `route${i}`, namespace: 'gw', creationTimestamp: new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString(), resourceVersion: String(version) },
    spec: {
      parentRefs: [{ name: `gw${i % GATEWAYS}` }],
      hostnames: [`r${i}.gw.test`],
      rules: [
        { matches: [{ path: { type: 'PathPrefix', value: '/' } }], backendRefs },
        { matches: [{ path: { type: 'PathPrefix', value: `/v${version}` }, headers: [{ name: 'x-canary', value: 'yes' }] }], backendRefs },
      ],
    },
  };
}

function gatewayObjects() {
  const gatewayClasses = new Map<string, GatewayClass>([
    ['portico', { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: 'portico' }, spec: { controllerName: 'portico.dev/gateway-controller' } }],
  ]);
  const gateways = new Map<string, Gateway>();
  const httpRoutes = new Map<string, HTTPRoute>();
  if (ROUTES > 0) {
    for (let g = 0; g < GATEWAYS; g++) {
      gateways.set(`gw/gw${g}`, {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        metadata: { name: `gw${g}`, namespace: 'gw' },
        spec: { gatewayClassName: 'portico', listeners: [{ name: 'http', port: 9000 + g, protocol: 'HTTP' }] },
      });
    }
    for (let i = 0; i < ROUTES; i++) httpRoutes.set(`gw/route${i}`, makeHttpRoute(i));
  }
  // Backends in other namespaces: one grant per namespace lets the routes reach them.
  const referenceGrants = new Map(
    Array.from({ length: ROUTES > 0 ? 100 : 0 }, (_, n) => [
      `ns${n}/from-gw`,
      {
        apiVersion: 'gateway.networking.k8s.io/v1beta1',
        kind: 'ReferenceGrant' as const,
        metadata: { name: 'from-gw', namespace: `ns${n}` },
        spec: { from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'gw' }], to: [{ group: '', kind: 'Service' }] },
      },
    ]),
  );
  return { gatewayClasses: ROUTES > 0 ? gatewayClasses : new Map(), gateways, httpRoutes, referenceGrants, namespaces: new Map() };
}

function buildSnapshot() {
  const ingressClasses = new Map<string, IngressClass>([
    ['portico', { apiVersion: 'networking.k8s.io/v1', kind: 'IngressClass', metadata: { name: 'portico' }, spec: { controller: CONTROLLER_NAME } }],
  ]);
  const ingresses = new Map<string, Ingress>();
  const services = new Map<string, Service>();
  const endpointSlices = new Map<string, EndpointSlice>();
  const endpointSlicesByService = new Map<string, Map<string, EndpointSlice>>();
  const secrets = new Map<string, Secret>();
  for (let i = 0; i < COUNT; i++) {
    const ns = `ns${i % 100}`;
    ingresses.set(`${ns}/ing${i}`, makeIngress(i));
    services.set(`${ns}/svc${i}`, { apiVersion: 'v1', kind: 'Service', metadata: { name: `svc${i}`, namespace: ns }, spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] } });
    const slice = makeSlice(i);
    endpointSlices.set(`${ns}/${slice.metadata.name}`, slice);
    endpointSlicesByService.set(`${ns}/svc${i}`, new Map([[`${ns}/${slice.metadata.name}`, slice]]));
    if (i % TLS_EVERY === 0) {
      secrets.set(`${ns}/tls${i}`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: `tls${i}`, namespace: ns }, type: 'kubernetes.io/tls', stringData: { 'tls.crt': pems.cert, 'tls.key': pems.private } });
    }
  }
  return { ingressClasses, ingresses, services, endpointSlices, endpointSlicesByService, secrets, ...gatewayObjects() };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function time(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

gc();
const heapBefore = process.memoryUsage().heapUsed;
const store = buildSnapshot();
const snapshot: Snapshot = store;
gc();
const heapObjects = process.memoryUsage().heapUsed;

// First full translation: a fresh translator each run (Secrets parsed again each time).
const firstRuns: number[] = [];
let routes = 0;
for (let r = 0; r < RUNS; r++) {
  const translate = createTranslator();
  firstRuns.push(time(() => (routes = translate(snapshot, options).routes.length)));
}

// The same with the TLS Secrets checked ahead in child processes, as portico does at start
// while its sources load (src/tls/secret-checks.ts): the checks' wall time (here nothing
// overlaps them), then the translation fed them.
const aheadChecks: number[] = [];
const aheadRuns: number[] = [];
if (store.secrets.size > 0) {
  for (let r = 0; r < 3; r++) {
    const checks = new SecretChecks();
    let t0 = performance.now();
    for (const secret of store.secrets.values()) checks.add(secret);
    await checks.settled();
    aheadChecks.push(performance.now() - t0);
    const translate = createTranslator(checks.known);
    t0 = performance.now();
    translate(snapshot, options);
    aheadRuns.push(performance.now() - t0);
    checks.stop();
  }
}

// Steady state: one translator, one object changed before each rebuild (told which, as
// the controller does), then the route table patched from the previous one.
const translate = createTranslator();
let config = translate(snapshot, options);
gc();
const heapTranslated = process.memoryUsage().heapUsed;

const noChange: number[] = [];
for (let r = 0; r < RUNS; r++) noChange.push(time(() => (config = translate(snapshot, options, []))));

const oneIngress: number[] = [];
let keptAfterIngress = '';
for (let r = 0; r < RUNS; r++) {
  const i = (r * 1237) % COUNT;
  const ing = makeIngress(i, r + 1);
  const key = `${ing.metadata.namespace}/${ing.metadata.name}`;
  store.ingresses.set(key, ing);
  const before = new Set(config.routes);
  // As the controller calls it: with the store's change.
  oneIngress.push(time(() => (config = translate(snapshot, options, [{ type: 'updated', kind: 'Ingress', key }]))));
  if (r === 0) keptAfterIngress = `${config.routes.filter((route) => before.has(route)).length} of ${config.routes.length}`;
}

const oneSlice: number[] = [];
let keptAfterSlice = '';
for (let r = 0; r < RUNS; r++) {
  const i = (r * 2749 + 5) % COUNT;
  const slice = makeSlice(i, r + 1);
  const key = `${slice.metadata.namespace}/${slice.metadata.name}`;
  store.endpointSlices.set(key, slice);
  store.endpointSlicesByService.set(`${slice.metadata.namespace}/svc${i}`, new Map([[key, slice]]));
  const before = new Set(config.routes);
  oneSlice.push(time(() => (config = translate(snapshot, options, [{ type: 'updated', kind: 'EndpointSlice', key }]))));
  if (r === 0) keptAfterSlice = `${config.routes.filter((route) => before.has(route)).length} of ${config.routes.length}`;
}

// The same, as the controller and the data plane take it: one Ingress translated and the
// live table patched from the previous one (compiling a route is left out: a stub).
const stub = (c: Parameters<Parameters<typeof buildRouteTable>[2]>[0]) => ({ config: c, handle: () => {} });
let table = buildRouteTable(1, config, stub);
const oneIngressTable: number[] = [];
for (let r = 0; r < RUNS; r++) {
  const i = (r * 613 + 11) % COUNT;
  const ing = makeIngress(i, r + 100);
  const key = `${ing.metadata.namespace}/${ing.metadata.name}`;
  store.ingresses.set(key, ing);
  oneIngressTable.push(time(() => {
    config = translate(snapshot, options, [{ type: 'updated', kind: 'Ingress', key }]);
    table = buildRouteTable(r + 2, config, stub, undefined, table);
  }));
}

// An EndpointSlice whose ready addresses moved, nothing else: no translation at all
// (translator.endpoints(), what the controller does before translating).
const oneSliceMoved: number[] = [];
let moved = 0;
for (let r = 0; r < RUNS; r++) {
  const i = (r * 1999 + 7) % COUNT;
  const slice = makeSlice(i, r + 50);
  const key = `${slice.metadata.namespace}/${slice.metadata.name}`;
  store.endpointSlices.set(key, slice);
  store.endpointSlicesByService.set(`${slice.metadata.namespace}/svc${i}`, new Map([[key, slice]]));
  oneSliceMoved.push(time(() => (moved += translate.endpoints(snapshot, options, [{ type: 'updated', kind: 'EndpointSlice', key }])?.length ?? 0)));
}

const oneRoute: number[] = [];
let keptAfterRoute = '';
for (let r = 0; r < (ROUTES > 0 ? RUNS : 0); r++) {
  const i = (r * 373) % ROUTES;
  store.httpRoutes.set(`gw/route${i}`, makeHttpRoute(i, r + 1));
  const before = new Set(config.routes);
  oneRoute.push(time(() => (config = translate(snapshot, options, [{ type: 'updated', kind: 'HTTPRoute', key: `gw/route${i}` }]))));
  if (r === 0) keptAfterRoute = `${config.routes.filter((route) => before.has(route)).length} of ${config.routes.length}`;
}

// An IngressClass edit: portico's class marked default and back (no Ingress here names no
// class, so none can change), and another controller's class added and removed.
const ingressClass = (name: string, controller: string, isDefault: boolean): IngressClass => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'IngressClass',
  metadata: { name, ...(isDefault ? { annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' } } : {}) },
  spec: { controller },
});
const checked = () => (translate as { ingressesChecked?: () => number }).ingressesChecked?.();
const classEdit: number[] = [];
const checkedBefore = checked();
for (let r = 0; r < RUNS * 2; r++) {
  if (r % 2 === 0) store.ingressClasses.set('portico', ingressClass('portico', CONTROLLER_NAME, r % 4 === 0));
  else if (r % 4 === 1) store.ingressClasses.set('other', ingressClass('other', 'example.com/other', false));
  else store.ingressClasses.delete('other');
  const key = r % 2 === 0 ? 'portico' : 'other';
  classEdit.push(time(() => (config = translate(snapshot, options, [{ type: 'updated', kind: 'IngressClass', key }]))));
}
const checkedAfterClasses = checked();

// A listener added to one of the 5 Gateways (2,000 of the routes name it), then taken away.
const listenerEdit: number[] = [];
const routesTranslated = () => (translate as { gatewayRoutesTranslated?: () => number }).gatewayRoutesTranslated?.();
const routesBefore = routesTranslated();
for (let r = 0; r < (ROUTES > 0 ? RUNS * 2 : 0); r++) {
  const gw = store.gateways.get('gw/gw0')!;
  const listeners = [{ name: 'http', port: 9000, protocol: 'HTTP' as const }, ...(r % 2 === 0 ? [{ name: 'extra', port: 9100, protocol: 'HTTP' as const }] : [])];
  store.gateways.set('gw/gw0', { ...gw, spec: { ...gw.spec!, listeners } });
  listenerEdit.push(time(() => (config = translate(snapshot, options, [{ type: 'updated', kind: 'Gateway', key: 'gw/gw0' }]))));
}
const routesAfter = routesTranslated();
const perChange = (before: number | undefined, after: number | undefined, n: number) => (before === undefined || after === undefined ? 'not counted by this code' : `${((after - before) / n).toFixed(0)} per change`);

console.log(`translate: ${COUNT} Ingresses${ROUTES > 0 ? ` and ${ROUTES} HTTPRoutes over ${GATEWAYS} Gateways` : ''}, ${routes} routes, ${config.certificates.size} certificates, ${config.problems.length} problems`);
console.log(`  first full translation     ${median(firstRuns).toFixed(1)} ms (median of ${RUNS})`);
if (aheadRuns.length > 0) console.log(`  the same, Secrets checked ahead: checks ${median(aheadChecks).toFixed(1)} ms (child processes), then translation ${median(aheadRuns).toFixed(1)} ms (medians of ${aheadRuns.length})`);
console.log(`  rebuild, nothing changed   ${median(noChange).toFixed(1)} ms`);
console.log(`  rebuild, one Ingress       ${median(oneIngress).toFixed(1)} ms (routes keeping their identity: ${keptAfterIngress})`);
console.log(`  rebuild, one EndpointSlice ${median(oneSlice).toFixed(1)} ms (routes keeping their identity: ${keptAfterSlice})`);
console.log(`  one Ingress + table patch  ${median(oneIngressTable).toFixed(1)} ms (translation, then the live table patched)`);
console.log(`  EndpointSlice, addresses   ${median(oneSliceMoved).toFixed(2)} ms (no translation: ${moved} backends moved in ${RUNS} changes)`);
if (ROUTES > 0) console.log(`  rebuild, one HTTPRoute      ${median(oneRoute).toFixed(1)} ms (routes keeping their identity: ${keptAfterRoute})`);
console.log(`  one IngressClass edit      ${median(classEdit).toFixed(1)} ms (median of ${classEdit.length}; Ingresses looked at: ${perChange(checkedBefore, checkedAfterClasses, classEdit.length)})`);
if (ROUTES > 0) console.log(`  a listener added/removed   ${median(listenerEdit).toFixed(1)} ms (median of ${listenerEdit.length}, on 1 of ${GATEWAYS} Gateways; routes translated: ${perChange(routesBefore, routesAfter, listenerEdit.length)})`);
console.log(`  heap: objects ${mb(heapObjects - heapBefore)}, translator state + config ${mb(heapTranslated - heapObjects)}, total used ${mb(process.memoryUsage().heapUsed)}`);

// Shipping to workers: what one worker costs the primary (serialize) and itself (deserialize + apply).
const wholeBytes: number[] = [];
const wholeSerialize: number[] = [];
const wholeReceive: number[] = [];
let replica = new ConfigReplica();
for (let r = 0; r < RUNS; r++) {
  let bytes: Buffer | undefined;
  wholeSerialize.push(time(() => (bytes = serialize(configMessage(config, undefined)))));
  wholeBytes.push(bytes!.length);
  replica = new ConfigReplica();
  wholeReceive.push(time(() => replica.apply(deserialize(bytes!) as ConfigMessage)));
}
const deltaBytes: number[] = [];
const deltaSerialize: number[] = [];
const deltaReceive: number[] = [];
for (let r = 0; r < RUNS; r++) {
  const shipped = config;
  const i = (r * 811 + 3) % COUNT;
  const ing = makeIngress(i, RUNS + r + 1);
  const key = `${ing.metadata.namespace}/${ing.metadata.name}`;
  store.ingresses.set(key, ing);
  config = translate(snapshot, options, [{ type: 'updated', kind: 'Ingress', key }]);
  let bytes: Buffer | undefined;
  deltaSerialize.push(time(() => (bytes = serialize(configMessage(config, shipped)))));
  deltaBytes.push(bytes!.length);
  deltaReceive.push(time(() => replica.apply(deserialize(bytes!) as ConfigMessage)));
}
// One TLS Secret renewed (a new certificate object for its hosts): what ships, and what the
// worker's TLS layer then does with the replica's certificates (CertificateStore.update).
const certificateStore = await CertificateStore.create(undefined, undefined, undefined, { cert: pems.cert, key: pems.private });
const secretKeys = [...store.secrets.keys()];
const renewBytes: number[] = [];
const renewTranslate: number[] = [];
const renewMessage: number[] = [];
const renewReceive: number[] = [];
const renewTls: number[] = [];
if (secretKeys.length > 0) {
  let current = replica.apply(deserialize(serialize(configMessage(config, undefined))) as ConfigMessage)!;
  certificateStore.update(current.certificates);
  for (let r = 0; r < RUNS; r++) {
    const shipped = config;
    const key = secretKeys[(r * 37) % secretKeys.length]!;
    const secret = store.secrets.get(key)!;
    store.secrets.set(key, { ...secret, metadata: { ...secret.metadata, resourceVersion: String(r + 1) }, stringData: { 'tls.crt': pems.cert, 'tls.key': pems.private } });
    renewTranslate.push(time(() => (config = translate(snapshot, options, [{ type: 'updated', kind: 'Secret', key }]))));
    let bytes: Buffer | undefined;
    renewMessage.push(time(() => (bytes = serialize(configMessage(config, shipped)))));
    renewBytes.push(bytes!.length);
    const before = current;
    renewReceive.push(time(() => (current = replica.apply(deserialize(bytes!) as ConfigMessage)!)));
    // As the data plane does (certificateChangesSince): the hosts the delta names, relative to the map installed before.
    const hosts = current.delta?.certificates;
    const changes = hosts !== undefined && current.delta!.base === before.serial ? { from: before.certificates, hosts } : undefined;
    renewTls.push(time(() => certificateStore.update(current.certificates, changes)));
  }
}
console.log(`shipping to a worker (v8 serializer, as cluster's 'advanced' IPC)`);
console.log(`  whole config   ${mb(median(wholeBytes))}, serialize ${median(wholeSerialize).toFixed(1)} ms, deserialize + apply ${median(wholeReceive).toFixed(1)} ms`);
console.log(`  one Ingress    ${(median(deltaBytes) / 1024).toFixed(1)} KB, serialize ${median(deltaSerialize).toFixed(2)} ms, deserialize + apply ${median(deltaReceive).toFixed(2)} ms`);
if (renewBytes.length > 0) {
  console.log(`  one Secret     ${(median(renewBytes) / 1024).toFixed(1)} KB, translate ${median(renewTranslate).toFixed(2)} ms, message + serialize ${median(renewMessage).toFixed(2)} ms, deserialize + apply ${median(renewReceive).toFixed(2)} ms, then the worker's TLS layer ${median(renewTls).toFixed(2)} ms (${config.certificates.size} TLS hosts)`);
}
