// Access log and metrics over real sockets: requests answered without a route are
// logged and counted too, and a table swap removes the series and policy state of
// the routes it dropped.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { RouteConfig } from '../../src/model/config.ts';
import { accessLogHook } from '../../src/proxy/access-log.ts';
import { createAccessLogger, createLogger } from '../../src/util/log.ts';
import { get } from '../support/http.ts';
import { eventually } from '../support/portico-process.ts';
import { backend, closedPort, route, routing, startBackend, startProxy, type Backend, type Proxy } from './proxy-harness.ts';

type Line = Record<string, unknown>;

/** The real access logger, writing into `lines`. */
function captureAccessLog(lines: Line[]) {
  const destination = {
    write(chunk: string) {
      for (const l of chunk.split('\n')) if (l !== '') lines.push(JSON.parse(l) as Line);
    },
  };
  return accessLogHook(createAccessLogger(createLogger('info', destination)));
}

async function accessLine(lines: Line[], pred: (l: Line) => boolean, what: string): Promise<Line> {
  await eventually(async () => lines.some(pred), 10_000, what);
  return lines.find(pred)!;
}

/** The value of one sample line in Prometheus text, or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith(series + ' ')) return Number(line.slice(series.length + 1));
  }
  return undefined;
}

function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end(text));
    let out = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (out += d));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
}

const UNROUTED = 'namespace="",ingress="",host="",path="",service=""';

/** A route of its own Ingress, so that every metric of it has labels of its own. */
function ingressRoute(ingress: string, host: string, service: string, port: number, extra: Partial<RouteConfig> = {}): RouteConfig {
  return route(host, '/', backend(service, [port]), { id: `default/${ingress}|${host}|Prefix|/`, source: { kind: 'Ingress', namespace: 'default', name: ingress }, ...extra });
}

