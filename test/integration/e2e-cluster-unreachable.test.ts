// Cluster mode with an API server that cannot be reached: the log names the server and
// the cause (not undici's bare "fetch failed"), and does not claim to serve a last known
// state it never had.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { closedPort } from '../support/ports.ts';

const BIN = fileURLToPath(new URL('../../bin/portico.js', import.meta.url));

test('an unreachable API server is named, with the cause', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'portico-unreachable-'));
  const port = await closedPort();
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "https://127.0.0.1:${port}", insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n`,
  );
  const child = spawn(process.execPath, [BIN, '--kubeconfig', kubeconfig, '--http-port', '0', '--https-port', '0', '--admin-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const line = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no warning within 40 s')), 40_000);
      createInterface({ input: child.stdout! }).on('line', (text) => {
        const parsed = JSON.parse(text) as Record<string, unknown>;
        if (parsed.level === 40 || parsed.level === 'warn') {
          clearTimeout(timer);
          resolve(parsed);
        }
      });
    });
    const msg = String(line.msg);
    assert.ok(msg.includes(`https://127.0.0.1:${port}`), msg);
    assert.match(msg, /ECONNREFUSED/);
    assert.match(msg, /is known yet/);
    assert.doesNotMatch(msg, /last known state/);
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
