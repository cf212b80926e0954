// The lines a user sees for an API outage: one when it starts (every caller that failed
// in the first second), reminders no more often than asked, a new cause at once, one
// line when it ends; a failure that heals at once says nothing.
import { beforeEach, afterEach, test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { ApiOutageLog, duration } from '../../../src/kube/api-outage-log.ts';

const SERVER = 'https://10.0.0.1:6443';
const REFUSED = 'connect ECONNREFUSED 10.0.0.1:6443';
let lines: string[];
let clock: number;

function outageLog(): ApiOutageLog {
  return new ApiOutageLog({
    server: SERVER,
    log: { warn: (_f: unknown, msg: string) => lines.push(`warn ${msg}`), info: (_f: unknown, msg: string) => lines.push(`info ${msg}`) } as never,
    meanwhile: () => 'serving the last known routes',
    gatherMs: 1000,
    reminderMs: 60_000,
    now: () => clock,
  });
}

/** Moves the fake clock and timers together. */
function advance(ms: number): void {
  clock += ms;
  mock.timers.tick(ms);
}

beforeEach(() => {
  lines = [];
  clock = 1_000_000;
  mock.timers.enable({ apis: ['setTimeout'] });
});
afterEach(() => mock.timers.reset());

test('an outage: one warning naming every caller, reminders at most once a minute, one line when it ends', () => {
  const o = outageLog();
  o.failed('Ingress', REFUSED);
  advance(100);
  o.failed('Service', REFUSED);
  o.failed('Ingress', REFUSED); // a retry
  o.failed('EndpointSlice', REFUSED);
  assert.deepEqual(lines, [], 'gathered for a second first');
  advance(900);
  assert.deepEqual(lines, [
    `warn cannot use the Kubernetes API ${SERVER}: ${REFUSED} (EndpointSlice, Ingress, Service); serving the last known routes; retrying, with a reminder every 1 min until it works`,
  ]);
  for (let i = 0; i < 59; i++) {
    advance(1000);
    o.failed('Ingress', REFUSED);
    o.failed('leader election', REFUSED);
  }
  assert.equal(lines.length, 1, 'retries are not logged');
  advance(1000);
  assert.deepEqual(lines.slice(1), [
    `warn still cannot use the Kubernetes API ${SERVER} after 1 min 1 s: ${REFUSED} (EndpointSlice, Ingress, Service, leader election); serving the last known routes; retrying`,
  ]);
  o.succeeded('Ingress');
  o.succeeded('Service');
  o.succeeded('EndpointSlice');
  assert.equal(lines.length, 2, 'not over while one caller still fails');
  advance(5000);
  o.succeeded('leader election');
  assert.deepEqual(lines.slice(2), [`info Kubernetes API ${SERVER} works again after 1 min 6 s (EndpointSlice, Ingress, Service, leader election)`]);
  advance(120_000);
  assert.equal(lines.length, 3, 'no reminder after the end');
});

test('a new cause during an outage is said within a second, not at the next reminder', () => {
  const o = outageLog();
  o.failed('Ingress', REFUSED);
  o.failed('Secret', REFUSED);
  advance(1000);
  advance(10_000);
  o.failed('Secret', 'secrets is forbidden: User "system:serviceaccount:portico:portico" cannot list resource "secrets"');
  advance(1000);
  assert.deepEqual(lines.slice(1), [
    `warn still cannot use the Kubernetes API ${SERVER} after 12 s: ${REFUSED} (Ingress); secrets is forbidden: User "system:serviceaccount:portico:portico" cannot list resource "secrets" (Secret); serving the last known routes; retrying`,
  ]);
  // A cause already named does not bring a line forward.
  o.failed('Secret', REFUSED);
  advance(30_000);
  assert.equal(lines.length, 2);
  advance(30_000);
  assert.equal(lines.length, 3, 'the reminder, a minute after the last line');
});

test('a failure that heals within the first second (a watch reset and resumed) logs nothing', () => {
  const o = outageLog();
  o.failed('Ingress', 'other side closed');
  advance(300);
  o.succeeded('Ingress');
  advance(120_000);
  assert.deepEqual(lines, []);
  o.succeeded('Service'); // never failed: nothing to end
  assert.deepEqual(lines, []);
});

test('duration', () => {
  assert.equal(duration(850), '850 ms');
  assert.equal(duration(12_400), '12 s');
  assert.equal(duration(60_000), '1 min');
  assert.equal(duration(185_000), '3 min 5 s');
  assert.equal(duration(3_900_000), '1 h 5 min');
});