describe('proxy: requests without a route are logged and counted', () => {
  let web: Backend;
  let silent: Backend;
  let proxy: Proxy;
  const lines: Line[] = [];
  const held: http.ServerResponse[] = [];

  before(async () => {
    web = await startBackend('web');
    // Never answers until the test ends: the client leaves first.
    silent = await startBackend('silent', (_req, res) => held.push(res));
    proxy = await startProxy(
      routing([route('web.test', '/app', backend('web', [web.port])), route('silent.test', '/', backend('silent', [silent.port]))]),
      { accessLog: captureAccessLog(lines) },
    );
  });

  after(async () => {
    for (const res of held) res.destroy();
    await proxy?.close();
    await Promise.all([web?.close(), silent?.close()]);
  });

  test('a 404 gets an access-log line with host and path, and no route or upstream', async () => {
    assert.equal((await get(proxy.port, 'nothing.test', '/x?q=1')).status, 404);
    const line = await accessLine(lines, (l) => l.host === 'nothing.test', '404 logged');
    assert.equal(line.status, 404);
    assert.equal(line.path, '/x');
    assert.equal(line.method, 'GET');
    assert.equal(line.clientIp, '127.0.0.1');
    assert.equal(typeof line.durationMs, 'number');
    assert.match(String(line.durationMs), /^\d+(\.\d{1,3})?$/, 'milliseconds to the microsecond, not 15 decimals');
    assert.equal(line.bytes, 'no route for this host and path\n'.length, 'portico\'s own body is counted');
    assert.match(String(line.error), /no route for host nothing\.test path \/x/, 'the detail the client is not shown');
    for (const absent of ['route', 'upstream', 'upstreamMs', 'requestId']) assert.ok(!(absent in line), `${absent} is absent`);
  });

  test('400s (dot segment, invalid target) get access-log lines too', async () => {
    assert.equal((await get(proxy.port, 'web.test', '/app/../admin')).status, 400);
    const dots = await accessLine(lines, (l) => l.path === '/app/../admin', 'dot-segment 400 logged');
    assert.equal(dots.status, 400);
    assert.equal(dots.host, 'web.test');
    assert.ok(!('route' in dots));

    // llhttp takes an absolute-form target without authority; splitTarget refuses it.
    const raw = await rawRequest(proxy.port, 'GET http:///x HTTP/1.1\r\nHost: Web.Test\r\nConnection: close\r\n\r\n');
    assert.match(raw, /^HTTP\/1\.1 400 [^]*invalid request target/);
    const target = await accessLine(lines, (l) => l.path === 'http:///x', 'invalid-target 400 logged');
    assert.equal(target.status, 400);
    assert.equal(target.host, 'web.test');
  });

  test('they are counted in portico_requests_total with empty route labels', async () => {
    const before = await proxy.registry.metrics();
    const count = (text: string, status: number) => sample(text, `portico_requests_total{${UNROUTED},status="${status}"}`) ?? 0;
    assert.equal((await get(proxy.port, 'nothing.test', '/y')).status, 404);
    assert.equal((await get(proxy.port, 'web.test', '/elsewhere')).status, 404, 'a known host without a matching path');
    assert.equal((await get(proxy.port, 'web.test', '/a/%2e%2e/b')).status, 400);
    await eventually(async () => count(await proxy.registry.metrics(), 404) === count(before, 404) + 2, 10_000, '404s counted');
    const after = await proxy.registry.metrics();
    assert.equal(count(after, 400), count(before, 400) + 1);
    assert.doesNotMatch(after, /host="nothing\.test"/, 'the Host header never becomes a label');
  });

  test('a routed line has route, upstream, upstreamMs and requestId', async () => {
    assert.equal((await get(proxy.port, 'web.test', '/app/ok')).status, 200);
    const line = await accessLine(lines, (l) => l.path === '/app/ok', '200 logged');
    assert.equal(line.status, 200);
    assert.equal(line.route, 'default/test|web.test|Prefix|/app');
    assert.equal(line.upstream, `127.0.0.1:${web.port}`);
    assert.equal(typeof line.upstreamMs, 'number');
    assert.equal(typeof line.requestId, 'string');
  });

  test('a 499 without an answer from the pod has no upstreamMs (not -1)', async () => {
    const seen = silent.seen.length;
    const req = http.request({ host: '127.0.0.1', port: proxy.port, path: '/left', headers: { host: 'silent.test' }, agent: false });
    req.on('error', () => {});
    req.end();
    await eventually(async () => silent.seen.length > seen, 10_000, 'the pod got the request');
    req.destroy();
    const line = await accessLine(lines, (l) => l.path === '/left', '499 logged');
    assert.equal(line.status, 499);
    assert.ok(!('upstreamMs' in line), `upstreamMs absent, got ${String(line.upstreamMs)}`);
    assert.ok(!('upstream' in line));
    assert.equal(line.route, 'default/test|silent.test|Prefix|/');
  });

  test('a client that leaves before the answer cancels the request to the pod', async () => {
    const before = held.length;
    const req = http.request({ host: '127.0.0.1', port: proxy.port, path: '/gone', headers: { host: 'silent.test' }, agent: false });
    req.on('error', () => {});
    req.end();
    await eventually(async () => held.length > before, 10_000, 'the pod got the request');
    const atPod = held[held.length - 1]!;
    let podSawClose = false;
    atPod.on('close', () => (podSawClose = true));
    req.destroy();
    await eventually(async () => podSawClose, 5_000, 'the connection to the pod closed');
    assert.equal(atPod.writableEnded, false, 'the pod never answered: portico gave up on the request, not the pod');
    const line = await accessLine(lines, (l) => l.path === '/gone', '499 logged');
    assert.equal(line.status, 499);
  });
});

