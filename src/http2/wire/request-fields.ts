// Which decoded request heads are malformed (RFC 9113 sections 8.1.1, 8.2 and 8.3): a
// stream error PROTOCOL_ERROR, never forwarded. What is well formed but refused (control
// characters other than CR/LF/NUL, CONNECT) is answered later by http2Head (request.ts).

// Field-name characters: tchar (RFC 9110 section 5.6.2) without uppercase letters.
const NAME = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~") NAME[c.charCodeAt(0)] = 1;
for (let c = 0x30; c <= 0x39; c++) NAME[c] = 1;
for (let c = 0x61; c <= 0x7a; c++) NAME[c] = 1;

function isLowercaseToken(s: string, from: number): boolean {
  if (s.length <= from) return false;
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 127 || NAME[c] === 0) return false;
  }
  return true;
}

/** CR, LF or NUL anywhere, or whitespace at either end (section 8.2.1). */
function isMalformedValue(s: string): boolean {
  const n = s.length;
  if (n === 0) return false;
  const first = s.charCodeAt(0);
  const last = s.charCodeAt(n - 1);
  if (first === 0x20 || first === 0x09 || last === 0x20 || last === 0x09) return true;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x0d || c === 0x0a || c === 0x00) return true;
  }
  return false;
}

const PSEUDO_METHOD = 1;
const PSEUDO_SCHEME = 2;
const PSEUDO_PATH = 4;
const PSEUDO_AUTHORITY = 8;

/**
 * Why a request head is malformed, or undefined when it is not. Sets `contentLength`
 * (module state, read right after): the declared body length, or -1.
 */
export function malformedRequest(fields: readonly string[]): string | undefined {
  let seen = 0;
  let regular = false;
  let method = '';
  let length = -1;
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i]!;
    const value = fields[i + 1]!;
    if (name.charCodeAt(0) === 58 /* ':' */) {
      if (regular) return 'a pseudo-header after a regular field';
      let bit: number;
      switch (name) {
        case ':method':
          bit = PSEUDO_METHOD;
          method = value;
          break;
        case ':scheme':
          bit = PSEUDO_SCHEME;
          break;
        case ':path':
          bit = PSEUDO_PATH;
          break;
        case ':authority':
          bit = PSEUDO_AUTHORITY;
          break;
        case ':protocol':
          // Extended CONNECT (RFC 8441): not offered, answered 501 by http2Head.
          bit = 0;
          break;
        default:
          return `unknown pseudo-header ${name}`;
      }
      if ((seen & bit) !== 0) return `${name} twice`;
      seen |= bit;
      if (value === '' && bit !== PSEUDO_AUTHORITY) return `empty ${name}`;
      if (isMalformedValue(value)) return `${name} has CR, LF, NUL or edge whitespace`;
      continue;
    }
    regular = true;
    const bad = malformedField(name, value);
    if (bad !== undefined) return bad;
    if (name === 'te' && value !== 'trailers') return 'te other than "trailers"';
    if (name === 'content-length' && (length = withContentLength(value, length)) === INVALID_LENGTH) return 'an invalid content-length';
  }
  contentLength = length;
  if ((seen & PSEUDO_METHOD) === 0) return 'no :method';
  if (method === 'CONNECT') {
    // Section 8.5: :authority only (http2Head answers 501).
    if ((seen & (PSEUDO_SCHEME | PSEUDO_PATH)) !== 0 || (seen & PSEUDO_AUTHORITY) === 0) return 'CONNECT with :scheme or :path, or without :authority';
    return undefined;
  }
  if ((seen & PSEUDO_SCHEME) === 0) return 'no :scheme';
  if ((seen & PSEUDO_PATH) === 0) return 'no :path';
  return undefined;
}

/** Why a regular field breaks RFC 9113 section 8.2 in either direction (its name, its value, a connection-specific field), or undefined. */
function malformedField(name: string, value: string): string | undefined {
  if (!isLowercaseToken(name, 0)) return 'a field name that is not a lowercase token';
  if (isMalformedValue(value)) return `${name} has CR, LF, NUL or edge whitespace`;
  switch (name) {
    case 'connection':
    case 'keep-alive':
    case 'proxy-connection':
    case 'transfer-encoding':
    case 'upgrade':
      return `connection-specific field ${name}`;
  }
  return undefined;
}

const INVALID_LENGTH = -2;

/** The length a content-length field gives, agreeing with the one seen before (`known`, -1: none); INVALID_LENGTH if it is not a number or disagrees. */
function withContentLength(value: string, known: number): number {
  const n = /^\d{1,15}$/.test(value) ? Number(value) : -1;
  return n < 0 || (known >= 0 && n !== known) ? INVALID_LENGTH : n;
}

/** The content-length of the head malformedRequest last accepted; -1 when it had none. */
export let contentLength = -1;

/** Why trailer fields are malformed (no pseudo-headers, lowercase names), or undefined. */
export function malformedTrailers(fields: readonly string[]): string | undefined {
  for (let i = 0; i < fields.length; i += 2) {
    if (!isLowercaseToken(fields[i]!, 0)) return 'a trailer name that is not a lowercase token (or a pseudo-header)';
    if (isMalformedValue(fields[i + 1]!)) return 'a trailer value with CR, LF, NUL or edge whitespace';
  }
  return undefined;
}

/**
 * Why a pod's response head is malformed (the rules above, mirrored: one :status of
 * three digits and no other pseudo-header, lowercase names, no connection-specific
 * fields, a valid content-length), or undefined. Sets `responseStatus` and
 * `contentLength` (module state, read right after).
 */
export function malformedResponse(fields: readonly string[]): string | undefined {
  let status = -1;
  let regular = false;
  let length = -1;
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i]!;
    const value = fields[i + 1]!;
    if (name.charCodeAt(0) === 58 /* ':' */) {
      if (regular) return 'a pseudo-header after a regular field';
      if (name !== ':status') return `pseudo-header ${name} in a response`;
      if (status >= 0) return ':status twice';
      if (!/^[1-9]\d\d$/.test(value)) return `an invalid :status ${JSON.stringify(value)}`;
      status = Number(value);
      continue;
    }
    regular = true;
    const bad = malformedField(name, value);
    if (bad !== undefined) return bad;
    if (name === 'content-length' && (length = withContentLength(value, length)) === INVALID_LENGTH) return 'an invalid content-length';
  }
  if (status < 0) return 'no :status';
  responseStatus = status;
  contentLength = length;
  return undefined;
}

/** The :status of the head malformedResponse last accepted. */
export let responseStatus = 0;
