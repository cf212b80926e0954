// The nginx-compare bench's medians and round-by-round ratios (bench/lib/wrk.ts): quartiles as numpy's
// default computes them, and each round's pair divided, not the medians of each side.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { median, pairedRatios, quantile } from '../../bench/lib/wrk.ts';

test('quantiles fall between the nearest values, as numpy.quantile does', () => {
  assert.equal(quantile([4, 1, 3, 2], 0.25), 1.75);
  assert.equal(quantile([4, 1, 3, 2], 0.5), 2.5);
  assert.equal(quantile([4, 1, 3, 2], 0.75), 3.25);
  assert.equal(quantile([7], 0.75), 7);
  assert.ok(Number.isNaN(quantile([], 0.5)));
});

test('ratios are taken round by round, not between the medians of each side', () => {
  // Round by round 0.95, 0.75 and 0.9; the medians of each side, 45 and 60, would say 0.75.
  const a = [95, 45, 45].map((requestsPerSec) => ({ requestsPerSec }));
  const b = [100, 60, 50].map((requestsPerSec) => ({ requestsPerSec }));
  const paired = pairedRatios(a, b);
  assert.ok(Math.abs(paired.median - 0.9) < 1e-9, String(paired.median));
  assert.ok(Math.abs(paired.lower - 0.825) < 1e-9, String(paired.lower));
  assert.ok(Math.abs(paired.upper - 0.925) < 1e-9, String(paired.upper));
  // A round without its partner is left out.
  assert.ok(Math.abs(pairedRatios([...a, { requestsPerSec: 1 }], b).median - 0.9) < 1e-9);
});

test('the median is the middle value, or the mean of the two middle ones', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.ok(Number.isNaN(median([])));
});
