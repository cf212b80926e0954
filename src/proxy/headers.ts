// Header rewriting between client and pod: hop-by-hop headers (RFC 9110 section 7.6.1)
// stay on their own connection, X-Forwarded-*, X-Real-IP and X-Request-Id are set, and
// policies' extra headers replace same-name ones. One pass over the raw headers, no regex.
//
// What a pod can trust: X-Real-IP and the last X-Forwarded-For entry are the client
// address portico resolved; X-Forwarded-Proto/-Host/-Port describe the request as
// portico received it. Forwarding headers a client sends (Forwarded, X-Forwarded-*,
// X-Real-IP, X-Original-URL...) are dropped unless the peer is in --trusted-proxies:
// then X-Forwarded-For is appended to and the others are passed on as that proxy sent
// them (a load balancer that terminated TLS says X-Forwarded-Proto: https).
import type { IncomingHttpHeaders } from 'node:http';
import { isTrustedPeer, peerAddress } from './client-ip.ts';
import { isNamed } from '../http1/header-chars.ts';
import { lowerName } from '../http1/header-names.ts';
import { headerRecord } from '../http1/header-record.ts';
import type { RequestContext } from './context.ts';
import type { HeaderEntry } from '../middleware/header-list.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { randomBytes } = process.getBuiltinModule('node:crypto');

// What a request header name means to the proxy (names lowercase).
const DROP = 1; // hop-by-hop, or set by the proxy itself
const HOST = 2;
const CONTENT_LENGTH = 3;
const TRANSFER_ENCODING = 4;
const CONNECTION = 5;
const FORWARDED_FOR = 6;
const REQUEST_ID = 7;
const UPGRADE = 8;
/** Describes the request as a proxy in front saw it: passed on from trusted proxies only. */
const FROM_PROXY = 9;
/** X-Forwarded-Proto/-Host/-Port: a trusted proxy's are kept, else portico sets its own. */
const FORWARDED_PROTO = 10;
const FORWARDED_HOST = 11;
const FORWARDED_PORT = 12;
const TE = 13;

const REQUEST_SPECIAL = new Map<string, number>([
  ['host', HOST],
  ['content-length', CONTENT_LENGTH],
  ['transfer-encoding', TRANSFER_ENCODING],
  ['connection', CONNECTION],
  ['proxy-connection', DROP],
  ['keep-alive', DROP],
  ['te', TE],
  ['upgrade', UPGRADE],
  // Node answered "100 Continue" already; undici refuses the header.
  ['expect', DROP],
  // HTTP/2 clients' pseudo-headers never reach here; these the proxy sets itself.
  ['x-forwarded-for', FORWARDED_FOR],
  ['x-forwarded-proto', FORWARDED_PROTO],
  ['x-forwarded-host', FORWARDED_HOST],
  ['x-forwarded-port', FORWARDED_PORT],
  ['x-real-ip', DROP],
  ['forwarded', FROM_PROXY],
  ['x-forwarded-server', FROM_PROXY],
  ['x-forwarded-prefix', FROM_PROXY],
  ['x-forwarded-scheme', FROM_PROXY],
  ['x-forwarded-ssl', FROM_PROXY],
  ['x-original-forwarded-for', FROM_PROXY],
  ['x-original-url', FROM_PROXY],
  ['x-rewrite-url', FROM_PROXY],
  ['x-request-id', REQUEST_ID],
]);

/** Connection options that are not header names (or are hop-by-hop anyway). */
function isPlainConnectionOption(token: string): boolean {
  return token === 'close' || token === 'keep-alive' || token === 'upgrade' || token === '';
}

/** Lowercase header names listed in a Connection header value, beyond the usual options. */
function connectionTokens(value: string, into: string[] | undefined): string[] | undefined {
  let start = 0;
  while (start <= value.length) {
    let end = value.indexOf(',', start);
    if (end === -1) end = value.length;
    const token = value.slice(start, end).trim().toLowerCase();
    if (!isPlainConnectionOption(token)) (into ??= []).push(token);
    start = end + 1;
  }
  return into;
}

