// Upgrade requests (WebSocket): after the route's policies ran, open a TCP (or TLS)
// connection to a pod, write the request head with Connection/Upgrade kept, then
// copy bytes both ways untouched, so the pod's 101 (or its refusal) reaches the client.
import net from 'node:net';
import tls from 'node:tls';
import type { RequestContext } from './context.ts';
import { sendError } from './errors.ts';
import type { Forwarder } from './forward.ts';
import { buildRequestHeaders, UpstreamRequestHead } from './headers.ts';
import type { Endpoint } from './upstreams.ts';

/** Tunnels ctx's upgrade request to a pod of the forwarder's route. */
export function tunnelUpgrade(ctx: RequestContext, forwarder: Forwarder): void {
  new Tunnel(ctx, forwarder).start();
}

class Tunnel extends UpstreamRequestHead {
  private readonly ctx: RequestContext;
  private readonly forwarder: Forwarder;
  private upstream: net.Socket | undefined = undefined;
  private endpoint: Endpoint | undefined = undefined;
  private connected = false;
  private retried = false;
  private startedAt = 0;
  private finished = false;

  constructor(ctx: RequestContext, forwarder: Forwarder) {
    super();
    this.ctx = ctx;
    this.forwarder = forwarder;
  }

  start(): void {
    buildRequestHeaders(this.ctx, this, true);
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

  private onConnected(upstream: net.Socket): void {
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

    upstream.once('data', (chunk: Buffer) => this.onFirstBytes(chunk));
    // From here on the client socket belongs to the tunnel.
    upstream.pipe(client);
    client.pipe(upstream);
    client.resume();
  }

  /** The pod's status line, for metrics and the access log. */
  private onFirstBytes(chunk: Buffer): void {
    const ctx = this.ctx;
    const upstreamMs = performance.now() - this.startedAt;
    ctx.upstreamMillis = upstreamMs;
    ctx.upstreamAddress = this.endpoint!.key;
    this.forwarder.metrics.observeLatency(upstreamMs / 1000);
    // "HTTP/1.1 101 ..."
    const status = chunk.length >= 12 ? Number(chunk.toString('latin1', 9, 12)) : NaN;
    ctx.res.statusCode = Number.isInteger(status) && status >= 100 && status <= 599 ? status : 502;
  }

  private onUpstreamError(upstream: net.Socket, err: Error & { code?: string }): void {
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
