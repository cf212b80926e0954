// The end of every route's chain: sends the request to one pod over a keep-alive
// pool and streams the answer back, both ways with back-pressure. Speaks undici's
// low-level dispatch contract with one handler object per request (no per-request
// streams or closures); see Exchange. The pools behind it are portico's own HTTP/1.1
// client (http, https pods) or its HTTP/2 client (h2c, h2 pods): src/proxy/upstreams.ts.
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { ProxyResponse } from './exchange-types.ts';
import type { RouteConfig, UpstreamAddress } from '../model/config.ts';
import type { EndpointUser } from './endpoint-registry.ts';
import { endpointLimit, type Balancer } from './balancer.ts';
import { PLAIN_HTTP, type RequestContext, type UpstreamProfile } from './context.ts';
import { sendError } from './errors.ts';
import { buildRequestHeaders, buildResponseHeaders, policyFitsLines, UpstreamRequestHead } from './headers.ts';
import type { RouteMetrics, UpstreamErrorKind } from './metrics.ts';
import type { Endpoint, UpstreamPools } from './upstreams.ts';
import { tunnelUpgrade } from './websocket.ts';
import { allowedUpgrade } from '../middleware/allowed-upgrades.ts';
import type { ServiceGate, WakeGates, Waiter } from '../scale-to-zero/gates.ts';
import { kExchange } from '../util/response-slots.ts';

/** The pods of a Service port with appProtocol kubernetes.io/h2c. */
const H2C: UpstreamProfile = Object.freeze({ key: 'h2c', protocol: 'h2c' });
type ExchangeResponse = ProxyResponse & { [kExchange]?: Exchange };

/** Why the proxy itself ended an upstream request. */
class ProxyAbort extends Error {
  readonly reason: 'client-gone' | 'body-too-large';
  constructor(reason: 'client-gone' | 'body-too-large') {
    super(reason === 'client-gone' ? 'client went away' : 'request body too large');
    this.reason = reason;
  }
}

const CLIENT_GONE = new ProxyAbort('client-gone');

/** Methods a stale keep-alive connection may be retried for when nothing came back (RFC 9110 section 9.2.2). */
function isIdempotent(method: string): boolean {
  switch (method) {
    case 'GET':
    case 'HEAD':
    case 'OPTIONS':
    case 'TRACE':
    case 'PUT':
    case 'DELETE':
      return true;
    default:
      return false;
  }
}

interface Failure {
  status: number;
  kind: UpstreamErrorKind;
  message: string;
}

/**
 * Status and client-facing text of an upstream failure. The text names the case, not the
 * pod: internal addresses are for the access log (upstream), not for whoever asked.
 */
function describe(err: Error & { code?: string }, ctx: RequestContext, connecting: boolean): Failure {
  switch (err.code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return { status: 504, kind: 'timeout', message: 'timed out connecting to the pod' };
    case 'UND_ERR_HEADERS_TIMEOUT':
      return { status: 504, kind: 'timeout', message: `the pod did not answer within ${ctx.timeouts.responseHeaders} ms` };
    case 'UND_ERR_BODY_TIMEOUT':
      return { status: 504, kind: 'timeout', message: `the pod stopped sending for ${ctx.timeouts.idle} ms` };
    case 'ECONNREFUSED':
      return { status: 502, kind: 'connect', message: 'connection refused by the pod' };
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EHOSTDOWN':
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return { status: 502, kind: 'connect', message: `cannot reach the pod (${err.code})` };
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
    case 'UND_ERR_CLOSED':
      return connecting
        ? { status: 502, kind: 'connect', message: `connection to the pod failed (${err.code})` }
        : { status: 502, kind: 'reset', message: 'the pod closed the connection before answering' };
    default:
      if (connecting) return { status: 502, kind: 'connect', message: `cannot connect to the pod (${err.code ?? 'error'})` };
      return { status: 502, kind: 'reset', message: `error talking to the pod (${err.code ?? 'error'})` };
  }
}

/** The route's forwarder; `handle` is the chain's terminal Handler. */
export class Forwarder implements EndpointUser {
  readonly config: RouteConfig;
  readonly metrics: RouteMetrics;
  /** Replaced when the backend's addresses move (EndpointSlice changes, see EndpointRegistry). */
  balancer: Balancer;
  /** Set when the backend cannot take traffic: the 503 text, precomputed. */
  private unavailable: string | undefined;
  private unavailableKind: UpstreamErrorKind;
  private readonly unavailableStatus: number;
  /** TLS name for pods (https/h2 profiles), made on first use: most routes never need it. */
  private servernameText: string | undefined = undefined;
  /** The Service sleeps when idle (scale-to-zero): without endpoints its requests wait here for it to wake. */
  readonly gate: ServiceGate<Forwarder> | undefined;
  private readonly h2cByAppProtocol: boolean;
  private readonly upstreams: UpstreamPools;

