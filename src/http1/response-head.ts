// A pod's response head read in JavaScript, for the plain case only, so that its header
// lines can be passed on as bytes. Through llhttp, every header name and value becomes a
// string made in C++, then an array of them is handed to JavaScript through a callback
// scope, and the response writer writes the strings back out as bytes: for a small
// response that was about a tenth of the proxy's CPU and a sixth of the bytes it
// allocated per request.
//
// Plain means a subset of what llhttp accepts, read to the same meaning: "HTTP/1.1", a
// final status of 200-599 other than 204 and 304, header lines of a token, a colon and a
// value of visible characters, spaces and tabs, each ending in CRLF, one Content-Length
// of digits, no Transfer-Encoding, and no other hop-by-hop header than one
// "Connection: keep-alive" and one Keep-Alive (whose timeout=N Node and Tomcat send with
// every response). Anything else (a byte out of place included) is not read
// here at all: the caller gives the same bytes to llhttp, which accepts or refuses them
// as before. So this never takes a head llhttp would refuse, nor reads one otherwise.
import { TOKEN } from './header-chars.ts';

/** Where the parts of the head readPlainHead last accepted are, in its input. */
export interface PlainHead {
  status: number;
  /** The reason phrase: [reasonStart, reasonEnd). */
  reasonStart: number;
  reasonEnd: number;
  /** The header lines, each with its CRLF: [fieldsStart, fieldsEnd). */
  fieldsStart: number;
  fieldsEnd: number;
  /**
   * The lines left out when they are passed on ("Connection: keep-alive", Keep-Alive), in
   * the order they stand: [dropStart, dropEnd), then [drop2Start, drop2End); -1 if none.
   */
  dropStart: number;
  dropEnd: number;
  drop2Start: number;
  drop2End: number;
  /** Its timeout=N in ms (keepAliveHint); -1 if none. */
  keepAliveMs: number;
  contentLength: number;
  /** The pod sent a Date header. */
  hasDate: boolean;
  /** Bytes of the whole head, its blank line included: the body starts here. */
  length: number;
}

/** The one result, reused (heads are read one at a time, on the one JavaScript thread). */
export const plainHead: PlainHead = {
  status: 0,
  reasonStart: 0,
  reasonEnd: 0,
  fieldsStart: 0,
  fieldsEnd: 0,
  dropStart: -1,
  dropEnd: -1,
  drop2Start: -1,
  drop2End: -1,
  keepAliveMs: -1,
  contentLength: -1,
  hasDate: false,
  length: 0,
};

/** Longer heads are left to llhttp (which allows 16 KiB by default). */
const MAX_HEAD = 8 * 1024;
/** Content-Length digits read here at most (as parseLength: exact in a double). */
const MAX_LENGTH_DIGITS = 15;

const CR = 0x0d;
const LF = 0x0a;
const SP = 0x20;
const HTAB = 0x09;

/** "HTTP/1.1 " */
const VERSION = [0x48, 0x54, 0x54, 0x50, 0x2f, 0x31, 0x2e, 0x31, SP];

/** A byte of a reason phrase or field value: HTAB, SP, visible ASCII or obs-text (not DEL). */
function isTextByte(c: number): boolean {
  return c < 0x20 ? c === HTAB : c !== 0x7f;
}

/** Whether the token bytes [at, at + lower.length) are `lower` (lowercase letters and '-') in any case. */
function nameIs(data: Uint8Array, at: number, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) {
    // For token bytes, setting the 0x20 bit folds exactly the capital letters.
    if ((data[at + i]! | 0x20) !== lower.charCodeAt(i)) return false;
  }
  return true;
}

/** [start, end) with spaces and tabs at both ends trimmed is `lower` in any case. */
function valueIs(data: Uint8Array, start: number, end: number, lower: string): boolean {
  while (start < end && (data[start] === SP || data[start] === HTAB)) start++;
  while (end > start && (data[end - 1] === SP || data[end - 1] === HTAB)) end--;
  if (end - start !== lower.length) return false;
  for (let i = 0; i < lower.length; i++) {
    const c = data[start + i]!;
    const l = lower.charCodeAt(i);
    if (c !== l && !(c >= 0x41 && c <= 0x5a && (c | 0x20) === l)) return false;
  }
  return true;
}

