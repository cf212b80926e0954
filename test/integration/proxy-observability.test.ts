// Access log and metrics over real sockets: requests answered without a route are
// logged and counted too.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { accessLogHook } from '../../src/proxy/access-log.ts';
import { createAccessLogger, createLogger } from '../../src/util/log.ts';
import { get } from '../support/http.ts';
import { eventually } from '../support/portico-process.ts';
import { backend, route, routing, startBackend, startProxy, type Backend, type Proxy } from './proxy-harness.ts';

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
  await eventually(async () => lines.some(pred), 2000, what);
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
    await eventually(async () => count(await proxy.registry.metrics(), 404) === count(before, 404) + 2, 2000, '404s counted');
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
    await eventually(async () => silent.seen.length > seen, 2000, 'the pod got the request');
    req.destroy();
    const line = await accessLine(lines, (l) => l.path === '/left', '499 logged');
    assert.equal(line.status, 499);
    assert.ok(!('upstreamMs' in line), `upstreamMs absent, got ${String(line.upstreamMs)}`);
    assert.ok(!('upstream' in line));
    assert.equal(line.route, 'default/test|silent.test|Prefix|/');
  });
});
