// Reading one cookie from a request's raw headers, without building a header object
// or splitting the whole Cookie header (this runs for every request of an under-attack route).

/** The value of cookie `name` (the first one sent), or undefined. `prefix` is `${name}=`. */
export function cookieValue(rawHeaders: readonly string[], prefix: string): string | undefined {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length !== 6 || name.toLowerCase() !== 'cookie') continue;
    const header = rawHeaders[i + 1]!;
    let at = header.indexOf(prefix);
    // Only at the start of a cookie pair: "xportico_clearance=" is another cookie.
    while (at > 0 && header.charCodeAt(at - 1) !== 0x20 && header.charCodeAt(at - 1) !== 0x3b) at = header.indexOf(prefix, at + 1);
    if (at === -1) continue;
    const start = at + prefix.length;
    const end = header.indexOf(';', start);
    return (end === -1 ? header.slice(start) : header.slice(start, end)).trim();
  }
  return undefined;
}
