// Hot-path helpers that turn a request's Host header and request-target into the
// (host, path) pair the route table matches on, and spot paths that must be refused.
// No regexes and no split(): these run once or twice per request.

const SLASH = 0x2f; // /
const COLON = 0x3a; // :
const DOT = 0x2e; // .
const PERCENT = 0x25; // %
const BACKSLASH = 0x5c; // \
const SEMICOLON = 0x3b; // ;
const QUESTION = 0x3f; // ?
const HASH = 0x23; // #
const OPEN_BRACKET = 0x5b; // [

/**
 * The host to route on: lowercase, without port, without one trailing dot.
 * "Foo.COM:8080" -> "foo.com", "foo.com." -> "foo.com", "[::1]:8080" -> "[::1]",
 * undefined or "" -> "" (which only rules without host can match).
 */
export function normalizeHost(hostHeader: string | undefined): string {
  if (hostHeader === undefined || hostHeader.length === 0) return '';
  if (isAlreadyNormal(hostHeader)) return hostHeader;

  let host = hostHeader.toLowerCase();
  if (host.charCodeAt(0) === OPEN_BRACKET) {
    // IPv6 literal: the port, if any, comes after the closing bracket.
    const close = host.indexOf(']');
    return close === -1 ? host : host.slice(0, close + 1);
  }
  const colon = host.indexOf(':');
  if (colon !== -1) host = host.slice(0, colon);
  if (host.charCodeAt(host.length - 1) === DOT) host = host.slice(0, -1);
  return host;
}

/** The common case: already lowercase ASCII, no port, no trailing dot. */
function isAlreadyNormal(host: string): boolean {
  for (let i = 0; i < host.length; i++) {
    const c = host.charCodeAt(i);
    // A-Z, ':' and anything non-ASCII (toLowerCase decides) take the slow path.
    if ((c >= 0x41 && c <= 0x5a) || c === COLON || c > 0x7f) return false;
  }
  return host.charCodeAt(host.length - 1) !== DOT;
}

/**
 * true when a Host header (or an absolute-form authority) is a host name, an IPv4
 * address or a bracketed IPv6 address, with an optional port of digits (RFC 9110
 * section 7.2, RFC 3986 section 3.2.2). "echo.test:@evil.com" or "a b" are not: routed by
 * their first part, they would reach the pod as a poisoned Host. Host names are held to
 * what DNS names use (letters, digits, '-', '.', '_'), a subset of reg-name.
 */
