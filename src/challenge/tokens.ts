// The under-attack challenge's tokens, all stateless: what the server hands out is
// signed, so checking it needs no memory of having handed it out.
//
// - nonce     "<bits>.<expiry>.<random>.<mac>": a challenge for one host, valid until
//             expiry (Unix seconds); mac = HMAC(key, "n|host|bits.expiry.random").
// - solution  a decimal counter such that SHA-256("<nonce>:<counter>") starts with
//             `bits` zero bits: one SHA-256 and one HMAC to check, whatever was sent.
// - clearance "<expiry>.<mac>", mac = HMAC(key, "c|host|expiry"): the cookie that lets
//             a browser through until expiry, on this host only.
//
// The key is one per process: generated at start, or set from --challenge-secret; with
// --workers the primary sends its key to every worker, so a clearance minted by one
// worker (or replica sharing the Secret) is valid on all.
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { hash, randomBytes, timingSafeEqual } = process.getBuiltinModule('node:crypto');

/** Bytes of HMAC kept in tokens (base64url: 22 characters). */
const MAC_BYTES = 16;
const MAC_CHARS = 22;
/** Keys shorter than this are refused: a guessable key lets anyone mint clearances. */
export const MIN_KEY_BYTES = 16;

// HMAC-SHA256 (RFC 2104) over node:crypto's one-shot hash(), with the key's pads
// computed once: createHmac() sets up a new OpenSSL context per call, which cost about
// ten times as much as the two hashes themselves (bench/challenge-verify.ts).
const BLOCK = 64;
let innerPad = Buffer.alloc(BLOCK);
let outerPad = Buffer.alloc(BLOCK);
setChallengeKey(randomBytes(32));

/** Replaces the signing key (from the Secret, or the primary's). Tokens signed with the old one stop being valid. */
export function setChallengeKey(value: Buffer): void {
  if (value.length < MIN_KEY_BYTES) throw new Error(`the challenge key must have at least ${MIN_KEY_BYTES} bytes`);
  const key = value.length > BLOCK ? hash('sha256', value, 'buffer') : value;
  const inner = Buffer.alloc(BLOCK, 0x36);
  const outer = Buffer.alloc(BLOCK, 0x5c);
  for (let i = 0; i < key.length; i++) {
    inner[i]! ^= key[i]!;
    outer[i]! ^= key[i]!;
  }
  innerPad = inner;
  outerPad = outer;
}

/** HMAC-SHA256(key, text), first MAC_BYTES bytes, base64url. */
function mac(text: string): string {
  const inner = hash('sha256', Buffer.concat([innerPad, Buffer.from(text, 'latin1')]), 'buffer');
  return hash('sha256', Buffer.concat([outerPad, inner]), 'buffer').subarray(0, MAC_BYTES).toString('base64url');
}

/** Compares two MACs in constant time (they are always MAC_CHARS long when well-formed). */
function sameMac(a: string, b: string): boolean {
  if (a.length !== MAC_CHARS || b.length !== MAC_CHARS) return false;
  return timingSafeEqual(Buffer.from(a, 'latin1'), Buffer.from(b, 'latin1'));
}

/** Unix seconds, or undefined for anything but 1 to 12 digits. */
function parseSeconds(text: string): number | undefined {
  if (text.length === 0 || text.length > 12) return undefined;
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return undefined;
    n = n * 10 + c;
  }
  return n;
}

/** A new challenge for `host`, asking for `bits` zero bits, valid for `ttlSeconds`. */
export function issueNonce(host: string, bits: number, nowSeconds: number, ttlSeconds: number): string {
  const body = `${bits}.${nowSeconds + ttlSeconds}.${randomBytes(12).toString('base64url')}`;
  return `${body}.${mac(`n|${host}|${body}`)}`;
}

export type SolutionCheck = 'ok' | 'malformed' | 'expired' | 'forged' | 'too-easy' | 'wrong';

/**
 * Checks "<nonce>:<counter>" for `host`: the nonce is ours, for this host, not expired,
 * at least `minBits` hard, and the counter solves it. Cheap checks come first; the
 * worst case is one HMAC and one SHA-256 of under 100 bytes.
 */
export function checkSolution(value: string, host: string, minBits: number, nowSeconds: number): SolutionCheck {
  if (value.length > 120) return 'malformed';
  const colon = value.lastIndexOf(':');
  const dot3 = value.lastIndexOf('.', colon);
  const dot1 = value.indexOf('.');
  const dot2 = value.indexOf('.', dot1 + 1);
  if (colon === -1 || dot1 <= 0 || dot2 <= dot1 || dot3 <= dot2) return 'malformed';
  const bits = parseSeconds(value.slice(0, dot1));
  const expiry = parseSeconds(value.slice(dot1 + 1, dot2));
  const counter = value.slice(colon + 1);
  if (bits === undefined || expiry === undefined || counter.length === 0 || counter.length > 16 || parseSeconds(counter) === undefined) return 'malformed';
  if (bits < minBits) return 'too-easy';
  if (expiry <= nowSeconds) return 'expired';
  if (!sameMac(value.slice(dot3 + 1, colon), mac(`n|${host}|${value.slice(0, dot3)}`))) return 'forged';
  return hasLeadingZeroBits(hash('sha256', value, 'buffer'), bits) ? 'ok' : 'wrong';
}

export function hasLeadingZeroBits(digest: Uint8Array, bits: number): boolean {
  let i = 0;
  for (; bits >= 8; bits -= 8, i++) if (digest[i] !== 0) return false;
  return bits === 0 || digest[i]! >> (8 - bits) === 0;
}

/** A clearance for `host` until `expiry` (Unix seconds). */
export function issueClearance(host: string, expiry: number): string {
  return `${expiry}.${mac(`c|${host}|${expiry}`)}`;
}

/** The clearance is ours, for this host, and not expired. */
export function checkClearance(value: string, host: string, nowSeconds: number): boolean {
  const dot = value.indexOf('.');
  if (dot <= 0) return false;
  const expiry = parseSeconds(value.slice(0, dot));
  if (expiry === undefined || expiry <= nowSeconds) return false;
  return sameMac(value.slice(dot + 1), mac(`c|${host}|${expiry}`));
}
