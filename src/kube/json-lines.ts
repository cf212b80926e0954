// A stream of JSON documents, one per line (a Kubernetes watch), split on the bytes: each
// complete line is decoded and parsed once, and a line cut across chunks is joined from
// its pieces, rather than every chunk being appended to a growing string and sliced.
const NEWLINE = 0x0a;

export class JsonLines {
  private readonly onValue: (value: unknown) => void;
  /** The start of a line whose end has not come yet. */
  private pieces: Buffer[] = [];

  constructor(onValue: (value: unknown) => void) {
    this.onValue = onValue;
  }

  push(chunk: Buffer): void {
    let start = 0;
    let nl: number;
    while ((nl = chunk.indexOf(NEWLINE, start)) !== -1) {
      if (this.pieces.length > 0) {
        this.pieces.push(chunk.subarray(start, nl));
        const line = Buffer.concat(this.pieces);
        this.pieces = [];
        this.parse(line, 0, line.length);
      } else {
        this.parse(chunk, start, nl);
      }
      start = nl + 1;
    }
    // Copied: the chunk's memory is not kept for the sake of a line's first bytes.
    if (start < chunk.length) this.pieces.push(Buffer.from(chunk.subarray(start)));
  }

  /** The stream ended: a last line without a newline is a document too. */
  end(): void {
    if (this.pieces.length === 0) return;
    const line = Buffer.concat(this.pieces);
    this.pieces = [];
    this.parse(line, 0, line.length);
  }

  private parse(bytes: Buffer, start: number, end: number): void {
    const text = bytes.toString('utf8', start, end).trim();
    if (text !== '') this.onValue(JSON.parse(text));
  }
}
