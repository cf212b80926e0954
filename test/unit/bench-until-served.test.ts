// The change-latency benches' probe (bench/lib/until-served.ts): it must not wait for a
// failed attempt before starting the next, must stop at the first success, and must not
// pile up attempts against a slow server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { untilServed } from '../../bench/lib/until-served.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('starts attempts while earlier ones are out, at most inFlight at once, and resolves at the first success', async () => {
  let started = 0;
  let out = 0;
  let most = 0;
  let successes = 0;
  const servedFrom = performance.now() + 30;
  await untilServed(async () => {
    started++;
    out++;
    most = Math.max(most, out);
    const sentAt = performance.now();
    await sleep(10); // a slow 404: the next attempt does not wait for it
    out--;
    const served = sentAt >= servedFrom;
    if (served) successes++;
    return served;
  }, 1, 3);
  assert.equal(most, 3);
  assert.ok(started >= 6, `attempts overlapped (${started} started)`);
  // It resolved when an attempt sent after the change was served came back, not before
  // (not a bound on the time: a loaded machine stretches it).
  assert.ok(successes >= 1, 'resolved at a success');
  const after = started;
  await sleep(30);
  assert.equal(started, after, 'no attempt starts after the first success');
});

test('a failing attempt rejects the probe and no attempt follows', async () => {
  let started = 0;
  await assert.rejects(
    untilServed(async () => {
      started++;
      throw new Error('connection refused');
    }),
    /connection refused/,
  );
  const after = started;
  await sleep(20);
  assert.equal(started, after);
});
