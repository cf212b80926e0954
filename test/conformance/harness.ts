// Runner for the Gateway API conformance scenarios ported from kubernetes-sigs/gateway-api
// conformance/tests: starts echo pods for the Services of upstream's base manifests
// (conformance/base/manifests.yaml), portico through the real CLI, and for each scenario
// applies its manifests, retries its cases until they hold (upstream's eventual-
// consistency loop), checks the status it expects, then removes its manifests.
//
// Adaptations, because portico binds each Gateway listener port itself on loopback
// (upstream gives each Gateway its own address on port 80/443): every Gateway listens on
// its own free port, and a scenario's requests go to its Gateway's port. Everything runs
// twice: in standalone mode (status read from the admin /routes output) and in cluster
// mode against the test API server (objects created through the API, status read back
// as the leader wrote it).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import selfsigned from 'selfsigned';
import { FakeKubeApiServer } from '../support/kube-apiserver/index.ts';
import { startEchoServer, type EchoReply } from '../../examples/echo-server.ts';
import { startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, serviceWithEndpoints, tlsSecret, type Obj } from '../support/objects.ts';
import { freePort, gatewayClass, httpRoute } from '../support/gateway-objects.ts';
import { send, type Reply } from '../support/http.ts';

export const INFRA = 'gateway-conformance-infra';
export const APP = 'gateway-conformance-app-backend';
export const WEB = 'gateway-conformance-web-backend';

/** Hostnames the base TLS Secrets are valid for (upstream's certificates cover these). */
export const TLS_HOSTS = ['example.org', '*.example.org', 'second-example.org', 'tls.example.com'];

export interface Case {
  host?: string;
  path: string;
  method?: string;
  headers?: Record<string, string>;
  /** The port to send to, when not the scenario's Gateway's: a key of `ports`. */
  via?: string;
  /** Send over TLS, SNI = host, trusting the base certificate. */
  https?: boolean;
  /** Expected answer: a backend (Service name) in a namespace, or a status without backend. */
  backend?: string;
  namespace?: string;
  status?: number;
  /** What the pod must have received, when a filter changed it (undefined: absent). */
  seen?: { path?: string; host?: string; headers?: Record<string, string | undefined> };
  /** Expected response headers (undefined: absent). "{port}" stands for the Gateway's port. */
  responseHeaders?: Record<string, string | undefined>;
  /** Services (in INFRA) that must also receive this request, as a RequestMirror copy. */
  mirroredTo?: string[];
}

/** What one step of a scenario sends and expects. */
export interface Checks {
  cases: Case[];
  /** Route name -> expected conditions of its first parent ("Type=Status:Reason"). */
  routeStatus?: Record<string, string[]>;
  /** Gateway "ns/name" -> listener name -> attachedRoutes. */
  attached?: Record<string, Record<string, number>>;
  /** Gateway "ns/name" -> listener name -> conditions it must have ("Type=Status:Reason"), among others. */
  listenerConditions?: Record<string, Record<string, string[]>>;
  /** Gateway "ns/name" -> listener name -> status.supportedKinds (kind names). */
  supportedKinds?: Record<string, Record<string, string[]>>;
  /** Share of requests each Service must get (upstream HTTPRouteWeight: 500 requests, +/-5%). */
  distribution?: Record<string, number>;
  /** A request header every pod must receive once, naming its own Service (backendRef filters), over 100 requests. */
  headerNamesBackend?: string;
}

export interface Scenario extends Checks {
  /** The upstream test's ShortName (several, comma-separated, when they share manifests). */
  name: string;
  /** Which Gateway the cases go to: a base one, or one the scenario defines. */
  gateway: string;
  /** Gateways the scenario defines itself: each gets a free port (manifests read it from `ports`). */
  ownGateways?: string[];
  manifests: (ports: Ports) => Obj[];
  /** A second step: the manifests changed as upstream changes them, applied live, and what must hold then. */
  then?: Checks & { manifests: (ports: Ports) => Obj[] };
  /**
   * *ObservedGenerationBump: every condition of this object carries its generation, and
   * after `update` (the manifests with its spec changed) the new one.
   */
  bump?: { kind: BumpKind; name: string; update: (ports: Ports) => Obj[] };
}

