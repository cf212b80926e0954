// HPACK (RFC 7541): the decoder keeps the dynamic table a peer's header blocks build (a
// client's on the server side, a pod's on the client side; names and values stay strings,
// so an indexed field costs no allocation); the encoder sends every field as a literal
// without indexing (static table names where there is one, no Huffman), which needs no
// state and no table of ours.
import { huffmanDecode } from './huffman.ts';

export const STATIC_TABLE: readonly (readonly [string, string])[] = [
  [':authority', ''], [':method', 'GET'], [':method', 'POST'], [':path', '/'], [':path', '/index.html'],
  [':scheme', 'http'], [':scheme', 'https'], [':status', '200'], [':status', '204'], [':status', '206'],
  [':status', '304'], [':status', '400'], [':status', '404'], [':status', '500'], ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'], ['accept-language', ''], ['accept-ranges', ''], ['accept', ''],
  ['access-control-allow-origin', ''], ['age', ''], ['allow', ''], ['authorization', ''], ['cache-control', ''],
  ['content-disposition', ''], ['content-encoding', ''], ['content-language', ''], ['content-length', ''],
  ['content-location', ''], ['content-range', ''], ['content-type', ''], ['cookie', ''], ['date', ''], ['etag', ''],
  ['expect', ''], ['expires', ''], ['from', ''], ['host', ''], ['if-match', ''], ['if-modified-since', ''],
  ['if-none-match', ''], ['if-range', ''], ['if-unmodified-since', ''], ['last-modified', ''], ['link', ''],
  ['location', ''], ['max-forwards', ''], ['proxy-authenticate', ''], ['proxy-authorization', ''], ['range', ''],
  ['referer', ''], ['refresh', ''], ['retry-after', ''], ['server', ''], ['set-cookie', ''],
  ['strict-transport-security', ''], ['transfer-encoding', ''], ['user-agent', ''], ['vary', ''], ['via', ''],
  ['www-authenticate', ''],
];
const STATIC_COUNT = STATIC_TABLE.length;

/** Why a header block could not be decoded: a connection error (COMPRESSION_ERROR). */
export class HpackError extends Error {}

/** An entry's size: its name and value in bytes plus 32 (section 4.1). */
function entrySize(name: string, value: string): number {
  return name.length + value.length + 32;
}

/** A client's header blocks, decoded with the dynamic table they build. */
export class HpackDecoder {
  /** The most the table may hold: what we advertised (SETTINGS_HEADER_TABLE_SIZE, 4096 by default). */
  private readonly maxAllowed: number;
  /** The size the client set with a table size update, at most maxAllowed. */
  private capacity: number;
  private size = 0;
  // A ring of entries, newest at `head - 1`; at most maxAllowed / 32 of them.
  private readonly names: string[];
  private readonly values: string[];
  private head = 0;
  private count = 0;

  constructor(maxAllowed = 4096) {
    this.maxAllowed = maxAllowed;
    this.capacity = maxAllowed;
    const slots = Math.max(1, maxAllowed >>> 5);
    this.names = new Array<string>(slots).fill('');
    this.values = new Array<string>(slots).fill('');
  }

  /** Bytes the dynamic table holds now. */
  get tableSize(): number {
    return this.size;
  }

  /**
   * Decodes one whole header block into `out` as name, value pairs. Returns the header
   * list size (section 6.5.2 of RFC 9113: names, values and 32 per field); fields beyond
   * `maxListSize` are decoded (the table must stay in step) but not kept, and the size
   * returned is then larger than `maxListSize`. Throws HpackError on a malformed block.
   */
  decode(block: Uint8Array, start: number, end: number, out: string[], maxListSize: number): number {
    let pos = start;
    let listSize = 0;
    let fieldsSeen = false;
    while (pos < end) {
      const first = block[pos]!;
      let name: string;
      let value: string;
      if (first & 0x80) {
        // Indexed field (section 6.1).
        const index = readInt(block, pos, end, 7);
        pos = intEnd;
        if (index === 0) throw new HpackError('indexed field 0');
        name = this.nameAt(index);
        value = this.valueAt(index);
      } else if ((first & 0xe0) === 0x20) {
        // Dynamic table size update (section 6.3): only before the first field.
        if (fieldsSeen) throw new HpackError('table size update after a field');
        const size = readInt(block, pos, end, 5);
        pos = intEnd;
        if (size > this.maxAllowed) throw new HpackError(`table size update to ${size} beyond ${this.maxAllowed}`);
        this.capacity = size;
        this.evict(0);
        continue;
      } else {
        // Literal (sections 6.2.1-6.2.3): with incremental indexing (01), without (0000), never indexed (0001).
        const indexing = (first & 0x40) !== 0;
        const index = readInt(block, pos, end, indexing ? 6 : 4);
        pos = intEnd;
        if (index === 0) {
          name = readString(block, pos, end);
          pos = intEnd;
        } else {
          name = this.nameAt(index);
        }
        value = readString(block, pos, end);
        pos = intEnd;
        if (indexing) this.insert(name, value);
      }
      fieldsSeen = true;
      listSize += entrySize(name, value);
      if (listSize <= maxListSize) out.push(name, value);
    }
    return listSize;
  }

  private nameAt(index: number): string {
    if (index <= STATIC_COUNT) return STATIC_TABLE[index - 1]![0];
    return this.names[this.slot(index)]!;
  }

  private valueAt(index: number): string {
    if (index <= STATIC_COUNT) return STATIC_TABLE[index - 1]![1];
    return this.values[this.slot(index)]!;
  }

