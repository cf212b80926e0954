// PROXY protocol v1 (text) and v2 (binary) from load balancers that pass the client's
// address in front of the TCP stream (https://www.haproxy.org/download/2.9/doc/proxy-protocol.txt).
// acceptProxyProtocol() wraps a net.Server (http, https): each new connection from a
// trusted peer must start with a PROXY header, read before HTTP (or TLS) parsing
// starts; the source address it gives is recorded on the socket for resolveClientIp().
// A malformed or missing header closes the connection. Connections from other peers
// are not read at all: a header they send is just bad HTTP, so no one outside
// --trusted-proxies can claim an address.
import type { Server, Socket } from 'node:net';
import { canonicalIp } from '../middleware/cidr.ts';
import { isTrustedProxy, setProxiedAddress } from './client-ip.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { isIP } = process.getBuiltinModule('node:net');
const { Server: TlsServer } = process.getBuiltinModule('node:tls');

const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const V1_PREFIX = Buffer.from('PROXY ', 'latin1');
/** v1 headers are at most 107 bytes, CRLF included. */
const V1_MAX = 107;
const V2_HEADER = 16;

export type ProxyHeader =
  | { readonly status: 'incomplete' }
  | { readonly status: 'invalid'; readonly reason: string }
  /** `source` absent: a LOCAL (v2) or UNKNOWN (v1) header, e.g. the balancer's own health check. */
  | { readonly status: 'ok'; readonly length: number; readonly source?: { readonly address: string; readonly port: number } };

const INCOMPLETE: ProxyHeader = { status: 'incomplete' };

function invalid(reason: string): ProxyHeader {
  return { status: 'invalid', reason };
}

/** Parses the PROXY header at the start of `buf`. Pure. */
export function parseProxyHeader(buf: Buffer): ProxyHeader {
  // Decide on as few bytes as possible: both signatures differ from the first byte.
  const prefix = Math.min(buf.length, V2_SIGNATURE.length);
  if (buf.length > 0 && buf[0] === V2_SIGNATURE[0]) {
    if (!buf.subarray(0, prefix).equals(V2_SIGNATURE.subarray(0, prefix))) return invalid('not a PROXY protocol header');
    return parseV2(buf);
  }
  const v1prefix = Math.min(buf.length, V1_PREFIX.length);
  if (!buf.subarray(0, v1prefix).equals(V1_PREFIX.subarray(0, v1prefix))) return invalid('not a PROXY protocol header');
  return parseV1(buf);
}

function port(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,5}$/.test(text) || (text.length > 1 && text.startsWith('0'))) return undefined;
  const n = Number(text);
  return n <= 65535 ? n : undefined;
}

function parseV1(buf: Buffer): ProxyHeader {
  const end = buf.indexOf('\r\n', 0, 'latin1');
  if (end === -1) return buf.length >= V1_MAX ? invalid('v1 header longer than 107 bytes') : INCOMPLETE;
  if (end + 2 > V1_MAX) return invalid('v1 header longer than 107 bytes');
  const parts = buf.toString('latin1', 0, end).split(' ');
  const family = parts[1];
  if (family === 'UNKNOWN') return { status: 'ok', length: end + 2 };
  if (parts.length !== 6 || (family !== 'TCP4' && family !== 'TCP6')) return invalid('v1 header is not "PROXY TCP4|TCP6 src dst sport dport"');
  const [, , source, destination, sourcePort, destinationPort] = parts;
  const want = family === 'TCP4' ? 4 : 6;
  if (isIP(source!) !== want || isIP(destination!) !== want) return invalid(`v1 header addresses are not ${family} addresses`);
  const sport = port(sourcePort);
  if (sport === undefined || port(destinationPort) === undefined) return invalid('v1 header ports are not 0-65535');
  return { status: 'ok', length: end + 2, source: { address: source!, port: sport } };
}

function ipv6(buf: Buffer, at: number): string {
  const groups: string[] = [];
  for (let i = 0; i < 8; i++) groups.push(buf.readUInt16BE(at + i * 2).toString(16));
  // Any valid form will do: node:net accepts the uncompressed one, canonicalIp() unmaps ::ffff:.
  return groups.join(':');
}