export type Ports = Record<string, number>;
type BumpKind = 'GatewayClass' | 'Gateway' | 'HTTPRoute';

export const to = (name: string, port = 8080, extra: Obj = {}) => ({ name, port, ...extra });
export const route = (name: string, spec: Obj, namespace = INFRA) => httpRoute(name, spec, namespace);
export const sameNs = [{ name: 'same-namespace' }];
export const prefix = (value: string) => ({ path: { type: 'PathPrefix', value } });

export function gatewayWith(name: string, port: number, listeners: Obj[], namespace = INFRA): Obj {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name, namespace },
    spec: { gatewayClassName: 'portico', listeners: listeners.map((l) => ({ port, protocol: 'HTTP', ...l })) },
  };
}

/** Where a scenario's objects go and where their status is read: files and /routes, or the API server. */
interface World {
  readonly name: string;
  start(base: Obj[]): Promise<PorticoProcess>;
  apply(objects: Obj[]): Promise<void>;
  remove(objects: Obj[]): Promise<void>;
  /** Conditions of the first parent of an HTTPRoute. */
  routeConditions(namespace: string, name: string): Promise<string[] | undefined>;
  /** The status.listeners of a Gateway. */
  listeners(namespace: string, name: string): Promise<ListenerStatus[] | undefined>;
  /** An object's metadata.generation and the observedGeneration of every condition in its status. */
  generations(kind: BumpKind, namespace: string, name: string): Promise<{ generation: number | undefined; observed: (number | undefined)[] }>;
  stop(): Promise<void>;
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  observedGeneration?: number;
}

interface ListenerStatus {
  name: string;
  attachedRoutes: number;
  supportedKinds?: { group?: string; kind: string }[];
  conditions?: Condition[];
}

interface ObjectStatus {
  conditions?: Condition[];
  listeners?: { conditions?: Condition[] }[];
  parents?: { conditions?: Condition[] }[];
}

const conditionLines = (conditions: Condition[] | undefined) => conditions?.map((c) => `${c.type}=${c.status}:${c.reason}`);
const observedGenerations = (status: ObjectStatus | undefined) =>
  [...(status?.conditions ?? []), ...(status?.listeners ?? []).flatMap((l) => l.conditions ?? []), ...(status?.parents ?? []).flatMap((p) => p.conditions ?? [])].map((c) => c.observedGeneration);
const metaOf = (o: Obj) => o.metadata as { name: string; namespace?: string; generation?: number };

function standaloneWorld(): World {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  // No API server counts generations here: they are what the manifests say.
  let applied: Obj[] = [];
  const view = async (): Promise<any> => (await send(portico.admin, { host: 'localhost', path: '/routes' })).json();
  return {
    name: 'standalone mode',
    async start(base) {
      dir.write('base.yaml', base);
      portico = await startPortico(['--manifests', dir.path]);
      return portico;
    },
    async apply(objects) {
      applied = objects;
      dir.write('scenario.yaml', objects);
    },
    async remove() {
      applied = [];
      dir.remove('scenario.yaml');
    },
    async routeConditions(namespace, name) {
      return conditionLines((await view()).gatewayApi.httpRoutes[`${namespace}/${name}`]?.parents[0]?.conditions);
    },
    async listeners(namespace, name) {
      return (await view()).gatewayApi.gateways[`${namespace}/${name}`]?.listeners;
    },
    async generations(kind, namespace, name) {
      const object = applied.find((o) => o.kind === kind && metaOf(o).name === name && (metaOf(o).namespace ?? '') === namespace);
      const { gatewayClasses, gateways, httpRoutes } = (await view()).gatewayApi;
      const status = kind === 'GatewayClass' ? (gatewayClasses[name] ?? gatewayClasses[`/${name}`]) : (kind === 'Gateway' ? gateways : httpRoutes)[`${namespace}/${name}`];
      return { generation: object && metaOf(object).generation, observed: observedGenerations(status) };
    },
    async stop() {
      assert.equal(await portico?.stop(), 0);
      dir.cleanup();
    },
  };
}

