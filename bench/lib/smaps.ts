// Where a process's resident memory is, from /proc/PID/smaps: file-backed pages (the
// node binary, shared libraries), the main malloc arena ([heap]), V8's heap pages
// (anonymous mappings on 256 KiB boundaries), other threads' malloc arenas (on 64 MiB
// boundaries), stacks and the rest.
import { readFileSync } from 'node:fs';

export function smapsBreakdown(pid: number): Record<string, number> {
  const text = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  const out: Record<string, number> = {};
  let kind = '';
  let sizeKb = 0;
  for (const line of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (head) {
      const start = parseInt(head[1]!, 16);
      const bytes = parseInt(head[2]!, 16) - start;
      const name = head[4]!;
      sizeKb = bytes / 1024;
      if (name === '[heap]') kind = 'malloc main arena ([heap])';
      else if (name.startsWith('[stack')) kind = 'stacks';
      else if (name.startsWith('/') || name.startsWith('[v')) kind = 'file-backed and vdso';
      else if (head[3] !== '0') kind = 'file-backed and vdso';
      // glibc's thread arenas start on a 64 MiB boundary; V8's pages (and large objects) on 256 KiB.
      else if (start % (64 * 1024 * 1024) === 0) kind = 'thread malloc arenas';
      else if (start % (256 * 1024) === 0) kind = 'V8 heap pages (256 KiB aligned)';
      else kind = 'other anonymous';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) out[kind] = (out[kind] ?? 0) + Number(rss[1]) / 1024;
  }
  void sizeKb;
  return out;
}
