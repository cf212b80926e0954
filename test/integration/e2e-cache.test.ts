// Black-box: portico.dev/cache through the real CLI, against a pod that counts the
// requests it gets. Each rule of the shared cache is checked by what a client sees
// (status, body, X-Cache, Age) and what the pod saw.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints } from '../support/objects.ts';
import { get, send } from '../support/http.ts';
import { h2Connect, h2Request } from '../support/h2.ts';
import { startCacheOrigin, type CacheOrigin } from '../support/cache-origin.ts';
import { freePort, gateway, gatewayClass, httpRoute } from '../support/gateway-objects.ts';

const HOST = 'cache.local';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function site(origin: CacheOrigin, annotations: Record<string, string> = { 'portico.dev/cache': 'true' }) {
  return [
    ingressClass('portico'),
    ingress('web', { rules: [{ host: HOST, paths: [{ path: '/', service: 'web' }] }] }, { annotations }),
    ingress('plain', { rules: [{ host: 'plain.local', paths: [{ path: '/', service: 'web' }] }] }),
    ...serviceWithEndpoints('web', [origin.port]),
  ];
}

async function metric(portico: PorticoProcess, name: string): Promise<number> {
  const text = (await get(portico.admin, 'admin', '/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.split(' ')[1]);
}

const adminPost = (portico: PorticoProcess, path: string, body: unknown) =>
  send(portico.admin, { method: 'POST', host: 'admin', path, headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });

describe('the HTTP cache through the CLI', () => {
  const dir = new ManifestDir();
  let origin: CacheOrigin;
  let portico: PorticoProcess;

  before(async () => {
    origin = await startCacheOrigin();
    dir.write('site.yaml', site(origin));
    // 10.0.0.0/8 may purge; the tests come from 127.0.0.1, a trusted proxy that can say otherwise.
    portico = await startPortico(['--manifests', dir.path, '--cache-purge-allow', '10.0.0.0/8', '--trusted-proxies', '127.0.0.1', '--access-log=false']);
  });

  after(async () => {
    assert.equal(await portico?.stop(), 0);
    await origin?.close();
    dir.cleanup();
  });

  test('a fresh answer is served from memory with Age and X-Cache: HIT; routes without the annotation are not cached', async () => {
    origin.on('/fresh', (_r, n) => ({ headers: { 'cache-control': 'max-age=60', 'content-type': 'text/plain' }, body: `fresh ${n}\n` }));
    const first = await get(portico.http, HOST, '/fresh');
    assert.equal(first.status, 200);
    assert.equal(first.headers['x-cache'], 'MISS');
    assert.equal(first.text, 'fresh 1\n');
    const second = await get(portico.http, HOST, '/fresh');
    assert.equal(second.headers['x-cache'], 'HIT');
    assert.equal(second.text, 'fresh 1\n');
    assert.equal(second.headers['content-type'], 'text/plain');
    assert.match(String(second.headers.age), /^\d+$/);
    assert.equal(origin.count('/fresh'), 1);
    // HEAD is answered from the GET's entry, without a body.
    const head = await send(portico.http, { method: 'HEAD', host: HOST, path: '/fresh' });
    assert.equal(head.headers['x-cache'], 'HIT');
    assert.equal(head.body.length, 0);
    assert.equal(origin.count('/fresh'), 1);
    // The same pod behind an Ingress without portico.dev/cache: every request reaches it.
    await get(portico.http, 'plain.local', '/fresh');
    const plain = await get(portico.http, 'plain.local', '/fresh');
    assert.equal(plain.headers['x-cache'], undefined);
    assert.equal(origin.count('/fresh'), 3);
    // A query is part of the URL.
    origin.on('/fresh?x=1', { headers: { 'cache-control': 'max-age=60' }, body: 'with query\n' });
    assert.equal((await get(portico.http, HOST, '/fresh?x=1')).text, 'with query\n');
    assert.equal((await get(portico.http, HOST, '/fresh?x=1')).headers['x-cache'], 'HIT');
  });

  test('Age counts what the answer already had: an Age header, a Date in the past', async () => {
    origin.on('/aged', { headers: { 'cache-control': 'max-age=60', age: '30' }, body: 'aged\n' });
    await get(portico.http, HOST, '/aged');
    const hit = await get(portico.http, HOST, '/aged');
    assert.equal(hit.headers['x-cache'], 'HIT');
    assert.ok(Number(hit.headers.age) >= 30 && Number(hit.headers.age) < 40, `age ${hit.headers.age}`);
    // Older than its max-age on arrival: stored, but never fresh.
    origin.on('/too-old', (_r, n) => ({ headers: { 'cache-control': 'max-age=20', date: new Date(Date.now() - 30_000).toUTCString() }, body: `${n}\n` }));
    await get(portico.http, HOST, '/too-old');
    const again = await get(portico.http, HOST, '/too-old');
    assert.equal(again.headers['x-cache'], 'MISS');
    assert.equal(again.text, '2\n');
  });

  test('50 concurrent misses for one URL make exactly one request to the pod, and all get its answer', async () => {
    origin.on('/collapse', (_r, n) => ({ headers: { 'cache-control': 'max-age=60' }, body: `collapsed ${n}\n`, delayMs: 300 }));
    const replies = await Promise.all(Array.from({ length: 50 }, () => get(portico.http, HOST, '/collapse')));
    assert.equal(origin.count('/collapse'), 1);
    for (const r of replies) {
      assert.equal(r.status, 200);
      assert.equal(r.text, 'collapsed 1\n');
    }
    assert.equal(replies.filter((r) => r.headers['x-cache'] === 'MISS').length, 1);
  });

  test('when the client whose request went to the pod leaves, one of the waiters takes over: still one pod request at a time', async () => {
    origin.on('/leader-left', (_r, n) => ({ headers: { 'cache-control': 'max-age=60' }, body: `attempt ${n}\n`, delayMs: 400 }));
    const leader = send(portico.http, { host: HOST, path: '/leader-left', timeoutMs: 100 }).catch((err: Error) => err);
    await eventually(async () => origin.count('/leader-left') === 1, 10_000, 'the first request reached the pod');
    const waiters = Promise.all(Array.from({ length: 10 }, () => get(portico.http, HOST, '/leader-left')));
    assert.ok((await leader) instanceof Error, 'the first client gave up');
    const replies = await waiters;
    assert.deepEqual(new Set(replies.map((r) => r.text)), new Set(['attempt 2\n']));
    assert.equal(origin.count('/leader-left'), 2);
  });

  test('waiters on an answer that cannot be stored are released to ask the pod themselves', async () => {
    origin.on('/collapse-private', (_r, n) => ({ headers: { 'cache-control': 'private, max-age=60' }, body: `private ${n}\n`, delayMs: 200 }));
    const replies = await Promise.all(Array.from({ length: 20 }, () => get(portico.http, HOST, '/collapse-private')));
    assert.equal(origin.count('/collapse-private'), 20);
    assert.deepEqual(new Set(replies.map((r) => r.status)), new Set([200]));
    assert.equal(new Set(replies.map((r) => r.text)).size, 20, 'each got its own answer');
  });

  test('Vary: Accept-Encoding keeps variants apart (token order does not matter); Vary: * is not stored', async () => {
    origin.on('/vary', (req, n) => ({ headers: { 'cache-control': 'max-age=60', vary: 'Accept-Encoding' }, body: `${req.headers['accept-encoding'] ?? 'identity'} ${n}\n` }));
    const gzip = await get(portico.http, HOST, '/vary', { headers: { 'accept-encoding': 'gzip, br' } });
    const identity = await get(portico.http, HOST, '/vary');
    assert.equal(gzip.text, 'gzip, br 1\n');
    assert.equal(identity.text, 'identity 2\n');
    const gzipAgain = await get(portico.http, HOST, '/vary', { headers: { 'accept-encoding': 'br,gzip' } });
    assert.equal(gzipAgain.headers['x-cache'], 'HIT');
    assert.equal(gzipAgain.text, 'gzip, br 1\n');
    const identityAgain = await get(portico.http, HOST, '/vary');
    assert.equal(identityAgain.headers['x-cache'], 'HIT');
    assert.equal(identityAgain.text, 'identity 2\n');
    assert.equal(origin.count('/vary'), 2);

    // Concurrent first requests of two variants: one pod request per variant.
    origin.on('/vary-collapse', (req, n) => ({ headers: { 'cache-control': 'max-age=60', vary: 'accept-encoding' }, body: `${req.headers['accept-encoding'] ?? 'identity'} ${n}\n`, delayMs: 200 }));
    const mixed = await Promise.all(Array.from({ length: 20 }, (_, i) => get(portico.http, HOST, '/vary-collapse', i % 2 === 0 ? { headers: { 'accept-encoding': 'gzip' } } : {})));
    assert.equal(origin.count('/vary-collapse'), 2);
    mixed.forEach((r, i) => assert.match(r.text, i % 2 === 0 ? /^gzip \d\n$/ : /^identity \d\n$/));

    origin.on('/vary-star', (_r, n) => ({ headers: { 'cache-control': 'max-age=60', vary: '*' }, body: `${n}\n` }));
    await get(portico.http, HOST, '/vary-star');
    assert.equal((await get(portico.http, HOST, '/vary-star')).headers['x-cache'], 'MISS');
    assert.equal(origin.count('/vary-star'), 2);
  });

  test('responses with Set-Cookie, no-store or private are not stored', async () => {
    for (const [url, headers] of [
      ['/cookie', { 'cache-control': 'max-age=60', 'set-cookie': 'session=abc' }],
      ['/no-store', { 'cache-control': 'no-store, max-age=60' }],
      ['/private', { 'cache-control': 'private, max-age=60' }],
      ['/no-freshness', {}],
    ] as const) {
      origin.on(url, (_r, n) => ({ headers, body: `${n}\n` }));
      await get(portico.http, HOST, url);
      const again = await get(portico.http, HOST, url);
      assert.equal(again.headers['x-cache'], 'MISS', url);
      assert.equal(again.text, '2\n', url);
      assert.equal(origin.count(url), 2, url);
    }
    const cookie = await get(portico.http, HOST, '/cookie');
    assert.deepEqual(cookie.headers['set-cookie'], ['session=abc'], 'the client still gets its cookie');
  });

  test('a successful POST, PUT or DELETE to a URL invalidates what is stored for it (RFC 9111 section 4.4)', async () => {
    origin.on('/item', (req, n) => (req.method === 'GET' ? { headers: { 'cache-control': 'max-age=60' }, body: `item ${n}\n` } : { status: req.method === 'PUT' ? 500 : 204 }));
    await get(portico.http, HOST, '/item');
    assert.equal((await get(portico.http, HOST, '/item')).headers['x-cache'], 'HIT');
    assert.equal((await send(portico.http, { method: 'PUT', host: HOST, path: '/item', body: 'x' })).status, 500);
    assert.equal((await get(portico.http, HOST, '/item')).headers['x-cache'], 'HIT', 'an error invalidates nothing');
    assert.equal((await send(portico.http, { method: 'POST', host: HOST, path: '/item', body: 'x' })).status, 204);
    const after = await get(portico.http, HOST, '/item');
    assert.equal(after.headers['x-cache'], 'MISS');
    assert.equal(after.text, 'item 4\n');
  });

  test('portico.dev/cache-ttl caches answers that carry no freshness information', async () => {
    dir.write('ttl.yaml', [
      ingress('ttl', { rules: [{ host: 'ttl.local', paths: [{ path: '/', service: 'web' }] }] }, { annotations: { 'portico.dev/cache': 'true', 'portico.dev/cache-ttl': '30s' } }),
    ]);
    origin.on('/ttl', (_r, n) => ({ body: `ttl ${n}\n` }));
    await eventually(async () => (await get(portico.http, 'ttl.local', '/ttl')).status === 200, 5000, 'the ttl Ingress served');
    const hit = await get(portico.http, 'ttl.local', '/ttl');
    assert.equal(hit.headers['x-cache'], 'HIT');
    assert.equal(hit.text, 'ttl 1\n');
  });

  test('portico.dev/cache on an HTTPRoute caches its rules', async () => {
    const port = await freePort();
    const route = httpRoute('cached', { parentRefs: [{ name: 'gw' }], hostnames: ['gateway.local'], rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] });
    dir.write('gateway.yaml', [
      gatewayClass(),
      gateway('gw', [{ name: 'http', port, protocol: 'HTTP' }]),
      { ...route, metadata: { ...(route.metadata as object), annotations: { 'portico.dev/cache': 'true' } } },
    ]);
    origin.on('/gw', (_r, n) => ({ headers: { 'cache-control': 'max-age=60' }, body: `gateway ${n}\n` }));
    await eventually(async () => (await get(port, 'gateway.local', '/gw').catch(() => ({ status: 0 }))).status === 200, 5000, 'the Gateway listener serves');
    const hit = await get(port, 'gateway.local', '/gw');
    assert.equal(hit.headers['x-cache'], 'HIT');
    assert.equal(hit.text, 'gateway 1\n');
    assert.equal(origin.count('/gw'), 1);
  });

  test('a request with Authorization is served from the cache only when the answer said public or s-maxage', async () => {
    origin.on('/shared', (_r, n) => ({ headers: { 'cache-control': 'max-age=60' }, body: `shared ${n}\n` }));
    await get(portico.http, HOST, '/shared');
    assert.equal((await get(portico.http, HOST, '/shared')).headers['x-cache'], 'HIT');
    const auth = await get(portico.http, HOST, '/shared', { headers: { authorization: 'Bearer x' } });
    assert.equal(auth.headers['x-cache'], 'MISS');
    assert.equal(origin.count('/shared'), 2);

    origin.on('/auth-max-age', (_r, n) => ({ headers: { 'cache-control': 'max-age=60' }, body: `${n}\n` }));
    await get(portico.http, HOST, '/auth-max-age', { headers: { authorization: 'Bearer x' } });
    assert.equal((await get(portico.http, HOST, '/auth-max-age', { headers: { authorization: 'Bearer x' } })).headers['x-cache'], 'MISS');
    assert.equal(origin.count('/auth-max-age'), 2);

    for (const cc of ['public, max-age=60', 's-maxage=60']) {
      const url = `/auth-${cc.startsWith('public') ? 'public' : 's-maxage'}`;
      origin.on(url, (_r, n) => ({ headers: { 'cache-control': cc }, body: `${n}\n` }));
      await get(portico.http, HOST, url, { headers: { authorization: 'Bearer x' } });
      const hit = await get(portico.http, HOST, url, { headers: { authorization: 'Bearer y' } });
      assert.equal(hit.headers['x-cache'], 'HIT', cc);
      assert.equal(origin.count(url), 1, cc);
    }
  });

  test('If-None-Match and If-Modified-Since are answered 304 from a fresh entry', async () => {
    const modified = new Date(Date.now() - 3_600_000).toUTCString();
    origin.on('/cond', { headers: { 'cache-control': 'max-age=60', etag: '"v1"', 'last-modified': modified }, body: 'conditional\n' });
    await get(portico.http, HOST, '/cond');
    const byTag = await get(portico.http, HOST, '/cond', { headers: { 'if-none-match': 'W/"v0", "v1"' } });
    assert.equal(byTag.status, 304);
    assert.equal(byTag.headers['x-cache'], 'HIT');
    assert.equal(byTag.headers.etag, '"v1"');
    assert.equal(byTag.body.length, 0);
    const byDate = await get(portico.http, HOST, '/cond', { headers: { 'if-modified-since': new Date().toUTCString() } });
    assert.equal(byDate.status, 304);
    const changed = await get(portico.http, HOST, '/cond', { headers: { 'if-none-match': '"v0"' } });
    assert.equal(changed.status, 200);
    assert.equal(changed.text, 'conditional\n');
    assert.equal(origin.count('/cond'), 1);
  });

  test('a conditional miss: the pod is asked for the whole answer (stored), the client still gets its 304; HEAD and Range misses pass through', async () => {
    origin.on('/cond-miss', { headers: { 'cache-control': 'max-age=60', etag: '"v1"' }, body: 'whole\n' });
    const notModified = await get(portico.http, HOST, '/cond-miss', { headers: { 'if-none-match': '"v1"' } });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.headers['x-cache'], 'MISS');
    assert.equal(origin.lastHeaders('/cond-miss')?.['if-none-match'], undefined, "the client's validator was not sent to the pod");
    const whole = await get(portico.http, HOST, '/cond-miss');
    assert.equal(whole.headers['x-cache'], 'HIT');
    assert.equal(whole.text, 'whole\n');

    origin.on('/head-first', (_r, n) => ({ headers: { 'cache-control': 'max-age=60' }, body: `${n}\n` }));
    const head = await send(portico.http, { method: 'HEAD', host: HOST, path: '/head-first' });
    assert.equal(head.headers['x-cache'], 'MISS');
    assert.equal((await get(portico.http, HOST, '/head-first')).headers['x-cache'], 'MISS', 'a HEAD answer is not stored');
    const range = await get(portico.http, HOST, '/head-first', { headers: { range: 'bytes=0-0' } });
    assert.equal(range.headers['x-cache'], 'MISS');
    assert.equal(origin.count('/head-first'), 3);
  });

  test('no-cache: every use is revalidated with the pod; a 304 refreshes the entry and the client gets it from memory', async () => {
    origin.on('/no-cache', (req, n) =>
      req.headers['if-none-match'] === '"v1"'
        ? { status: 304, headers: { 'cache-control': 'no-cache', etag: '"v1"', 'x-refreshed': String(n) } }
        : { headers: { 'cache-control': 'no-cache', etag: '"v1"' }, body: 'validated body\n' },
    );
    const first = await get(portico.http, HOST, '/no-cache');
    assert.equal(first.headers['x-cache'], 'MISS');
    const second = await get(portico.http, HOST, '/no-cache');
    assert.equal(second.status, 200);
    assert.equal(second.text, 'validated body\n');
    assert.equal(second.headers['x-cache'], 'REVALIDATED');
    assert.equal(second.headers['x-refreshed'], '2', "the 304's headers update the stored ones");
    assert.equal(origin.count('/no-cache'), 2);
    assert.equal(origin.lastHeaders('/no-cache')?.['if-none-match'], '"v1"');
  });

  test('stale-while-revalidate: a stale entry is served at once and refreshed once in the background', async () => {
    // The refresh takes the pod 300 ms: requests meanwhile get the stale copy, and cause no other refresh.
    origin.on('/swr', (_r, n) => ({ headers: { 'cache-control': 'max-age=1, stale-while-revalidate=60' }, body: `swr ${n}\n`, delayMs: n === 1 ? 0 : 300 }));
    assert.equal((await get(portico.http, HOST, '/swr')).text, 'swr 1\n');
    await sleep(2100);
    const stale = await Promise.all(Array.from({ length: 5 }, () => get(portico.http, HOST, '/swr')));
    for (const r of stale) {
      assert.equal(r.headers['x-cache'], 'STALE');
      assert.equal(r.text, 'swr 1\n');
    }
    await eventually(async () => (await get(portico.http, HOST, '/swr')).text === 'swr 2\n', 10_000, 'the refreshed copy served');
    assert.equal(origin.count('/swr'), 2, 'one background refresh');
  });

  test('stale-if-error: when the pod answers 5xx or is down, the stale copy is served within the window', async () => {
    let failing = false;
    origin.on('/sie', (_r, n) => (failing ? { status: 503, body: 'pod trouble\n' } : { headers: { 'cache-control': 'max-age=1, stale-if-error=60' }, body: `sie ${n}\n` }));
    assert.equal((await get(portico.http, HOST, '/sie')).text, 'sie 1\n');
    failing = true;
    await sleep(2100);
    const stale = await get(portico.http, HOST, '/sie');
    assert.equal(stale.status, 200);
    assert.equal(stale.headers['x-cache'], 'STALE');
    assert.equal(stale.text, 'sie 1\n');
    assert.equal(origin.count('/sie'), 2);
    // The pod is down (connection refused): the same.
    const down = await startCacheOrigin();
    dir.write('down.yaml', [
      ingress('down', { rules: [{ host: 'down.local', paths: [{ path: '/', service: 'down' }] }] }, { annotations: { 'portico.dev/cache': 'true' } }),
      ...serviceWithEndpoints('down', [down.port]),
    ]);
    down.on('/sie', { headers: { 'cache-control': 'max-age=1, stale-if-error=60' }, body: 'kept\n' });
    await eventually(async () => (await get(portico.http, 'down.local', '/sie')).text === 'kept\n', 5000, 'the down Ingress served');
    await down.close();
    await sleep(2100);
    const kept = await get(portico.http, 'down.local', '/sie');
    assert.equal(kept.status, 200);
    assert.equal(kept.headers['x-cache'], 'STALE');
    assert.equal(kept.text, 'kept\n');
    // Without stale-if-error the 503 goes through.
    origin.on('/no-sie', (_r, n) => (n === 1 ? { headers: { 'cache-control': 'max-age=1' }, body: 'ok\n' } : { status: 503, body: 'pod trouble\n' }));
    await get(portico.http, HOST, '/no-sie');
    await sleep(2100);
    assert.equal((await get(portico.http, HOST, '/no-sie')).status, 503);
  });

  test('admin POST /cache/purge removes exact URLs, every variant; bad requests get 400 with a clear message', async () => {
    origin.on('/purge-me', (req, n) => ({ headers: { 'cache-control': 'max-age=60', vary: 'accept-encoding' }, body: `${req.headers['accept-encoding'] ?? '-'} ${n}\n` }));
    await get(portico.http, HOST, '/purge-me');
    await get(portico.http, HOST, '/purge-me', { headers: { 'accept-encoding': 'gzip' } });
    assert.equal((await get(portico.http, HOST, '/purge-me')).headers['x-cache'], 'HIT');
    const purged = await adminPost(portico, '/cache/purge', { host: HOST, paths: ['/purge-me'] });
    assert.equal(purged.status, 200);
    assert.equal(purged.json().removed, 2);
    assert.equal((await get(portico.http, HOST, '/purge-me')).headers['x-cache'], 'MISS');
    assert.equal((await get(portico.http, HOST, '/purge-me', { headers: { 'accept-encoding': 'gzip' } })).headers['x-cache'], 'MISS');
    assert.equal(origin.count('/purge-me'), 4);

    const badJson = await adminPost(portico, '/cache/purge', '{"host": ');
    assert.equal(badJson.status, 400);
    assert.match(badJson.json().message as string, /not JSON/);
    const noHost = await adminPost(portico, '/cache/purge', { host: '', paths: ['/a'] });
    assert.equal(noHost.status, 400);
    assert.match(noHost.json().message as string, /host must be a non-empty string/);
    const badRegex = await adminPost(portico, '/cache/ban', { host: HOST, pattern: '(' });
    assert.equal(badRegex.status, 400);
    assert.match(badRegex.json().message as string, /not a valid regular expression/);
    assert.equal((await get(portico.admin, 'admin', '/cache/purge')).status, 405);
  });

  test('admin POST /cache/ban invalidates every matching entry of the host, lazily', async () => {
    for (const url of ['/img/1.png', '/img/2.png', '/page']) origin.on(url, (_r, n) => ({ headers: { 'cache-control': 'max-age=60' }, body: `${url} ${n}\n` }));
    for (const url of ['/img/1.png', '/img/2.png', '/page']) await get(portico.http, HOST, url);
    const banned = await adminPost(portico, '/cache/ban', { host: HOST, pattern: '^/img/' });
    assert.equal(banned.status, 200, banned.text);
    assert.equal((await get(portico.http, HOST, '/img/1.png')).headers['x-cache'], 'MISS');
    assert.equal((await get(portico.http, HOST, '/img/2.png')).text, '/img/2.png 2\n');
    assert.equal((await get(portico.http, HOST, '/page')).headers['x-cache'], 'HIT');
    // Entries stored after the ban are not covered by it.
    assert.equal((await get(portico.http, HOST, '/img/1.png')).headers['x-cache'], 'HIT');
  });

  test('PURGE and BAN on the public listener: 405 unless the client is in --cache-purge-allow', async () => {
    origin.on('/listener', (_r, n) => ({ headers: { 'cache-control': 'max-age=60' }, body: `${n}\n` }));
    await get(portico.http, HOST, '/listener');
    const refused = await send(portico.http, { method: 'PURGE', host: HOST, path: '/listener' });
    assert.equal(refused.status, 405);
    assert.equal(refused.headers.allow, 'GET, HEAD');
    assert.match(refused.text, /--cache-purge-allow/);
    const outsider = await send(portico.http, { method: 'PURGE', host: HOST, path: '/listener', headers: { 'x-forwarded-for': '192.168.1.9' } });
    assert.equal(outsider.status, 405);
    assert.equal((await get(portico.http, HOST, '/listener')).headers['x-cache'], 'HIT');
    // From an allowed client (the trusted proxy says 10.1.2.3).
    const purged = await send(portico.http, { method: 'PURGE', host: HOST, path: '/listener', headers: { 'x-forwarded-for': '10.1.2.3' } });
    assert.equal(purged.status, 200);
    assert.equal(purged.json().removed, 1);
    assert.equal((await get(portico.http, HOST, '/listener')).headers['x-cache'], 'MISS');
    // A ban over HTTP/1.1: PURGE with X-Ban-Pattern (llhttp cannot parse a BAN method).
    const ban = await send(portico.http, { method: 'PURGE', host: HOST, path: '/', headers: { 'x-forwarded-for': '10.1.2.3', 'x-ban-pattern': '^/list' } });
    assert.equal(ban.status, 200);
    assert.equal((await get(portico.http, HOST, '/listener')).headers['x-cache'], 'MISS');
    assert.equal(origin.count('/listener'), 3);
  });

  test('an HTTP/2 client gets hits (BAN works over HTTP/2, and is refused to others)', async () => {
    origin.on('/h2', (_r, n) => ({ headers: { 'cache-control': 'max-age=60' }, body: `h2 ${n}\n` }));
    assert.equal((await get(portico.http, HOST, '/h2')).headers['x-cache'], 'MISS');
    const session = await h2Connect(portico.http, false);
    try {
      const hit = await h2Request(session, { ':path': '/h2', ':authority': HOST });
      assert.equal(hit.status, 200);
      assert.equal(hit.headers['x-cache'], 'HIT');
      assert.equal(hit.text(), 'h2 1\n');
      origin.on('/h2-only', (_r, n) => ({ headers: { 'cache-control': 'max-age=60' }, body: `h2-only ${n}\n` }));
      await h2Request(session, { ':path': '/h2-only', ':authority': HOST });
      assert.equal((await h2Request(session, { ':path': '/h2-only', ':authority': HOST })).headers['x-cache'], 'HIT');
      assert.equal(origin.count('/h2-only'), 1);
      const refused = await h2Request(session, { ':method': 'BAN', ':path': '/h2', ':authority': HOST });
      assert.equal(refused.status, 405);
      const banned = await h2Request(session, { ':method': 'BAN', ':path': '/h2', ':authority': HOST, 'x-forwarded-for': '10.9.9.9' });
      assert.equal(banned.status, 200);
      assert.equal((await h2Request(session, { ':path': '/h2', ':authority': HOST })).headers['x-cache'], 'MISS');
    } finally {
      session.close();
    }
  });

  test('metrics count hits, misses and stale serves; /routes shows which routes cache', async () => {
    const hits = await metric(portico, 'portico_cache_hits_total');
    const misses = await metric(portico, 'portico_cache_misses_total');
    const entries = await metric(portico, 'portico_cache_entries');
    const bytes = await metric(portico, 'portico_cache_bytes');
    origin.on('/counted', { headers: { 'cache-control': 'max-age=60' }, body: 'x'.repeat(1000) });
    await get(portico.http, HOST, '/counted');
    await get(portico.http, HOST, '/counted');
    await get(portico.http, HOST, '/counted');
    assert.equal(await metric(portico, 'portico_cache_hits_total'), hits + 2);
    assert.equal(await metric(portico, 'portico_cache_misses_total'), misses + 1);
    assert.equal(await metric(portico, 'portico_cache_entries'), entries + 1);
    assert.ok((await metric(portico, 'portico_cache_bytes')) >= bytes + 1000);
    assert.ok(!Number.isNaN(await metric(portico, 'portico_cache_stale_total')));
    assert.ok(!Number.isNaN(await metric(portico, 'portico_cache_evictions_total')));
    const routes = (await get(portico.admin, 'admin', '/routes')).text;
    const view = JSON.parse(routes) as { hosts: Record<string, Record<string, { policies: string[] }>> };
    assert.deepEqual(view.hosts[HOST]!['/']!.policies, ['cache']);
    assert.deepEqual(view.hosts['plain.local']!['/']!.policies, []);
  });
});

