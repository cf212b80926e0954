// Upgrade requests (WebSocket, and protocols a route allows with
// portico.dev/allowed-upgrades): after the route's policies ran, open a TCP (or TLS)
// connection to a pod and write the request head asking for that one protocol. Only
// when the pod answers 101 naming it do bytes flow both ways untouched: until then
// nothing more the client sends reaches the pod, so a pod that refuses (or does not
// know the protocol) cannot be made to read the client's next bytes as requests that
// bypassed routing. Any other answer is passed on and the connection ends with it.
import type { RequestContext } from './context.ts';
import { sendError } from './errors.ts';
import type { Forwarder } from './forward.ts';
import { buildRequestHeaders, UpstreamRequestHead } from './headers.ts';
import type { Endpoint } from './upstreams.ts';
import type { Socket } from 'node:net';
import { settle } from '../http1/turn-writes.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const net = process.getBuiltinModule('node:net');
const tls = process.getBuiltinModule('node:tls');

/** Tunnels ctx's upgrade request to a pod of the forwarder's route. */
export function tunnelUpgrade(ctx: RequestContext, forwarder: Forwarder, protocol: string): void {
  new Tunnel(ctx, forwarder, protocol).start();
}

/** Longest response head from the pod before a tunnel is given up (502). */
const MAX_RESPONSE_HEAD = 16 * 1024;

/** The status, Upgrade and Content-Length of a response head ("HTTP/1.1 101 ...\r\n...") */
function parseResponseHead(head: string): { status: number; upgrade: string; contentLength: number } {
  const status = head.length >= 12 && head.startsWith('HTTP/1.') ? Number(head.slice(9, 12)) : NaN;
  let upgrade = '';
  let contentLength = -1;
  for (const line of head.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon === -1) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (name === 'upgrade') upgrade = line.slice(colon + 1).trim();
    else if (name === 'content-length') contentLength = Number(line.slice(colon + 1).trim());
  }
  return { status: Number.isInteger(status) ? status : 0, upgrade, contentLength: Number.isSafeInteger(contentLength) ? contentLength : -1 };
}

class Tunnel extends UpstreamRequestHead {
  private readonly ctx: RequestContext;
  private readonly forwarder: Forwarder;
  private upstream: Socket | undefined = undefined;
  private endpoint: Endpoint | undefined = undefined;
  private connected = false;
  private retried = false;
  private startedAt = 0;
  private finished = false;
  private readonly protocol: string;

  constructor(ctx: RequestContext, forwarder: Forwarder, protocol: string) {
    super();
    this.ctx = ctx;
    this.forwarder = forwarder;
    this.protocol = protocol;
  }

  start(): void {
    buildRequestHeaders(this.ctx, this, this.protocol);
    const endpoint = this.forwarder.balancer.pick();
    if (!endpoint) {
      sendError(this.ctx.res, 503, `no ready endpoints for this route`);
      return;
    }
    const client = this.ctx.req.socket;
    client.on('error', () => this.close());
    client.on('close', () => this.close());
    this.connect(endpoint);
  }

  private connect(endpoint: Endpoint): void {
    const ctx = this.ctx;
    this.endpoint = endpoint;
    this.connected = false;
    this.startedAt = performance.now();
    endpoint.stats.inflight++;
    const profile = ctx.upstream;
    const { host, port } = endpoint.address;
    const upstream =
      profile.protocol === 'https' || profile.protocol === 'h2'
        ? tls.connect({
            host,
            port,
            servername: this.forwarder.servername,
            ca: profile.ca,
            rejectUnauthorized: !profile.insecureSkipVerify,
            ALPNProtocols: ['http/1.1'],
          })
        : net.connect({ host, port });
    this.upstream = upstream;
    upstream.setNoDelay(true);
    upstream.setTimeout(ctx.timeouts.connect);
    upstream.once(upstream instanceof tls.TLSSocket ? 'secureConnect' : 'connect', () => this.onConnected(upstream));
    upstream.on('timeout', () => {
      const err = Object.assign(new Error('timeout'), { code: this.connected ? 'IDLE_TIMEOUT' : 'CONNECT_TIMEOUT' });
      upstream.destroy(err);
    });
    upstream.on('error', (err: Error & { code?: string }) => this.onUpstreamError(upstream, err));
    upstream.on('close', () => {
      if (this.upstream === upstream && this.connected) this.close();
    });
  }