export function isValidHost(host: string): boolean {
  const n = host.length;
  let i = 0;
  if (n > 0 && host.charCodeAt(0) === OPEN_BRACKET) {
    const close = host.indexOf(']');
    if (close < 2) return false;
    for (i = 1; i < close; i++) {
      const c = host.charCodeAt(i) | 0x20;
      if (!((c >= 0x30 && c <= 0x3a) || (c >= 0x61 && c <= 0x66) || c === DOT)) return false; // hex digits, ':' and '.' (IPv4-mapped)
    }
    i = close + 1;
  } else {
    for (; i < n; i++) {
      const c = host.charCodeAt(i);
      if (c === COLON) break;
      const lower = c | 0x20;
      if (!((lower >= 0x61 && lower <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2d || c === DOT || c === 0x5f)) return false;
    }
    if (i === 0 && n > 0) return false; // ":80" has no host
  }
  if (i === n) return true;
  if (host.charCodeAt(i) !== COLON) return false;
  // An empty port is allowed (RFC 3986: port = *DIGIT); otherwise digits only.
  for (i++; i < n; i++) {
    const c = host.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

export interface RequestTarget {
  /** Starts with "/", or is "*" for the asterisk-form (OPTIONS *). */
  readonly path: string;
  /** "" or starting with "?". */
  readonly query: string;
  /** The authority of an absolute-form target ("host:8080"); "" for the other forms. */
  readonly authority: string;
}

const ASTERISK_TARGET: RequestTarget = { path: '*', query: '', authority: '' };

/**
 * Splits a request-target (RFC 9112 section 3.2) into path and query.
 * origin-form "/a/b?x=1" -> { path: "/a/b", query: "?x=1" };
 * absolute-form "http://host:8080/a?x" -> { path: "/a", query: "?x", authority: "host:8080" }
 * (the authority then stands for the Host header, RFC 9112 section 3.2.2), "http://host"
 * -> { path: "/" }; asterisk-form "*" -> { path: "*" }. Anything else (authority-form, an
 * authority with userinfo, garbage) -> undefined, which the proxy answers with 400.
 * Returns a small object rather than two indexes: one short-lived allocation per request
 * is noise next to what node:http allocates, and it keeps the call site obvious.
 */
export function splitTarget(url: string): RequestTarget | undefined {
  const first = url.charCodeAt(0);
  if (first === SLASH) return splitAt(url, 0, '');
  if (url === '*') return ASTERISK_TARGET;
  const afterScheme = schemeLength(url);
  if (afterScheme === 0) return undefined;
  // The authority runs to the first '/', '?' or '#'.
  let i = afterScheme;
  while (i < url.length) {
    const c = url.charCodeAt(i);
    if (c === SLASH || c === QUESTION || c === HASH) break;
    i++;
  }
  if (i === afterScheme) return undefined; // "http:///path" has no authority
  const authority = url.slice(afterScheme, i);
  // userinfo ("user:pass@host") is deprecated and a classic way to confuse parsers (RFC 9110 section 4.2.4).
  if (authority.includes('@')) return undefined;
  if (i === url.length || url.charCodeAt(i) !== SLASH) {
    // No path: "http://host" or "http://host?x" means "/".
    const query = i < url.length && url.charCodeAt(i) === QUESTION ? url.slice(i) : '';
    return { path: '/', query, authority };
  }
  return splitAt(url, i, authority);
}

function splitAt(url: string, pathStart: number, authority: string): RequestTarget {
  const q = url.indexOf('?', pathStart);
  if (q === -1) return { path: pathStart === 0 ? url : url.slice(pathStart), query: '', authority };
  return { path: url.slice(pathStart, q), query: url.slice(q), authority };
}

/** Length of a leading "http://" or "https://" (any case), else 0. Absolute-form is rare: allocating is fine. */
function schemeLength(url: string): number {
  const head = url.slice(0, 8).toLowerCase();
  if (head.startsWith('http://')) return 7;
  if (head === 'https://') return 8;
  return 0;
}

const HEX = '0123456789ABCDEF';

/** The value of an ASCII hex digit, or -1. */
function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10;
  return -1;
}

/** ALPHA / DIGIT / "-" / "." / "_" / "~" (RFC 3986 section 2.3): decoding them changes no meaning. */
function isUnreserved(c: number): boolean {
  const lower = c | 0x20;
  return (lower >= 0x61 && lower <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2d || c === DOT || c === 0x5f || c === 0x7e;
}

/**
 * The path as routing, the policies and the pod all see it, or undefined when it must be
 * refused with 400. A pod decodes and collapses what a proxy leaves encoded, so a path
 * that matched one rule here could mean another rule's path there ("/%61pp" or "//app"
 * are "/app" to most servers). So, as nginx does before it matches locations:
 * - percent-encoded unreserved characters are decoded ("/%61pp" -> "/app"), the hex of
 *   other escapes is uppercased ("%3f" -> "%3F", RFC 3986 section 6.2.2.1);
 * - repeated slashes are merged ("//app///x" -> "/app/x");
 * - an encoded slash or backslash ("%2F", "%5C"), a raw backslash, an encoded or raw
 *   control character ("%00") and a malformed escape ("%zz", "%4") are refused: some pods
 *   turn them into path separators or truncate there, others do not, so no one path can
 *   be matched for them.
 * Dot segments are refused separately (hasDotSegment), after this decoding. Case is kept:
 * Ingress paths are case-sensitive. The common path, with nothing to change, is returned
 * as is without allocating.
 */
export function normalizePath(path: string): string | undefined {
  const n = path.length;
  let previousSlash = false;
  for (let i = 0; i < n; i++) {
    const c = path.charCodeAt(i);
    if (c === SLASH) {
      if (previousSlash) return rewritePath(path, i);
      previousSlash = true;
      continue;
    }
    previousSlash = false;
    if (c === PERCENT || c === BACKSLASH || c < 0x20 || c === 0x7f) return rewritePath(path, i);
  }
  return path;
}

/** normalizePath's slow path, from the first character `from` that needs work. */
function rewritePath(path: string, from: number): string | undefined {
  let out = path.slice(0, from);
  let previousSlash = out.charCodeAt(out.length - 1) === SLASH;
  for (let i = from; i < path.length; i++) {
    let c = path.charCodeAt(i);
    if (c === BACKSLASH || c < 0x20 || c === 0x7f) return undefined;
    if (c === PERCENT) {
      const high = hexValue(path.charCodeAt(i + 1));
      const low = hexValue(path.charCodeAt(i + 2));
      if (high < 0 || low < 0) return undefined;
      const decoded = high * 16 + low;
      i += 2;
      if (decoded === SLASH || decoded === BACKSLASH || decoded < 0x20 || decoded === 0x7f) return undefined;
      if (!isUnreserved(decoded)) {
        out += '%' + HEX[high]! + HEX[low]!;
        previousSlash = false;
        continue;
      }
      c = decoded;
    }
    if (c === SLASH) {
      if (previousSlash) continue;
      previousSlash = true;
    } else {
      previousSlash = false;
    }
    out += String.fromCharCode(c);
  }
  return out;
}

/**
 * The path without ";params" in its segments ("/app;jsessionid=1/x" -> "/app/x"): what
 * servlet containers (Tomcat, Jetty, Spring) act on, so rules are matched on it, and a
 * parameter cannot move a request from a restricted path to another rule. The pod still
 * gets the parameters.
 */
export function withoutPathParameters(path: string): string {
  if (path.indexOf(';') === -1) return path;
  let out = '';
  let i = 0;
  while (i < path.length) {
    const semicolon = path.indexOf(';', i);
    if (semicolon === -1) {
      out += path.slice(i);
      break;
    }
    out += path.slice(i, semicolon);
    const slash = path.indexOf('/', semicolon);
    if (slash === -1) break;
    i = slash;
  }
  // A segment that was only parameters ("/;x/app") leaves "//", which servers merge.
  return out.includes('//') ? out.replace(/\/{2,}/g, '/') : out;
}

/**
 * True when the path has a "." or ".." segment, plain or percent-encoded ("%2e", "%2E",
 * ".%2e", ...). Routing matches the raw path, but a backend normalizes it, so
 * "/public/../admin" would pass a Prefix /public rule and reach /admin: refuse it.
 * Besides '/', a backslash and an encoded slash ("%2f", "%5c") also delimit segments,
 * and ";params" are ignored ("/..;/"), because some backends decode or honour them
 * before resolving dot segments.
 */
export function hasDotSegment(path: string): boolean {
  if (path.indexOf('.') === -1 && path.indexOf('%') === -1) return false;
  let segmentStart = 0;
  let i = 0;
  while (i <= path.length) {
    const delimiter = i === path.length ? 1 : delimiterLength(path, i);
    if (delimiter === 0) {
      i++;
      continue;
    }
    if (isDotSegment(path, segmentStart, i)) return true;
    i += delimiter;
    segmentStart = i;
  }
  return false;
}

/** 1 for '/' or '\', 3 for "%2f" / "%5c" (any case), 0 when path[i] starts no delimiter. */
function delimiterLength(path: string, i: number): number {
  const c = path.charCodeAt(i);
  if (c === SLASH || c === BACKSLASH) return 1;
  if (c !== PERCENT) return 0;
  const high = path.charCodeAt(i + 1);
  const low = path.charCodeAt(i + 2) | 0x20;
  if ((high === 0x32 && low === 0x66) || (high === 0x35 && low === 0x63)) return 3; // 2f, 5c
  return 0;
}

/**
 * path[start, end) is "." or "..", each dot plain or as "%2e" / "%2E". A ';' ends the
 * segment early: servlet containers drop ";params", so "..;x" resolves like "..".
 */
function isDotSegment(path: string, start: number, end: number): boolean {
  let dots = 0;
  let i = start;
  while (i < end) {
    const c = path.charCodeAt(i);
    if (c === SEMICOLON) break;
    if (c === DOT) i++;
    else if (i + 3 <= end && isEncodedDot(path, i)) i += 3;
    else return false;
    if (++dots > 2) return false;
  }
  return dots > 0;
}

function isEncodedDot(path: string, i: number): boolean {
  return path.charCodeAt(i) === PERCENT && path.charCodeAt(i + 1) === 0x32 && (path.charCodeAt(i + 2) | 0x20) === 0x65;
}
