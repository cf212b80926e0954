import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { CertificateStore, DEFAULT_CERTIFICATE_CN } from '../../../src/tls/certificates.ts';
import type { CertificateConfig } from '../../../src/model/config.ts';
import { createTestPki, type TestPki } from './fixtures.ts';

describe('certificate store', () => {
  let pki: TestPki;
  let foo: { cert: string; key: string };
  let wild: { cert: string; key: string };
  let dir: string;

  before(async () => {
    pki = await createTestPki();
    [foo, wild] = await Promise.all([pki.issue('foo.example.com'), pki.issue('*.example.com')]);
    dir = await mkdtemp(join(tmpdir(), 'portico-certs-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function certificates(entries: [string, CertificateConfig][]): Map<string, CertificateConfig> {
    return new Map(entries);
  }

  test('generates a self-signed default certificate with the portico CN', async () => {
    const store = await CertificateStore.create();
    const options = store.httpsServerOptions();
    const x509 = new X509Certificate(options.cert as string);
    assert.match(x509.subject, new RegExp(`CN=${DEFAULT_CERTIFICATE_CN}`));
    assert.ok(x509.checkPrivateKey(createPrivateKey(options.key as string)));
    const days = (Date.parse(x509.validTo) - Date.parse(x509.validFrom)) / 86_400_000;
    assert.ok(days >= 364 && days <= 366, `valid for about a year, got ${days} days`);
    assert.equal(options.minVersion, 'TLSv1.2');
    assert.deepEqual(options.ALPNProtocols, ['http/1.1']);
    assert.equal(typeof options.SNICallback, 'function');
  });

  test('loads the default certificate from files', async () => {
    await writeFile(join(dir, 'tls.crt'), foo.cert);
    await writeFile(join(dir, 'tls.key'), foo.key);
    const store = await CertificateStore.create(join(dir, 'tls.crt'), join(dir, 'tls.key'));
    assert.equal(store.httpsServerOptions().cert, foo.cert);
  });

  test('names the file that cannot be read', async () => {
    await writeFile(join(dir, 'ok.key'), foo.key);
    await assert.rejects(CertificateStore.create(join(dir, 'missing.crt'), join(dir, 'ok.key')), /missing\.crt.*ENOENT/);
  });

  test('names the file that is not PEM', async () => {
    await writeFile(join(dir, 'junk.crt'), 'hello');
    await assert.rejects(CertificateStore.create(join(dir, 'junk.crt'), join(dir, 'ok.key')), /junk\.crt is not PEM/);
  });

  test('names the files when the key does not belong to the certificate', async () => {
    await writeFile(join(dir, 'wild.key'), wild.key);
    await writeFile(join(dir, 'foo.crt'), foo.cert);
    await assert.rejects(CertificateStore.create(join(dir, 'foo.crt'), join(dir, 'wild.key')), /invalid default certificate .*foo\.crt.*wild\.key/);
  });

  test('picks the exact host, then the wildcard of the parent, then the default', async () => {
    const store = await CertificateStore.create();
    const problems = store.update(
      certificates([
        ['foo.example.com', { secret: 'ns/foo', ...foo }],
        ['*.example.com', { secret: 'ns/wild', ...wild }],
      ]),
    );
    assert.deepEqual(problems, []);
    const exact = store.contextFor('foo.example.com');
    const wildcard = store.contextFor('bar.example.com');
    const fallback = store.contextFor('other.test');
    assert.notEqual(exact, wildcard);
    assert.notEqual(wildcard, fallback);
    assert.equal(store.contextFor('FOO.Example.COM.'), exact, 'case and trailing dot are ignored');
    assert.equal(store.contextFor('a.b.example.com'), fallback, 'a wildcard covers one label only');
    assert.equal(store.contextFor('example.com'), fallback, 'a wildcard does not cover its parent');
  });

  test('reuses the context of an unchanged certificate and swaps a changed one', async () => {
    const store = await CertificateStore.create();
    store.update(certificates([['foo.example.com', { secret: 'ns/foo', ...foo }]]));
    const first = store.contextFor('foo.example.com');
    store.update(certificates([['foo.example.com', { secret: 'ns/foo', cert: foo.cert, key: foo.key }]]));
    assert.equal(store.contextFor('foo.example.com'), first);
    store.update(certificates([['foo.example.com', { secret: 'ns/foo', ...wild }]]));
    assert.notEqual(store.contextFor('foo.example.com'), first);
  });

  test('an update with the map of the last one serves and reports as that one did', async () => {
    const store = await CertificateStore.create();
    const map = certificates([
      ['foo.example.com', { secret: 'ns/foo', ...foo }],
      ['broken.example.com', { secret: 'ns/broken', cert: foo.cert, key: wild.key }],
    ]);
    const problems = store.update(map);
    const context = store.contextFor('foo.example.com');
    // A routing change that touched no certificate installs the same map again.
    assert.deepEqual(store.update(map), problems, 'the broken Secret is still reported');
    assert.equal(problems.length, 1);
    assert.equal(store.contextFor('foo.example.com'), context);
    assert.equal(store.contextFor('broken.example.com'), store.contextFor('unknown.test'));
    // One certificate changed in a new map: the unchanged one keeps its context.
    store.update(certificates([...map, ['www.example.com', { secret: 'ns/wild', ...wild }]]));
    assert.equal(store.contextFor('foo.example.com'), context);
    assert.notEqual(store.contextFor('www.example.com'), store.contextFor('unknown.test'));
  });

  test('a removed host falls back to the default', async () => {
    const store = await CertificateStore.create();
    store.update(certificates([['foo.example.com', { secret: 'ns/foo', ...foo }]]));
    const fallback = store.contextFor('unknown.test');
    store.update(certificates([]));
    assert.equal(store.contextFor('foo.example.com'), fallback);
  });

  test('skips a broken Secret with a problem and keeps the others', async () => {
    const store = await CertificateStore.create();
    const problems = store.update(
      certificates([
        ['foo.example.com', { secret: 'ns/foo', ...foo }],
        ['broken.example.com', { secret: 'ns/broken', cert: foo.cert, key: wild.key }],
        ['also-broken.example.com', { secret: 'ns/broken', cert: foo.cert, key: wild.key }],
      ]),
    );
    assert.equal(problems.length, 1, 'one problem per Secret');
    assert.deepEqual(problems[0]!.object, { kind: 'Secret', namespace: 'ns', name: 'broken' });
    assert.equal(problems[0]!.reason, 'InvalidCertificate');
    assert.equal(problems[0]!.severity, 'error');
    assert.equal(store.contextFor('broken.example.com'), store.contextFor('unknown.test'));
    assert.notEqual(store.contextFor('foo.example.com'), store.contextFor('unknown.test'));
    assert.equal(store.hosts, 1);
  });

  /** `n` hosts, each with a certificate of its own (the same one behind a distinct first line, which OpenSSL skips). */
  function distinct(n: number, broken: Set<number> = new Set()): Map<string, CertificateConfig> {
    return certificates(
      Array.from({ length: n }, (_, i): [string, CertificateConfig] => [
        `h${i}.example.com`,
        { secret: `ns/h${i}`, cert: `host ${i}\n${wild.cert}`, key: broken.has(i) ? foo.key : `host ${i}\n${wild.key}` },
      ]),
    );
  }

  test('a start-up with many certificates builds each context at its first handshake, and reports a refused one then', async () => {
    const store = await CertificateStore.create(undefined, undefined, undefined, undefined, { eagerBuilds: 2 });
    const rejected: string[] = [];
    store.onRejected = (p) => rejected.push(`${p.object.namespace}/${p.object.name} ${p.reason}`);
    const map = distinct(5, new Set([3]));
    assert.deepEqual(store.update(map), [], 'nothing is built yet, so nothing is refused yet');
    assert.equal(store.builtContexts, 0);
    const fallback = store.contextFor('unknown.test');
    const first = store.contextFor('h0.example.com');
    assert.notEqual(first, fallback);
    assert.equal(store.builtContexts, 1);
    assert.equal(store.contextFor('H0.example.com'), first, 'built once');
    assert.equal(store.contextFor('h3.example.com'), fallback, 'a refused certificate: the default one');
    assert.deepEqual(rejected, ['ns/h3 InvalidCertificate']);
    assert.equal(store.contextFor('h3.example.com'), fallback);
    assert.equal(rejected.length, 1, 'reported once, not at every handshake');
    const again = store.update(map);
    assert.deepEqual(
      again.map((p) => p.object.name),
      ['h3'],
      'an update with the same map reports what the handshake found',
    );
    assert.equal(store.update(new Map(map)).length, 1, 'so does one with a new map');
  });

  test('a routine change builds its few new certificates at once', async () => {
    const store = await CertificateStore.create(undefined, undefined, undefined, undefined, { eagerBuilds: 2 });
    store.update(distinct(5));
    const map = new Map(distinct(5));
    map.set('new.example.com', { secret: 'ns/new', cert: foo.cert, key: wild.key });
    const problems = store.update(map);
    assert.deepEqual(
      problems.map((p) => p.object.name),
      ['new'],
      'the broken new Secret is reported with the change',
    );
  });

  test('keeps only the most recently used contexts built; one let go is built again when asked for', async () => {
    const store = await CertificateStore.create(undefined, undefined, undefined, undefined, { maxContexts: 2, eagerBuilds: 0 });
    store.update(distinct(4));
    const fallback = store.contextFor('unknown.test');
    const h0 = store.contextFor('h0.example.com');
    store.contextFor('h1.example.com');
    store.contextFor('h0.example.com'); // h0 used last: h1 goes first
    store.contextFor('h2.example.com');
    assert.equal(store.builtContexts, 2);
    assert.equal(store.contextFor('h0.example.com'), h0, 'the recently used one was kept');
    const h1 = store.contextFor('h1.example.com');
    assert.notEqual(h1, fallback, 'the one let go gets its own certificate again');
    assert.equal(store.builtContexts, 2);
  });

  test('lets go of the context of a certificate no longer served', async () => {
    const store = await CertificateStore.create(undefined, undefined, undefined, undefined, { eagerBuilds: 0 });
    const map = distinct(3);
    store.update(map);
    for (const host of map.keys()) store.contextFor(host);
    assert.equal(store.builtContexts, 3);
    map.delete('h1.example.com');
    store.update(new Map(map));
    assert.equal(store.builtContexts, 2);
  });
});
