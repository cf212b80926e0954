// Overload: past --max-requests-per-endpoint requests in flight to a pod, portico picks
// another pod, and when every pod is that busy it sheds with 503 + Retry-After instead
// of queueing without bound.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type http from 'node:http';
import { configureEndpointLimit } from '../../src/proxy/balancer.ts';
import { backend, closedPort, route, routing, startBackend, startProxy, type Backend, type Proxy } from './proxy-harness.ts';
import { get } from '../support/http.ts';

describe('per-endpoint limit', () => {
  const held: http.ServerResponse[] = [];
  let slow: Backend;
  let spare: Backend;
  let proxy: Proxy;

  before(async () => {
    configureEndpointLimit(2);
    // Holds every request until released.
    slow = await startBackend('slow', (_req, res) => held.push(res));
    spare = await startBackend('spare');
    proxy = await startProxy(routing([route('one.test', '/', backend('slow', [slow.port])), route('two.test', '/', backend('both', [slow.port, spare.port]))]));
  });

  after(async () => {
    configureEndpointLimit(1000);
    for (const res of held) res.end();
    await proxy?.close();
    await slow?.close();
    await spare?.close();
  });

  const release = () => {
    for (const res of held.splice(0)) res.end('done');
  };

  test('a pod at the limit is skipped for a free one; when all are at it, 503 with Retry-After', async () => {
    const first = [get(proxy.port, 'one.test', '/'), get(proxy.port, 'one.test', '/')];
    while (held.length < 2) await new Promise((r) => setTimeout(r, 5));
    // The slow pod has 2 in flight: a third request for it alone is shed.
    const shed = await get(proxy.port, 'one.test', '/');
    assert.equal(shed.status, 503);
    assert.equal(shed.headers['retry-after'], '1');
    // A route that also has a free pod sends it there.
    const other = await get(proxy.port, 'two.test', '/');
    assert.equal(other.status, 200);
    assert.equal(other.headers['x-served-by'], 'spare');
    release();
    for (const r of await Promise.all(first)) assert.equal(r.status, 200);
    // Below the limit again: served.
    const after = get(proxy.port, 'one.test', '/');
    while (held.length < 1) await new Promise((r) => setTimeout(r, 5));
    release();
    assert.equal((await after).status, 200);
    const metrics = await proxy.registry.metrics();
    assert.match(metrics, /portico_upstream_errors_total\{[^}]*kind="overloaded"[^}]*\} 1/);
  });
});

describe('passive ejection', () => {
  let live: Backend;
  let proxy: Proxy;
  let dead: number;

  before(async () => {
    live = await startBackend('live');
    dead = await closedPort();
    proxy = await startProxy(routing([route('pair.test', '/', backend('pair', [dead, live.port]))]));
  });

  after(async () => {
    await proxy?.close();
    await live?.close();
  });

  const connectErrors = async () => Number(/portico_upstream_errors_total\{[^}]*kind="connect"[^}]*\} (\d+)/.exec(await proxy.registry.metrics())?.[1] ?? 0);

  test('a pod that refuses connections is retried around, then left out after three failures in a row', async () => {
    // Clients never see the dead pod: a refused connect is retried on the other one.
    for (let i = 0; i < 20; i++) assert.equal((await get(proxy.port, 'pair.test', '/')).status, 200);
    const metrics = await proxy.registry.metrics();
    assert.match(metrics, /kind="ejected"[^}]*\} 1/);
    // Ejected: more requests add no connect errors.
    const before = await connectErrors();
    assert.equal(before, 3);
    for (let i = 0; i < 20; i++) assert.equal((await get(proxy.port, 'pair.test', '/')).status, 200);
    assert.equal(await connectErrors(), before);
  });
});
