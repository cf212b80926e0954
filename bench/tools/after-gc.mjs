// What a proxy's GC pauses do to the requests around them, from request-latency.c's records
// and gc-pauses.mjs's log (README, Known limits: p99 latency, "what follows a scavenge"):
// - p50 / p90 / p99 of all requests, and p99 of those that overlapped no pause;
// - lag-1 autocorrelation of latency along each connection (slow spells, not lone slow requests);
// - requests completed per 2 ms slot in the 10 ms after each pause ends, against the other slots.
// Without a GC log (nginx), pass "-": only the first two.
// usage: node bench/tools/after-gc.mjs LATENCY_RECORDS GCLOG|-
import { readFileSync } from 'node:fs';

const [recordsFile, gcFile] = process.argv.slice(2);
if (!recordsFile || !gcFile) {
  console.error('usage: node bench/tools/after-gc.mjs LATENCY_RECORDS GCLOG|-');
  process.exit(2);
}
const text = readFileSync(recordsFile, 'utf8').trim().split('\n');
const startWall = Number(text.find((l) => l.startsWith('# start_wall_us')).split(' ')[2]);
// [completion µs since start, latency µs, connection]; the first second is warm-up.
const rows = text.filter((l) => !l.startsWith('#')).map((l) => l.split(' ').map(Number)).filter((r) => r[0] > 1e6);
// Pauses as [start, end] in µs since the records' start.
const pauses =
  gcFile === '-'
    ? []
    : readFileSync(gcFile, 'utf8')
        .trim()
        .split('\n')
        .map((l) => l.split(' ').map(Number))
        .map(([startMs, ms]) => [startMs * 1000 - startWall, startMs * 1000 - startWall + ms * 1000])
        .sort((a, b) => a[0] - b[0]);

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] / 1000;
};
const overlapsPause = (start, end) => pauses.some(([s, e]) => s < end && e > start);
const latencies = rows.map((r) => r[1]);
const clear = rows.filter(([done, latency]) => !overlapsPause(done - latency, done)).map((r) => r[1]);
console.log(
  `requests ${rows.length}: p50 ${percentile(latencies, 0.5).toFixed(2)} ms, p90 ${percentile(latencies, 0.9).toFixed(2)} ms, p99 ${percentile(latencies, 0.99).toFixed(2)} ms` +
    (pauses.length > 0 ? `; p99 of the ${((100 * clear.length) / rows.length).toFixed(1)}% that overlapped no pause ${percentile(clear, 0.99).toFixed(2)} ms` : ''),
);

const byConnection = new Map();
for (const [, latency, conn] of rows) {
  let list = byConnection.get(conn);
  if (list === undefined) byConnection.set(conn, (list = []));
  list.push(latency);
}
const mean = latencies.reduce((a, b) => a + b, 0) / latencies.length;
let covariance = 0;
let variance = 0;
for (const list of byConnection.values()) for (let i = 1; i < list.length; i++) covariance += (list[i] - mean) * (list[i - 1] - mean);
for (const x of latencies) variance += (x - mean) ** 2;
console.log(`lag-1 autocorrelation of latency along a connection: ${(covariance / variance).toFixed(3)} (near 0: slow requests come alone; high: in spells)`);

if (pauses.length > 0) {
  const SLOT = 2000;
  const AFTER = 10_000;
  const completed = new Map();
  for (const [done] of rows) completed.set(Math.floor(done / SLOT), (completed.get(Math.floor(done / SLOT)) ?? 0) + 1);
  const first = Math.floor(rows[0][0] / SLOT);
  const last = Math.floor(rows.at(-1)[0] / SLOT);
  const afterPause = new Set();
  for (const [, end] of pauses) for (let t = end; t < end + AFTER; t += SLOT) afterPause.add(Math.floor(t / SLOT));
  const inPause = new Set(pauses.map(([s]) => Math.floor(s / SLOT)));
  let afterSum = 0, afterSlots = 0, otherSum = 0, otherSlots = 0;
  for (let slot = first + 1; slot < last; slot++) {
    const n = completed.get(slot) ?? 0;
    if (inPause.has(slot)) continue;
    if (afterPause.has(slot)) {
      afterSum += n;
      afterSlots++;
    } else {
      otherSum += n;
      otherSlots++;
    }
  }
  console.log(
    `requests completed per 2 ms: ${(afterSum / Math.max(1, afterSlots)).toFixed(1)} in the 10 ms after a pause (${afterSlots} slots), ${(otherSum / Math.max(1, otherSlots)).toFixed(1)} in the others (${otherSlots} slots); ${pauses.length} pauses`,
  );
}