  private onConnected(upstream: Socket): void {
    if (this.finished || this.upstream !== upstream) return;
    this.connected = true;
    const ctx = this.ctx;
    const client = ctx.req.socket;
    upstream.setTimeout(ctx.timeouts.idle);
    client.setTimeout(ctx.timeouts.idle);
    client.on('timeout', () => this.close());

    let head = `${ctx.req.method} ${ctx.upstreamPath} HTTP/1.1\r\n`;
    const h = this.headers;
    for (let i = 0; i < h.length; i += 2) head += `${h[i]}: ${h[i + 1]}\r\n`;
    upstream.write(head + '\r\n', 'latin1');
    const early = ctx.req.upgradeHead;
    if (early) upstream.write(early);

    let received: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      received = received.length === 0 ? chunk : Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end === -1) {
        if (received.length > MAX_RESPONSE_HEAD) {
          upstream.off('data', onData);
          this.refuseSwitch();
        }
        return;
      }
      upstream.off('data', onData);
      this.onResponseHead(upstream, received, end + 4);
    };
    upstream.on('data', onData);
  }

  /** The pod's response head arrived: `received` holds it (`headLength` bytes) and what followed. */
  private onResponseHead(upstream: Socket, received: Buffer, headLength: number): void {
    const ctx = this.ctx;
    const client = ctx.req.socket;
    const upstreamMs = performance.now() - this.startedAt;
    ctx.upstreamMillis = upstreamMs;
    ctx.upstreamAddress = this.endpoint!.key;
    this.forwarder.metrics.observeLatency(upstreamMs / 1000);
    const head = parseResponseHead(received.toString('latin1', 0, headLength - 4));
    // Earlier answers on this connection go first (they may wait for the end of a turn).
    settle(client);
    if (head.status === 101) {
      // RFC 9110 section 7.8: the pod names the protocol it switches to; it must be the one asked for.
      if (head.upgrade.toLowerCase() !== this.protocol.toLowerCase()) {
        this.refuseSwitch();
        return;
      }
      ctx.res.statusCode = 101;
      client.write(received);
      // From here on the client socket belongs to the tunnel.
      upstream.pipe(client);
      client.pipe(upstream);
      client.resume();
      return;
    }
    // Refused (or not understood): the answer goes to the client, the client's bytes never to the pod.
    ctx.res.statusCode = head.status >= 100 && head.status <= 599 ? head.status : 502;
    client.write(received);
    let remaining = head.contentLength < 0 ? Infinity : head.contentLength - (received.length - headLength);
    if (remaining <= 0) {
      this.close();
      return;
    }
    upstream.on('data', (chunk: Buffer) => {
      client.write(chunk);
      remaining -= chunk.length;
      if (remaining <= 0) this.close();
    });
  }

  /** The pod's answer is no switch to the protocol asked for (or no answer at all): 502, no tunnel. */
  private refuseSwitch(): void {
    this.forwarder.metrics.countError('protocol');
    const upstream = this.upstream;
    if (upstream) {
      this.upstream = undefined;
      this.endpoint!.stats.inflight--;
      upstream.destroy();
    }
    this.finished = true;
    if (!sendError(this.ctx.res, 502, 'the pod did not accept the upgrade', { close: true })) this.ctx.req.socket.destroy();
  }

  private onUpstreamError(upstream: Socket, err: Error & { code?: string }): void {
    if (this.finished || this.upstream !== upstream) return;
    const endpoint = this.endpoint!;
    endpoint.stats.inflight--;
    this.upstream = undefined;
    const ctx = this.ctx;
    if (this.connected) {
      // Mid-tunnel: nothing to answer with any more.
      this.forwarder.metrics.countError(err.code === 'IDLE_TIMEOUT' ? 'timeout' : 'reset');
      this.close();
      return;
    }
    const timeout = err.code === 'CONNECT_TIMEOUT';
    this.forwarder.metrics.countError(timeout ? 'timeout' : 'connect');
    const other = this.retried ? undefined : this.forwarder.balancer.pick(endpoint);
    if (other) {
      this.retried = true;
      this.connect(other);
      return;
    }
    this.finished = true;
    ctx.upstreamAddress = endpoint.key;
    if (timeout) sendError(ctx.res, 504, 'timed out connecting to the pod');
    else if (err.code === 'ECONNREFUSED') sendError(ctx.res, 502, 'connection refused by the pod');
    else sendError(ctx.res, 502, `cannot connect to the pod (${err.code ?? 'error'})`);
  }

  /** Ends the tunnel: both sockets go. */
  private close(): void {
    if (this.finished) return;
    this.finished = true;
    const upstream = this.upstream;
    if (upstream) {
      this.upstream = undefined;
      this.endpoint!.stats.inflight--;
      this.ctx.responseBytes = upstream.bytesRead;
      upstream.destroy();
    }
    this.ctx.req.socket.destroy();
  }
}