/** The Content-Length in [start, end) (trailing spaces and tabs allowed), or -1. */
function lengthIn(data: Uint8Array, start: number, end: number): number {
  while (end > start && (data[end - 1] === SP || data[end - 1] === HTAB)) end--;
  const n = end - start;
  if (n === 0 || n > MAX_LENGTH_DIGITS) return -1;
  let length = 0;
  for (let i = start; i < end; i++) {
    const d = data[i]! - 0x30;
    if (d < 0 || d > 9) return -1;
    length = length * 10 + d;
  }
  return length;
}

/** The N of "timeout=N" in a Keep-Alive header value, in ms; -1 when absent (as undici reads it). */
export function keepAliveHint(value: string): number {
  const text = value.toLowerCase();
  const at = text.indexOf('timeout=');
  if (at === -1) return -1;
  return timeoutDigits(text, at + 8);
}

/** Up to 9 digits from `from` (a string's char codes or bytes), as ms; -1 if none. */
function timeoutDigits(text: string | Uint8Array, from: number, end = text.length): number {
  let seconds = 0;
  let digits = 0;
  for (let i = from; i < end; i++) {
    const c = (typeof text === 'string' ? text.charCodeAt(i) : text[i]!) - 0x30;
    if (c < 0 || c > 9) break;
    seconds = seconds * 10 + c;
    if (++digits > 9) return -1;
  }
  return digits === 0 ? -1 : seconds * 1000;
}

const TIMEOUT = 'timeout=';

/** keepAliveHint of the value bytes [start, end). */
function keepAliveHintIn(data: Uint8Array, start: number, end: number): number {
  for (let at = start; at + TIMEOUT.length <= end; at++) {
    let found = true;
    for (let i = 0; i < TIMEOUT.length; i++) {
      const c = data[at + i]!;
      // Letters folded as toLowerCase folds ASCII; '=' is itself.
      if ((c >= 0x41 && c <= 0x5a ? c | 0x20 : c) !== TIMEOUT.charCodeAt(i)) {
        found = false;
        break;
      }
    }
    if (found) return timeoutDigits(data, at + TIMEOUT.length, end);
  }
  return -1;
}

/**
 * Reads a plain response head (see the top of this file) from the first `n` bytes of
 * `data`, into plainHead. False when the head is not plain or not all there: then
 * nothing is known, and the bytes are llhttp's to parse.
 */
export function readPlainHead(data: Uint8Array, n: number): boolean {
  const limit = n < MAX_HEAD ? n : MAX_HEAD;
  if (limit < 16) return false;
  for (let i = 0; i < VERSION.length; i++) if (data[i] !== VERSION[i]) return false;
  const d0 = data[9]! - 0x30;
  const d1 = data[10]! - 0x30;
  const d2 = data[11]! - 0x30;
  if (d0 < 2 || d0 > 5 || d1 < 0 || d1 > 9 || d2 < 0 || d2 > 9 || data[12] !== SP) return false;
  const status = d0 * 100 + d1 * 10 + d2;
  // No body whatever the head says: llhttp's case.
  if (status === 204 || status === 304) return false;
  let i = 13;
  while (i < limit && isTextByte(data[i]!)) i++;
  if (i + 1 >= limit || data[i] !== CR || data[i + 1] !== LF) return false;
  const reasonEnd = i;
  i += 2;
  const fieldsStart = i;
  let contentLength = -1;
  let dropStart = -1;
  let dropEnd = -1;
  let drop2Start = -1;
  let drop2End = -1;
  let connection = false;
  let keepAlive = false;
  let keepAliveMs = -1;
  let hasDate = false;
  for (;;) {
    if (i + 1 >= limit) return false;
    if (data[i] === CR) {
      if (data[i + 1] !== LF) return false;
      break;
    }
    const lineStart = i;
    let c = data[i]!;
    // A line that starts with a space or tab (obs-fold) fails here: not a token byte.
    while (c < 0x80 && TOKEN[c] === 1) {
      if (++i >= limit) return false;
      c = data[i]!;
    }
    if (c !== 0x3a /* : */ || i === lineStart) return false;
    const nameLength = i - lineStart;
    i++;
    const valueStart = i;
    while (i < limit && isTextByte(data[i]!)) i++;
    if (i + 1 >= limit || data[i] !== CR || data[i + 1] !== LF) return false;
    const valueEnd = i;
    i += 2;
    switch (nameLength) {
      case 2:
        if (nameIs(data, lineStart, 'te')) return false;
        break;
      case 4:
        if (nameIs(data, lineStart, 'date')) hasDate = true;
        break;
      case 7:
        if (nameIs(data, lineStart, 'upgrade') || nameIs(data, lineStart, 'trailer')) return false;
        break;
      case 10: {
        let leftOut = false;
        if (nameIs(data, lineStart, 'keep-alive')) {
          if (keepAlive) return false;
          keepAlive = leftOut = true;
          keepAliveMs = keepAliveHintIn(data, valueStart, valueEnd);
        } else if (nameIs(data, lineStart, 'connection')) {
          if (connection || !valueIs(data, valueStart, valueEnd, 'keep-alive')) return false;
          connection = leftOut = true;
        }
        if (!leftOut) break;
        // The first free slot: the slots stay in the order of the lines.
        if (dropStart === -1) {
          dropStart = lineStart;
          dropEnd = i;
        } else {
          drop2Start = lineStart;
          drop2End = i;
        }
        break;
      }
      case 14:
        if (nameIs(data, lineStart, 'content-length')) {
          if (contentLength !== -1) return false;
          let at = valueStart;
          while (at < valueEnd && (data[at] === SP || data[at] === HTAB)) at++;
          contentLength = lengthIn(data, at, valueEnd);
          if (contentLength === -1) return false;
        }
        break;
      case 16:
        if (nameIs(data, lineStart, 'proxy-connection')) return false;
        break;
      case 17:
        if (nameIs(data, lineStart, 'transfer-encoding')) return false;
        break;
    }
  }
  // Without a length the body ends at the close: llhttp's case.
  if (contentLength === -1) return false;
  const head = plainHead;
  head.status = status;
  head.reasonStart = 13;
  head.reasonEnd = reasonEnd;
  head.fieldsStart = fieldsStart;
  head.fieldsEnd = i;
  head.dropStart = dropStart;
  head.dropEnd = dropEnd;
  head.drop2Start = drop2Start;
  head.drop2End = drop2End;
  head.keepAliveMs = keepAliveMs;
  head.contentLength = contentLength;
  head.hasDate = hasDate;
  head.length = i + 2;
  return true;
}

