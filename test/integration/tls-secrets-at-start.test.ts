// Black-box: TLS Secrets read at start are checked in child processes while the manifests
// load (src/tls/secret-checks.ts). What a user sees must be as when translation checked
// them: each good Secret's certificate served for its host, a broken one reported on its
// Ingress with its hosts on the default certificate, a certificate that does not cover
// its host used with a warning; and no checking process left once started.
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generate } from 'selfsigned';
import { startEchoServer } from '../../examples/echo-server.ts';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/objects.ts';
import { freePort } from '../support/gateway-objects.ts';
import { servedFingerprint } from '../support/tls.ts';

const pemsFor = (name: string) => generate([{ name: 'commonName', value: name }], { keyType: 'ec', curve: 'P-256', extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: name }] }] });

describe('TLS Secrets at start', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  let echo: Awaited<ReturnType<typeof startEchoServer>>;
  const fingerprints = new Map<string, string>();

  before(async () => {
    echo = await startEchoServer({ name: 'web' });
    const [good, other, elsewhere] = await Promise.all([pemsFor('good.start.test'), pemsFor('other.start.test'), pemsFor('elsewhere.test')]);
    fingerprints.set('good', new X509Certificate(good.cert).fingerprint256);
    fingerprints.set('elsewhere', new X509Certificate(elsewhere.cert).fingerprint256);
    dir.write('base.yaml', [ingressClass('portico'), ...serviceWithEndpoints('web', [echo.port])]);
    const secrets: Record<string, [string, string]> = {
      good: [good.cert, good.private],
      mismatched: [good.cert, other.private],
      notpem: ['not a certificate', good.private],
      uncovered: [elsewhere.cert, elsewhere.private],
    };
    for (const [name, [cert, key]] of Object.entries(secrets)) {
      const host = `${name}.start.test`;
      dir.write(`${name}.yaml`, [ingress(name, { rules: [{ host, paths: [{ path: '/', service: 'web' }] }], tls: [{ hosts: [host], secretName: `${name}-tls` }] }), tlsSecret(`${name}-tls`, cert, key)]);
    }
    portico = await startPortico(['--manifests', dir.path, '--https-port', String(await freePort())]);
  });

  after(async () => {
    assert.equal(await portico?.stop(), 0);
    await echo?.close();
    dir.cleanup();
  });

  const served = (servername: string) => servedFingerprint(portico.https, servername);

  test('good certificates are served, broken Secrets reported and their hosts on the default certificate', async () => {
    assert.equal(await served('good.start.test'), fingerprints.get('good'));
    assert.equal(await served('uncovered.start.test'), fingerprints.get('elsewhere'));
    const fallback = await served('unknown.test');
    assert.equal(await served('mismatched.start.test'), fallback);
    assert.equal(await served('notpem.start.test'), fallback);
    assert.notEqual(fallback, fingerprints.get('good'));
    const messages = portico.logs.map((l) => String(l.msg));
    for (const expected of [
      /Ingress default\/mismatched.*Secret default\/mismatched-tls: tls\.key does not match the certificate in tls\.crt/,
      /Ingress default\/notpem.*Secret default\/notpem-tls: tls\.crt is not a PEM certificate/,
      /Ingress default\/uncovered.*does not cover "uncovered\.start\.test"; it is used anyway/,
    ]) {
      assert.ok(messages.some((m) => expected.test(m)), `a log line matching ${expected}:\n${messages.join('\n')}`);
    }
  });

  test('no checking process is left running', async () => {
    const children = () => readFileSync(`/proc/${portico.child.pid}/task/${portico.child.pid}/children`, 'utf8').trim();
    await eventually(async () => children() === '', 10_000, 'the checking processes ended');
  });
});
