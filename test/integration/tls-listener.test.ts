// The HTTPS listener against clients that never finish a TLS handshake (health checks,
// port scans, idle or broken clients): their sockets are closed within the handshake
// timeout, and the open connections and handshake failures show in /metrics.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPortico, type PorticoProcess } from '../support/portico-process.ts';

const BIN = fileURLToPath(new URL('../../bin/portico.js', import.meta.url));

/** Resolves when the socket is fully closed (portico closed its side too); rejects after `ms`. */
function closedWithin(socket: net.Socket, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    if (socket.destroyed) return resolve();
    const timer = setTimeout(() => reject(new Error(`still open after ${ms} ms`)), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
    socket.on('error', (err) => (socket.connecting ? reject(err) : undefined));
  });
}

async function metric(port: number, name: string): Promise<string[]> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return text.split('\n').filter((l) => l.startsWith(name));
}

describe('HTTPS listener: connections that never finish a handshake', () => {
  let dir: string;
  let portico: PorticoProcess;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'portico-tls-listener-'));
    portico = await startPortico(['--manifests', dir, '--tls-handshake-timeout', '400ms']);
  });
  after(async () => {
    await portico.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('connect-and-close probes and silent clients are closed within the handshake timeout', async () => {
    const probes = await Promise.all(Array.from({ length: 50 }, () => connect(portico.https)));
    for (const p of probes) p.end(); // a TCP health check: connect, then FIN
    const silent = await Promise.all(Array.from({ length: 20 }, () => connect(portico.https)));
    const open = await metric(portico.admin, 'portico_open_connections{listener="https"}');
    assert.equal(open.length, 1, 'the gauge exists');
    await Promise.all([...probes, ...silent].map((s) => closedWithin(s, 3000)));
    // The client sees its close before the worker has counted its own (and reported it to the
    // primary, which serves /metrics): the gauge reaches 0 shortly after, not at the same instant.
    let after: string[] = [];
    for (const deadline = Date.now() + 2000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 50))) {
      after = await metric(portico.admin, 'portico_open_connections{listener="https"}');
      if (after[0]?.endsWith(' 0')) break;
    }
    assert.deepEqual(after, ['portico_open_connections{listener="https"} 0']);
    const failures = await metric(portico.admin, 'portico_tls_handshake_failures_total');
    const byReason = Object.fromEntries(failures.map((l) => [/reason="([^"]+)"/.exec(l)![1], Number(l.split(' ').at(-1))]));
    assert.ok((byReason.timeout ?? 0) >= 20, `timeouts counted: ${failures.join(', ')}`);
  });

  test('a garbage client gets its connection closed at once and is counted', async () => {
    const socket = await connect(portico.https);
    socket.on('error', () => {});
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'); // plain HTTP to the TLS port
    socket.resume();
    await closedWithin(socket, 2000);
    const failures = await metric(portico.admin, 'portico_tls_handshake_failures_total');
    assert.ok(failures.some((l) => l.includes('reason="protocol"')), failures.join(', '));
  });
});

/** Completes a TLS handshake with the given client options; resolves with the protocol, or the error code. */
function handshake(port: number, options: tls.ConnectionOptions): Promise<string> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, servername: 'any.test', ...options }, () => {
      resolve(`${socket.getProtocol()} ${socket.getCipher().name}`);
      socket.end();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(`error ${err.code ?? err.message}`));
  });
}

describe('HTTPS listener: TLS versions, ciphers and ALPN', () => {
  let dir: string;
  let portico: PorticoProcess;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'portico-tls-knobs-'));
    portico = await startPortico(['--manifests', dir]);
  });
  after(async () => {
    await portico.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('by default TLS 1.2 with forward-secret AEAD suites and TLS 1.3 are served; CBC and SHA-1 suites are not', async () => {
    assert.match(await handshake(portico.https, {}), /^TLSv1\.3 /);
    assert.match(await handshake(portico.https, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA256' }), /^TLSv1\.2 ECDHE-/);
    assert.match(await handshake(portico.https, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES128-SHA:ECDHE-ECDSA-AES128-SHA:AES128-SHA' }), /^error /);
    assert.match(await handshake(portico.https, { maxVersion: 'TLSv1.2', ciphers: 'AES128-GCM-SHA256' }), /^error /, 'no RSA key exchange');
  });

  test('ALPN: h2 and http/1.1 are offered; a client offering neither is refused, and the log says why', async () => {
    const alpn = (protocols: string[]) =>
      new Promise<string | false | null>((resolve, reject) => {
        const socket = tls.connect({ host: '127.0.0.1', port: portico.https, rejectUnauthorized: false, servername: 'any.test', ALPNProtocols: protocols }, () => {
          resolve(socket.alpnProtocol);
          socket.end();
        });
        socket.on('error', reject);
      });
    assert.equal(await alpn(['h2']), 'h2');
    assert.equal(await alpn(['h2', 'http/1.1']), 'h2');
    assert.equal(await alpn(['http/1.1']), 'http/1.1');
    assert.match(await handshake(portico.https, { ALPNProtocols: ['spdy/3.1'] }), /^error /);
    const line = await portico.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('ALPN protocols portico does not serve'), 3000);
    assert.equal(line.reason, 'no_common_alpn');
    assert.match(String(line.msg), /h2 and http\/1\.1/);
  });

  test('--tls-min-version TLSv1.3 refuses TLS 1.2 clients; a bad value or cipher list exits 2 naming the flag', async () => {
    const strict = await startPortico(['--manifests', dir, '--tls-min-version', 'TLSv1.3']);
    try {
      assert.match(await handshake(strict.https, { maxVersion: 'TLSv1.2' }), /^error /);
      assert.match(await handshake(strict.https, {}), /^TLSv1\.3 /);
    } finally {
      await strict.stop();
    }
    for (const [flag, value] of [['--tls-min-version', 'TLSv1.1'], ['--tls-ciphers', 'NOT-A-CIPHER']]) {
      const result = spawnSync(process.execPath, [BIN, '--manifests', dir, flag!, value!], { encoding: 'utf8' });
      assert.equal(result.status, 2, result.stderr);
      assert.match(result.stderr, new RegExp(flag!));
      assert.equal(result.stderr.trim().split('\n').length, 1, 'one line');
    }
  });
});
