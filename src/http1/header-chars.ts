// What may be written into an HTTP/1.1 head as is, by the server (responses) and the
// client (requests) alike. Heads are written as latin1 strings, so a character above
// U+00FF would be cut to its low byte: U+010A would become LF and split the head.

// tchar of RFC 9110 section 5.6.2.
const TOKEN = new Uint8Array(128);
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
