import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { corsPolicy, DEFAULT_HEADERS, DEFAULT_MAX_AGE_SECONDS, DEFAULT_METHODS, normalizeOrigin } from '../../../src/middleware/cors.ts';
import type { CorsConfig } from '../../../src/middleware/cors.ts';
import { compose, parseWith, request, routeConfig, serve, type TestServer } from './support.ts';

const ORIGINS = 'portico.dev/cors-allow-origins';

describe('cors: parse', () => {
  test('origins normalized; defaults for the rest', () => {
    const r = parseWith(corsPolicy, { [ORIGINS]: 'https://App.Example.com, http://localhost:3000 https://*.example.org https://x.com:443/' });
    assert.deepEqual(r.config, {
      origins: ['https://app.example.com', 'http://localhost:3000', 'https://*.example.org', 'https://x.com'],
      methods: DEFAULT_METHODS,
      headers: DEFAULT_HEADERS,
      credentials: false,
      maxAgeSeconds: DEFAULT_MAX_AGE_SECONDS,
    });
    assert.deepEqual(r.lines, []);
  });

  test('every annotation', () => {
    const r = parseWith(corsPolicy, {
      [ORIGINS]: '*',
      'portico.dev/cors-allow-methods': 'get, post',
      'portico.dev/cors-allow-headers': 'X-Api-Key, Content-Type',
      'portico.dev/cors-allow-credentials': 'false',
      'portico.dev/cors-max-age': '10m',
    });
    assert.deepEqual(r.config, { origins: ['*'], methods: ['GET', 'POST'], headers: ['X-Api-Key', 'Content-Type'], credentials: false, maxAgeSeconds: 600 });
  });

  test('origins that are not origins are skipped: one warning naming them all', () => {
    const r = parseWith(corsPolicy, { [ORIGINS]: 'https://ok.com, ftp://x.com, https://a.com/path, notanorigin, https://a.com?q' });
    assert.deepEqual(r.config?.origins, ['https://ok.com']);
    assert.deepEqual(r.lines, [
      'warning InvalidAnnotation: annotation portico.dev/cors-allow-origins: invalid entries "ftp://x.com", "https://a.com/path", "notanorigin", "https://a.com?q": ' +
        'expected an origin such as https://app.example.com, https://*.example.com or *; skipped; the other entries apply',
    ]);
  });

  test('no valid origin: CORS off, one error line', () => {
    const r = parseWith(corsPolicy, { [ORIGINS]: 'nope' });
    assert.equal(r.config, undefined);
    assert.deepEqual(r.lines, [
      'error InvalidAnnotation: annotation portico.dev/cors-allow-origins: invalid entry "nope": expected an origin such as https://app.example.com, https://*.example.com or *; ' +
        'no valid origin is left: CORS is off (no CORS headers are sent)',
    ]);
    assert.deepEqual(parseWith(corsPolicy, { [ORIGINS]: ' ' }).lines, ['error InvalidAnnotation: annotation portico.dev/cors-allow-origins: empty list; CORS is off (no CORS headers are sent)']);
  });

  test('no valid method or header: one warning each, the defaults apply', () => {
    const r = parseWith(corsPolicy, { [ORIGINS]: 'https://a.com', 'portico.dev/cors-allow-methods': 'B@D', 'portico.dev/cors-allow-headers': 'X:' });
    assert.deepEqual(r.config?.methods, DEFAULT_METHODS);
    assert.deepEqual(r.config?.headers, DEFAULT_HEADERS);
    assert.equal(r.lines.length, 2);
    assert.match(r.lines[0]!, /^warning .*cors-allow-methods: invalid entry "B@D": .*; the default methods apply \(GET, PUT/);
    assert.match(r.lines[1]!, /^warning .*cors-allow-headers: invalid entry "X:": .*; the default headers apply \(DNT,/);
  });

  test('invalid methods, headers, credentials, max-age: warnings, defaults or the valid entries', () => {
    const r = parseWith(corsPolicy, {
      [ORIGINS]: 'https://a.com',
      'portico.dev/cors-allow-methods': 'GET, B@D',
      'portico.dev/cors-allow-headers': 'Bad Header:, X-Ok',
      'portico.dev/cors-allow-credentials': 'maybe',
      'portico.dev/cors-max-age': 'soon',
    });
    assert.deepEqual(r.config, { origins: ['https://a.com'], methods: ['GET'], headers: ['Bad', 'X-Ok'], credentials: false, maxAgeSeconds: DEFAULT_MAX_AGE_SECONDS });
    assert.ok(r.lines.some((l) => /cors-allow-methods: invalid entry "B@D": .*skipped; the other entries apply/.test(l)));
    assert.ok(r.lines.some((l) => /cors-allow-headers: invalid entry "Header:"/.test(l)));
    assert.ok(r.lines.some((l) => /cors-allow-credentials: invalid value "maybe"/.test(l)));
    assert.ok(r.lines.some((l) => /cors-max-age: invalid value "soon": expected a duration/.test(l)));
  });

  test('"*" with credentials is allowed but warned about', () => {
    const r = parseWith(corsPolicy, { [ORIGINS]: '*', 'portico.dev/cors-allow-credentials': 'true' });
    assert.equal(r.config?.credentials, true);
    assert.ok(r.lines.some((l) => /^warning InsecureAnnotation: .*any web site can make credentialed requests/.test(l)));
  });

  test('other cors annotations without origins have no effect, and say so', () => {
    const r = parseWith(corsPolicy, { 'portico.dev/cors-allow-methods': 'GET' });
    assert.equal(r.config, undefined);
    assert.match(r.lines[0]!, /cors-allow-methods: has no effect without portico\.dev\/cors-allow-origins/);
  });

  test('normalizeOrigin', () => {
    assert.equal(normalizeOrigin('HTTPS://EXAMPLE.com:8443'), 'https://example.com:8443');
    assert.equal(normalizeOrigin('http://[::1]:8080'), 'http://[::1]:8080');
    assert.equal(normalizeOrigin('https://user@example.com'), undefined);
    assert.equal(normalizeOrigin('example.com'), undefined);
  });
});

describe('cors at runtime', () => {
  const servers: TestServer[] = [];
  const start = async (config: CorsConfig) => {
    const policies = [{ name: 'cors', config }];
    const route = routeConfig({ policies });
    const s = await serve(compose(policies, route), route);
    servers.push(s);
    return s;
  };
  const base: CorsConfig = { origins: [], methods: ['GET', 'POST'], headers: ['X-Api-Key'], credentials: false, maxAgeSeconds: 600 };
  let listed: TestServer;
  let star: TestServer;
  let starCredentials: TestServer;
  let wildcard: TestServer;

  before(async () => {
    listed = await start({ ...base, origins: ['https://app.example.com'], credentials: true });
    star = await start({ ...base, origins: ['*'] });
    starCredentials = await start({ ...base, origins: ['*'], credentials: true });
    wildcard = await start({ ...base, origins: ['https://*.example.org'] });
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  const preflight = (origin: string) => ({ method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-api-key' } });

  test('preflight from an allowed origin: 204 at the edge with the Allow-* headers', async () => {
    const r = await request(listed, '/api', preflight('https://app.example.com'));
    assert.equal(r.status, 204);
    assert.equal(r.headers['access-control-allow-origin'], 'https://app.example.com');
    assert.equal(r.headers['access-control-allow-methods'], 'GET, POST');
    assert.equal(r.headers['access-control-allow-headers'], 'X-Api-Key');
    assert.equal(r.headers['access-control-max-age'], '600');
    assert.equal(r.headers['access-control-allow-credentials'], 'true');
    assert.equal(r.headers.vary, 'Origin');
    assert.equal(r.body, '', 'answered here, not by the pod (whose answer is a JSON body)');
  });

  test('preflight from another origin: no CORS headers', async () => {
    const r = await request(listed, '/api', preflight('https://evil.example.net'));
    assert.equal(r.status, 204);
    assert.equal(r.headers['access-control-allow-origin'], undefined);
    assert.equal(r.headers['access-control-allow-methods'], undefined);
  });

  test('a plain OPTIONS (not a preflight) goes to the pod', async () => {
    const r = await request(listed, '/api', { method: 'OPTIONS', headers: { origin: 'https://app.example.com' } });
    assert.equal(r.status, 200);
    assert.equal(r.headers['access-control-allow-origin'], 'https://app.example.com');
  });

  test('an allowed origin gets Allow-Origin, Allow-Credentials and Vary: Origin on the response', async () => {
    const r = await request(listed, '/api', { headers: { origin: 'https://app.example.com' } });
    assert.equal(r.status, 200);
    assert.equal(r.headers['access-control-allow-origin'], 'https://app.example.com');
    assert.equal(r.headers['access-control-allow-credentials'], 'true');
    assert.equal(r.headers.vary, 'Origin');
  });

  test('a disallowed origin, or no origin, gets no CORS headers', async () => {
    for (const headers of [{ origin: 'https://app.example.com.evil.net' }, {}] as Record<string, string>[]) {
      const r = await request(listed, '/api', { headers });
      assert.equal(r.status, 200);
      assert.equal(r.headers['access-control-allow-origin'], undefined);
      assert.equal(r.headers['access-control-allow-credentials'], undefined);
    }
  });

  test('"*" answers "*" to every origin, without Vary', async () => {
    const r = await request(star, '/', { headers: { origin: 'https://anyone.net' } });
    assert.equal(r.headers['access-control-allow-origin'], '*');
    assert.equal(r.headers.vary, 'Accept-Encoding', "the pod's Vary is untouched");
    const p = await request(star, '/', preflight('https://anyone.net'));
    assert.equal(p.status, 204);
    assert.equal(p.headers['access-control-allow-origin'], '*');
  });

  test('"*" with credentials echoes the origin, never "*"', async () => {
    const r = await request(starCredentials, '/', { headers: { origin: 'https://anyone.net' } });
    assert.equal(r.headers['access-control-allow-origin'], 'https://anyone.net');
    assert.equal(r.headers['access-control-allow-credentials'], 'true');
    const p = await request(starCredentials, '/', preflight('https://anyone.net'));
    assert.equal(p.headers['access-control-allow-origin'], 'https://anyone.net');
  });

  test('a wildcard origin matches subdomains only, with the same scheme', async () => {
    const allowed = async (origin: string) => (await request(wildcard, '/', { headers: { origin } })).headers['access-control-allow-origin'];
    assert.equal(await allowed('https://a.example.org'), 'https://a.example.org');
    assert.equal(await allowed('https://a.b.example.org'), 'https://a.b.example.org');
    assert.equal(await allowed('https://example.org'), undefined);
    assert.equal(await allowed('http://a.example.org'), undefined);
    assert.equal(await allowed('https://evil.net/.example.org'), undefined);
    assert.equal(await allowed('https://a.example.org:8443'), undefined);
  });
});

test('cors-max-age and the timeouts take bare seconds, as ingress-nginx annotations are written', async () => {
  const { parseAnnotationDuration } = await import('../../../src/util/units.ts');
  assert.equal(parseAnnotationDuration('600'), 600_000);
  assert.equal(parseAnnotationDuration('10m'), 600_000);
  assert.equal(parseAnnotationDuration('soon'), undefined);
  const { parsePolicies } = await import('../../../src/middleware/registry.ts');
  const problems: import('../../../src/model/config.ts').Problem[] = [];
  const policies = parsePolicies(
    { 'portico.dev/cors-allow-origins': 'https://a.example', 'portico.dev/cors-max-age': '600', 'portico.dev/response-timeout': '30' },
    { kind: 'Ingress', namespace: 'default', name: 'x' },
    problems,
  );
  assert.deepEqual(problems, []);
  const cors = policies.find((p) => p.name === 'cors')!.config as { maxAgeSeconds: number };
  assert.equal(cors.maxAgeSeconds, 600);
});
