// Black-box, standalone mode: a CacheInvalidation written into the manifest directory
// is applied to the cache once when it appears and again when its spec changes, and
// its result is logged with the file and line (there is no status to write). A bad one
// is logged and skipped; everything else keeps serving.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints, type Obj } from '../support/objects.ts';
import { get } from '../support/http.ts';
import { startCacheableOrigin, type CacheableOrigin } from '../support/cacheable-origin.ts';

function invalidation(name: string, spec: Record<string, unknown>): Obj {
  return { apiVersion: 'portico.dev/v1alpha1', kind: 'CacheInvalidation', metadata: { name, namespace: 'default' }, spec };
}

describe('CacheInvalidation in standalone mode', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  let origin: CacheableOrigin;
  const xCache = async (path: string) => (await get(portico.http, 'shop.local', path)).headers['x-cache'];
  const lines = (prefix: string) => portico.logs.filter((l) => typeof l.msg === 'string' && l.msg.startsWith(prefix));

  before(async () => {
    origin = await startCacheableOrigin();
    dir.write('shop.yaml', [
      ingressClass('portico'),
      ingress('shop', { rules: [{ host: 'shop.local', paths: [{ path: '/', service: 'shop' }] }] }, { annotations: { 'portico.dev/cache': 'true' } }),
      ...serviceWithEndpoints('shop', [origin.port]),
    ]);
    portico = await startPortico(['--manifests', dir.path]);
  });

  after(async () => {
    await portico?.stop();
    await origin?.close();
    dir.cleanup();
  });

  test('a Purge file is applied once when it appears: the purged answer is a MISS, and re-reading the file applies nothing', async () => {
    await xCache('/page');
    assert.equal(await xCache('/page'), 'HIT');
    dir.write('purge.yaml', [invalidation('purge-page', { host: 'shop.local', type: 'Purge', paths: ['/page'] })]);
    const applied = 'purge.yaml:1: CacheInvalidation default/purge-page applied: ';
    await eventually(async () => lines(applied).length === 1, 10_000, 'the purge applied');
    assert.equal(lines(applied)[0]!.msg, `${applied}purged 1 entry of shop.local`);
    assert.equal(await xCache('/page'), 'MISS');
    assert.equal(origin.hits.get('/page'), 2);

    // The file written again with the same object and a new one: once the new one is applied (the file was
    // re-read), the same object has not been applied again.
    dir.write('purge.yaml', [
      invalidation('purge-page', { host: 'shop.local', type: 'Purge', paths: ['/page'] }),
      invalidation('purge-more', { host: 'shop.local', type: 'Purge', paths: ['/more'] }),
    ]);
    const more = () => portico.logs.filter((l) => typeof l.msg === 'string' && /^purge\.yaml:\d+: CacheInvalidation default\/purge-more applied: /.test(l.msg));
    await eventually(async () => more().length === 1, 10_000, 'the new one applied');
    assert.equal(lines(applied).length, 1);
    assert.equal(await xCache('/page'), 'HIT');
  });

  test('an edited spec is applied again', async () => {
    await xCache('/other');
    assert.equal(await xCache('/other'), 'HIT');
    dir.write('purge.yaml', [invalidation('purge-page', { host: 'shop.local', type: 'Purge', paths: ['/page', '/other'] })]);
    const applied = 'purge.yaml:1: CacheInvalidation default/purge-page applied: ';
    await eventually(async () => lines(applied).length === 2, 10_000, 'the edited purge applied');
    assert.equal(await xCache('/other'), 'MISS');
  });

  test('a Ban whose pattern is not a regular expression is logged with its file and line and skipped; serving goes on', async () => {
    dir.write('ban.yaml', `# a ban\n${JSON.stringify(invalidation('bad-ban', { host: 'shop.local', type: 'Ban', pattern: '/img/(' }))}\n`);
    const warned = await portico.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('ban.yaml:2: CacheInvalidation default/bad-ban not applied'), 10_000);
    assert.equal(warned.msg, 'ban.yaml:2: CacheInvalidation default/bad-ban not applied: spec.pattern: "/img/(" is not a valid regular expression: Invalid regular expression: //img/(/: Unterminated group');
    assert.equal(warned.level, 'warn');
    assert.equal((await get(portico.http, 'shop.local', '/page')).status, 200);
  });
});

describe('CacheInvalidation in standalone mode, --workers 2', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  let origin: CacheableOrigin;
  const shop = (cache: boolean) => [
    ingressClass('portico'),
    ingress('shop', { rules: [{ host: 'shop.local', paths: [{ path: '/', service: 'shop' }] }] }, cache ? { annotations: { 'portico.dev/cache': 'true' } } : {}),
    ...serviceWithEndpoints('shop', [origin.port]),
  ];
  const applied = (name: string) => portico.logs.filter((l) => typeof l.msg === 'string' && l.msg.startsWith(`purge.yaml:1: CacheInvalidation default/${name} applied: `));

  before(async () => {
    origin = await startCacheableOrigin();
    dir.write('shop.yaml', shop(false));
    portico = await startPortico(['--manifests', dir.path, '--workers', '2', '--access-log=false']);
  });

  after(async () => {
    await portico?.stop();
    await origin?.close();
    dir.cleanup();
  });

  test('with no route caching, it succeeds and says the cache is off', async () => {
    dir.write('purge.yaml', [invalidation('early', { host: 'shop.local', type: 'Purge', paths: ['/both'] })]);
    await eventually(async () => applied('early').length === 1, 10_000, 'applied');
    assert.equal(applied('early')[0]!.msg, 'purge.yaml:1: CacheInvalidation default/early applied: the cache is off in this replica (no route has portico.dev/cache): purged 0 entries of shop.local in 2 workers');
  });

  test('it reaches the cache of both workers', async () => {
    dir.write('shop.yaml', shop(true));
    // Both workers have the caching route once consecutive requests (spread over both) all say X-Cache.
    await eventually(async () => {
      for (let i = 0; i < 4; i++) if ((await get(portico.http, 'shop.local', '/probe')).headers['x-cache'] === undefined) return false;
      return true;
    }, 10_000, 'the caching route on both workers');
    // A new connection per request: node:cluster spreads them over both workers, each fills its own cache.
    await eventually(async () => {
      await get(portico.http, 'shop.local', '/both');
      return origin.hits.get('/both') === 2;
    }, 10_000, 'both workers cached /both');
    for (let i = 0; i < 6; i++) assert.equal((await get(portico.http, 'shop.local', '/both')).headers['x-cache'], 'HIT');
    dir.write('purge.yaml', [invalidation('both', { host: 'shop.local', type: 'Purge', paths: ['/both'] })]);
    await eventually(async () => applied('both').length === 1, 10_000, 'applied');
    assert.equal(applied('both')[0]!.msg, 'purge.yaml:1: CacheInvalidation default/both applied: purged 2 entries of shop.local in 2 workers');
    for (let i = 0; i < 6; i++) await get(portico.http, 'shop.local', '/both');
    assert.equal(origin.hits.get('/both'), 4, 'each worker went to the pod once more');
  });
});
