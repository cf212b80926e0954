// Standalone mode does not load @kubernetes/client-node (about 90 MB of RSS): only
// cluster mode imports the Kubernetes client, on demand. Nor does an idle portico hold
// what it does not use yet: node:http2 (until an HTTP/2 connection), undici's fetch
// (which an ESM import of node:http pulls in), or the certificate generator (run in a
// child process). Nor the modules only an ESM import of a built-in would load: such an
// import reads every export, and the lazy ones (node:crypto's webcrypto, node:util's
// parseArgs, node:fs's streams) load more (about 2 MB of RSS per process).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** Runs `body` in a fresh Node and returns the module specifiers it resolved that name the Kubernetes client. */
function clientNodeImports(body: string): string[] {
  const script = `
    import { registerHooks } from 'node:module';
    const seen = [];
    registerHooks({ resolve(specifier, context, next) { if (specifier.includes('@kubernetes/client-node')) seen.push(specifier); return next(specifier, context); } });
    ${body}
    process.stdout.write(JSON.stringify(seen));
    process.exit(0);`;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout) as string[];
}

test('a standalone portico starts, serves and stops without loading the Kubernetes client', () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-footprint-'));
  try {
    const seen = clientNodeImports(`
      const { parseOptions } = await import(${JSON.stringify(SRC + 'config/flags.ts')});
      const { startPortico } = await import(${JSON.stringify(SRC + 'portico.ts')});
      const portico = await startPortico(parseOptions(['--manifests', ${JSON.stringify(dir)}, '--http-port', '0', '--https-port', '0', '--admin-port', 'off', '--log-level', 'error']));
      await portico.stop(0);`);
    assert.deepEqual(seen, []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the probe sees the client when it is loaded (cluster mode\'s module)', () => {
  const seen = clientNodeImports(`await import(${JSON.stringify(SRC + 'kube/client.ts')});`);
  assert.ok(seen.length > 0);
});

test('a cluster-mode portico reads its routes from the API without loading the client\'s generated API package', () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-footprint-'));
  const SUPPORT = fileURLToPath(new URL('../support/', import.meta.url));
  try {
    // Every module of the client it loads (the package imports its own files relatively).
    const script = `
      import { registerHooks } from 'node:module';
      const loaded = [];
      registerHooks({ load(url, context, next) { if (url.includes('/@kubernetes/client-node/')) loaded.push(url.slice(url.indexOf('/dist/') + 1)); return next(url, context); } });
      const { FakeKubeApiServer } = await import(${JSON.stringify(SUPPORT + 'kube-apiserver/index.ts')});
      const { ingress, ingressClass, serviceWithEndpoints } = await import(${JSON.stringify(SUPPORT + 'objects.ts')});
      const api = await FakeKubeApiServer.start();
      for (const o of [ingressClass('portico'), ingress('shop', { rules: [{ host: 'shop.test', paths: [{ path: '/', service: 'web' }] }] }), ...serviceWithEndpoints('web', [8080])]) api.apply(o);
      const { parseOptions } = await import(${JSON.stringify(SRC + 'config/flags.ts')});
      const { startPortico } = await import(${JSON.stringify(SRC + 'portico.ts')});
      const portico = await startPortico(parseOptions(['--kubeconfig', api.writeKubeconfig(${JSON.stringify(dir)}), '--http-port', '0', '--https-port', '0', '--admin-port', 'off', '--log-level', 'error']));
      const routed = portico.holder.current.match('shop.test', '/') !== undefined;
      await portico.stop(0);
      await api.stop();
      process.stdout.write(JSON.stringify({ loaded, routed }));
      process.exit(0);`;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(result.status, 0, result.stderr);
    const { loaded, routed } = JSON.parse(result.stdout) as { loaded: string[]; routed: boolean };
    assert.ok(routed, 'shop.test is routed: its Ingress was read from the API');
    assert.ok(loaded.includes('dist/config.js'), 'KubeConfig is loaded');
    assert.deepEqual(loaded.filter((m) => m.startsWith('dist/gen/models/') || m.startsWith('dist/gen/apis/') || m.startsWith('dist/gen/types/') || m === 'dist/gen/index.js'), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Runs `body` in a fresh Node; returns the built-in modules and the package specifiers it loaded. */
function loadedModules(body: string): { builtins: string[]; packages: string[] } {
  const script = `
    import { registerHooks } from 'node:module';
    const packages = [];
    registerHooks({ resolve(specifier, context, next) { if (!specifier.startsWith('.') && !specifier.startsWith('node:') && !specifier.startsWith('file:') && !specifier.startsWith('/')) packages.push(specifier); return next(specifier, context); } });
    ${body}
    const builtins = process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice('NativeModule '.length));
    process.stdout.write(JSON.stringify({ builtins, packages }));
    process.exit(0);`;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout) as { builtins: string[]; packages: string[] };
}

test('an idle portico with HTTPS and a generated default certificate loads neither node:http2, undici nor the certificate library', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-footprint-'));
  try {
    const { builtins, packages } = loadedModules(`
      const { parseOptions } = await import(${JSON.stringify(SRC + 'config/flags.ts')});
      const { startPortico } = await import(${JSON.stringify(SRC + 'portico.ts')});
      const portico = await startPortico(parseOptions(['--manifests', ${JSON.stringify(dir)}, '--workers', '1', '--http-port', '0', '--https-port', '0', '--admin-port', '0', '--log-level', 'error']));
      const tls = await import('node:tls');
      // The HTTPS listener answers with the generated certificate, made in a child process.
      const subject = await new Promise((resolve, reject) => {
        const socket = tls.connect({ port: portico.ports.https, host: '127.0.0.1', rejectUnauthorized: false }, () => { resolve(socket.getPeerCertificate().subject.CN); socket.end(); });
        socket.on('error', reject);
      });
      if (subject !== 'portico default certificate') throw new Error('unexpected certificate: ' + subject);
      await portico.stop(0);`);
    assert.ok(builtins.includes('tls'), 'the probe sees built-in modules');
    assert.deepEqual(
      builtins.filter((m) => m === 'http2' || m.startsWith('internal/http2/') || m.includes('undici')),
      [],
    );
    assert.deepEqual(
      packages.filter((p) => p === 'selfsigned' || p.startsWith('@peculiar/')),
      [],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an idle standalone portico loads none of the built-ins that only an ESM import of node:crypto, node:util or node:fs loads', () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-footprint-'));
  try {
    const { builtins } = loadedModules(`
      const { parseOptions } = await import(${JSON.stringify(SRC + 'config/flags.ts')});
      const { startPortico } = await import(${JSON.stringify(SRC + 'portico.ts')});
      const portico = await startPortico(parseOptions(['--manifests', ${JSON.stringify(dir)}, '--http-port', '0', '--https-port', '0', '--admin-port', '0', '--log-level', 'error']));
      const res = await fetch('http://127.0.0.1:' + portico.ports.http + '/', { headers: { host: 'nowhere.test' } });
      if (res.status !== 404) throw new Error('unexpected status ' + res.status);
      await portico.stop(0);`);
    assert.ok(builtins.includes('crypto') && builtins.includes('fs'), 'the probe sees built-in modules');
    assert.deepEqual(
      builtins.filter((m) => m === 'internal/crypto/webcrypto' || m.startsWith('internal/util/parse_args/') || m === 'internal/fs/streams'),
      [],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
