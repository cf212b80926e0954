// Log lines written as bytes into a reused buffer, as HTTP/1.1 heads are (src/http1/head-bytes.ts).
// Built from strings, an access line was some thirty pieces joined into a cons string,
// flattened when a batch of lines was joined for the write, then encoded to UTF-8 by the
// write: three copies of every byte and a line's worth of garbage per request. Written here,
// each byte is copied once, into the buffer the write takes.

/** Longer text is copied by Buffer's latin1Write, shorter text character by character. */
const LOOP_LIMIT = 32;

/** A string that can go into JSON as it is: printable ASCII without '"' or '\\'. */
function plain(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

/** Digits of 0-9 as bytes. */
const ZERO = 0x30;

/**
 * Appends to one growing buffer. Each method makes room for what it writes, so a caller
 * never checks sizes; the buffer is replaced (and the bytes so far copied) when it is full
 * (a line, or an HTTP/1.1 head: src/http1/head-bytes.ts builds on this).
 */
export class LineBytes {
  buf: Buffer;
  at = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafeSlow(size);
  }

  /** Makes room for `n` more bytes, in a buffer twice as large if need be. */
  room(n: number): void {
    const need = this.at + n;
    if (need <= this.buf.length) return;
    const bigger = Buffer.allocUnsafeSlow(Math.max(need, this.buf.length * 2));
    this.buf.copy(bigger, 0, 0, this.at);
    this.buf = bigger;
  }

  /** Appends bytes made earlier (a part of a line that repeats, a small body behind a head). */
  bytes(src: Uint8Array): void {
    this.room(src.length);
    this.buf.set(src, this.at);
    this.at += src.length;
  }

  /**
   * Appends `s` as latin1: each character's low byte, as socket.write(s, 'latin1') does.
   * Callers have checked that there is none above U+00FF (ASCII text always qualifies).
   */
  latin1(s: string): void {
    const n = s.length;
    this.room(n);
    if (n > LOOP_LIMIT) {
      this.at += this.buf.write(s, this.at, n, 'latin1');
      return;
    }
    const buf = this.buf;
    let at = this.at;
    for (let i = 0; i < n; i++) buf[at++] = s.charCodeAt(i);
    this.at = at;
  }

  /** Appends `s` as a JSON string, quotes included, in UTF-8: what JSON.stringify(s) writes. */
  jsonString(s: string): void {
    const n = s.length;
    this.room(n + 2);
    const buf = this.buf;
    const start = this.at;
    let at = start;
    buf[at++] = 0x22;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) {
        // Something to escape or encode: rare in a log line, so left to JSON.stringify.
        const quoted = JSON.stringify(s);
        this.at = start;
        this.room(quoted.length * 3);
        this.at = start + this.buf.write(quoted, start, 'utf8');
        return;
      }
      buf[at++] = c;
    }
    buf[at++] = 0x22;
    this.at = at;
  }

  /** Appends a number as JavaScript writes it (String(n)), whole numbers without a string. */
  number(n: number): void {
    if (!(n >= 0 && n <= Number.MAX_SAFE_INTEGER && Math.floor(n) === n)) {
      this.latin1('' + n);
      return;
    }
    let digits = 1;
    for (let p = 10; p <= n; p *= 10) digits++;
    this.room(digits);
    const buf = this.buf;
    let at = this.at + digits;
    this.at = at;
    do {
      const q = Math.floor(n / 10);
      buf[--at] = ZERO + (n - q * 10);
      n = q;
    } while (n > 0);
  }

  /**
   * Appends milliseconds as String(ms) writes them, without the general number-to-text
   * conversion for the usual case, a whole number of µs: the whole milliseconds, then
   * up to three decimals without trailing zeros.
   */
  millis(ms: number): void {
    const micros = Math.round(ms * 1000);
    if (!(micros >= 0 && micros < 1e15 && micros / 1000 === ms)) {
      this.latin1('' + ms);
      return;
    }
    const whole = Math.floor(micros / 1000);
    this.number(whole);
    const fraction = micros - whole * 1000;
    if (fraction === 0) return;
    this.room(4);
    const buf = this.buf;
    const hundreds = Math.floor(fraction / 100);
    const tens = Math.floor(fraction / 10) - hundreds * 10;
    const ones = fraction % 10;
    buf[this.at++] = 0x2e; // .
    buf[this.at++] = ZERO + hundreds;
    if (tens !== 0 || ones !== 0) buf[this.at++] = ZERO + tens;
    if (ones !== 0) buf[this.at++] = ZERO + ones;
  }
}

/** The bytes of `text` as a JSON string (quotes included): a part of a line made once and reused. */
export function jsonBytes(text: string): Buffer {
  return Buffer.from(plain(text) ? '"' + text + '"' : JSON.stringify(text), 'utf8');
}
