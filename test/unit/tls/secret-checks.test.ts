// TLS Secrets checked ahead of translation in child processes (src/tls/secret-checks.ts):
// translation fed those checks must make the same config, with the same problems, as
// translation that checks each Secret itself; and no process may be left running.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject, Secret } from '../../../src/model/k8s.ts';
import { createTranslator } from '../../../src/translate/index.ts';
import { SecretChecks } from '../../../src/tls/secret-checks.ts';
import { OPTIONS, ingress, ingressClass, problemLines, service, slice, snapshotOf, svcBackend, testCerts, tlsSecret, type TestCerts } from '../translate/fixtures.ts';

let certs: TestCerts;
before(async () => {
  certs = await testCerts();
});

/** One Ingress per Secret, on <name>.example.com. */
function objects(secrets: readonly Secret[]): KubeObject[] {
  return [
    ingressClass('portico'),
    service('web'),
    slice('web-1', 'web', [{ ip: '10.0.0.1' }]),
    ...secrets,
    ...secrets.map((secret) => {
      const host = `${secret.metadata.name}.example.com`;
      return ingress(secret.metadata.name, { tls: [{ hosts: [host], secretName: secret.metadata.name }], rules: [{ host, http: { paths: [{ path: '/', pathType: 'Prefix' as const, backend: svcBackend('web') }] } }] });
    }),
  ];
}

async function until(condition: () => boolean, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 20))) if (condition()) return true;
  return condition();
}

describe('SecretChecks', () => {
  test('translation with the checks made ahead gives the same certificates and problems, and the processes end', async () => {
    const secrets = [
      tlsSecret('foo', certs.foo.cert, certs.foo.key),
      tlsSecret('wild', certs.wildcard.cert, certs.wildcard.key, { encoding: 'data' }),
      tlsSecret('mismatched', certs.foo.cert, certs.bar.key),
      tlsSecret('notpem', 'not a certificate', certs.foo.key),
      tlsSecret('nokey', certs.foo.cert, ''),
      tlsSecret('opaque', certs.foo.cert, certs.foo.key, { type: 'Opaque' }),
    ];
    const snapshot = snapshotOf(objects(secrets));
    const checks = new SecretChecks({ processes: 2, batch: 1, idleMs: 50 });
    for (const secret of secrets) checks.add(secret);
    await checks.settled();
    // The pairs there are to parse were checked; a missing value or another type is translation's to report.
    assert.deepEqual(
      secrets.map((s) => checks.known(s)?.ok),
      [true, true, false, false, undefined, undefined],
    );

    const ahead = createTranslator(checks.known)(snapshot, OPTIONS);
    const inline = createTranslator()(snapshot, OPTIONS);
    assert.deepEqual([...ahead.certificates], [...inline.certificates]);
    assert.deepEqual(problemLines(ahead), problemLines(inline));
    const invalid = problemLines(ahead).filter((line) => line.includes('InvalidTLSSecret'));
    const expected = [
      /Secret default\/mismatched: tls\.key does not match the certificate in tls\.crt; its hosts get the default certificate$/,
      /Secret default\/nokey has no tls\.key; its hosts get the default certificate$/,
      /Secret default\/notpem: tls\.crt is not a PEM certificate \(.+\); its hosts get the default certificate$/,
      /Secret default\/opaque has type "Opaque", expected "kubernetes\.io\/tls"; its hosts get the default certificate$/,
    ];
    assert.equal(invalid.length, expected.length, invalid.join('\n'));
    invalid.forEach((line, i) => assert.match(line, expected[i]!));
    assert.deepEqual([...ahead.certificates.keys()].sort(), ['foo.example.com', 'wild.example.com']);
    assert.ok(await until(() => checks.processCount === 0, 5_000), 'the checking processes end once idle');
  });

  test('what translation reports comes from the checks made ahead, when there are', () => {
    const secret = tlsSecret('foo', certs.foo.cert, certs.foo.key);
    const config = createTranslator(() => ({ ok: false, error: 'tls.key does not match the certificate in tls.crt' }))(snapshotOf(objects([secret])), OPTIONS);
    assert.deepEqual(config.certificates.size, 0);
    assert.ok(problemLines(config).some((line) => line.includes('Secret default/foo: tls.key does not match')), problemLines(config).join('\n'));
  });

  test('stopped, it leaves what it had to translation, and settles', async () => {
    const secret = tlsSecret('foo', certs.foo.cert, certs.foo.key);
    const checks = new SecretChecks({ processes: 1 });
    checks.add(secret);
    const settled = checks.settled();
    checks.stop();
    await settled;
    assert.equal(checks.processCount, 0);
    const config = createTranslator(checks.known)(snapshotOf(objects([secret])), OPTIONS);
    assert.deepEqual([...config.certificates.keys()], ['foo.example.com']);
  });
});
