// CPU pressure read from a PSI file (src/util/cpu-pressure.ts), here files written by the
// test in PSI's format: the share is the waited microseconds over the wall time between reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CpuPressure } from '../../../src/util/cpu-pressure.ts';

const psi = (someTotal: number) =>
  `some avg10=1.00 avg60=2.00 avg300=3.00 total=${someTotal}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=999999999\n`;

test('the share is the microseconds some task waited over the wall time between two reads, from the "some" line', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'psi-'));
  const file = join(dir, 'cpu.pressure');
  writeFileSync(file, psi(1_000_000));
  const pressure = new CpuPressure([file]);
  assert.equal(pressure.available, true);
  assert.equal(pressure.share(), 0, 'nothing to compare the first read with');
  const start = performance.now();
  await new Promise((resolve) => setTimeout(resolve, 50));
  // Waited 20 ms of the (at least) 50 ms since: a share of at most 0.4.
  writeFileSync(file, psi(1_020_000));
  const share = pressure.share();
  const elapsedMs = performance.now() - start;
  assert.ok(share > 0 && share <= 0.4 && share >= 20 / elapsedMs - 0.01, `share ${share} over ${elapsedMs} ms`);
  assert.equal(pressure.share(), 0, 'no more waiting since');
  writeFileSync(file, psi(9_000_000_000));
  assert.equal(pressure.share(), 1, 'never more than all of the time');
});

test('a missing file or one without a total is skipped for the next; none found reads as no pressure', () => {
  const dir = mkdtempSync(join(tmpdir(), 'psi-'));
  const broken = join(dir, 'broken');
  writeFileSync(broken, 'some avg10=1.00\n');
  const good = join(dir, 'good');
  writeFileSync(good, psi(5));
  assert.equal(new CpuPressure([join(dir, 'missing'), broken, good]).available, true);
  const none = new CpuPressure([join(dir, 'missing'), broken]);
  assert.equal(none.available, false);
  assert.equal(none.share(), 0);
});
