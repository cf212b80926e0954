// How many CPUs this process may use: the host's, bounded by a cgroup v2 CPU quota
// (a container with `limits.cpu: 2` on a 64-core node gets 2 workers, not 64).
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { readFileSync } = process.getBuiltinModule('node:fs');
const { availableParallelism } = process.getBuiltinModule('node:os');

/** The quota in /sys/fs/cgroup/cpu.max ("200000 100000" is 2 CPUs; "max ..." is none). */
export function cgroupCpuLimit(cpuMax: string | undefined): number | undefined {
  if (cpuMax === undefined) return undefined;
  const [quota, period] = cpuMax.trim().split(/\s+/);
  if (quota === undefined || quota === 'max' || period === undefined) return undefined;
  const q = Number(quota);
  const p = Number(period);
  return q > 0 && p > 0 ? Math.max(1, Math.ceil(q / p)) : undefined;
}

export function availableCpus(): number {
  let cpuMax: string | undefined;
  try {
    cpuMax = readFileSync('/sys/fs/cgroup/cpu.max', 'utf8');
  } catch {
    // No cgroup v2 CPU controller here: the host's CPUs count.
  }
  const limit = cgroupCpuLimit(cpuMax);
  return Math.max(1, Math.min(availableParallelism(), limit ?? Infinity));
}
