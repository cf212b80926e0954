// What one access-log line costs portico: built from a finished request's fields, buffered
// and written to stdout, as src/util/log.ts does it, in CPU nanoseconds per line.
//
//   node bench/access-log-line.ts > /dev/null      (the lines go to stdout; the figures to stderr)
//
// Lines are logged in batches of 256 with a turn of the event loop between (as requests
// finish in a server), so the buffered writes complete as they would there.
import { createAccessLogger, createLogger } from '../src/util/log.ts';

const LINES = 400_000;
const ROUNDS = 5;

const log = createAccessLogger(createLogger('info'));
const upstream = '127.0.0.1:41234';
const route = 'default/bench/bench.local/';
const requestId = 'a3f1c2d4e5f60718293a4b5c6d7e8f90';

async function logLines(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    if ((i & 255) === 0) await new Promise((resolve) => setImmediate(resolve));
    // The proxy's hook reads the clock once per request, for the duration and the line's time.
    log({ method: 'GET', host: 'bench.local', path: '/', status: 200, bytes: 13, durationMs: 1.234 + (i & 7), upstreamMs: 0.987, upstream, route, clientIp: '127.0.0.1', requestId, error: undefined, finishedAt: performance.now() });
  }
  await log.flush();
}

await logLines(50_000); // warm-up
const perLine: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const before = process.cpuUsage();
  await logLines(LINES);
  const used = process.cpuUsage(before);
  perLine.push(((used.user + used.system) * 1000) / LINES);
}
perLine.sort((a, b) => a - b);
process.stderr.write(`access log: CPU per line ${perLine.map((x) => x.toFixed(0)).join(', ')} ns (sorted, ${ROUNDS} rounds of ${LINES}); median ${perLine[ROUNDS >> 1]!.toFixed(0)} ns\n`);