describe('proxy: a table swap removes what the dropped routes left behind', () => {
  let web: Backend;
  let slow: Backend;
  let deadPort: number;
  let proxy: Proxy;
  const release: (() => void)[] = [];

  before(async () => {
    web = await startBackend('web');
    slow = await startBackend('slow', (_req, res) => release.push(() => res.end('late')));
    deadPort = await closedPort();
    proxy = await startProxy(routing([]));
  });

  after(async () => {
    for (const r of release) r();
    await proxy?.close();
    await Promise.all([web?.close(), slow?.close()]);
  });

  test('requests, latency and error series of a removed route are gone from /metrics; the others stay', async () => {
    const kept = ingressRoute('kept', 'kept.test', 'kept-svc', web.port);
    proxy.install(routing([
      kept,
      ingressRoute('churn', 'churn1.test', 'churn-svc', web.port),
      route('churn1.test', '/dead', backend('churn-dead', [deadPort]), { source: { kind: 'Ingress', namespace: 'default', name: 'churn' } }),
    ]));
    assert.equal((await get(proxy.port, 'kept.test', '/')).status, 200);
    assert.equal((await get(proxy.port, 'churn1.test', '/')).status, 200);
    assert.equal((await get(proxy.port, 'churn1.test', '/dead')).status, 502);
    assert.equal((await get(proxy.port, 'gone.test', '/')).status, 404);
    const full = await proxy.registry.metrics();
    assert.equal(sample(full, 'portico_requests_total{namespace="default",ingress="churn",host="churn1.test",path="/",service="churn-svc",status="200"}'), 1);
    assert.match(full, /portico_upstream_latency_seconds_count\{namespace="default",ingress="churn",service="churn-svc"\} 1/);
    assert.match(full, /portico_upstream_errors_total\{namespace="default",ingress="churn",service="churn-dead",kind="connect"\} [1-9]/);

    for (let i = 2; i <= 20; i++) {
      proxy.install(routing([kept, ingressRoute('churn', `churn${i}.test`, 'churn-svc', web.port)]));
      assert.equal((await get(proxy.port, `churn${i}.test`, '/')).status, 200);
    }
    proxy.install(routing([kept]));

    const text = await proxy.registry.metrics();
    assert.doesNotMatch(text, /ingress="churn"/, 'no series of the removed Ingress is left');
    assert.doesNotMatch(text, /host="churn\d+\.test"/);
    assert.equal(sample(text, 'portico_requests_total{namespace="default",ingress="kept",host="kept.test",path="/",service="kept-svc",status="200"}'), 1, 'a route still served keeps its count');
    assert.match(text, /portico_upstream_latency_seconds_count\{namespace="default",ingress="kept",service="kept-svc"\} 1/);
    assert.equal(sample(text, `portico_requests_total{${UNROUTED},status="404"}`), 1, 'the unrouted series is never removed');
  });

  test('a route that comes back starts over from zero', async () => {
    const r = () => ingressRoute('back', 'back.test', 'back-svc', web.port);
    proxy.install(routing([r()]));
    await get(proxy.port, 'back.test', '/');
    await get(proxy.port, 'back.test', '/');
    const series = 'portico_requests_total{namespace="default",ingress="back",host="back.test",path="/",service="back-svc",status="200"}';
    assert.equal(sample(await proxy.registry.metrics(), series), 2);
    proxy.install(routing([]));
    assert.equal(sample(await proxy.registry.metrics(), series), undefined);
    proxy.install(routing([r()]));
    await get(proxy.port, 'back.test', '/');
    assert.equal(sample(await proxy.registry.metrics(), series), 1);
  });

  test('a request in flight on a removed route completes and does not bring its series back', async () => {
    proxy.install(routing([ingressRoute('inflight', 'inflight.test', 'slow-svc', slow.port)]));
    const seen = slow.seen.length;
    const pending = get(proxy.port, 'inflight.test', '/');
    await eventually(async () => slow.seen.length > seen, 10_000, 'the pod got the request');
    proxy.install(routing([]));
    assert.equal(await proxy.registry.metrics().then((t) => /ingress="inflight"/.test(t)), false);
    release.shift()!();
    const reply = await pending;
    assert.equal(reply.status, 200);
    assert.equal(reply.text, 'late');
    // The old route's count lands in objects no longer exported: dropped, not resurrected.
    await new Promise((r) => setTimeout(r, 50));
    proxy.install(routing([]));
    assert.doesNotMatch(await proxy.registry.metrics(), /ingress="inflight"/);
  });

  test('rate-limit state of an Ingress that left the table is pruned; that of a live one is kept', async () => {
    const limited = (ingress: string, host: string) =>
      ingressRoute(ingress, host, 'web', web.port, { policies: [{ name: 'rate-limit', config: { rate: 1, burst: 1 } }] });
    proxy.install(routing([limited('limited', 'limited.test'), limited('stays', 'stays.test')]));
    for (const host of ['limited.test', 'stays.test']) {
      assert.equal((await get(proxy.port, host, '/')).status, 200);
      assert.equal((await get(proxy.port, host, '/')).status, 429, `${host} is limited`);
    }
    assert.ok(proxy.shared.has('rate-limit|default/limited'));

    // "stays" is rebuilt from a new RouteConfig: its buckets must survive, "limited"'s must not.
    proxy.install(routing([limited('stays', 'stays.test')]));
    assert.equal(proxy.shared.has('rate-limit|default/limited'), false, 'state of the removed Ingress is dropped');
    assert.ok(proxy.shared.has('rate-limit|default/stays'));
    assert.equal((await get(proxy.port, 'stays.test', '/')).status, 429, 'state of a live Ingress survives the swap');

    proxy.install(routing([limited('limited', 'limited.test'), limited('stays', 'stays.test')]));
    assert.equal((await get(proxy.port, 'limited.test', '/')).status, 200, 'an Ingress that comes back starts with full buckets');
  });
});

