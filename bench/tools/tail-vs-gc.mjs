// Slow requests (request-latency.c records) against GC pauses (gc-pauses.mjs): how many of
// the slowest 1% overlapped a pause, against all requests. The first second is skipped.
// usage: node bench/tools/tail-vs-gc.mjs LATENCY_RECORDS GCLOG
import { readFileSync } from 'node:fs';
const text = readFileSync(process.argv[2], 'utf8').trim().split('\n');
const startWall = Number(text.find((l) => l.startsWith('# start_wall_us')).split(' ')[2]);
const rows = text.filter((l) => !l.startsWith('#')).map((l) => l.split(' ').map(Number)).filter((r) => r[0] > 1e6);
const gcs = readFileSync(process.argv[3], 'utf8').trim().split('\n').map((l) => { const [s, d, k] = l.split(' '); return { s: Number(s) * 1000 - startWall, e: Number(s) * 1000 - startWall + Number(d) * 1000, d: Number(d), k }; });
const lat = rows.map((r) => r[1]).sort((a, b) => a - b);
const p99 = lat[Math.floor(0.99 * lat.length)];
const p50 = lat[Math.floor(0.5 * lat.length)];
const overlaps = (start, end) => gcs.some((g) => g.s < end && g.e > start);
let slow = 0, slowGc = 0, all = 0, allGc = 0;
for (const [done, l] of rows) {
  const start = done - l;
  const o = overlaps(start, done);
  all++; if (o) allGc++;
  if (l >= p99) { slow++; if (o) slowGc++; }
}
const inRun = gcs.filter((g) => g.s > rows[0][0] && g.s < rows.at(-1)[0]);
const kinds = {};
for (const g of inRun) kinds[g.k] = (kinds[g.k] ?? 0) + 1;
console.log(`p50 ${(p50 / 1000).toFixed(2)} ms, p99 ${(p99 / 1000).toFixed(2)} ms; GC pauses in the run ${inRun.length} (${JSON.stringify(kinds)}), mean ${(inRun.reduce((a, g) => a + g.d, 0) / inRun.length).toFixed(2)} ms, max ${Math.max(...inRun.map((g) => g.d)).toFixed(2)} ms`);
console.log(`requests overlapping a GC pause: all ${(100 * allGc / all).toFixed(2)}%, slowest 1% ${(100 * slowGc / slow).toFixed(1)}%`);
