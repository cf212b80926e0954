// Garbage of one safety-net walk of the manifest source (src/sources/standalone.ts), in
// process: N Ingress files, then the used heap before and after one walk, with a young
// generation large enough that no GC runs in between. A quiet process's heap regrows by
// what these walks leave surviving a scavenge (see bench/quiet-heap.ts).
//   node_modules/.bin/node --max-semi-space-size=128 --expose-gc bench/rescan-garbage.ts [files=2000] [walks=5]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { ManifestDirectorySource } from '../src/sources/standalone.ts';
import { ObjectStore } from '../src/sources/store.ts';
import { ingress, ingressClass, serviceWithEndpoints, toYaml } from '../test/support/objects.ts';

const files = Number(process.argv[2] ?? 2000);
const walks = Number(process.argv[3] ?? 5);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc (and --max-semi-space-size=128, so no GC runs during a walk)');

const dir = mkdtempSync(join(tmpdir(), 'portico-bench-rescan-'));
try {
  writeFileSync(join(dir, 'base.yaml'), toYaml([ingressClass('portico'), ...serviceWithEndpoints('web', [8080])]));
  for (let i = 0; i < files; i++) writeFileSync(join(dir, `ing-${i}.yaml`), toYaml([ingress(`ing-${i}`, { rules: [{ host: `h${i}.soak`, paths: [{ path: '/', service: 'web' }] }] })]));
  // A rescan interval longer than the bench: only the walks below run.
  const source = new ManifestDirectorySource({ dir, store: new ObjectStore(), rescanMs: 1e9 });
  await source.start();
  // The walk is private: the bench calls it as the rescan timer does.
  const walk = () => (source as unknown as { walkAndApply(forced: ReadonlySet<string>): Promise<void> }).walkAndApply(new Set());
  const garbage: number[] = [];
  for (let k = 0; k < walks; k++) {
    gc();
    const before = getHeapStatistics().used_heap_size;
    const started = performance.now();
    await walk();
    const ms = performance.now() - started;
    garbage.push((getHeapStatistics().used_heap_size - before) / 1e6);
    console.log(`walk ${k + 1}: ${garbage.at(-1)!.toFixed(2)} MB allocated, ${ms.toFixed(0)} ms`);
  }
  source.stop();
  const sorted = garbage.slice(1).sort((a, b) => a - b);
  console.log(`rescan garbage: ${files + 1} files, ${(sorted[Math.floor(sorted.length / 2)] ?? garbage[0]!).toFixed(2)} MB per walk (median after the first)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
