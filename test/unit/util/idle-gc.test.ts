import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClientActivity, clientConnected, flushesBytecode, IdleCollectionPolicy } from '../../../src/util/idle-gc.ts';

const MB = 1024 * 1024;

test('collects once the process goes quiet after start-up, then not again until a busy spell', () => {
  const policy = new IdleCollectionPolicy();
  assert.equal(policy.shouldCollect(0.9, false, false, 300 * MB), false, 'busy: never while the loop works');
  assert.equal(policy.shouldCollect(0.002, false, false, 300 * MB), true, 'quiet after start-up');
  policy.collected(200 * MB, 100 * MB);
  assert.equal(policy.shouldCollect(0.002, false, false, 260 * MB), false, 'still quiet: once is enough');
  assert.equal(policy.shouldCollect(0.5, false, false, 260 * MB), false);
  assert.equal(policy.shouldCollect(0.002, false, false, 260 * MB), true, 'quiet again after a busy spell, and the heap grew');
});

test('never while a client is connected; traffic counts as a busy spell', () => {
  const policy = new IdleCollectionPolicy();
  policy.collected(100 * MB, 50 * MB);
  for (let i = 0; i < 5; i++) assert.equal(policy.shouldCollect(0.02, true, false, 200 * MB), false);
  assert.equal(policy.shouldCollect(0.02, false, false, 200 * MB), true, 'the clients left');
});

test('steady background work (rescans of a large manifest tree) is quiet enough, and never a busy spell', () => {
  const policy = new IdleCollectionPolicy();
  assert.equal(policy.shouldCollect(0.15, false, false, 300 * MB), true);
  policy.collected(200 * MB, 100 * MB);
  for (let i = 0; i < 20; i++) assert.equal(policy.shouldCollect(0.15, false, false, 260 * MB), false);
});

test('a quiet spell after a busy one leaves the heap alone when it did not grow', () => {
  const policy = new IdleCollectionPolicy();
  policy.collected(100 * MB, 50 * MB);
  assert.equal(policy.shouldCollect(0.5, false, false, 101 * MB), false);
  assert.equal(policy.shouldCollect(0.001, false, false, 101 * MB), false);
});

test('never in an interval with a change: a change that came during the pause would wait for it', () => {
  const policy = new IdleCollectionPolicy();
  policy.collected(100 * MB, 50 * MB);
  for (let i = 0; i < 5; i++) assert.equal(policy.shouldCollect(0.05, false, true, 200 * MB), false, 'changes keep coming');
  assert.equal(policy.shouldCollect(0.05, false, false, 200 * MB), true, 'the first interval without one');
  policy.collected(150 * MB, 75 * MB);
  assert.equal(policy.shouldCollect(0.01, false, true, 200 * MB), false);
  assert.equal(policy.shouldCollect(0.01, false, false, 200 * MB), true, 'a change counts as a busy spell: its garbage is collected once quiet');
});

test('the heap after a collection is its low point since, not its size as the GC returns (V8 shrinks later)', () => {
  const policy = new IdleCollectionPolicy();
  policy.collected(69 * MB, 34 * MB); // measured as gc() returned
  assert.equal(policy.shouldCollect(0.01, false, false, 28 * MB), false, 'quiet, and V8 has shrunk the heap since');
  assert.equal(policy.shouldCollect(0.06, true, true, 74 * MB), false, 'traffic and changes again');
  assert.equal(policy.shouldCollect(0.01, false, false, 46 * MB), true, 'quiet: 18 MB above the low point, though below the size at the last collection');
});

test('the first collection after start-up, and later ones of a small live heap, are memory-reducing (they give pooled pages back); a large heap later gets a plain full GC (shorter pause)', () => {
  const policy = new IdleCollectionPolicy();
  assert.equal(policy.flavor(), 'last-resort', 'the first quiet spell after start-up, whatever the heap size');
  policy.collected(60 * MB, 22 * MB);
  assert.equal(policy.flavor(), 'last-resort', 'a worker of a 2,000-Ingress cluster: 22 MB live, whatever garbage came since');
  policy.collected(300 * MB, 110 * MB);
  assert.equal(policy.flavor(), 'regular', '10,000 Ingresses: 110 MB live');
});

test('a small heap that stays quiet but regrows from background garbage (the manifest rescan) is collected again, at most once a minute', () => {
  const policy = new IdleCollectionPolicy();
  assert.equal(policy.shouldCollect(0.01, false, false, 80 * MB), true, 'quiet after start-up');
  policy.collected(23 * MB, 21 * MB);
  // The young generation regrows: 23 -> 48 MB in 40 s, every interval quiet.
  assert.equal(policy.shouldCollect(0.02, false, false, 31 * MB), false, 'grew 8 MB: left alone');
  assert.equal(policy.shouldCollect(0.02, false, false, 38 * MB), false);
  assert.equal(policy.shouldCollect(0.02, false, false, 48 * MB), false, '25 MB more, but only 30 s after the last collection');
  assert.equal(policy.shouldCollect(0.02, false, false, 48 * MB), false);
  assert.equal(policy.shouldCollect(0.02, false, false, 48 * MB), false);
  assert.equal(policy.shouldCollect(0.02, false, false, 48 * MB), true, 'a minute after it, still quiet, 25 MB above the low point');
  policy.collected(23 * MB, 21 * MB);
  for (let i = 0; i < 10; i++) assert.equal(policy.shouldCollect(0.02, false, false, 30 * MB), false, 'regrowth under 16 MB: no pause for it');
});

test('quiet regrowth of a large live heap is left alone (its collection pauses for a second)', () => {
  const policy = new IdleCollectionPolicy();
  policy.collected(200 * MB, 110 * MB);
  for (let i = 0; i < 10; i++) assert.equal(policy.shouldCollect(0.02, false, false, 260 * MB), false);
});

test('clients count in an interval when connected at either end of it, or when one came and went between two looks (short connections)', () => {
  const clients = new ClientActivity();
  assert.equal(clients.look(0), false, 'nobody');
  clientConnected();
  assert.equal(clients.look(0), true, 'a connection that came and went since the last look');
  assert.equal(clients.look(0), false, 'nobody since');
  assert.equal(clients.look(2), true, 'open now');
  assert.equal(clients.look(0), true, 'open at the last look: the interval had them');
  assert.equal(clients.look(0), false);
});

test("an idle collection flushes start-up's bytecode unless the operator set V8's bytecode age, in either spelling", () => {
  assert.equal(flushesBytecode([]), true);
  assert.equal(flushesBytecode(['--max-semi-space-size=16', '--heap-growing-percent=100', '']), true);
  assert.equal(flushesBytecode(['--bytecode-old-age=3']), false);
  assert.equal(flushesBytecode(['--bytecode_old_age=10']), false);
  assert.equal(flushesBytecode(['--bytecode-old-age', '3']), false);
});