  constructor(config: RouteConfig, upstreams: UpstreamPools, metrics: RouteMetrics, gates?: WakeGates<Forwarder>) {
    this.config = config;
    this.metrics = metrics;
    this.upstreams = upstreams;
    const backend = config.backend;
    const service = `${backend.namespace}/${backend.service}`;
    // The backend's addresses now: this route's may be older when only endpoints changed since it was translated.
    const addresses = backend.error ? [] : upstreams.registry.addresses(backend);
    this.balancer = upstreams.balancer(addresses);
    this.h2cByAppProtocol = backend.appProtocol === 'kubernetes.io/h2c';
    this.gate = backend.sleep !== undefined && backend.error === undefined && gates !== undefined ? gates.gate(service, backend.sleep) : undefined;
    this.unavailableKind = 'service_unavailable';
    // Gateway API: an HTTPRoute rule whose backend does not resolve answers 500, as the
    // spec says. A GRPCRoute's must answer UNAVAILABLE: the 503 below, which a gRPC
    // request gets as grpc-status 14.
    this.unavailableStatus = config.source.kind === 'HTTPRoute' && backend.error !== undefined && backend.error !== 'NoEndpoints' ? 500 : 503;
    switch (backend.error) {
      case undefined:
        this.noEndpointsUnless(addresses.length > 0);
        break;
      case 'ServiceNotFound':
        this.unavailable = `service ${service} not found`;
        break;
      case 'PortNotFound':
        this.unavailable = `service ${service} has no port ${backend.port}`;
        break;
      case 'NoEndpoints':
        this.unavailable = `no ready endpoints for service ${service} port ${backend.port}`;
        this.unavailableKind = 'no_endpoints';
        break;
      case 'ExternalNameDisabled':
        this.unavailable = `service ${service} is an ExternalName service, which portico does not route to (--allow-external-name)`;
        break;
      case 'InvalidBackend':
        this.unavailable = config.source.kind !== 'Ingress' ? `this rule has no usable backend (${backend.service})` : `the backend of this route (service ${service} port ${backend.port}) is invalid`;
        break;
      case 'BackendNotFound':
      case 'RefNotPermitted':
      case 'InvalidKind':
        this.unavailable = `the backendRef to ${service} does not resolve (${backend.error})`;
        break;
      default:
        this.unavailable = `service ${service} is unavailable (${String(backend.error)})`;
    }
    this.handle = this.handle.bind(this);
    if (backend.error === undefined) upstreams.registry.attach(backend.key, this);
    // Requests held for this backend go on with the newest forwarder, once it has endpoints.
    this.gate?.compiled(this);
  }

  /** TLS name for pods (https/h2 profiles): the Service's cluster DNS name. */
  get servername(): string {
    return (this.servernameText ??= `${this.config.backend.service}.${this.config.backend.namespace}.svc`);
  }

  /** A backend without error and without addresses answers 503, unless its requests wait for a wake. */
  private noEndpointsUnless(hasAddresses: boolean): void {
    const backend = this.config.backend;
    if (hasAddresses || this.gate !== undefined) {
      this.unavailable = undefined;
    } else {
      this.unavailable = `no ready endpoints for service ${backend.namespace}/${backend.service} port ${backend.port}`;
      this.unavailableKind = 'no_endpoints';
    }
  }

  /** The backend's ready addresses moved (EndpointRegistry): requests from now on go to these. */
  setAddresses(addresses: readonly UpstreamAddress[]): void {
    this.balancer = this.upstreams.balancer(addresses);
    this.noEndpointsUnless(addresses.length > 0);
    // Requests held while the Service slept go on now (with the newest forwarder of the backend).
    if (this.gate !== undefined && this.gate.forwarders.get(this.backendKey) === this) this.gate.compiled(this);
  }

  /** The route left the table: its backend's address changes no longer concern it. */
  dispose(): void {
    if (this.config.backend.error === undefined) this.upstreams.registry.detach(this.config.backend.key, this);
  }