  private slot(index: number): number {
    const nth = index - STATIC_COUNT - 1;
    if (nth >= this.count) throw new HpackError(`index ${index} beyond the table`);
    const slots = this.names.length;
    return (this.head - 1 - nth + slots) % slots;
  }

  private insert(name: string, value: string): void {
    const size = entrySize(name, value);
    if (size > this.capacity) {
      // An entry larger than the table empties it (section 4.4).
      this.count = 0;
      this.size = 0;
      return;
    }
    this.evict(size);
    const slots = this.names.length;
    this.names[this.head] = name;
    this.values[this.head] = value;
    this.head = (this.head + 1) % slots;
    this.count++;
    this.size += size;
  }

  /** Drops the oldest entries until `room` more bytes fit. */
  private evict(room: number): void {
    const slots = this.names.length;
    while (this.count > 0 && this.size + room > this.capacity) {
      const oldest = (this.head - this.count + slots) % slots;
      this.size -= entrySize(this.names[oldest]!, this.values[oldest]!);
      this.names[oldest] = '';
      this.values[oldest] = '';
      this.count--;
    }
  }
}

/** Where the last readInt / readString ended (saves an object per call). */
let intEnd = 0;

/** An integer with an N-bit prefix at block[pos] (section 5.1); sets intEnd. */
function readInt(block: Uint8Array, pos: number, end: number, prefixBits: number): number {
  const max = (1 << prefixBits) - 1;
  let value = block[pos]! & max;
  pos++;
  if (value === max) {
    let shift = 0;
    let byte: number;
    do {
      if (pos >= end) throw new HpackError('truncated integer');
      byte = block[pos++]!;
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
      // Nothing in a 32 KiB header list needs more; a longer one is an attack.
      if (shift > 28) throw new HpackError('integer too large');
    } while (byte & 0x80);
  }
  intEnd = pos;
  return value;
}

/** A string literal (section 5.2) at block[pos]; sets intEnd past it. */
function readString(block: Uint8Array, pos: number, end: number): string {
  if (pos >= end) throw new HpackError('truncated string');
  const huffman = (block[pos]! & 0x80) !== 0;
  const length = readInt(block, pos, end, 7);
  const from = intEnd;
  const to = from + length;
  if (to > end) throw new HpackError('string beyond the block');
  let text: string | undefined;
  if (huffman) text = huffmanDecode(block, from, to);
  else text = Buffer.prototype.toString.call(block, 'latin1', from, to);
  if (text === undefined) throw new HpackError('invalid Huffman code');
  intEnd = to;
  return text;
}

/** The static index of each name (its first entry), for the encoder. */
const staticNameIndex = new Map<string, number>();
for (let i = STATIC_COUNT - 1; i >= 0; i--) staticNameIndex.set(STATIC_TABLE[i]![0], i + 1);
const STATUS_INDEX: Record<number, number> = { 200: 8, 204: 9, 206: 10, 304: 11, 400: 12, 404: 13, 500: 14 };

/** Bytes an integer takes with an N-bit prefix. */
function intLength(value: number, prefixBits: number): number {
  const max = (1 << prefixBits) - 1;
  if (value < max) return 1;
  let n = 2;
  for (value -= max; value >= 128; value = Math.floor(value / 128)) n++;
  return n;
}

function writeInt(out: Buffer, pos: number, value: number, prefixBits: number, pattern: number): number {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out[pos++] = pattern | value;
    return pos;
  }
  out[pos++] = pattern | max;
  value -= max;
  while (value >= 128) {
    out[pos++] = (value & 0x7f) | 0x80;
    value = Math.floor(value / 128);
  }
  out[pos++] = value;
  return pos;
}

/**
 * An encoded header block: fields added as literals without indexing. Names must be
 * lowercase; values latin1. `length` is known before writing so frames are sized once.
 * `fields`: how many fields the caller expects (pseudo-headers included), so that the list
 * of parts is made at its size once: grown by push from empty it was made two or three
 * times over (about 0.5 KB a request head to a pod, heap sampling profile under h2load).
 * More fields than that are fine (the list grows).
 */
export class HeaderBlock {
  private readonly parts: (string | number)[];
  /** Parts used: the list may be longer than that (made at the size asked for). */
  private count = 0;
  length = 0;

  constructor(fields = 4) {
    this.parts = new Array<string | number>(2 * fields);
  }

  status(code: number): this {
    const index = STATUS_INDEX[code];
    if (index !== undefined) {
      this.parts[this.count++] = -index;
      this.length += 1;
    } else {
      this.add(':status', String(code));
    }
    return this;
  }

  add(name: string, value: string): this {
    const index = staticNameIndex.get(name);
    const parts = this.parts;
    parts[this.count++] = index ?? name;
    parts[this.count++] = value;
    this.length += (index === undefined ? 1 + intLength(name.length, 7) + name.length : intLength(index, 4)) + intLength(value.length, 7) + value.length;
    return this;
  }

  /** Writes the block at out[pos]; returns the position after it. */
  writeTo(out: Buffer, pos: number): number {
    const parts = this.parts;
    const count = this.count;
    for (let i = 0; i < count; i++) {
      const part = parts[i]!;
      if (typeof part === 'number' && part < 0) {
        pos = writeInt(out, pos, -part, 7, 0x80);
        continue;
      }
      if (typeof part === 'number') {
        pos = writeInt(out, pos, part, 4, 0);
      } else {
        out[pos++] = 0;
        pos = writeInt(out, pos, part.length, 7, 0);
        pos += out.write(part, pos, 'latin1');
      }
      const value = parts[++i] as string;
      pos = writeInt(out, pos, value.length, 7, 0);
      pos += out.write(value, pos, 'latin1');
    }
    return pos;
  }
}
