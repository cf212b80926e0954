// Black-box: the defaults a production edge needs, through the real CLI: a request body
// limit (1m, as nginx), HSTS on HTTPS answers of hosts with a certificate, a cap on
// client connections per listener, and listeners on IPv6 and IPv4 alike.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import selfsigned from 'selfsigned';
import { startEchoServer } from '../../examples/echo-server.ts';
import { startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/objects.ts';
import { get, send } from '../support/http.ts';

describe('defaults: body limit, HSTS', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  let echo: Awaited<ReturnType<typeof startEchoServer>>;

  before(async () => {
    echo = await startEchoServer({ name: 'echo' });
    const cert = await selfsigned.generate([{ name: 'commonName', value: 'secure.test' }], { keyType: 'ec', curve: 'P-256', extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'secure.test' }] }] });
    dir.write('all.yaml', [
      ingressClass('portico'),
      tlsSecret('secure-tls', cert.cert, cert.private),
      ingress('secure', { tls: [{ hosts: ['secure.test'], secretName: 'secure-tls' }], rules: [{ host: 'secure.test', paths: [{ path: '/', service: 'echo' }] }] }),
      ingress('plain', { rules: [{ host: 'plain.test', paths: [{ path: '/', service: 'echo' }] }] }),
      ingress('big', { rules: [{ host: 'big.test', paths: [{ path: '/', service: 'echo' }] }] }, { annotations: { 'portico.dev/max-body-size': '0' } }),
      ...serviceWithEndpoints('echo', [echo.port]),
    ]);
    portico = await startPortico(['--manifests', dir.path]);
  });
  after(async () => {
    await portico?.stop();
    await echo?.close();
    dir.cleanup();
  });

  test('a body over 1 MiB gets 413 by default; portico.dev/max-body-size: "0" lifts the limit for its Ingress', async () => {
    const body = Buffer.alloc(1024 * 1024 + 1, 'x');
    assert.equal((await send(portico.http, { method: 'POST', host: 'plain.test', body })).status, 413);
    assert.equal((await send(portico.http, { method: 'POST', host: 'plain.test', body: body.subarray(1) })).status, 200, 'exactly 1 MiB passes');
    assert.equal((await send(portico.http, { method: 'POST', host: 'big.test', body })).status, 200);
  });

  test('HSTS on HTTPS answers of a host with a certificate, not over HTTP and not for other hosts', async () => {
    const secure = await get(portico.https, 'secure.test', '/', { https: { servername: 'secure.test', rejectUnauthorized: false } });
    assert.equal(secure.status, 200);
    assert.equal(secure.headers['strict-transport-security'], 'max-age=15724800');
    const other = await get(portico.https, 'plain.test', '/', { https: { servername: 'plain.test', rejectUnauthorized: false } });
    assert.equal(other.headers['strict-transport-security'], undefined, 'a host on the default certificate');
    const redirected = await get(portico.http, 'secure.test', '/');
    assert.equal(redirected.status, 308);
    assert.equal(redirected.headers['strict-transport-security'], undefined, 'never over plain HTTP');
  });
});

describe('defaults: connection cap, dual-stack', () => {
  const dir = new ManifestDir();
  after(() => dir.cleanup());

  test('past --max-client-connections new connections are closed at once, counted and logged; the open ones keep working', async () => {
    const portico = await startPortico(['--manifests', dir.path, '--max-client-connections', '2']);
    const open: net.Socket[] = [];
    try {
      for (let i = 0; i < 2; i++) open.push(await new Promise<net.Socket>((resolve) => { const s = net.connect(portico.http, '127.0.0.1', () => resolve(s)); }));
      const third = net.connect(portico.http, '127.0.0.1');
      third.on('error', () => {});
      await new Promise<void>((resolve) => third.on('close', () => resolve()));
      await portico.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('--max-client-connections (2) reached'), 3000);
      const metrics = await (await fetch(`http://127.0.0.1:${portico.admin}/metrics`)).text();
      assert.match(metrics, /portico_dropped_connections_total\{listener="http"\} [1-9]/);
      open[0]!.write('GET / HTTP/1.1\r\nHost: any.test\r\n\r\n');
      const answer = await new Promise<string>((resolve) => open[0]!.once('data', (d) => resolve(d.toString())));
      assert.match(answer, /^HTTP\/1\.1 404/, 'an open connection is served');
    } finally {
      for (const s of open) s.destroy();
      await portico.stop();
    }
  });

  test('the default bind (::) answers on IPv4 and IPv6', async () => {
    const portico = await startPortico(['--manifests', dir.path, '--bind', '::']);
    try {
      assert.equal((await get(portico.http, 'any.test', '/')).status, 404, 'IPv4');
      const v6 = await new Promise<string>((resolve, reject) => {
        const s = net.connect({ port: portico.http, host: '::1' }, () => s.write('GET / HTTP/1.1\r\nHost: any.test\r\nConnection: close\r\n\r\n'));
        let data = '';
        s.on('data', (d) => (data += d));
        s.on('end', () => resolve(data));
        s.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRNOTAVAIL' || err.code === 'ENETUNREACH' ? resolve('no IPv6 here') : reject(err)));
      });
      if (v6 !== 'no IPv6 here') assert.match(v6, /^HTTP\/1\.1 404/, 'IPv6');
    } finally {
      await portico.stop();
    }
  });
});
