// The Node flags portico runs with (bin/node-flags.js): every way of starting it gets
// the same ones, and a flag the operator set keeps the operator's value.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { missingFlags, NODE_FLAGS } from '../../../bin/node-flags.js';
import { ManifestDir, ingressClass } from '../../support/objects.ts';
import { startPortico } from '../../support/portico-process.ts';

test('missingFlags: all of them when none is given, none once each is set in any spelling', () => {
  assert.deepEqual(missingFlags([]), [...NODE_FLAGS]);
  assert.deepEqual(missingFlags(['--max-semi-space-size=16', '--semi-space-growth-factor=4', '--heap-growing-percent=100']), []);
  assert.deepEqual(missingFlags(['--max_semi_space_size=32', '--semi_space_growth_factor=2']), ['--heap-growing-percent=100']);
  assert.deepEqual(missingFlags(['--heap-growing-percent=50', '--inspect']), ['--max-semi-space-size=16', '--semi-space-growth-factor=4']);
  assert.deepEqual(missingFlags(['', 'bin/portico.js']), [...NODE_FLAGS]);
});

test('the Dockerfile ENTRYPOINT names the same flags', () => {
  const dockerfile = readFileSync(new URL('../../../deploy/Dockerfile', import.meta.url), 'utf8');
  const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile);
  assert.ok(entrypoint, 'an ENTRYPOINT in exec form');
  const argv = JSON.parse(entrypoint[1]!) as string[];
  assert.deepEqual(argv.slice(1, -1), [...NODE_FLAGS]);
});

test('the CLI runs with the flags it lacks, and keeps one given in NODE_OPTIONS', async () => {
  const dir = new ManifestDir();
  dir.write('class.yaml', [ingressClass('portico')]);
  const portico = await startPortico(['--manifests', dir.path], { NODE_OPTIONS: '--max-semi-space-size=8' });
  try {
    await portico.waitForLog((l) => String(l.msg).startsWith('portico ready'));
    // process.execve keeps the PID: its command line is the re-executed one.
    const argv = readFileSync(`/proc/${portico.child.pid}/cmdline`, 'utf8').split('\0');
    assert.ok(argv.includes('--heap-growing-percent=100'), `command line: ${argv.join(' ')}`);
    assert.ok(!argv.some((a) => a.startsWith('--max-semi-space-size')), `command line: ${argv.join(' ')}`);
  } finally {
    await portico.stop();
    dir.cleanup();
  }
});
