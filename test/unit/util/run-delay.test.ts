// The main thread's run delay (src/util/run-delay.ts), from files in schedstat's format
// written by the test, and from this process's own /proc/self/schedstat where Linux has it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunDelay } from '../../../src/util/run-delay.ts';

test('the share is the nanoseconds waited over the wall time between two reads', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'schedstat-')), 'schedstat');
  writeFileSync(file, '5000000000 1000000000 4000\n');
  const delay = new RunDelay(file);
  assert.equal(delay.available, true);
  assert.equal(delay.share(), 0, 'nothing to compare the first read with');
  const start = performance.now();
  await new Promise((resolve) => setTimeout(resolve, 50));
  writeFileSync(file, '5010000000 1020000000 4100\n'); // waited 20 ms of the (at least) 50 since
  const share = delay.share();
  const elapsedMs = performance.now() - start;
  assert.ok(share > 0 && share <= 0.4 && share >= 20 / elapsedMs - 0.01, `share ${share} over ${elapsedMs} ms`);
  assert.equal(delay.share(), 0, 'no more waiting since');
  writeFileSync(file, '5010000000 900000000000 4200\n');
  assert.equal(delay.share(), 1, 'never more than all of the time');
});

test('a missing or malformed file reads as no delay', () => {
  const dir = mkdtempSync(join(tmpdir(), 'schedstat-'));
  const broken = join(dir, 'broken');
  writeFileSync(broken, 'not numbers\n');
  for (const path of [join(dir, 'missing'), broken]) {
    const delay = new RunDelay(path);
    assert.equal(delay.available, false);
    assert.equal(delay.share(), 0);
  }
});

test("this process's own run delay reads as a share between 0 and 1", { skip: !existsSync('/proc/self/schedstat') }, async () => {
  const delay = new RunDelay();
  assert.equal(delay.available, true);
  delay.share();
  await new Promise((resolve) => setTimeout(resolve, 20));
  const share = delay.share();
  assert.ok(share >= 0 && share <= 1, String(share));
});
