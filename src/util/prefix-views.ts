/**
 * Views of the first n bytes of a reused buffer, kept by length and handed out again: a
 * view is an object of about 100 bytes, and a proxy made one per head written and per
 * read parsed, while the heads of one client or pod, and the reads that carry them, tend
 * to be of one length. Safe where the buffer's own reuse is: whoever gets a view is done
 * with it before the buffer is written again.
 */
export class PrefixViews {
  private readonly views = new Map<number, Buffer>();
  /** The buffer the views are of. */
  private of: Buffer | null = null;
  private readonly max: number;

  /** `max`: views kept at most (all are dropped when there would be more). */
  constructor(max = 64) {
    this.max = max;
  }

  /** The first `n` bytes of `buf`. */
  get(buf: Buffer, n: number): Buffer {
    const views = this.views;
    if (this.of !== buf) {
      views.clear();
      this.of = buf;
    }
    let view = views.get(n);
    if (view === undefined) {
      if (views.size >= this.max) views.clear();
      view = buf.subarray(0, n);
      views.set(n, view);
    }
    return view;
  }
}
