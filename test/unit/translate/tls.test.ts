import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../../src/model/k8s.ts';
import { OPTIONS, ingress, ingressClass, problemLines, run, service, slice, snapshotOf, svcBackend, testCerts, tlsSecret, type TestCerts } from './fixtures.ts';
import { createTranslator } from '../../../src/translate/index.ts';
import type { ObjectChange } from '../../../src/sources/store.ts';

const base: KubeObject[] = [ingressClass('portico'), service('web'), slice('web-1', 'web', [{ ip: '10.0.0.1' }])];
const rule = (host: string) => ({ host, http: { paths: [{ path: '/', pathType: 'Prefix' as const, backend: svcBackend('web') }] } });

let certs: TestCerts;
before(async () => {
  certs = await testCerts();
});

describe('TLS', () => {
  test('each tls host gets the certificate, from base64 data or stringData; routes of those hosts are tls', () => {
    for (const encoding of ['data', 'stringData'] as const) {
      const config = run([
        ...base,
        tlsSecret('foo-tls', certs.foo.cert, certs.foo.key, { encoding }),
        ingress('site', { tls: [{ hosts: ['FOO.example.com'], secretName: 'foo-tls' }], rules: [rule('foo.example.com'), rule('plain.example.com')] }),
      ]);
      assert.deepEqual([...config.certificates], [['foo.example.com', { secret: 'default/foo-tls', cert: certs.foo.cert, key: certs.foo.key }]]);
      assert.deepEqual(config.routes.map((r) => [r.host, r.tls]), [['foo.example.com', true], ['plain.example.com', false]]);
      assert.deepEqual(config.problems, []);
    }
  });

  test('a wildcard tls host gets a wildcard certificate and makes the routes under it tls', () => {
    const config = run([
      ...base,
      tlsSecret('wild', certs.wildcard.cert, certs.wildcard.key),
      ingress('site', { tls: [{ hosts: ['*.example.com'], secretName: 'wild' }], rules: [rule('*.example.com'), rule('a.example.com'), rule('a.b.example.com')] }),
    ]);
    assert.deepEqual([...config.certificates.keys()], ['*.example.com']);
    assert.deepEqual(config.routes.map((r) => [r.host, r.tls]), [['*.example.com', true], ['a.b.example.com', false], ['a.example.com', true]]);
    assert.deepEqual(config.problems, []);
  });

  test('a wildcard certificate covers exact hosts under it; a tls entry without hosts covers every rule host', () => {
    const config = run([
      ...base,
      tlsSecret('wild', certs.wildcard.cert, certs.wildcard.key),
      ingress('site', { tls: [{ secretName: 'wild' }], rules: [rule('a.example.com'), rule('b.example.com'), rule('a.example.com'), { http: rule('x').http }] }),
    ]);
    assert.deepEqual([...config.certificates.keys()], ['a.example.com', 'b.example.com']);
    assert.equal(config.certificates.get('a.example.com')!.secret, 'default/wild');
    assert.ok(config.routes.filter((r) => r.host !== '').every((r) => r.tls));
    assert.equal(config.routes.find((r) => r.host === '')!.tls, false);
    assert.ok(config.problems.every((p) => p.reason === 'DuplicatePath'));
  });

  test('a certificate that does not cover the host is used, with a warning', () => {
    const config = run([
      ...base,
      tlsSecret('foo-tls', certs.foo.cert, certs.foo.key),
      tlsSecret('wild', certs.wildcard.cert, certs.wildcard.key),
      ingress('site', {
        tls: [{ hosts: ['bar.example.com', '*.example.com'], secretName: 'foo-tls' }, { hosts: ['*.other.com', 'a.b.example.com'], secretName: 'wild' }],
        rules: [rule('bar.example.com')],
      }),
    ]);
    assert.deepEqual([...config.certificates.keys()], ['bar.example.com', '*.example.com']);
    assert.equal(config.routes[0]!.tls, true);
    assert.deepEqual(problemLines(config), [
      'Ingress default/site warning CertificateHostMismatch: spec.tls[0].hosts[0]: the certificate in Secret default/foo-tls does not cover "bar.example.com"; it is used anyway',
      'Ingress default/site warning CertificateHostMismatch: spec.tls[0].hosts[1]: the certificate in Secret default/foo-tls does not cover "*.example.com"; it is used anyway',
      'Ingress default/site warning TLSHostNotRouted: spec.tls[1].hosts[0]: this Ingress has no rule for "*.other.com"; a certificate is only taken from an Ingress that routes the host, so Secret default/wild is not used for it',
      'Ingress default/site warning TLSHostNotRouted: spec.tls[1].hosts[1]: this Ingress has no rule for "a.b.example.com"; a certificate is only taken from an Ingress that routes the host, so Secret default/wild is not used for it',
    ]);
  });

  test('missing and invalid Secrets are reported and skipped; routes stay served without tls', () => {
    const noCrt = tlsSecret('no-crt', '', certs.foo.key);
    const badCert = tlsSecret('bad-cert', 'not a certificate', certs.foo.key);
    const badKey = tlsSecret('bad-key', certs.foo.cert, '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n');
    const config = run([
      ...base,
      tlsSecret('opaque', certs.foo.cert, certs.foo.key, { type: 'Opaque' }),
      noCrt,
      tlsSecret('no-key', certs.foo.cert, ''),
      badCert,
      badKey,
      tlsSecret('mismatch', certs.foo.cert, certs.bar.key),
      tlsSecret('elsewhere', certs.foo.cert, certs.foo.key, { namespace: 'other' }),
      ingress('site', {
        tls: ['missing', 'opaque', 'no-crt', 'no-key', 'bad-cert', 'bad-key', 'mismatch', 'elsewhere'].map((secretName) => ({ hosts: ['foo.example.com'], secretName })).concat([{ hosts: ['foo.example.com'] } as { hosts: string[]; secretName: string }]),
        rules: [rule('foo.example.com')],
      }),
    ]);
    assert.equal(config.certificates.size, 0);
    assert.deepEqual(config.routes.map((r) => [r.host, r.tls]), [['foo.example.com', false]]);
    const lines = problemLines(config);
    assert.equal(lines.length, 9);
    assert.equal(lines[0], 'Ingress default/site error TLSSecretNotFound: spec.tls[0].secretName: Secret default/missing not found (only Secrets of type kubernetes.io/tls are read); its hosts get the default certificate');
    assert.equal(lines[1], 'Ingress default/site error InvalidTLSSecret: spec.tls[1].secretName: Secret default/opaque has type "Opaque", expected "kubernetes.io/tls"; its hosts get the default certificate');
    assert.equal(lines[2], 'Ingress default/site error InvalidTLSSecret: spec.tls[2].secretName: Secret default/no-crt has no tls.crt; its hosts get the default certificate');
    assert.equal(lines[3], 'Ingress default/site error InvalidTLSSecret: spec.tls[3].secretName: Secret default/no-key has no tls.key; its hosts get the default certificate');
    assert.match(lines[4]!, /^Ingress default\/site error InvalidTLSSecret: spec\.tls\[4\]\.secretName: Secret default\/bad-cert: tls\.crt is not a PEM certificate \(.+\); its hosts get the default certificate$/);
    assert.match(lines[5]!, /^Ingress default\/site error InvalidTLSSecret: spec\.tls\[5\]\.secretName: Secret default\/bad-key: tls\.key is not a PEM private key \(.+\); its hosts get the default certificate$/);
    assert.equal(lines[6], 'Ingress default/site error InvalidTLSSecret: spec.tls[6].secretName: Secret default/mismatch: tls.key does not match the certificate in tls.crt; its hosts get the default certificate');
    assert.equal(lines[7], 'Ingress default/site error TLSSecretNotFound: spec.tls[7].secretName: Secret default/elsewhere not found (only Secrets of type kubernetes.io/tls are read); its hosts get the default certificate');
    assert.equal(lines[8], 'Ingress default/site warning TLSSecretNotFound: spec.tls[8].secretName: not set; these hosts get the default certificate');
  });

  test('an invalid tls host is reported and skipped', () => {
    const config = run([
      ...base,
      tlsSecret('foo-tls', certs.foo.cert, certs.foo.key),
      ingress('site', { tls: [{ hosts: ['10.1.2.3', 'foo.example.com'], secretName: 'foo-tls' }], rules: [rule('foo.example.com')] }),
    ]);
    assert.deepEqual([...config.certificates.keys()], ['foo.example.com']);
    assert.deepEqual(problemLines(config), [
      'Ingress default/site error InvalidHost: spec.tls[0].hosts[0]: "10.1.2.3" is an IP address; Ingress hosts must be DNS names',
    ]);
  });

  test('conflicting certificates for a host: the oldest Ingress wins, the other is told', () => {
    const objects = [
      ...base,
      tlsSecret('foo-tls', certs.foo.cert, certs.foo.key),
      tlsSecret('wild', certs.wildcard.cert, certs.wildcard.key),
      ingress('new', { tls: [{ hosts: ['foo.example.com'], secretName: 'wild' }], rules: [rule('foo.example.com')] }, { created: '2024-05-01T00:00:00Z' }),
      ingress('old', { tls: [{ hosts: ['foo.example.com'], secretName: 'foo-tls' }], rules: [{ host: 'foo.example.com', http: { paths: [{ path: '/old', pathType: 'Prefix' as const, backend: svcBackend('web') }] } }] }, { created: '2024-01-01T00:00:00Z' }),
      ingress('same', { tls: [{ hosts: ['foo.example.com'], secretName: 'foo-tls' }], rules: [{ host: 'foo.example.com', http: { paths: [{ path: '/same', pathType: 'Prefix' as const, backend: svcBackend('web') }] } }] }, { created: '2024-06-01T00:00:00Z' }),
    ];
    const config = run(objects);
    assert.equal(config.certificates.get('foo.example.com')!.secret, 'default/foo-tls');
    // The loser's host is still served over HTTPS, with the winner's certificate.
    assert.equal(config.routes[0]!.tls, true);
    assert.deepEqual(problemLines(config), [
      'Ingress default/new error TLSConflict: spec.tls[0].hosts[0]: host "foo.example.com" already has a certificate from Secret default/foo-tls (Ingress default/old, which is older); Secret default/wild is not used for it',
    ]);
  });

  test('an Ingress with a tls entry but no rule for the host cannot take its certificate over, however old', () => {
    const config = run([
      ...base,
      tlsSecret('foo-tls', certs.foo.cert, certs.foo.key),
      tlsSecret('wild', certs.wildcard.cert, certs.wildcard.key),
      ingress('owner', { tls: [{ hosts: ['foo.example.com'], secretName: 'foo-tls' }], rules: [rule('foo.example.com')] }, { created: '2024-05-01T00:00:00Z' }),
      ingress('squatter', { tls: [{ hosts: ['foo.example.com'], secretName: 'wild' }], rules: [rule('elsewhere.example.com')] }, { created: '2020-01-01T00:00:00Z' }),
    ]);
    assert.equal(config.certificates.get('foo.example.com')!.secret, 'default/foo-tls');
    assert.deepEqual(problemLines(config), [
      'Ingress default/squatter warning TLSHostNotRouted: spec.tls[0].hosts[0]: this Ingress has no rule for "foo.example.com"; a certificate is only taken from an Ingress that routes the host, so Secret default/wild is not used for it',
    ]);
  });

  test('HTTPS is a property of the host: a path added by an Ingress without spec.tls is tls too (and so redirected)', () => {
    const config = run([
      ...base,
      tlsSecret('foo-tls', certs.foo.cert, certs.foo.key),
      ingress('secure', { tls: [{ hosts: ['foo.example.com'], secretName: 'foo-tls' }], rules: [rule('foo.example.com')] }),
      ingress('added', { rules: [{ host: 'foo.example.com', http: { paths: [{ path: '/admin', pathType: 'Prefix' as const, backend: svcBackend('web') }] } }, rule('plain.example.com')] }),
    ]);
    assert.deepEqual(config.routes.map((r) => [r.host, r.path, r.tls]), [['foo.example.com', '/', true], ['foo.example.com', '/admin', true], ['plain.example.com', '/', false]]);
  });

  test('without creationTimestamps (standalone), a conflict message names the order, not age', () => {
    const config = run([
      ...base,
      ingress('b-second', { rules: [rule('foo.example.com')] }),
      ingress('a-first', { rules: [rule('foo.example.com')] }),
    ]);
    const lines = problemLines(config);
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /already served by Ingress default\/a-first .*which comes first \(same or no creationTimestamp: namespace\/name order\)/);
    assert.doesNotMatch(lines[0]!, /older/);
  });

  test('conflicting certificates inside one Ingress: the first entry wins', () => {
    const config = run([
      ...base,
      tlsSecret('foo-tls', certs.foo.cert, certs.foo.key),
      tlsSecret('wild', certs.wildcard.cert, certs.wildcard.key),
      ingress('site', { tls: [{ hosts: ['foo.example.com'], secretName: 'foo-tls' }, { hosts: ['foo.example.com'], secretName: 'wild' }], rules: [rule('foo.example.com')] }),
    ]);
    assert.equal(config.certificates.get('foo.example.com')!.secret, 'default/foo-tls');
    assert.deepEqual(problemLines(config), [
      'Ingress default/site error TLSConflict: spec.tls[1].hosts[0]: host "foo.example.com" already has a certificate from Secret default/foo-tls (spec.tls[0].hosts[0] of this Ingress); Secret default/wild is not used for it',
    ]);
  });

  test('a config\'s delta names the hosts whose certificate changed, and only those; the map is what a fresh translation makes', () => {
    const translate = createTranslator();
    const site = (name: string, host: string, secretName: string | undefined, created = '2024-05-01T00:00:00Z', path = '/') =>
      ingress(name, { ...(secretName !== undefined ? { tls: [{ hosts: [host], secretName }] } : {}), rules: [{ host, http: { paths: [{ path, pathType: 'Prefix' as const, backend: svcBackend('web') }] } }] }, { created });
    const objects: KubeObject[] = [
      ...base,
      tlsSecret('foo-tls', certs.foo.cert, certs.foo.key),
      tlsSecret('bar-tls', certs.bar.cert, certs.bar.key),
      tlsSecret('wild', certs.wildcard.cert, certs.wildcard.key),
      site('a', 'foo.example.com', 'foo-tls'),
      site('b', 'bar.example.com', 'bar-tls'),
    ];
    let previous = translate(snapshotOf(objects), OPTIONS);
    const step = (changes: ObjectChange[], named: string[]) => {
      const config = translate(snapshotOf(objects), OPTIONS, changes);
      assert.equal(config.delta?.base, previous.serial);
      assert.deepEqual(config.delta?.certificates, new Set(named));
      assert.deepEqual(new Map(config.certificates), new Map(run(objects).certificates), 'as a fresh translation');
      for (const [host, certificate] of config.certificates) if (!named.includes(host)) assert.equal(certificate, previous.certificates.get(host), `${host} keeps its object`);
      if (named.length === 0) assert.equal(config.certificates, previous.certificates, 'no certificate changed: the same map');
      previous = config;
    };
    // A route changed on a TLS host: no certificate changed.
    objects[7] = site('b', 'bar.example.com', 'bar-tls', undefined, '/v2');
    step([{ type: 'updated', kind: 'Ingress', key: 'default/b' }], []);
    // The Secret of foo renewed.
    objects[3] = tlsSecret('foo-tls', certs.wildcard.cert, certs.wildcard.key);
    step([{ type: 'updated', kind: 'Secret', key: 'default/foo-tls' }], ['foo.example.com']);
    // An older Ingress takes foo's certificate over with another Secret.
    objects.push(site('older', 'foo.example.com', 'wild', '2024-01-01T00:00:00Z', '/older'));
    step([{ type: 'added', kind: 'Ingress', key: 'default/older' }], ['foo.example.com']);
    // TLS removed from b: its host is named, and leaves the map.
    objects[7] = site('b', 'bar.example.com', undefined, undefined, '/v2');
    step([{ type: 'updated', kind: 'Ingress', key: 'default/b' }], ['bar.example.com']);
    assert.equal(previous.certificates.has('bar.example.com'), false);
  });
});
