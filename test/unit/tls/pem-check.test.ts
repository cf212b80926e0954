// The host check of a TLS Secret's certificate: plain names are matched without OpenSSL
// (src/tls/pem-check.ts), others by X509Certificate.checkHost. Whatever the path, the
// answer (and so the CertificateHostMismatch warning a user sees) must be OpenSSL's.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { generate } from 'selfsigned';
import { parseTlsSecret } from '../../../src/translate/tls.ts';
import { sampleHostFor } from '../../../src/translate/hosts.ts';
import { checkPems, plainDnsNames } from '../../../src/tls/pem-check.ts';
import { tlsSecret } from '../translate/fixtures.ts';

interface Pems {
  cert: string;
  key: string;
}

async function certificate(commonName: string, dnsNames: readonly string[]): Promise<Pems> {
  const pems = await generate([{ name: 'commonName', value: commonName }], {
    keyType: 'ec',
    curve: 'P-256',
    // Without a subjectAltName extension selfsigned would add one with the CN.
    extensions: dnsNames.length === 0 ? [{ name: 'basicConstraints', cA: false }] : [{ name: 'subjectAltName', altNames: dnsNames.map((value) => ({ type: 2 as const, value })) }],
  });
  return { cert: pems.cert, key: pems.private };
}

const NAME_SETS: readonly (readonly string[])[] = [
  ['a.example.com', '*.example.com', 'Mixed.Example.COM'],
  ['*.com'],
  ['xn--bcher-kva.example', '*.xn--bcher-kva.example'],
  ['f*.example.com'],
  ['*.a-b.example.org', 'a-.example.org'],
  // Names that contain a host's name without being it.
  ['xa.example.com', 'a.example.comx'],
  // No DNS name: OpenSSL looks at the subject's CN.
  [],
];

const HOSTS = [
  'a.example.com',
  'A.EXAMPLE.COM',
  'b.example.com',
  'x.a.example.com',
  'example.com',
  'mixed.example.com',
  'foo.com',
  'x.com',
  'www.xn--bcher-kva.example',
  'xn--bcher-kva.example',
  'xn--x.example.com',
  'fo.example.com',
  'f.example.com',
  'cn.example.net',
  '*.example.com',
  '*.com',
  'x.a-b.example.org',
  'a-.example.org',
  'localhost',
  'under_score.example.com',
];

describe('certificate host coverage', () => {
  const certs: Pems[] = [];
  before(async () => {
    for (const names of NAME_SETS) certs.push(await certificate('cn.example.net', names));
  });

  test('agrees with X509Certificate.checkHost for plain and other names, and hosts', () => {
    const disagreements: string[] = [];
    certs.forEach((pems, i) => {
      const parsed = parseTlsSecret(tlsSecret(`s${i}`, pems.cert, pems.key));
      assert.ok(parsed.ok);
      const x509 = new X509Certificate(pems.cert);
      for (const host of HOSTS) {
        const expected = x509.checkHost(sampleHostFor(host)) !== undefined;
        if (parsed.covers(host) !== expected) disagreements.push(`${JSON.stringify(NAME_SETS[i])} ${host}: OpenSSL says ${expected}`);
      }
    });
    assert.deepEqual(disagreements, []);
  });

  test('plain names are taken from the certificate; others are left to OpenSSL', () => {
    const names = certs.map((pems) => {
      const check = checkPems(pems.cert, pems.key);
      assert.ok(check.ok);
      return check.names;
    });
    assert.deepEqual(names, [['a.example.com', '*.example.com', 'mixed.example.com'], undefined, ['xn--bcher-kva.example', '*.xn--bcher-kva.example'], undefined, undefined, ['xa.example.com', 'a.example.comx'], undefined]);
    assert.deepEqual(plainDnsNames('DNS:a.example.com, IP Address:10.0.0.1, email:x@example.com'), ['a.example.com']);
    assert.equal(plainDnsNames('DNS:a.example.com, DNS:"b,c.example.com"'), undefined);
    assert.equal(plainDnsNames(undefined), undefined);
  });

  test('a broken pair says what is wrong, without the Secret name (translation adds it)', () => {
    const [good, other] = certs;
    const notPem = checkPems('not a certificate', good!.key);
    assert.ok(!notPem.ok && notPem.error.startsWith('tls.crt is not a PEM certificate ('), JSON.stringify(notPem));
    const badKey = checkPems(good!.cert, 'not a key');
    assert.ok(!badKey.ok && badKey.error.startsWith('tls.key is not a PEM private key ('), JSON.stringify(badKey));
    assert.deepEqual(checkPems(good!.cert, other!.key), { ok: false, error: 'tls.key does not match the certificate in tls.crt' });
  });
});