function clusterWorld(): World {
  let api: FakeKubeApiServer;
  let dir: string;
  let portico: PorticoProcess;
  return {
    name: 'cluster mode (status written by the leader)',
    async start(base) {
      api = await FakeKubeApiServer.start({ token: 'conformance', tls: true });
      dir = mkdtempSync(join(tmpdir(), 'portico-kubeconfig-'));
      for (const o of base) api.apply(o);
      portico = await startPortico(['--kubeconfig', api.writeKubeconfig(dir), '--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms', '--publish-address', '198.51.100.10']);
      return portico;
    },
    async apply(objects) {
      for (const o of objects) api.apply(o);
    },
    async remove(objects) {
      for (const o of objects) {
        const meta = o.metadata as { name: string; namespace?: string };
        api.remove(o.kind as string, meta.namespace, meta.name);
      }
    },
    async routeConditions(namespace, name) {
      const parents = (api.get('HTTPRoute', namespace, name)?.status as { parents?: { conditions: Condition[] }[] } | undefined)?.parents;
      return conditionLines(parents?.[0]?.conditions);
    },
    async listeners(namespace, name) {
      return (api.get('Gateway', namespace, name)?.status as { listeners?: ListenerStatus[] } | undefined)?.listeners;
    },
    async generations(kind, namespace, name) {
      const object = api.get(kind, namespace || undefined, name);
      return { generation: object?.metadata.generation, observed: observedGenerations(object?.status as ObjectStatus | undefined) };
    },
    async stop() {
      assert.equal(await portico?.stop(), 0);
      await api?.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const BASE_GATEWAYS = ['same-namespace', 'all-namespaces', 'backend-namespaces'];
const BACKENDS = [
  ['infra-backend-v1', INFRA],
  ['infra-backend-v2', INFRA],
  ['infra-backend-v3', INFRA],
  ['app-backend-v1', APP],
  ['app-backend-v2', APP],
  ['web-backend', WEB],
] as const;

/** Registers one describe() per mode, one test() per scenario, named as upstream names them. */
export function runConformance(title: string, scenarios: Scenario[]): void {
  for (const makeWorld of [standaloneWorld, clusterWorld]) {
    const world = makeWorld();
    describe(`${title}, ${world.name}`, () => {
      const echoes: Awaited<ReturnType<typeof startEchoServer>>[] = [];
      /** What each Service's pod received, for RequestMirror checks. */
      const received = new Map<string, EchoReply[]>();
      const ports: Ports = {};
      let ca = '';

      before(async () => {
        for (const name of [...BASE_GATEWAYS, ...scenarios.flatMap((s) => s.ownGateways ?? [])]) ports[name] = await freePort();
        const cert = await selfsigned.generate([{ name: 'commonName', value: 'example.org' }], {
          keyType: 'ec',
          algorithm: 'sha256',
          extensions: [{ name: 'subjectAltName', altNames: TLS_HOSTS.map((value) => ({ type: 2, value })) }],
        });
        ca = cert.cert;
        const base: Obj[] = [
          gatewayClass(),
          { apiVersion: 'v1', kind: 'Namespace', metadata: { name: INFRA, labels: { 'kubernetes.io/metadata.name': INFRA } } },
          { apiVersion: 'v1', kind: 'Namespace', metadata: { name: APP, labels: { 'kubernetes.io/metadata.name': APP, 'gateway-conformance': 'backend' } } },
          { apiVersion: 'v1', kind: 'Namespace', metadata: { name: WEB, labels: { 'kubernetes.io/metadata.name': WEB, 'gateway-conformance': 'backend' } } },
          gatewayWith('same-namespace', ports['same-namespace']!, [{ name: 'http', allowedRoutes: { namespaces: { from: 'Same' } } }]),
          gatewayWith('all-namespaces', ports['all-namespaces']!, [{ name: 'http', allowedRoutes: { namespaces: { from: 'All' } } }]),
          gatewayWith('backend-namespaces', ports['backend-namespaces']!, [
            { name: 'http', allowedRoutes: { namespaces: { from: 'Selector', selector: { matchLabels: { 'gateway-conformance': 'backend' } } } } },
          ]),
          // As upstream's base: a certificate beside the Gateways, and one in another namespace.
          tlsSecret('tls-validity-checks-certificate', cert.cert, cert.private, INFRA),
          tlsSecret('certificate', cert.cert, cert.private, WEB),
        ];
        for (const [name, namespace] of BACKENDS) {
          received.set(name, []);
          const echo = await startEchoServer({ name, namespace, onRequest: (r) => received.get(name)!.push(r) });
          echoes.push(echo);
          base.push(...serviceWithEndpoints(name, [echo.port], { namespace, port: 8080 }));
        }
        await world.start(base);
      });

      after(async () => {
        await world.stop();
        for (const e of echoes) await e.close();
      });

        /** Runs a step's cases, then checks the status it expects. */
        const verify = async (step: Checks, port: number, objects: Obj[]) => {
          for (const c of step.cases) {
            for (const mirror of c.mirroredTo ?? []) received.get(mirror)!.length = 0;
            await expectEventually(c.via === undefined ? port : ports[c.via]!, c, ca);
            for (const mirror of c.mirroredTo ?? []) {
              await eventuallyEqual(async () => received.get(mirror)!.some((r) => r.path === c.path), true, `${mirror} received a mirrored copy of ${c.path}`);
            }
          }
          if (step.distribution) await expectDistribution(port, step.cases[0]!, step.distribution, ca);
          if (step.headerNamesBackend) await expectHeaderNamesBackend(port, step.cases[0]!, step.headerNamesBackend, ca);
          for (const [name, expected] of Object.entries(step.routeStatus ?? {})) {
            const namespace = namespaceOf(objects, 'HTTPRoute', name);
            await eventuallyEqual(() => world.routeConditions(namespace, name), expected, `status of HTTPRoute ${namespace}/${name}`);
          }
          for (const [gw, want] of Object.entries(step.attached ?? {})) {
            const [namespace, name] = gw.split('/') as [string, string];
            const attached = async () => {
              const listeners = await world.listeners(namespace, name);
              return listeners && Object.fromEntries(listeners.map((l) => [l.name, l.attachedRoutes]));
            };
            await eventuallyEqual(attached, want, `attachedRoutes of ${gw}`);
          }
          for (const [gw, want] of Object.entries(step.supportedKinds ?? {})) {
            const [namespace, name] = gw.split('/') as [string, string];
            const kinds = async () => {
              const listeners = await world.listeners(namespace, name);
              return listeners && Object.fromEntries(listeners.filter((l) => l.name in want).map((l) => [l.name, (l.supportedKinds ?? []).map((k) => k.kind)]));
            };
            await eventuallyEqual(kinds, want, `supportedKinds of ${gw}`);
          }
          for (const [gw, want] of Object.entries(step.listenerConditions ?? {})) {
            const [namespace, name] = gw.split('/') as [string, string];
            // Only the conditions named: a listener carries others (Programmed, Conflicted...) too.
            const named = async () => {
              const listeners = await world.listeners(namespace, name);
              return Object.fromEntries(
                Object.entries(want).map(([listener, expected]) => {
                  const have = conditionLines(listeners?.find((l) => l.name === listener)?.conditions) ?? [];
                  return [listener, expected.filter((e) => have.includes(e)).length === expected.length ? expected : have];
                }),
              );
            };
            await eventuallyEqual(named, want, `listener conditions of ${gw}`);
          }
        };

      for (const scenario of scenarios) {
        test(scenario.name, async () => {
          const port = ports[scenario.gateway]!;
          const objects = scenario.manifests(ports);
          await world.apply(objects);
          try {
            // As upstream waits for its routes to be accepted: until then the previous scenario may still be served.
            await expectProcessed(world, objects, true);
            await verify(scenario, port, objects);
            if (scenario.then) {
              const next = scenario.then.manifests(ports);
              await world.apply(next);
              await expectProcessed(world, next, true);
              await verify(scenario.then, port, next);
            }
            if (scenario.bump) {
              const { kind, name, update } = scenario.bump;
              const namespace = namespaceOf(objects, kind, name);
              const before = await expectObservedCurrent(world, kind, namespace, name);
              await world.apply(update(ports));
              const after = await expectObservedCurrent(world, kind, namespace, name);
              assert.ok(after > before, `${kind} ${namespace}/${name}: generation ${after} after the spec change, was ${before}`);
            }
          } finally {
            const last = scenario.bump ? scenario.bump.update(ports) : scenario.then ? scenario.then.manifests(ports) : objects;
            await world.remove(last);
            await expectProcessed(world, last, false);
          }
        });
      }
    });
  }
}

/** Waits until portico reports status for every Gateway and HTTPRoute of `objects` (present) or for none (removed). */
async function expectProcessed(world: World, objects: Obj[], present: boolean): Promise<void> {
  const reported = async () =>
    Promise.all(
      objects
        .filter((o) => o.kind === 'Gateway' || o.kind === 'HTTPRoute')
        .map(async (o) => {
          const { name, namespace } = metaOf(o);
          const status = o.kind === 'Gateway' ? await world.listeners(namespace!, name) : await world.routeConditions(namespace!, name);
          return `${o.kind} ${namespace}/${name}: ${status === undefined ? 'no status' : 'status'}`;
        }),
    );
  const want = objects.filter((o) => o.kind === 'Gateway' || o.kind === 'HTTPRoute').map((o) => `${o.kind} ${metaOf(o).namespace}/${metaOf(o).name}: ${present ? 'status' : 'no status'}`);
  await eventuallyEqual(reported, want, present ? 'status of the applied objects' : 'status of the removed objects gone');
}

/** Waits until every condition of the object carries its current generation; returns it. */
async function expectObservedCurrent(world: World, kind: BumpKind, namespace: string, name: string): Promise<number> {
  const read = async () => {
    const { generation, observed } = await world.generations(kind, namespace, name);
    return { generation, stale: observed.length === 0 ? ['no conditions'] : observed.filter((g) => g !== generation) };
  };
  let got = await read();
  const deadline = Date.now() + 5000;
  while ((got.generation === undefined || got.stale.length > 0) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    got = await read();
  }
  assert.deepEqual(got.stale, [], `${kind} ${namespace}/${name} at generation ${got.generation}: conditions observed ${JSON.stringify(got.stale)}`);
  return got.generation!;
}

function namespaceOf(objects: Obj[], kind: string, name: string): string {
  const found = objects.find((o) => o.kind === kind && (o.metadata as { name: string }).name === name);
  assert.ok(found, `the scenario defines no ${kind} ${name}`);
  return (found.metadata as { namespace?: string }).namespace ?? '';
}

/** Status is written asynchronously in a cluster: retried for up to 5 s. */
async function eventuallyEqual<T>(read: () => Promise<T>, expected: unknown, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  let got: T = await read();
  while (!isDeepStrictEqual(got, expected) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    got = await read();
  }
  assert.deepEqual(got, expected, what);
}

function request(port: number, c: Case, ca: string): Promise<Reply> {
  const host = c.host ?? 'example.com';
  return send(port, {
    method: c.method ?? 'GET',
    host,
    path: c.path,
    headers: c.headers,
    ...(c.https ? { https: { servername: host.replace(/:\d+$/, ''), ca } } : {}),
  });
}

/** Retries a case for up to 5 s, as upstream's MakeRequestAndExpectEventuallyConsistentResponse does. */
async function expectEventually(port: number, c: Case, ca: string): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const problem = await check(port, c, ca);
    if (problem === undefined) return;
    if (Date.now() > deadline) assert.fail(`${c.method ?? 'GET'} ${c.https ? 'https' : 'http'}://${c.host ?? 'example.com'}${c.path} ${JSON.stringify(c.headers ?? {})}: ${problem}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Header lists compare without the space after commas: upstream writes "a,b", Node joins "a, b".
const sameValue = (got: string | string[] | undefined, want: string | undefined) =>
  want === undefined ? got === undefined : got !== undefined && String(got).replace(/,\s+/g, ',') === want.replace(/,\s+/g, ',');

async function check(port: number, c: Case, ca: string): Promise<string | undefined> {
  const reply = await request(port, c, ca).catch((err: Error) => err);
  if (reply instanceof Error) return reply.message;
  const status = c.status ?? 200;
  if (reply.status !== status) return `status ${reply.status}, expected ${status}`;
  for (const [name, value] of Object.entries(c.responseHeaders ?? {})) {
    const want = value?.replace('{port}', String(port));
    if (!sameValue(reply.headers[name.toLowerCase()], want)) return `response header ${name}: ${String(reply.headers[name.toLowerCase()])}, expected ${want}`;
  }
  if (c.backend === undefined) return undefined;
  const echo = reply.json<EchoReply>();
  if (echo.service !== c.backend) return `backend ${echo.service}, expected ${c.backend}`;
  if (echo.namespace !== (c.namespace ?? INFRA)) return `namespace ${echo.namespace}, expected ${c.namespace ?? INFRA}`;
  if (c.seen?.path !== undefined && echo.path !== c.seen.path) return `the pod saw path ${echo.path}, expected ${c.seen.path}`;
  if (c.seen?.host !== undefined && echo.host !== c.seen.host) return `the pod saw host ${echo.host}, expected ${c.seen.host}`;
  for (const [name, value] of Object.entries(c.seen?.headers ?? {})) {
    if (!sameValue(echo.headers[name.toLowerCase()], value)) return `the pod saw ${name}: ${String(echo.headers[name.toLowerCase()])}, expected ${String(value)}`;
  }
  return undefined;
}

/**
 * Upstream HTTPRouteWeight: 500 requests, 10 at a time; each Service's share within 5
 * percentage points of its weight, and a weight of 0 gets nothing. Up to 10 tries, as upstream.
 */
async function expectDistribution(port: number, c: Case, want: Record<string, number>, ca: string): Promise<void> {
  const TOTAL = 500;
  const CONCURRENCY = 10;
  const TOLERANCE = 0.05;
  let problem = '';
  for (let attempt = 0; attempt < 10; attempt++) {
    const seen: Record<string, number> = {};
    let sent = 0;
    const worker = async () => {
      while (sent < TOTAL) {
        sent++;
        const reply = await request(port, c, ca);
        const service = reply.status === 200 ? reply.json<EchoReply>().service : `status ${reply.status}`;
        seen[service] = (seen[service] ?? 0) + 1;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const off = Object.keys({ ...want, ...seen }).filter((s) => {
      const share = (seen[s] ?? 0) / TOTAL;
      const expected = want[s] ?? 0;
      return expected === 0 ? share > 0 : Math.abs(share - expected) > TOLERANCE;
    });
    if (off.length === 0) return;
    problem = `shares ${JSON.stringify(seen)} of ${TOTAL}, expected ${JSON.stringify(want)}`;
  }
  assert.fail(problem);
}

/** Upstream HTTPRouteRequestHeaderModifierBackendWeights: 100 requests, each pod sees one `header` with its own name. */
async function expectHeaderNamesBackend(port: number, c: Case, header: string, ca: string): Promise<void> {
  const seen = new Set<string>();
  for (let i = 0; i < 100; i++) {
    const reply = await request(port, c, ca);
    assert.equal(reply.status, 200, `request ${i}`);
    const echo = reply.json<EchoReply>();
    assert.equal(echo.headers[header.toLowerCase()], echo.service, `request ${i}: ${echo.service} saw ${header}: ${String(echo.headers[header.toLowerCase()])}`);
    seen.add(echo.service);
  }
  assert.ok(seen.size > 1, `every request went to ${[...seen].join()}: the split is not exercised`);
}
