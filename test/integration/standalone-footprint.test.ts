// Standalone mode does not load @kubernetes/client-node (about 90 MB of RSS): only
// cluster mode imports the Kubernetes client, on demand.
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