function parseV2(buf: Buffer): ProxyHeader {
  if (buf.length < V2_HEADER) return INCOMPLETE;
  const versionCommand = buf[12]!;
  if (versionCommand >> 4 !== 2) return invalid('v2 header with a version other than 2');
  const command = versionCommand & 0x0f;
  if (command > 1) return invalid('v2 header with a command other than LOCAL or PROXY');
  const length = V2_HEADER + buf.readUInt16BE(14);
  if (buf.length < length) return INCOMPLETE;
  if (command === 0) return { status: 'ok', length }; // LOCAL: the balancer's own connection
  const family = buf[13]! >> 4;
  const transport = buf[13]! & 0x0f;
  if (family === 0 || transport === 0 || family === 3) return { status: 'ok', length }; // UNSPEC or UNIX: no IP source
  if (transport > 2) return invalid('v2 header with an unknown transport');
  if (family === 1) {
    if (length < V2_HEADER + 12) return invalid('v2 header too short for IPv4 addresses');
    const address = `${buf[16]}.${buf[17]}.${buf[18]}.${buf[19]}`;
    return { status: 'ok', length, source: { address, port: buf.readUInt16BE(24) } };
  }
  if (family === 2) {
    if (length < V2_HEADER + 36) return invalid('v2 header too short for IPv6 addresses');
    return { status: 'ok', length, source: { address: ipv6(buf, 16), port: buf.readUInt16BE(48) } };
  }
  return invalid('v2 header with an unknown address family');
}

export interface ProxyProtocolOptions {
  /** Peers whose connections must start with a PROXY header (default: --trusted-proxies, see client-ip.ts). */
  isTrusted?: (ip: string) => boolean;
  /** ms a trusted peer has to send the whole header before the connection is closed. */
  headerTimeout?: number;
  /** Told about each connection closed for a bad header (for a log line). */
  onRejected?: (peer: string, reason: string) => void;
}

/**
 * Makes `server` read a PROXY header on every connection from a trusted peer before
 * its own 'connection' listeners (HTTP or TLS parsing) see the socket. Call it once,
 * after the server is created and before it listens.
 */
export function acceptProxyProtocol(server: Server, options: ProxyProtocolOptions = {}): void {
  const isTrusted = options.isTrusted ?? isTrustedProxy;
  const headerTimeout = options.headerTimeout ?? 10_000;
  const downstream = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  const pending = new Set<Socket>();
  const tlsServer = server instanceof TlsServer;

  const deliver = (socket: Socket): void => {
    for (const listener of downstream) listener.call(server, socket);
  };

  server.on('connection', (socket: Socket) => {
    const peer = canonicalIp(socket.remoteAddress ?? '');
    if (!isTrusted(peer)) {
      deliver(socket);
      return;
    }
    pending.add(socket);
    let buffered: Buffer = Buffer.alloc(0);
    const finish = (): void => {
      clearTimeout(timer);
      pending.delete(socket);
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
    };
    const reject = (reason: string): void => {
      finish();
      options.onRejected?.(peer, reason);
      socket.destroy();
    };
    const onData = (chunk: Buffer): void => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      const header = parseProxyHeader(buffered);
      if (header.status === 'incomplete') return;
      if (header.status === 'invalid') {
        reject(header.reason);
        return;
      }
      finish();
      socket.pause();
      if (header.source !== undefined) setProxiedAddress(socket, header.source.address);
      if (buffered.length > header.length) socket.unshift(buffered.subarray(header.length));
      deliver(socket);
      // node:http reads the socket as a stream: let it flow again, starting with what was
      // put back. node:tls instead takes the socket's handle over, reading what was put
      // back itself; resuming the TCP socket there would keep it open after TLS is done.
      if (!tlsServer) socket.resume();
    };
    const onError = (): void => finish();
    const onClose = (): void => finish();
    const timer = setTimeout(() => reject('no complete PROXY header in time'), headerTimeout);
    timer.unref();
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
  });

  // server.close() waits for every connection; one still owing its header holds no
  // request, so it is closed right away instead of at its header timeout.
  const close = server.close;
  server.close = function (this: Server, callback?: (err?: Error) => void): Server {
    for (const socket of pending) socket.destroy();
    pending.clear();
    return close.call(this, callback);
  };
}