// X-Request-Id when the client sent none: a per-process random prefix and a counter
// (about 30 ns, where crypto.randomUUID() measured 110-240 ns).
const REQUEST_ID_PREFIX = randomBytes(6).toString('hex') + '-';
let requestCounter = 0;

export function nextRequestId(): string {
  requestCounter = (requestCounter + 1) % Number.MAX_SAFE_INTEGER;
  return REQUEST_ID_PREFIX + requestCounter.toString(36);
}

let lastPort = -1;
let lastPortText = '';
function portText(port: number | undefined): string {
  if (port === undefined) return '';
  if (port !== lastPort) {
    lastPort = port;
    lastPortText = String(port);
  }
  return lastPortText;
}

/** The request head going to the pod; filled by buildRequestHeaders. */
/** What buildRequestHeaders fills in; proxied requests and upgrade tunnels extend it. */
export class UpstreamRequestHead {
  /** Flat [name, value, name, value...], as undici takes them. */
  headers: string[] = [];
  /** -1 when absent */
  contentLength = -1;
  chunked = false;
  /** The Upgrade header, for upgrade requests */
  upgrade = '';
}

/**
 * Builds the headers for the pod from the client's raw headers. With `upgrade` (a
 * protocol the route tunnels, e.g. "websocket") the request asks the pod for that
 * protocol alone, with Connection: Upgrade; otherwise Upgrade is dropped.
 * Sets ctx.requestId.
 */
export function buildRequestHeaders(ctx: RequestContext, head: UpstreamRequestHead, upgrade = ''): void {
  const raw = ctx.req.rawHeaders;
  const out: string[] = [];
  const extra = ctx.requestHeaders;
  let listed: string[] | undefined;
  let forwardedFor = '';
  let requestId = '';
  let host = '';
  let hasHost = false;
  let contentLength = -1;
  let chunked = false;
  const upgradeValue = upgrade;
  const authority = ctx.targetAuthority;
  const trustedPeer = isTrustedPeer(ctx.req.socket);
  let proto = '';
  let forwardedHost = '';
  let forwardedPort = '';

  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    const lower = lowerName(name);
    const kind = REQUEST_SPECIAL.get(lower);
    if (kind !== undefined) {
      switch (kind) {
        case DROP:
          continue;
        case HOST:
          // The first Host is the one routing used; undici accepts only one.
          if (hasHost) continue;
          hasHost = true;
          host = authority === '' ? value : authority;
          if (extra === undefined || !hasName(extra, lower)) out.push(name, host);
          continue;
        case TE:
          // Hop-by-hop, except "trailers" to an HTTP/2 pod: gRPC servers expect it (RFC 9113 section 8.2.2).
          if (value.trim().toLowerCase() !== 'trailers' || (ctx.upstream.protocol !== 'h2c' && ctx.upstream.protocol !== 'h2')) continue;
          break;
        case CONTENT_LENGTH:
          contentLength = Number(value);
          break;
        case TRANSFER_ENCODING:
          chunked = true;
          continue;
        case CONNECTION:
          listed = connectionTokens(value, listed);
          continue;
        case UPGRADE:
          continue;
        case FORWARDED_FOR:
          if (trustedPeer) forwardedFor = forwardedFor === '' ? value : `${forwardedFor}, ${value}`;
          continue;
        case FROM_PROXY:
          if (!trustedPeer) continue;
          break;
        case FORWARDED_PROTO:
          if (trustedPeer && proto === '') proto = value;
          continue;
        case FORWARDED_HOST:
          if (trustedPeer && forwardedHost === '') forwardedHost = value;
          continue;
        case FORWARDED_PORT:
          if (trustedPeer && forwardedPort === '') forwardedPort = value;
          continue;
        case REQUEST_ID:
          if (requestId === '') requestId = value;
          continue;
      }
    }
    if (extra !== undefined && hasName(extra, lower)) continue;
    out.push(name, value);
  }

  // Headers named by Connection are hop-by-hop too (rare: filtered after the fact).
  if (listed !== undefined) {
    let w = 0;
    for (let r = 0; r < out.length; r += 2) {
      const lower = out[r]!.toLowerCase();
      if (lower !== 'host' && listed.includes(lower)) continue;
      out[w++] = out[r]!;
      out[w++] = out[r + 1]!;
    }
    out.length = w;
  }

  if (!hasHost && authority !== '' && (extra === undefined || !hasName(extra, 'host'))) {
    // An HTTP/1.0 absolute-form request without Host: the pod still learns the name.
    host = authority;
    out.push('host', authority);
  }
  if (upgradeValue !== '') out.push('connection', 'upgrade', 'upgrade', upgradeValue);
  // From a trusted proxy, the client address is already the last X-Forwarded-For entry it sent, or its peer.
  out.push('x-forwarded-for', forwardedFor === '' ? ctx.clientIp : `${forwardedFor}, ${peerAddress(ctx.req.socket)}`);
  out.push('x-real-ip', ctx.clientIp);
  out.push('x-forwarded-proto', proto !== '' ? proto : ctx.secure ? 'https' : 'http');
  if (forwardedHost !== '') out.push('x-forwarded-host', forwardedHost);
  else if (host !== '') out.push('x-forwarded-host', host);
  const port = forwardedPort !== '' ? forwardedPort : portText(ctx.req.socket.localPort);
  if (port !== '') out.push('x-forwarded-port', port);
  if (requestId === '') requestId = nextRequestId();
  ctx.requestId = requestId;
  out.push('x-request-id', requestId);
  if (extra !== undefined) {
    for (let i = 0; i < extra.length; i++) {
      const entry = extra[i]!;
      if (entry[2] !== 'remove') out.push(entry[0], entry[1]);
    }
  }

  head.headers = out;
  head.contentLength = contentLength;
  head.chunked = chunked;
  head.upgrade = upgradeValue;
}

