import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { configureRedirectPort, tlsRedirectPolicy } from '../../../src/middleware/tls-redirect.ts';
import type { PolicyConfig } from '../../../src/model/config.ts';
import { compose, parseWith, request, routeConfig, serve, type TestServer } from './support.ts';

describe('tls-redirect: parse', () => {
  test('booleans in every accepted spelling', () => {
    for (const [text, force] of [['true', true], ['YES', true], ['1', true], ['false', false], ['No', false], ['0', false]] as const) {
      assert.deepEqual(parseWith(tlsRedirectPolicy, { 'portico.dev/tls-redirect': text }).config, { force }, text);
    }
  });

  test('absent: no config (the default applies when the chain is built)', () => {
    assert.equal(parseWith(tlsRedirectPolicy, {}).config, undefined);
    assert.deepEqual(tlsRedirectPolicy.defaultConfig, {});
  });

  test('an invalid value is reported and ignored', () => {
    const r = parseWith(tlsRedirectPolicy, { 'portico.dev/tls-redirect': 'sometimes' });
    assert.equal(r.config, undefined);
    assert.match(r.lines[0]!, /^error InvalidAnnotation: annotation portico\.dev\/tls-redirect: invalid value "sometimes": expected true or false; ignored/);
  });
});

describe('tls-redirect at runtime', () => {
  const servers: TestServer[] = [];
  const start = async (policies: PolicyConfig[], tls: boolean, secure = false) => {
    const route = routeConfig({ policies, tls, path: '/app' });
    const s = await serve(compose(policies, route), route, { secure });
    servers.push(s);
    return s;
  };
  let tlsHost: TestServer;
  let plainHost: TestServer;
  let forced: TestServer;
  let disabled: TestServer;
  let overTls: TestServer;

  before(async () => {
    tlsHost = await start([], true);
    plainHost = await start([], false);
    forced = await start([{ name: 'tls-redirect', config: { force: true } }], false);
    disabled = await start([{ name: 'tls-redirect', config: { force: false } }], true);
    overTls = await start([], true, true);
  });
  after(async () => {
    configureRedirectPort(443);
    await Promise.all(servers.map((s) => s.close()));
  });

  test('on by default for a host with TLS: 308 to https, same host, path and query', async () => {
    configureRedirectPort(443);
    const r = await request(tlsHost, '/app/x?y=1&z', { headers: { host: 'Shop.Example.com:8080' } });
    assert.equal(r.status, 308);
    assert.equal(r.headers.location, 'https://shop.example.com/app/x?y=1&z');
    assert.equal(r.body, '');
  });

  test('keeps the method: a POST is redirected with 308, not 301', async () => {
    const r = await request(tlsHost, '/app', { method: 'POST', body: 'data', headers: { host: 'shop.example.com' } });
    assert.equal(r.status, 308);
  });

  test('a non-default HTTPS port goes into the Location', async () => {
    configureRedirectPort(8443);
    try {
      const r = await request(tlsHost, '/app', { headers: { host: 'shop.example.com' } });
      assert.equal(r.headers.location, 'https://shop.example.com:8443/app');
    } finally {
      configureRedirectPort(443);
    }
  });

  test('off by default for a host without TLS', async () => {
    assert.equal((await request(plainHost, '/app', { headers: { host: 'shop.example.com' } })).status, 200);
  });

  test('"true" redirects hosts without TLS too; "false" turns the default off', async () => {
    assert.equal((await request(forced, '/app', { headers: { host: 'shop.example.com' } })).status, 308);
    assert.equal((await request(disabled, '/app', { headers: { host: 'shop.example.com' } })).status, 200);
  });

  test('requests that came over TLS pass', async () => {
    assert.equal((await request(overTls, '/app', { headers: { host: 'shop.example.com' } })).status, 200);
  });
});
