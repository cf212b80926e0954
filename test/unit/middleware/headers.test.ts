import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { headersPolicy } from '../../../src/middleware/headers.ts';
import { withHeaders } from '../../../src/middleware/header-list.ts';
import { compose, parseWith, request, routeConfig, serve, type TestServer } from './support.ts';

const REQ = 'portico.dev/request-headers';
const RES = 'portico.dev/response-headers';

describe('headers: parse', () => {
  test('"Name: value" lines for requests and responses', () => {
    const r = parseWith(headersPolicy, {
      [REQ]: 'X-Team: payments\nX-Empty:\n\n# a comment\nHost: internal.svc',
      [RES]: 'Strict-Transport-Security: max-age=31536000; includeSubDomains\r\nX-Frame-Options:DENY',
    });
    assert.deepEqual(r.config, {
      request: [['X-Team', 'payments'], ['X-Empty', ''], ['Host', 'internal.svc']],
      response: [['Strict-Transport-Security', 'max-age=31536000; includeSubDomains'], ['X-Frame-Options', 'DENY']],
    });
    assert.deepEqual(r.lines, []);
  });

  test('a name given twice: the last line wins', () => {
    assert.deepEqual(parseWith(headersPolicy, { [RES]: 'X-A: 1\nx-a: 2' }).config, { response: [['x-a', '2']] });
  });

  test('invalid lines are skipped with a warning; the others apply', () => {
    const r = parseWith(headersPolicy, {
      [REQ]: 'no colon here\nBad Name: x\nContent-Length: 5\nX-Forwarded-For: 1.2.3.4\nX-Ok: yes\nX-Ctl: a\u0001b',
      [RES]: 'Transfer-Encoding: chunked\nConnection: close\nX-Fine: 1',
    });
    assert.deepEqual(r.config, { request: [['X-Ok', 'yes']], response: [['X-Fine', '1']] });
    assert.equal(r.problems.length, 7);
    assert.ok(r.problems.every((p) => p.severity === 'warning'));
    assert.ok(r.lines.some((l) => /request-headers: invalid value "Content-Length: 5": expected a header other than Content-Length/.test(l)));
  });

  test('values are Latin-1: a character beyond U+00FF is refused at parse time, not per request', () => {
    const r = parseWith(headersPolicy, { [REQ]: 'X-City: Zürich\nX-Star: \u2605\nX-Cut: a\u010ab' });
    assert.deepEqual(r.config, { request: [['X-City', 'Zürich']] });
    assert.equal(r.problems.length, 2);
    assert.ok(r.lines.some((l) => /"X-Star: \u2605": expected a header value without control characters or characters beyond Latin-1/.test(l)));
  });

  test('nothing valid, or absent: no policy', () => {
    assert.equal(parseWith(headersPolicy, { [REQ]: 'garbage' }).config, undefined);
    assert.equal(parseWith(headersPolicy, {}).config, undefined);
  });
});

describe('withHeaders', () => {
  test('adds, and replaces same-name entries without touching the inputs', () => {
    const current: [string, string][] = [['Vary', 'Origin'], ['X-A', '1']];
    const extra = [['x-a', '2'], ['X-B', '3']] as const;
    assert.deepEqual(withHeaders(current, extra), [['Vary', 'Origin'], ['x-a', '2'], ['X-B', '3']]);
    assert.deepEqual(current, [['Vary', 'Origin'], ['X-A', '1']]);
    assert.equal(withHeaders(undefined, extra), extra);
  });
});

describe('headers at runtime', () => {
  let server: TestServer;
  before(async () => {
    const policies = [
      { name: 'cors', config: { origins: ['*'], methods: ['GET'], headers: ['X-A'], credentials: false, maxAgeSeconds: 5 } },
      { name: 'headers', config: parseWith(headersPolicy, { [REQ]: 'X-Team: payments', [RES]: 'X-Frame-Options: DENY\nVary: Cookie' }).config },
    ];
    const route = routeConfig({ policies });
    server = await serve(compose(policies, route), route);
  });
  after(async () => {
    await server?.close();
  });

  test('request headers reach the forwarder, response headers reach the client', async () => {
    const r = await request(server, '/', { headers: { origin: 'https://a.com' } });
    assert.deepEqual(r.json().requestHeaders, [['X-Team', 'payments']]);
    assert.equal(r.headers['x-frame-options'], 'DENY');
    assert.equal(r.headers.vary, 'Cookie', 'replaces the pod header of the same name');
    assert.equal(r.headers['access-control-allow-origin'], '*', 'headers from an earlier policy are kept');
  });

  test('every request starts clean (no header piles up across requests)', async () => {
    await request(server, '/');
    const r = await request(server, '/');
    assert.deepEqual(r.json().requestHeaders, [['X-Team', 'payments']]);
    assert.equal(r.headers['access-control-allow-origin'], undefined);
  });
});