/** Whether `list` sets or removes the header `lower`, so the message's own are dropped. */
function hasName(list: readonly HeaderEntry[], lower: string): boolean {
  for (let i = 0; i < list.length; i++) {
    const entry = list[i]!;
    if (entry[2] !== 'add' && entry[0].toLowerCase() === lower) return true;
  }
  return false;
}

/**
 * Whether a pod's response header pairs (names as the pod wrote them) can be handed to the
 * client's response as they are: nothing hop-by-hop in them but Transfer-Encoding, whose
 * framing the response writers redo anyway, and "Connection: keep-alive", which they drop.
 * A Connection with anything else (close, or header names), Keep-Alive, TE, Upgrade,
 * Trailer or Proxy-Connection: buildResponseHeaders.
 */
export function passesAsIs(raw: readonly string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    switch (name.length) {
      case 2:
      case 7:
      case 16:
        if (isHopByHopResponseHeader(lowerName(name))) return false;
        break;
      case 10:
        if (isNamed(name, 'keep-alive')) return false;
        if (isNamed(name, 'connection') && !isNamed(raw[i + 1]!, 'keep-alive')) return false;
        break;
    }
  }
  return true;
}

function isHopByHopResponseHeader(name: string): boolean {
  switch (name) {
    case 'connection':
    case 'keep-alive':
    case 'proxy-connection':
    case 'transfer-encoding':
    case 'te':
    case 'upgrade':
    // Trailers are not passed on, so neither is their announcement.
    case 'trailer':
      return true;
    default:
      return false;
  }
}

/**
 * Whether a policy's headers (`extra`) can follow a pod's plain header lines (`fields`,
 * src/http1/response-head.ts) as they are, for the same answer buildResponseHeaders would
 * make: no line of the pod has a name that an entry replaces or removes (Vary merged
 * included), and no entry names what the response writer decides itself (Date, the
 * framing, Connection).
 */
