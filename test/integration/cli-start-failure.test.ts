// A start that fails after the workers were forked (a --manifests directory that does not
// exist is found only when the source starts): one line on stderr, exit code 1, and no
// worker left to die of a broken IPC channel with a stack trace under that line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/portico.js', import.meta.url));

test('a missing --manifests directory with 2 workers: one clear line, exit 1, no stack trace', async () => {
  const parent = mkdtempSync(join(tmpdir(), 'portico-missing-'));
  const missing = join(parent, 'nope');
  try {
    const child = spawn(process.execPath, [BIN, '--manifests', missing, '--workers', '2', '--http-port', '0', '--https-port', '0', '--admin-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdout!.resume();
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    // The workers' output reaches the same stderr; give a dying one a moment to write.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(code, 1);
    assert.deepEqual(stderr.trim().split('\n'), [`portico: --manifests ${missing}: no such directory`]);
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});
