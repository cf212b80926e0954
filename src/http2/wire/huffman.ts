// HPACK's Huffman code (RFC 7541 section 5.2, Appendix B). Decoding walks a table of
// 4-bit steps built once from the code (as nghttp2 does): a byte costs two lookups, not
// eight tree steps. Encoding is only used by tests and the client side of benches: the
// engine sends its own fields as plain literals.
import { HUFFMAN_CODES, HUFFMAN_LENGTHS } from './huffman-table.ts';

const EOS = 256;

/** Per state and nibble: next state << 16 | flags << 9 | symbol + 1 (0: none). */
const FLAG_ACCEPT = 1; // the bits since the last symbol are all 1s and fewer than 8: valid padding
const FLAG_FAIL = 2; // EOS decoded, or a path no code takes
// Built on the first decode, not when the module loads: a process that never serves
// HTTP/2 never builds it, and the build's loops alone made V8 compile them with its
// optimizing compiler at every start (pages of the node binary that then stay resident).
let steps: Int32Array | undefined;

function buildSteps(): Int32Array {
  const built = new Int32Array(256 * 16);
  // The tree: node 0 is the root; children[2n + bit] is a node (> 0) or -(symbol + 1).
  const children: number[] = [0, 0];
  let nodes = 1;
  for (let sym = 0; sym <= EOS; sym++) {
    const code = HUFFMAN_CODES[sym]!;
    const len = HUFFMAN_LENGTHS[sym]!;
    let node = 0;
    for (let i = len - 1; i >= 0; i--) {
      const bit = (code >>> i) & 1;
      if (i === 0) {
        children[2 * node + bit] = -(sym + 1);
      } else {
        if (children[2 * node + bit] === 0 || children[2 * node + bit] === undefined) {
          children[2 * node + bit] = nodes;
          children.push(0, 0);
          nodes++;
        }
        node = children[2 * node + bit]!;
      }
    }
  }
  // Per node: its depth and whether the path to it is all 1s (for the padding rule).
  const depth = new Int32Array(nodes);
  const allOnes = new Uint8Array(nodes);
  allOnes[0] = 1;
  for (let n = 0; n < nodes; n++) {
    for (let bit = 0; bit < 2; bit++) {
      const child = children[2 * n + bit]!;
      if (child > 0) {
        depth[child] = depth[n]! + 1;
        allOnes[child] = allOnes[n]! & bit;
      }
    }
  }
  for (let state = 0; state < nodes; state++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = state;
      let symbol = 0;
      let fail = false;
      for (let i = 3; i >= 0; i--) {
        const next = children[2 * node + ((nibble >>> i) & 1)]!;
        if (next > 0) {
          node = next;
        } else {
          const sym = -next - 1;
          if (sym === EOS || symbol !== 0) fail = true;
          symbol = sym + 1;
          node = 0;
        }
      }
      let flags = fail ? FLAG_FAIL : 0;
      if (allOnes[node] === 1 && depth[node]! < 8) flags |= FLAG_ACCEPT;
      built[state * 16 + nibble] = (node << 16) | (flags << 9) | symbol;
    }
  }
  return built;
}

/** Scratch for decoded bytes: a Huffman string decodes to at most 8/5 of its length. */
let scratch = Buffer.allocUnsafe(4096);

/** The Huffman-coded bytes src[start, end) as a latin1 string; undefined when they are not a valid code. */
export function huffmanDecode(src: Uint8Array, start: number, end: number): string | undefined {
  const need = ((end - start) * 8) / 5 + 1;
  if (scratch.length < need) scratch = Buffer.allocUnsafe(Math.max(need, scratch.length * 2));
  const out = scratch;
  const table = (steps ??= buildSteps());
  let n = 0;
  let state = 0;
  let accept = 1;
  for (let i = start; i < end; i++) {
    const byte = src[i]!;
    let step = table[state * 16 + (byte >>> 4)]!;
    if ((step & (FLAG_FAIL << 9)) !== 0) return undefined;
    if ((step & 0x1ff) !== 0) out[n++] = (step & 0x1ff) - 1;
    state = step >>> 16;
    step = table[state * 16 + (byte & 15)]!;
    if ((step & (FLAG_FAIL << 9)) !== 0) return undefined;
    if ((step & 0x1ff) !== 0) out[n++] = (step & 0x1ff) - 1;
    state = step >>> 16;
    accept = (step >>> 9) & FLAG_ACCEPT;
  }
  // Leftover bits must be a prefix of EOS (all 1s) shorter than 8 (section 5.2).
  if (accept === 0) return undefined;
  return out.toString('latin1', 0, n);
}

/** The Huffman code of a latin1 string. */
export function huffmanEncode(text: string): Buffer {
  let bits = 0;
  for (let i = 0; i < text.length; i++) bits += HUFFMAN_LENGTHS[text.charCodeAt(i) & 0xff]!;
  const out = Buffer.alloc((bits + 7) >>> 3);
  let acc = 0;
  let accBits = 0;
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const sym = text.charCodeAt(i) & 0xff;
    const len = HUFFMAN_LENGTHS[sym]!;
    const code = HUFFMAN_CODES[sym]!;
    // Feed the code in pieces so the accumulator stays within 32 bits.
    for (let left = len; left > 0; ) {
      const take = Math.min(left, 24 - accBits > 0 ? 24 - accBits : 8);
      acc = (acc << take) | ((code >>> (left - take)) & ((1 << take) - 1));
      accBits += take;
      left -= take;
      while (accBits >= 8) {
        out[n++] = (acc >>> (accBits - 8)) & 0xff;
        accBits -= 8;
        acc &= (1 << accBits) - 1;
      }
    }
  }
  if (accBits > 0) out[n++] = ((acc << (8 - accBits)) | ((1 << (8 - accBits)) - 1)) & 0xff;
  return out;
}

/** The length of `text`'s Huffman code in bytes. */
export function huffmanLength(text: string): number {
  let bits = 0;
  for (let i = 0; i < text.length; i++) bits += HUFFMAN_LENGTHS[text.charCodeAt(i) & 0xff]!;
  return (bits + 7) >>> 3;
}