  /** For the gates: the backend ("ns/svc:port") and whether there is a pod to send to. */
  get backendKey(): string {
    return this.config.backend.key;
  }

  get hasEndpoints(): boolean {
    return this.balancer.size > 0;
  }

  handle(ctx: RequestContext): void {
    const gate = this.gate;
    if (gate !== undefined) {
      gate.begin(ctx);
      if (this.balancer.size === 0) {
        gate.hold(new HeldRequest(ctx, this.config.backend.key, ctx.startTime + gate.policy.wakeTimeoutMs));
        return;
      }
    }
    this.proceed(ctx);
  }

  /** Forwards a request (or tunnels an upgrade) once any wait for endpoints is over. */
  proceed(ctx: RequestContext): void {
    // The Service port says its pods speak h2c (appProtocol kubernetes.io/h2c) and no policy said otherwise.
    if (this.h2cByAppProtocol && ctx.upstream === PLAIN_HTTP) ctx.upstream = H2C;
    if (this.unavailable !== undefined) {
      this.metrics.countError(this.unavailableKind);
      sendError(ctx.res, this.unavailableStatus, this.unavailable);
      return;
    }
    if (ctx.req.upgrade && this.upgradeOrRefuse(ctx)) return;
    new Exchange(ctx, this).start();
  }

  /**
   * An upgrade request: tunnelled when the route allows the protocol asked for (true).
   * Otherwise it goes on as an ordinary request without its Upgrade header, on a
   * connection that ends with it (false), as nginx sends it without upgrade config; a
   * body is refused, since what follows the head was never read as one.
   */
  private upgradeOrRefuse(ctx: RequestContext): boolean {
    const protocol = allowedUpgrade(upgradeHeader(ctx.req.rawHeaders), ctx.allowedUpgrades);
    if (protocol !== undefined) {
      tunnelUpgrade(ctx, this, protocol);
      return true;
    }
    ctx.res.shouldKeepAlive = false;
    if (hasBody(ctx.req.rawHeaders)) {
      sendError(ctx.res, 400, 'an upgrade request with a body', { close: true, expose: true });
      return true;
    }
    return false;
  }
}

/** A request that arrived while its sleepable Service had no endpoints: it waits, body unread, for them. */
class HeldRequest implements Waiter<Forwarder> {
  readonly ctx: RequestContext;
  readonly backendKey: string;
  readonly deadline: number;
  constructor(ctx: RequestContext, backendKey: string, deadline: number) {
    this.ctx = ctx;
    this.backendKey = backendKey;
    this.deadline = deadline;
  }
  proceedWith(forwarder: Forwarder): void {
    forwarder.proceed(this.ctx);
  }
}

/**
 * One proxied request: the dispatch handler, and the state of the client
 * response. Retried at most once, on another pod, when nothing reached the first;
 * for a sleepable Service, a refused connection (a pod still booting) is retried until
 * the wake timeout.
 */
class Exchange extends UpstreamRequestHead implements Dispatcher.DispatchHandler, Waiter<Forwarder> {
  readonly ctx: RequestContext;
  private forwarder: Forwarder;
  /** Refused connections retried through the gate (a sleepable Service's pods booting). */
  private bootRetries = 0;
  /** A Buffer when the whole body had arrived before it was forwarded to an HTTP/2 pod (receivedBody). */
  private body: Readable | Buffer | null = null;
  private endpoint: Endpoint | undefined = undefined;
  private controller: Dispatcher.DispatchController | undefined = undefined;
  /** An attempt is counted in its endpoint's in-flight number. */
  private attemptOpen = false;
  private retried = false;
  private responseStarted = false;
  private clientGone = false;
  private done = false;
  private drainHooked = false;
  private bodyBytes = 0;
  private countBody = false;
  private startedAt = 0;

  constructor(ctx: RequestContext, forwarder: Forwarder) {
    super();
    this.ctx = ctx;
    this.forwarder = forwarder;
  }

