// Black-box: a renewed TLS Secret through the real CLI, in one process and with two
// workers. Each change installs only the hosts whose certificate changed (the config's
// delta, the workers' replica, the certificate store): SNI must serve the new certificate
// for exactly those hosts, the same one as before for the others, and the default
// certificate for a host that lost its TLS section.
import { X509Certificate } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generate } from 'selfsigned';
import { startEchoServer } from '../../examples/echo-server.ts';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/objects.ts';
import { freePort } from '../support/gateway-objects.ts';
import { servedFingerprint } from '../support/tls.ts';

type Pems = Awaited<ReturnType<typeof generate>>;

const newPems = () => generate([{ name: 'commonName', value: '*.renew.test' }], { keyType: 'ec', curve: 'P-256', extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: '*.renew.test' }] }] });
const fingerprintOf = (pems: Pems) => new X509Certificate(pems.cert).fingerprint256;

for (const workers of ['1', '2']) {
  describe(`TLS renewal, --workers ${workers}`, () => {
    const dir = new ManifestDir();
    let portico: PorticoProcess;
    let echo: Awaited<ReturnType<typeof startEchoServer>>;
    const pems = new Map<string, Pems>();

    /** Ingress `name` on `name`.renew.test, with TLS from its own Secret holding `certificate` (none: no TLS section). */
    const write = (name: string, certificate: Pems | undefined) => {
      const host = `${name}.renew.test`;
      const rules = [{ host, paths: [{ path: '/', service: 'web' }] }];
      dir.write(
        `${name}.yaml`,
        certificate === undefined
          ? [ingress(name, { rules })]
          : [ingress(name, { rules, tls: [{ hosts: [host], secretName: `${name}-tls` }] }), tlsSecret(`${name}-tls`, certificate.cert, certificate.private)],
      );
    };

    /** The fingerprint of the certificate served for `servername`. */
    const served = (servername: string) => servedFingerprint(portico.https, servername);

    /** Several handshakes per host (new connections, so with two workers both answer): each gets `expected`. */
    const serves = async (expected: ReadonlyMap<string, string>) => {
      for (let i = 0; i < 8; i++) for (const [host, fingerprint] of expected) if ((await served(host)) !== fingerprint) return false;
      return true;
    };

    before(async () => {
      echo = await startEchoServer({ name: 'web' });
      for (const name of ['a', 'b', 'c']) pems.set(name, await newPems());
      dir.write('base.yaml', [ingressClass('portico'), ...serviceWithEndpoints('web', [echo.port])]);
      for (const name of ['a', 'b', 'c']) write(name, pems.get(name));
      portico = await startPortico(['--manifests', dir.path, '--workers', workers, '--https-port', String(await freePort())]);
    });

    after(async () => {
      assert.equal(await portico?.stop(), 0);
      await echo?.close();
      dir.cleanup();
    });

    test('the renewed host gets its new certificate, the others keep theirs; a host that lost TLS gets the default', async () => {
      const fingerprints = new Map(['a', 'b', 'c'].map((name) => [`${name}.renew.test`, fingerprintOf(pems.get(name)!)]));
      await eventually(() => serves(fingerprints), 10_000, 'each host served its certificate');
      const fallback = await served('unknown.test');
      assert.ok(![...fingerprints.values()].includes(fallback));

      const renewed = await newPems();
      write('b', renewed);
      fingerprints.set('b.renew.test', fingerprintOf(renewed));
      await eventually(() => serves(fingerprints), 10_000, 'b served its renewed certificate, a and c theirs');

      // The TLS section removed from c: the default certificate; a and b unchanged.
      write('c', undefined);
      fingerprints.set('c.renew.test', fallback);
      await eventually(() => serves(fingerprints), 10_000, 'c served the default certificate');

      // And back, with a certificate whose Secret TLS refuses (a key of another certificate): the default still, and a problem logged.
      const other = await newPems();
      dir.write('c.yaml', [
        ingress('c', { rules: [{ host: 'c.renew.test', paths: [{ path: '/', service: 'web' }] }], tls: [{ hosts: ['c.renew.test'], secretName: 'c-tls' }] }),
        tlsSecret('c-tls', renewed.cert, other.private),
      ]);
      await eventually(async () => portico.logs.some((l) => /c-tls.*does not match/.test(String(l.msg))), 10_000, 'the bad Secret reported');
      assert.ok(await serves(fingerprints), 'c keeps the default certificate, a and b theirs');
    });
  });
}