describe('proxy: a route is compiled at its first request', () => {
  let web: Backend;
  let moved: Backend;
  let deadPort: number;
  let proxy: Proxy;

  before(async () => {
    web = await startBackend('web');
    moved = await startBackend('moved');
    deadPort = await closedPort();
    proxy = await startProxy(routing([]));
  });

  after(async () => {
    await proxy?.close();
    await Promise.all([web?.close(), moved?.close()]);
  });

  test('a route without requests is listed in /metrics with zero latency, as one with requests; removing both leaves no series', async () => {
    proxy.install(routing([ingressRoute('quiet', 'quiet.test', 'quiet-svc', web.port), ingressRoute('used', 'used.test', 'used-svc', web.port)]));
    let text = await proxy.registry.metrics();
    assert.match(text, /^portico_upstream_latency_seconds_count\{namespace="default",ingress="quiet",service="quiet-svc"\} 0$/m);
    assert.match(text, /^portico_upstream_latency_seconds_count\{namespace="default",ingress="used",service="used-svc"\} 0$/m);

    const reply = await get(proxy.port, 'used.test', '/');
    assert.equal(reply.status, 200);
    assert.equal(reply.json().service, 'web');
    text = await proxy.registry.metrics();
    assert.match(text, /^portico_upstream_latency_seconds_count\{namespace="default",ingress="used",service="used-svc"\} 1$/m);
    assert.equal(sample(text, 'portico_requests_total{namespace="default",ingress="used",host="used.test",path="/",service="used-svc",status="200"}'), 1);
    assert.match(text, /^portico_upstream_latency_seconds_count\{namespace="default",ingress="quiet",service="quiet-svc"\} 0$/m, 'the quiet route is still listed');

    proxy.install(routing([]));
    assert.doesNotMatch(await proxy.registry.metrics(), /ingress="(quiet|used)"/);
  });

  test('a rate-limited Ingress that served nothing holds no state; once it did, a change of it keeps its buckets', async () => {
    const limited = () => ingressRoute('fresh', 'fresh.test', 'web', web.port, { policies: [{ name: 'rate-limit', config: { rate: 1, burst: 1 } }] });
    proxy.install(routing([limited()]));
    assert.equal(proxy.shared.has('rate-limit|default/fresh'), false, 'not compiled with the table: nothing to keep yet');
    proxy.install(routing([limited()]));
    assert.equal(proxy.shared.has('rate-limit|default/fresh'), false, 'nor when its Ingress changes before any request');
    assert.equal((await get(proxy.port, 'fresh.test', '/')).status, 200);
    assert.equal((await get(proxy.port, 'fresh.test', '/')).status, 429);
    proxy.install(routing([limited()]));
    assert.ok(proxy.shared.has('rate-limit|default/fresh'));
    assert.equal((await get(proxy.port, 'fresh.test', '/')).status, 429, 'the new route took the buckets over');
    proxy.install(routing([]));
    assert.equal(proxy.shared.has('rate-limit|default/fresh'), false);
  });

  test("a route's first request after its pods moved (no new translation) goes to the new pods", async () => {
    const r = ingressRoute('mover', 'mover.test', 'mover-svc', deadPort);
    proxy.install(routing([r]));
    // The EndpointSlice moved to another pod; the route, not yet compiled, still carries the old address.
    proxy.pools.registry.apply([[r.backend.key, [{ host: '127.0.0.1', port: moved.port }]]]);
    const reply = await get(proxy.port, 'mover.test', '/');
    assert.equal(reply.status, 200);
    assert.equal(reply.json().service, 'moved');
    proxy.install(routing([]));
  });
});
