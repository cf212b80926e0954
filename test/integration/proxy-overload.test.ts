// Overload: past --max-requests-per-endpoint requests in flight to a pod, portico picks
// another pod, and when every pod is that busy it sheds with 503 + Retry-After instead
// of queueing without bound.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type http from 'node:http';
import { configureEndpointLimit } from '../../src/proxy/balancer.ts';
import { backend, route, routing, startBackend, startProxy, type Backend, type Proxy } from './proxy-harness.ts';
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
