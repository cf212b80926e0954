// What may be written into an HTTP/1.1 head as is, by the server (responses) and the
// client (requests) alike. Heads are written as latin1 strings, so a character above
// U+00FF would be cut to its low byte: U+010A would become LF and split the head.

// tchar of RFC 9110 section 5.6.2: 1 at the codes of token characters.
export const TOKEN = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~") TOKEN[c.charCodeAt(0)] = 1;
for (let c = 0x30; c <= 0x39; c++) TOKEN[c] = 1;
for (let c = 0x41; c <= 0x5a; c++) TOKEN[c] = 1;
for (let c = 0x61; c <= 0x7a; c++) TOKEN[c] = 1;

export function isToken(s: string): boolean {
  const n = s.length;
  if (n === 0) return false;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c > 127 || TOKEN[c] === 0) return false;
  }
  return true;
}

/**
 * A header value that can be written as latin1 as is: no control character but HTAB
 * (CR, LF and NUL above all), and nothing above U+00FF, which latin1 would cut to its
 * low byte (U+010A would become LF).
 */
export function isCleanValue(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 ? c !== 0x09 : c === 0x7f || c > 0xff) return false;
  }
  return true;
}

/**
 * Whether header name `name` is `lower` (a lowercase name) in any case, without making a
 * lowercase copy: a pod's names come as it wrote them ("Content-Length"), and a copy per
 * name compared is garbage on every response.
 */
export function isNamed(name: string, lower: string): boolean {
  if (name === lower) return true;
  const n = lower.length;
  if (name.length !== n) return false;
  for (let i = 0; i < n; i++) {
    const c = name.charCodeAt(i);
    // ASCII letters fold by their 0x20 bit; anything else must be equal as it is.
    if (c !== lower.charCodeAt(i) && (c < 0x41 || c > 0x5a || (c | 0x20) !== lower.charCodeAt(i))) return false;
  }
  return true;
}