export function policyFitsLines(fields: Buffer, extra: readonly HeaderEntry[]): boolean {
  for (let i = 0; i < extra.length; i++) {
    const entry = extra[i]!;
    const name = entry[0];
    switch (name.length) {
      case 4:
        if (isNamed(name, 'date')) return false;
        break;
      case 10:
        if (isNamed(name, 'connection')) return false;
        break;
      case 14:
        if (isNamed(name, 'content-length')) return false;
        break;
      case 17:
        if (isNamed(name, 'transfer-encoding')) return false;
        break;
    }
    if (entry[2] !== 'add' && linesHaveName(fields, name)) return false;
  }
  return true;
}

/** Whether one of the header lines `fields` is named `name`, in any case. */
function linesHaveName(fields: Buffer, name: string): boolean {
  const n = name.length;
  let at = 0;
  while (at < fields.length) {
    if (fields[at + n] === 0x3a /* : */) {
      let same = true;
      for (let i = 0; i < n; i++) {
        const a = fields[at + i]!;
        const b = name.charCodeAt(i);
        // ASCII letters fold by their 0x20 bit (a line's name is a token: no other byte folds to a letter).
        if (a !== b && ((a | 0x20) !== (b | 0x20) || (a | 0x20) < 0x61 || (a | 0x20) > 0x7a)) {
          same = false;
          break;
        }
      }
      if (same) return true;
    }
    at = fields.indexOf(0x0a, at) + 1;
    if (at === 0) break;
  }
  return false;
}

/**
 * Vary lists what a cached answer depends on, so a policy's Vary (CORS: Origin) adds to
 * the pod's instead of replacing it (which would let caches mix up encodings).
 */
function mergeVary(pod: string, added: string): string {
  const tokens = pod.split(',').map((t) => t.trim()).filter((t) => t !== '');
  if (tokens.includes('*')) return '*';
  const seen = new Set(tokens.map((t) => t.toLowerCase()));
  for (const raw of added.split(',')) {
    const token = raw.trim();
    if (token !== '' && !seen.has(token.toLowerCase())) {
      seen.add(token.toLowerCase());
      tokens.push(token);
    }
  }
  return tokens.join(', ');
}

/**
 * The pod's response headers (lowercase names, repeated headers as arrays) for the
 * client: hop-by-hop ones removed, `extra` replacing same-name ones, except Vary,
 * which `extra` adds to. Flat, for res.writeHead. `raw`: the same headers as the pod sent
 * them, when known (an HTTP/1.1 pod): returned as they are when nothing in them is to be
 * dropped or replaced (passesAsIs), which spares the copy; otherwise read instead of
 * `headers`, which the HTTP/1.1 client then leaves empty (rawResponseHeaders).
 */
export function buildResponseHeaders(headers: IncomingHttpHeaders, extra: readonly HeaderEntry[] | undefined, raw?: string[] | null): (string | string[])[] {
  if (raw != null) {
    if (extra === undefined && passesAsIs(raw)) return raw;
    headers = headerRecord(raw);
  }
  const out: (string | string[])[] = [];
  let podVary: string | undefined;
  const connection = headers.connection;
  let listed: string[] | undefined;
  if (connection !== undefined) {
    const values = Array.isArray(connection) ? connection : [connection];
    for (const v of values) listed = connectionTokens(v, listed);
  }
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || isHopByHopResponseHeader(name) || name.charCodeAt(0) === 58 /* ':' */) continue;
    if (listed !== undefined && listed.includes(name)) continue;
    if (extra !== undefined && hasName(extra, name)) {
      if (name === 'vary') podVary = typeof value === 'string' ? value : value.join(', ');
      continue;
    }
    out.push(name, value);
  }
  if (extra !== undefined) {
    for (let i = 0; i < extra.length; i++) {
      const [name, value, mode] = extra[i]!;
      if (mode === 'remove') continue;
      out.push(name, podVary !== undefined && name.toLowerCase() === 'vary' ? mergeVary(podVary, value) : value);
    }
  }
  return out;
}
