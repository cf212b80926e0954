// Linux's CPU pressure (PSI): the share of time in which some task that could run waited
// for a CPU. Read from the process's cgroup when it has its own file (cgroup v2, as in a
// container), else from the whole machine; absent (PSI off, not Linux), it reads as none.
// https://docs.kernel.org/accounting/psi.html
import { closeSync, openSync, readSync } from 'node:fs';

const CANDIDATES = ['/sys/fs/cgroup/cpu.pressure', '/proc/pressure/cpu'];

/** Samples one pressure file: each call to `share()` is the share of wall time since the last call in which some task waited. */
export class CpuPressure {
  private fd = -1;
  private readonly buf = Buffer.allocUnsafe(256);
  private lastTotal = -1;
  private lastAt = 0;

  constructor(paths: readonly string[] = CANDIDATES) {
    for (const path of paths) {
      try {
        this.fd = openSync(path, 'r');
      } catch {
        continue;
      }
      // A file that opens but cannot be read (PSI compiled in, turned off at boot) counts as absent.
      if (this.readTotal() >= 0) break;
      closeSync(this.fd);
      this.fd = -1;
    }
  }

  /** Whether a pressure file was found. */
  get available(): boolean {
    return this.fd >= 0;
  }

  /** Share (0-1) of the time since the previous call in which some task waited for a CPU; 0 on the first call or without a file. */
  share(): number {
    if (this.fd < 0) return 0;
    const total = this.readTotal();
    const at = performance.now();
    const previous = this.lastTotal;
    const elapsedUs = (at - this.lastAt) * 1000;
    this.lastTotal = total;
    this.lastAt = at;
    if (previous < 0 || total < 0 || elapsedUs <= 0) return 0;
    return Math.min(1, Math.max(0, (total - previous) / elapsedUs));
  }

  /** The first line's "total=" (µs some task waited, since boot), or -1. */
  private readTotal(): number {
    let n: number;
    try {
      n = readSync(this.fd, this.buf, 0, this.buf.length, 0);
    } catch {
      return -1;
    }
    // "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\n"
    const end = this.buf.indexOf(0x0a);
    const lineEnd = end < 0 || end > n ? n : end;
    const at = this.buf.lastIndexOf('total=', lineEnd);
    if (at < 0) return -1;
    let total = 0;
    for (let i = at + 6; i < lineEnd; i++) {
      const c = this.buf[i]! - 0x30;
      if (c < 0 || c > 9) return -1;
      total = total * 10 + c;
    }
    return total;
  }
}
