// Preload for a proxy under test (node --import bench/tools/gc-pauses.mjs bin/portico.js ...):
// every GC pause with its wall-clock start (ms), duration (ms) and kind, appended to $GCLOG.
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { appendFileSync } from 'node:fs';
const out = process.env.GCLOG ?? `/tmp/gclog-${process.pid}.txt`;
const lines = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) lines.push(`${(performance.timeOrigin + e.startTime).toFixed(3)} ${e.duration.toFixed(3)} ${e.detail?.kind ?? e.kind}`);
}).observe({ entryTypes: ['gc'] });
setInterval(() => {
  if (lines.length > 0) {
    appendFileSync(out, lines.join('\n') + '\n');
    lines.length = 0;
  }
}, 500).unref();
