import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { timeoutsPolicy } from '../../../src/middleware/timeouts.ts';
import { compose, DEFAULT_TIMEOUTS, parseWith, request, routeConfig, serve, type TestServer } from './support.ts';

describe('timeouts: parse', () => {
  test('durations in ms', () => {
    const r = parseWith(timeoutsPolicy, {
      'portico.dev/connect-timeout': '500ms',
      'portico.dev/response-timeout': '2m',
      'portico.dev/idle-timeout': '1h30m',
    });
    assert.deepEqual(r.config, { connect: 500, responseHeaders: 120_000, idle: 5_400_000 });
    assert.deepEqual(r.lines, []);
  });

  test('only some set', () => {
    assert.deepEqual(parseWith(timeoutsPolicy, { 'portico.dev/response-timeout': '1.5s' }).config, { responseHeaders: 1500 });
    assert.equal(parseWith(timeoutsPolicy, {}).config, undefined);
  });

  test('an invalid value is reported and that timeout keeps its default', () => {
    for (const value of ['5x', 'soon', '0', '-1s', '25h', '90000']) {
      const r = parseWith(timeoutsPolicy, { 'portico.dev/connect-timeout': value, 'portico.dev/idle-timeout': '9s' });
      assert.deepEqual(r.config, { idle: 9000 }, value);
      assert.equal(r.problems.length, 1);
      assert.equal(r.problems[0]!.severity, 'error');
      assert.match(r.problems[0]!.message, /connect-timeout: invalid value .*the default timeout applies/);
    }
  });
});

describe('timeouts at runtime', () => {
  let server: TestServer;
  before(async () => {
    const policies = [{ name: 'timeouts', config: { connect: 250, idle: 3000 } }];
    const route = routeConfig({ policies });
    server = await serve(compose(policies, route), route);
  });
  after(async () => {
    await server?.close();
  });

  test('the set timeouts replace the defaults, the others stay', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await request(server, '/');
      assert.deepEqual(r.json().timeouts, { connect: 250, responseHeaders: DEFAULT_TIMEOUTS.responseHeaders, idle: 3000 });
    }
    assert.equal(DEFAULT_TIMEOUTS.connect, 5000, 'the shared defaults are not edited');
  });
});
