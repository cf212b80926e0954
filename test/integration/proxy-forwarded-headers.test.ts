// What a pod can trust: forwarding headers from a trusted proxy in front (a load
// balancer in --trusted-proxies) are passed on and X-Forwarded-For is appended to;
// the same headers from anyone else never reach the pod.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { configureClientIp } from '../../src/proxy/client-ip.ts';
import { send } from '../support/http.ts';
import { backend, route, routing, startBackend, startProxy, type Backend, type Proxy } from './proxy-harness.ts';

const FROM_BALANCER = {
  'x-forwarded-for': '198.51.100.4, 10.0.0.2',
  'x-forwarded-proto': 'https',
  'x-forwarded-host': 'shop.example',
  'x-forwarded-port': '443',
  forwarded: 'for=198.51.100.4;proto=https',
  'x-real-ip': '203.0.113.99',
};

describe('forwarding headers and --trusted-proxies', () => {
  let web: Backend;
  let proxy: Proxy;
  before(async () => {
    web = await startBackend('web');
    proxy = await startProxy(routing([route('web.test', '/', backend('web', [web.port]))]));
  });
  after(async () => {
    configureClientIp({ trustedProxies: '' });
    await proxy?.close();
    await web?.close();
  });

  test('from a trusted proxy: its headers are kept, X-Forwarded-For gets the hop, X-Real-IP is the resolved client', async () => {
    configureClientIp({ trustedProxies: '127.0.0.1/32, 10.0.0.0/8' });
    const h = (await send(proxy.port, { host: 'web.test', headers: FROM_BALANCER })).json().headers as Record<string, string>;
    assert.equal(h['x-forwarded-for'], '198.51.100.4, 10.0.0.2, 127.0.0.1');
    assert.equal(h['x-real-ip'], '198.51.100.4', 'the first untrusted hop from the right');
    assert.equal(h['x-forwarded-proto'], 'https');
    assert.equal(h['x-forwarded-host'], 'shop.example');
    assert.equal(h['x-forwarded-port'], '443');
    assert.equal(h.forwarded, 'for=198.51.100.4;proto=https');
  });

  test('from anyone else: none of them reach the pod', async () => {
    configureClientIp({ trustedProxies: '' });
    const h = (await send(proxy.port, { host: 'web.test', headers: FROM_BALANCER })).json().headers as Record<string, string>;
    assert.equal(h['x-forwarded-for'], '127.0.0.1');
    assert.equal(h['x-real-ip'], '127.0.0.1');
    assert.equal(h['x-forwarded-proto'], 'http');
    assert.equal(h['x-forwarded-host'], 'web.test');
    assert.equal(h['x-forwarded-port'], String(proxy.port));
    assert.equal(h.forwarded, undefined);
  });
});