/**
 * The header lines of plainHead, without its Connection and Keep-Alive lines, in a buffer
 * of their own (into Buffer's pool; copied by Buffer's copy, which makes no view of `data`).
 */
export function plainFields(data: Buffer): Buffer {
  const { fieldsStart, fieldsEnd, dropStart: aStart, dropEnd: aEnd, drop2Start: bStart, drop2End: bEnd } = plainHead;
  const size = fieldsEnd - fieldsStart - (aStart === -1 ? 0 : aEnd - aStart) - (bStart === -1 ? 0 : bEnd - bStart);
  const out = Buffer.allocUnsafe(size);
  if (aStart === -1) {
    data.copy(out, 0, fieldsStart, fieldsEnd);
    return out;
  }
  let at = data.copy(out, 0, fieldsStart, aStart);
  if (bStart === -1) {
    data.copy(out, at, aEnd, fieldsEnd);
    return out;
  }
  at += data.copy(out, at, aEnd, bStart);
  data.copy(out, at, bEnd, fieldsEnd);
  return out;
}

/**
 * Reason phrases seen, by status: a pod sends the same one each time, so its string is
 * made once. Filled up front, so that V8 keeps the array's elements dense.
 */
const reasons = new Array<string | undefined>(600).fill(undefined);

/** plainHead's reason phrase as a string. */
export function plainReason(data: Buffer): string {
  const { status, reasonStart, reasonEnd } = plainHead;
  const known = reasons[status];
  if (known !== undefined && known.length === reasonEnd - reasonStart) {
    let same = true;
    for (let i = 0; i < known.length; i++) {
      if (known.charCodeAt(i) !== data[reasonStart + i]) {
        same = false;
        break;
      }
    }
    if (same) return known;
  }
  const text = data.toString('latin1', reasonStart, reasonEnd);
  reasons[status] = text;
  return text;
}

/**
 * Header lines (as plainFields gives them) as flat [name, value, ...] pairs, names as
 * written and values trimmed, as llhttp would have given them: for a reader that needs
 * strings after all.
 */
export function fieldPairs(fields: Buffer): string[] {
  const pairs: string[] = [];
  let at = 0;
  while (at < fields.length) {
    const colon = fields.indexOf(0x3a, at);
    const end = fields.indexOf(CR, colon);
    let start = colon + 1;
    let stop = end;
    while (start < stop && (fields[start] === SP || fields[start] === HTAB)) start++;
    while (stop > start && (fields[stop - 1] === SP || fields[stop - 1] === HTAB)) stop--;
    pairs.push(fields.toString('latin1', at, colon), fields.toString('latin1', start, stop));
    at = end + 2;
  }
  return pairs;
}