describe('the cache at its size bound, and with --workers 2', () => {
  test('--cache-size bounds the cache in bytes: the least recently used entry is evicted; bigger objects pass uncached', async () => {
    const origin = await startCacheOrigin();
    const dir = new ManifestDir();
    dir.write('site.yaml', site(origin));
    // 64 KiB: objects up to 8 KiB are stored; eleven of 6 KiB do not fit.
    const portico = await startPortico(['--manifests', dir.path, '--cache-size', '64KiB', '--access-log=false']);
    try {
      for (let i = 0; i < 11; i++) origin.on(`/e${i}`, { headers: { 'cache-control': 'max-age=60' }, body: Buffer.alloc(6 * 1024, 97 + i) });
      await get(portico.http, HOST, '/e0');
      for (let i = 1; i < 11; i++) {
        await get(portico.http, HOST, `/e${i}`);
        // Keep /e1 recently used: /e0 is the one to go.
        if (i > 1) assert.equal((await get(portico.http, HOST, '/e1')).headers['x-cache'], 'HIT');
      }
      assert.ok((await metric(portico, 'portico_cache_bytes')) <= 64 * 1024);
      assert.ok((await metric(portico, 'portico_cache_evictions_total')) >= 1);
      const evicted = await get(portico.http, HOST, '/e0');
      assert.equal(evicted.headers['x-cache'], 'MISS');
      assert.equal(evicted.body.length, 6 * 1024);
      assert.equal(origin.count('/e0'), 2);
      assert.equal((await get(portico.http, HOST, '/e10')).headers['x-cache'], 'HIT');

      origin.on('/big', (_r, n) => ({ headers: { 'cache-control': 'max-age=60' }, body: Buffer.alloc(9 * 1024, 48 + n) }));
      const big = await get(portico.http, HOST, '/big');
      assert.equal(big.body.length, 9 * 1024);
      assert.equal((await get(portico.http, HOST, '/big')).headers['x-cache'], 'MISS');
      assert.equal(origin.count('/big'), 2);
    } finally {
      assert.equal(await portico.stop(), 0);
      await origin.close();
      dir.cleanup();
    }
  });

  test('with --workers 2 a purge (admin or PURGE) reaches both workers, and says how many entries went', async () => {
    const origin = await startCacheOrigin();
    const dir = new ManifestDir();
    dir.write('site.yaml', site(origin));
    const portico = await startPortico(['--manifests', dir.path, '--workers', '2', '--cache-purge-allow', '127.0.0.1', '--access-log=false']);
    try {
      origin.on('/both', (_r, n) => ({ headers: { 'cache-control': 'max-age=600' }, body: `both ${n}\n` }));
      // A new connection per request: node:cluster spreads them over both workers, each fills its own cache.
      const fillBoth = async () => {
        const before = origin.count('/both');
        await eventually(async () => {
          await get(portico.http, HOST, '/both');
          return origin.count('/both') === before + 2;
        }, 10_000, 'both workers cached /both');
        for (let i = 0; i < 10; i++) assert.equal((await get(portico.http, HOST, '/both')).headers['x-cache'], 'HIT');
      };
      await fillBoth();
      await eventually(async () => (await metric(portico, 'portico_cache_entries')) === 2, 5000, 'two entries across the workers');
      const purged = await adminPost(portico, '/cache/purge', { host: HOST, paths: ['/both'] });
      assert.equal(purged.status, 200);
      assert.equal(purged.json().removed, 2);
      assert.match(purged.json().message as string, /in 2 workers/);
      assert.equal(await metric(portico, 'portico_cache_entries'), 0);

      await fillBoth();
      const viaListener = await send(portico.http, { method: 'PURGE', host: HOST, path: '/both' });
      assert.equal(viaListener.status, 200);
      assert.equal(viaListener.json().removed, 2);
      for (let i = 0; i < 4; i++) assert.equal((await get(portico.http, HOST, `/both`)).status, 200);
      assert.ok(origin.count('/both') >= 5, 'both workers went to the pod again');
    } finally {
      assert.equal(await portico.stop(), 0);
      await origin.close();
      dir.cleanup();
    }
  });
});
