// The Node flags and malloc setting portico runs with, however it is started
// (bin/portico.js adds them when missing; examples/start.ts passes them to the portico it
// starts; deploy/Dockerfile's ENTRYPOINT and ENV name them too).
//
// - A young generation of at most 16 MB semispaces: V8 sizes it from the machine's memory
//   (64 MB semispaces on a 24 GB machine) and keeps it at its largest once a load has
//   grown it; deploy/Dockerfile says why 16.
// - Grown 4x at a time rather than 2x, so a process under load reaches those 16 MB within
//   its first seconds: V8 grows the young generation only once as many bytes survived
//   scavenges as it holds, and a proxy's requests leave little behind (about 50 KB per
//   scavenge): doubling, it reached 8 MB 3 s and 16 MB 10 s into a load (--trace-gc-nvp,
//   new_space_capacity); by 4x, 4 MB at start-up and 16 MB 3 s into the load. Until then
//   the scavenges come twice as often or more, and each one holds up every request in
//   flight and is followed by 2-4 ms in which fewer are served (README, Known limits:
//   p99 latency). In
//   the bench's closed loop (fresh processes, 2 s warm-up) p99 was 2.42 ms against 2.83 ms,
//   lower in 6 of 8 paired rounds. The cap is the same, and so are idle RSS (62.6 against
//   62.2 MB) and RSS under load (109.6 against 110.0 MB); at 10,000 Ingresses, after the
//   idle collection, the young generation regrows to 4 MB instead of 2: 168.8 against
//   163.9 MB (plain), 193.2 against 191.8 MB (TLS) in the same minutes.
// - The old generation collected once it doubled since the last full GC, rather than V8's
//   up to 4x on a machine with memory to spare: under HTTP/2 load (hundreds of streams in
//   flight, so each scavenge promotes what they hold) a 16 MB live heap grew to 64 MB of
//   old space between full GCs. With 2x the process's highest RSS under h2load's 64
//   connections x 10 streams went from 171-186 to 144-147 MiB, for full GCs about three
//   times as often: about 5% more CPU per gRPC call in interleaved A/Bs, within their
//   noise (README, Known limits: Memory under HTTP/2 load).
export const NODE_FLAGS = ['--max-semi-space-size=16', '--semi-space-growth-factor=4', '--heap-growing-percent=100'];

/** The flags of NODE_FLAGS that `args` (execArgv, NODE_OPTIONS words) do not set already, in any spelling. */
export function missingFlags(args) {
  const key = (flag) => flag.replace(/^--/, '').split('=')[0].replaceAll('_', '-');
  const given = new Set(args.filter((arg) => arg.startsWith('--')).map(key));
  return NODE_FLAGS.filter((flag) => !given.has(key(flag)));
}

/**
 * glibc malloc with a fixed mmap threshold (128 KiB, its initial value). By default glibc
 * raises the threshold to the size of each mmapped block freed (up to 32 MB) and the trim
 * threshold to twice that: after a burst of large buffers (the leader's 10,000 status
 * writes and the watch events they cause, at 10,000 Ingresses) blocks up to that size come
 * from the arenas, whose freed holes stay resident. Fixed, they are mapped and unmapped:
 * 40-45 MB of malloc arenas were 25-34 MB there (bench/memory.ts cluster; deploy/Dockerfile
 * says what it cost). Setting any of glibc's thresholds turns the adjustment off.
 */
export const MALLOC_ENV = { MALLOC_MMAP_THRESHOLD_: '131072' };

/** True when `env` already sets one of glibc's malloc thresholds (the user's choice is kept). */
export function hasMallocSetting(env) {
  return ['MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_', 'MALLOC_TOP_PAD_', 'MALLOC_MMAP_MAX_'].some((name) => env[name] !== undefined);
}

/** `env` with MALLOC_ENV, unless it sets a threshold of its own. */
export function withMallocEnv(env) {
  return hasMallocSetting(env) ? env : { ...env, ...MALLOC_ENV };
}
