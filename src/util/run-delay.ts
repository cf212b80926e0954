// How long this process's main thread (the event loop) was ready to run but waited for a
// CPU, from Linux's /proc/self/schedstat ("run time, run delay, timeslices", in ns). It
// tells a worker whose cores are shared with busy neighbours, and whose loop therefore sits
// idle part of the time though the machine is saturated, from one with time to spare.
// Absent (not Linux, or a kernel without CONFIG_SCHED_INFO), it reads as no delay.
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { closeSync, openSync, readSync } = process.getBuiltinModule('node:fs');

/** Samples the run delay: each call to `share()` is the share of wall time since the last call that the thread waited. */
export class RunDelay {
  private fd = -1;
  private readonly buf = Buffer.allocUnsafe(128);
  private lastDelay = -1;
  private lastAt = 0;

  constructor(path = '/proc/self/schedstat') {
    try {
      this.fd = openSync(path, 'r');
    } catch {
      return;
    }
    // A file that opens but does not read as three numbers counts as absent.
    if (this.readDelayNs() < 0) {
      closeSync(this.fd);
      this.fd = -1;
    }
  }

  /** Closes the file; share() then reads as no delay. */
  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  /** Whether the file was found. */
  get available(): boolean {
    return this.fd >= 0;
  }

  /** Share (0-1) of the time since the previous call that the thread waited for a CPU; 0 on the first call or without the file. */
  share(): number {
    if (this.fd < 0) return 0;
    const delay = this.readDelayNs();
    const at = performance.now();
    const previous = this.lastDelay;
    const elapsedNs = (at - this.lastAt) * 1e6;
    this.lastDelay = delay;
    this.lastAt = at;
    if (previous < 0 || delay < 0 || elapsedNs <= 0) return 0;
    return Math.min(1, Math.max(0, (delay - previous) / elapsedNs));
  }

  /** The second number of the file (ns waited on a run queue), or -1. */
  private readDelayNs(): number {
    let n: number;
    try {
      n = readSync(this.fd, this.buf, 0, this.buf.length, 0);
    } catch {
      return -1;
    }
    const first = this.buf.indexOf(0x20);
    if (first <= 0 || first >= n) return -1;
    let delay = 0;
    let i = first + 1;
    for (; i < n; i++) {
      const c = this.buf[i]! - 0x30;
      if (c < 0 || c > 9) break;
      delay = delay * 10 + c;
    }
    return i > first + 1 && this.buf[i] === 0x20 ? delay : -1;
  }
}