  start(): void {
    const ctx = this.ctx;
    buildRequestHeaders(ctx, this);
    // gRPC's deadline (only to HTTP/2 pods: gRPC needs them): portico waits no longer for the answer.
    if (ctx.upstream.protocol === 'h2c' || ctx.upstream.protocol === 'h2') applyGrpcTimeout(ctx);
    const limit = ctx.maxBodyBytes;
    if (limit >= 0 && this.contentLength > limit) {
      // Nothing was sent upstream; close the connection rather than read the body.
      sendError(ctx.res, 413, `request body of ${this.contentLength} bytes is larger than the limit of ${limit} bytes`, { close: true, expose: true });
      return;
    }
    if (this.contentLength > 0 || this.chunked) {
      // To HTTP/2 pods (gRPC) a body already received in full goes as one Buffer, not a stream.
      const h2 = ctx.upstream.protocol === 'h2c' || ctx.upstream.protocol === 'h2';
      this.body = (h2 ? ctx.req.receivedBody?.() : undefined) ?? ctx.req.body();
      this.countBody = limit >= 0 && this.contentLength < 0;
    }
    const picked = this.forwarder.balancer.pick();
    if (picked === undefined) {
      sendError(ctx.res, 503, `no ready endpoints for service ${this.forwarder.config.backend.namespace}/${this.forwarder.config.backend.service}`);
      return;
    }
    const endpoint = this.forwarder.balancer.withinLimit(picked);
    if (endpoint === undefined) {
      // Every pod has --max-requests-per-endpoint requests in flight: shed, do not queue.
      this.forwarder.metrics.countError('overloaded');
      sendError(ctx.res, 503, `every pod of service ${this.forwarder.config.backend.namespace}/${this.forwarder.config.backend.service} has ${endpointLimit()} requests in flight (--max-requests-per-endpoint)`, {
        headers: [['retry-after', '1']],
      });
      return;
    }
    const res = ctx.res as ExchangeResponse;
    res[kExchange] = this;
    // The client's own response: the proxy's handler hears its 'close' and calls clientClosed (one listener, not two).
    if (res !== ctx.clientResponse) res.on('close', onClientClose);
    this.dispatchTo(endpoint);
  }

  private dispatchTo(endpoint: Endpoint): void {
    const ctx = this.ctx;
    this.endpoint = endpoint;
    this.controller = undefined;
    endpoint.stats.inflight++;
    this.attemptOpen = true;
    this.startedAt = performance.now();
    const profile = ctx.upstream;
    const options: Dispatcher.DispatchOptions & { servername?: string; headersChecked?: boolean; rawResponseHeaders?: boolean; responseHeadLines?: boolean } = {
      path: ctx.upstreamPath,
      method: ctx.req.method as Dispatcher.HttpMethod,
      headers: this.headers,
      // From llhttp, from config checked as strictly, or built here (buildRequestHeaders).
      headersChecked: true,
      // portico's HTTP/1.1 client: the pod's pairs as it wrote them, without a record made of
      // them (buildResponseHeaders makes one only when a policy changes the headers).
      rawResponseHeaders: true,
      // A plain head's lines as bytes, where they can be written as they are: to an HTTP/1.1
      // client (an HTTP/2 client or a cache takes pairs).
      responseHeadLines: (ctx.res as ProxyResponse).writeHeadFields !== undefined,
      body: this.body,
      headersTimeout: ctx.timeouts.responseHeaders,
      bodyTimeout: ctx.timeouts.idle,
    };
    if (profile.protocol === 'https' || profile.protocol === 'h2') options.servername = this.forwarder.servername;
    try {
      endpoint.pool(profile, ctx.timeouts.connect).dispatch(options, this);
    } catch (err) {
      this.closeAttempt();
      this.done = true;
      // The client refuses some requests outright (a header value or path it does not accept).
      if ((err as { code?: string }).code === 'UND_ERR_INVALID_ARG') sendError(ctx.res, 400, `request cannot be forwarded: ${(err as Error).message}`);
      else sendError(ctx.res, 502, 'cannot send the request to the pod');
    }
  }

  private closeAttempt(): void {
    if (this.attemptOpen) {
      this.attemptOpen = false;
      this.endpoint!.stats.inflight--;
    }
  }

