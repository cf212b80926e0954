// The client address a request is attributed to (access log, X-Forwarded-For, rate
// limits, IP filters): the socket peer, unless the peer is a trusted proxy
// (--trusted-proxies, a CIDR list). From a trusted peer the address it reports counts:
// the PROXY protocol source (src/proxy/proxy-protocol.ts records it on the socket),
// then X-Forwarded-For walked from the right, skipping trusted hops, as nginx's
// real_ip_recursive does. Nothing a client sends is believed unless every hop after it
// is trusted. IPv4-mapped IPv6 addresses (::ffff:1.2.3.4) are reported as IPv4.
import type { ProxyRequest } from './exchange-types.ts';
import type { Socket } from 'node:net';
import { canonicalIp, CidrSet, parseCidrList, type ParsedCidrList } from '../middleware/cidr.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { isIP } = process.getBuiltinModule('node:net');

export interface ClientIpOptions {
  /** CIDR list (comma or whitespace separated); "" trusts nobody. */
  trustedProxies: string;
  /** Invalid entries of the list are skipped with a warning here. */
  log?: { warn(message: string): void };
}

let trusted: CidrSet | undefined;

/** Set once at start. Returns the parsed list (the caller may refuse to start on invalid entries). */
export function configureClientIp(options: ClientIpOptions): ParsedCidrList {
  const parsed = parseCidrList(options.trustedProxies);
  for (const entry of parsed.invalid) {
    options.log?.warn(`--trusted-proxies: ${JSON.stringify(entry)} is not an IP address or CIDR; skipped`);
  }
  trusted = parsed.valid.length > 0 ? new CidrSet(parsed.valid) : undefined;
  return parsed;
}

/** The peer is in --trusted-proxies. */
export function isTrustedProxy(ip: string): boolean {
  return trusted !== undefined && trusted.has(ip);
}

/** The socket's peer is a trusted proxy, whose forwarding headers are passed on. */
export function isTrustedPeer(socket: Socket): boolean {
  return trusted !== undefined && trusted.has(peerAddress(socket));
}

const kProxiedAddress = Symbol('portico.proxiedAddress');
type ProxiedSocket = Socket & { [kProxiedAddress]?: string; _parent?: ProxiedSocket };

/** Records the client address a trusted proxy gave in a PROXY protocol header. */
export function setProxiedAddress(socket: Socket, address: string): void {
  (socket as ProxiedSocket)[kProxiedAddress] = canonicalIp(address);
}

function proxiedAddress(socket: Socket): string | undefined {
  const s = socket as ProxiedSocket;
  // On TLS listeners the request's socket is the TLSSocket wrapping the TCP one.
  return s[kProxiedAddress] ?? s._parent?.[kProxiedAddress];
}

/** An X-Forwarded-For entry as an address: "1.2.3.4", "1.2.3.4:5678", "2001:db8::1", "[2001:db8::1]:80". */
function forwardedAddress(entry: string): string | undefined {
  let text = entry.trim();
  if (text.charCodeAt(0) === 0x5b /* [ */) {
    const close = text.indexOf(']');
    if (close === -1) return undefined;
    text = text.slice(1, close);
  } else {
    const colon = text.indexOf(':');
    if (colon !== -1 && colon === text.lastIndexOf(':')) text = text.slice(0, colon);
  }
  return isIP(text) === 0 ? undefined : canonicalIp(text);
}

/** Every X-Forwarded-For entry, in order (repeated headers are one list). */
function forwardedFor(req: Pick<ProxyRequest, 'rawHeaders'>): string[] | undefined {
  const raw = req.rawHeaders;
  let entries: string[] | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 15 && name.toLowerCase() === 'x-forwarded-for') (entries ??= []).push(...raw[i + 1]!.split(','));
  }
  return entries;
}

const kPeerAddress = Symbol('portico.peerAddress');

/** The socket's peer address, canonical (worked out once per connection). */
export function peerAddress(socket: Socket): string {
  const s = socket as Socket & { [kPeerAddress]?: string };
  return (s[kPeerAddress] ??= canonicalIp(socket.remoteAddress ?? ''));
}

export function resolveClientIp(req: Pick<ProxyRequest, 'rawHeaders' | 'socket'>): string {
  const socket = req.socket;
  let address = peerAddress(socket);
  if (trusted === undefined || !trusted.has(address)) return address;
  const proxied = proxiedAddress(socket);
  if (proxied !== undefined) {
    address = proxied;
    if (!trusted.has(address)) return address;
  }
  const entries = forwardedFor(req);
  if (entries === undefined) return address;
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!;
    if (entry.trim() === '') continue;
    const hop = forwardedAddress(entry);
    // A trusted hop wrote garbage: the last address we could verify is the best we have.
    if (hop === undefined) return address;
    address = hop;
    if (!trusted.has(hop)) return hop;
  }
  return address;
}
