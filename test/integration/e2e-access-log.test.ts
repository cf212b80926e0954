// The access log is buffered (one write per ~64 KiB or per second), yet no line is lost:
// what is buffered when portico stops is written before it exits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startPortico } from '../support/portico-process.ts';
import { ManifestDir, ingressClass } from '../support/objects.ts';
import { get } from '../support/http.ts';

test('every request has its access line, also those still buffered at SIGTERM', async () => {
  const dir = new ManifestDir();
  dir.write('class.yaml', [ingressClass('portico')]);
  const portico = await startPortico(['--manifests', dir.path]);
  try {
    for (let i = 0; i < 40; i++) assert.equal((await get(portico.http, 'nowhere.test', `/n${i}`)).status, 404);
    assert.equal(await portico.stop(), 0);
    // 'exit' can come before the last stdout bytes are read: wait for the pipe to close.
    await new Promise<void>((resolve) => (portico.child.stdout!.readableEnded ? resolve() : portico.child.stdout!.once('close', () => resolve())));
    const lines = portico.logs.filter((l) => l.kind === 'access');
    assert.deepEqual(lines.map((l) => l.path), Array.from({ length: 40 }, (_, i) => `/n${i}`));
    assert.ok(lines.every((l) => l.level === 'info' && l.msg === 'access' && l.status === 404 && typeof l.time === 'string'));
  } finally {
    await portico.stop();
    dir.cleanup();
  }
});