  // ---- DispatchHandler (undici's contract, which Http1Pool implements too) ----

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.clientGone) controller.abort(CLIENT_GONE);
  }

  onBodySent(chunk: Buffer | string): void {
    if (!this.countBody) return;
    this.bodyBytes += chunk.length;
    if (this.bodyBytes > this.ctx.maxBodyBytes) {
      this.countBody = false;
      this.controller?.abort(new ProxyAbort('body-too-large'));
    }
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>, statusMessage?: string): void {
    const ctx = this.ctx;
    const res = ctx.res;
    if (statusCode < 200) {
      // 100 Continue was for us; 103 Early Hints are worth passing on.
      if (statusCode === 103 && headers.link !== undefined && !res.headersSent) res.writeEarlyHints({ link: headers.link });
      return;
    }
    this.responseStarted = true;
    const stats = this.endpoint!.stats;
    if (stats.connectFailures !== 0) stats.answered();
    const upstreamMs = performance.now() - this.startedAt;
    ctx.upstreamMillis = upstreamMs;
    ctx.upstreamAddress = this.endpoint!.key;
    this.forwarder.metrics.observeLatency(upstreamMs / 1000);
    // An HTTP/1.1 pod's head comes with the controller (src/http1/client-request.ts): a plain
    // one as its header lines in bytes, which an HTTP/1.1 client gets as they are, followed
    // by a policy's headers unless they change the pod's; otherwise the pairs as the pod wrote them.
    const pod = controller as { responseHeadFields?: Buffer | null; responseHeadHasDate?: boolean; responseRawHeaders?: string[] | null };
    const fields = pod.responseHeadFields;
    const extra = ctx.responseHeaders;
    if (fields != null && res.writeHeadFields !== undefined && (extra === undefined || policyFitsLines(fields, extra))) {
      res.headersChecked = true;
      res.writeHeadFields(statusCode, statusMessage ?? '', fields, pod.responseHeadHasDate === true, extra);
      if (this.clientGone) controller.abort(CLIENT_GONE);
      return;
    }
    const out = buildResponseHeaders(headers, ctx.responseHeaders, pod.responseRawHeaders);
    // A head parsed by portico's HTTP/1.1 client (llhttp refuses bad names and values);
    // policies' headers were checked as strictly when the config was read.
    res.headersChecked = ctx.upstream.protocol === 'http' || ctx.upstream.protocol === 'https';
    // A gRPC answer ends with trailers (grpc-status): the client's HTTP/2 stream must wait
    // for them. A head that has grpc-status already is trailers-only: it ends the stream.
    if (!res.headersChecked && headers['grpc-status'] === undefined && isGrpcResponse(headers['content-type'])) res.trailersExpected = true;
    if (statusMessage) res.writeHead(statusCode, statusMessage, out);
    else res.writeHead(statusCode, out);
    if (this.clientGone) controller.abort(CLIENT_GONE);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const res = this.ctx.res;
    this.ctx.responseBytes += chunk.length;
    if (!res.write(chunk)) {
      controller.pause();
      if (!this.drainHooked) {
        this.drainHooked = true;
        res.on('drain', onClientDrain);
      }
    }
  }

  onResponseEnd(_controller: Dispatcher.DispatchController, trailers?: Record<string, string | string[] | undefined>): void {
    this.closeAttempt();
    this.done = true;
    const res = this.ctx.res;
    if (res.trailersExpected) res.endWithTrailers(trailers ?? {});
    else res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.closeAttempt();
    const ctx = this.ctx;
    const res = ctx.res;
    if (this.clientGone || err === CLIENT_GONE || res.destroyed) {
      this.done = true;
      return;
    }
    if (err instanceof ProxyAbort && err.reason === 'body-too-large') {
      this.done = true;
      if (!sendError(res, 413, `request body is larger than the limit of ${ctx.maxBodyBytes} bytes`, { close: true, expose: true })) res.destroy();
      return;
    }
    if ((err as { code?: string }).code === 'UND_ERR_INVALID_ARG' && !res.headersSent) {
      // The client refused the request itself (a path or header value it does not accept): not the pod's fault.
      this.done = true;
      sendError(res, 400, `request cannot be forwarded: ${err.message}`);
      return;
    }
    const endpoint = this.endpoint!;
    const connecting = this.controller === undefined;
    const failure = describe(err, ctx, connecting);
    const gate = this.forwarder.gate;
    if (gate !== undefined && connecting && failure.kind === 'connect' && !res.headersSent) {
      // The pod of a waking Service is not listening yet (or one going to sleep already
      // stopped): nothing was sent, so try again until the wake timeout instead of a 502.
      gate.retryLater(this, this.bootRetries++);
      return;
    }
    // Three failed connects in a row take the pod out of rotation for a while (passive ejection).
    if (failure.kind === 'connect' && endpoint.stats.connectFailed(performance.now())) this.forwarder.metrics.countError('ejected');
    if (this.responseStarted || res.headersSent) {
      // Too late for an error page: cut the client response so it is not taken as complete.
      this.done = true;
      this.forwarder.metrics.countError(failure.kind);
      res.destroy();
      return;
    }
    if (!this.retried) {
      const target = this.retryTarget(endpoint, connecting, failure);
      if (target !== undefined) {
        this.retried = true;
        this.forwarder.metrics.countError(failure.kind);
        this.dispatchTo(target);
        return;
      }
    }
    this.done = true;
    this.forwarder.metrics.countError(failure.kind);
    // The access log names the pod that failed; the client is told only the case.
    ctx.upstreamAddress = endpoint.key;
    sendError(res, failure.status, failure.message);
  }

  /**
   * Where to retry, if the request can be: nothing was sent (the connection was never
   * made), or a bodiless idempotent request met a closed keep-alive connection.
   */
  private retryTarget(endpoint: Endpoint, connecting: boolean, failure: Failure): Endpoint | undefined {
    if (connecting) {
      const next = this.forwarder.balancer.pick(endpoint);
      return next === undefined ? undefined : this.forwarder.balancer.withinLimit(next);
    }
    if (failure.kind === 'reset' && this.body === null && isIdempotent(this.ctx.req.method!)) {
      return this.forwarder.balancer.pick(endpoint) ?? endpoint;
    }
    return undefined;
  }

  // ---- waiting for a sleepable Service (Waiter) ----

  get backendKey(): string {
    return this.forwarder.config.backend.key;
  }

  get deadline(): number {
    return this.ctx.startTime + (this.forwarder.gate?.policy.wakeTimeoutMs ?? 0);
  }

  proceedWith(forwarder: Forwarder): void {
    if (this.clientGone) return;
    this.forwarder = forwarder;
    const picked = forwarder.balancer.pick();
    const endpoint = picked === undefined ? undefined : forwarder.balancer.withinLimit(picked);
    if (endpoint === undefined) {
      if (forwarder.gate !== undefined && picked === undefined) forwarder.gate.hold(this);
      else sendError(this.ctx.res, 503, `every pod of service ${forwarder.config.backend.namespace}/${forwarder.config.backend.service} is busy`, { headers: [['retry-after', '1']] });
      return;
    }
    this.dispatchTo(endpoint);
  }

  // ---- client side ----

  resume(): void {
    this.controller?.resume();
  }

  clientClosed(): void {
    if (this.done) return;
    this.clientGone = true;
    const controller = this.controller;
    if (controller !== undefined && !controller.aborted) controller.abort(CLIENT_GONE);
  }
}

