import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { maxBodySizePolicy } from '../../../src/middleware/max-body-size.ts';
import { compose, parseWith, request, routeConfig, serve, type TestServer } from './support.ts';

describe('max-body-size: parse', () => {
  test('sizes with binary multiples', () => {
    for (const [text, bytes] of [['512', 512], ['512k', 524_288], ['10m', 10_485_760], ['1G', 1_073_741_824]] as const) {
      assert.deepEqual(parseWith(maxBodySizePolicy, { 'portico.dev/max-body-size': text }).config, { bytes }, text);
    }
  });

  test('0 means no limit (overriding the global --max-body-size)', () => {
    const r = parseWith(maxBodySizePolicy, { 'portico.dev/max-body-size': '0' });
    assert.deepEqual(r.config, { bytes: 0 });
    assert.deepEqual(r.lines, []);
  });

  test('an invalid size is reported and the global limit applies', () => {
    for (const text of ['10mb', '1.5m', '-1', 'big', '']) {
      const r = parseWith(maxBodySizePolicy, { 'portico.dev/max-body-size': text });
      assert.equal(r.config, undefined, text);
      assert.match(r.lines[0]!, /^error InvalidAnnotation: annotation portico\.dev\/max-body-size: invalid value .*expected a size such as 512k/);
    }
  });
});

describe('max-body-size at runtime', () => {
  let limited: TestServer;
  let unlimited: TestServer;
  before(async () => {
    const policies = [{ name: 'max-body-size', config: { bytes: 1024 } }];
    const route = routeConfig({ policies });
    limited = await serve(compose(policies, route), route);
    unlimited = await serve(compose([], routeConfig()), routeConfig());
  });
  after(async () => {
    await Promise.all([limited, unlimited].map((s) => s?.close()));
  });

  test('the limit reaches the forwarder (which answers 413 from it)', async () => {
    assert.equal((await request(limited, '/')).json().maxBodyBytes, 1024);
    assert.equal((await request(unlimited, '/')).json().maxBodyBytes, -1);
  });
});