function onClientDrain(this: ExchangeResponse): void {
  this[kExchange]?.resume();
}

function onClientClose(this: ExchangeResponse): void {
  this[kExchange]?.clientClosed();
}

/** The client's response closed: a request still going to the pod for it is cancelled. */
export function clientClosed(res: ProxyResponse): void {
  (res as ExchangeResponse)[kExchange]?.clientClosed();
}

function isGrpcResponse(contentType: string | string[] | undefined): boolean {
  return typeof contentType === 'string' && contentType.length >= 16 && contentType.slice(0, 16).toLowerCase() === 'application/grpc';
}

const GRPC_TIMEOUT_UNITS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/** grpc-timeout ("100m", "5S": at most 8 digits and a unit) -> ms, rounded up; undefined when absent or malformed. */
export function grpcTimeoutMs(raw: readonly string[]): number | undefined {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length !== 12 || name.toLowerCase() !== 'grpc-timeout') continue;
    const m = /^(\d{1,8})([HMSmun])$/.exec(raw[i + 1]!.trim());
    if (m === null) return undefined;
    return Math.max(1, Math.ceil(Number(m[1]) * GRPC_TIMEOUT_UNITS[m[2]!]!));
  }
  return undefined;
}

function applyGrpcTimeout(ctx: RequestContext): void {
  const ms = grpcTimeoutMs(ctx.req.rawHeaders);
  if (ms === undefined) return;
  const t = ctx.timeouts;
  const within = (limit: number) => (limit > 0 ? Math.min(limit, ms) : ms);
  ctx.timeouts = { connect: within(t.connect), responseHeaders: within(t.responseHeaders), idle: within(t.idle) };
}

/** The Upgrade header of raw request headers ("" when absent). */
function upgradeHeader(raw: readonly string[]): string {
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 7 && raw[i]!.toLowerCase() === 'upgrade') return raw[i + 1]!;
  return '';
}

/** A Content-Length other than 0, or a Transfer-Encoding. */
function hasBody(raw: readonly string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if ((name === 'content-length' && raw[i + 1]!.trim() !== '0') || name === 'transfer-encoding') return true;
  }
  return false;
}
