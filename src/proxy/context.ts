// The per-request state that flows through a route's middleware chain into the forwarder.
import { DEFAULT_UPGRADES } from '../middleware/allowed-upgrades.ts';
import type { HeaderEntry } from '../middleware/header-list.ts';
import type { ProxyRequest, ProxyResponse } from './exchange-types.ts';
import type { Route } from '../routing/table.ts';
import { kContext } from '../util/response-slots.ts';

/** How to talk to the pods of a route; set per route by the upstream-protocol policy. */
export interface UpstreamProfile {
  /** Pools are kept per (profile key, address), so equal profiles share connections. */
  readonly key: string;
  readonly protocol: 'http' | 'https' | 'h2c' | 'h2';
  /** PEM CA bundle that pod certificates must chain to (https, h2). */
  readonly ca?: string;
  /** Do not verify pod certificates (https, h2). */
  readonly insecureSkipVerify?: boolean;
}

export const PLAIN_HTTP: UpstreamProfile = { key: 'http', protocol: 'http' };

export interface UpstreamTimeouts {
  /** ms to establish the TCP (and TLS) connection to a pod */
  connect: number;
  /** ms from sending the request to the response headers */
  responseHeaders: number;
  /** ms without any byte in either direction once the response started */
  idle: number;
}

/**
 * One object per request; a class so that V8 keeps one shape on the hot path.
 * Middleware reads and adjusts it, then calls the next handler.
 */
export class RequestContext {
  readonly req: ProxyRequest;
  /** The client's response; the cache policy puts its tee (src/cache/fill.ts) here while it fetches. */
  res: ProxyResponse;
  /** The response as the front end gave it (ctx.res may be replaced): the proxy's handler hears its 'close'. */
  readonly clientResponse: ProxyResponse;
  readonly route: Route;
  /** Client address: the socket peer, or from X-Forwarded-For / PROXY protocol when the peer is a trusted proxy. */
  clientIp: string;
  /** The request came in over TLS. */
  readonly secure: boolean;
  /** Lowercase, without port or trailing dot. */
  readonly host: string;
  /** Request path, without query. */
  readonly path: string;
  /** "?..." or "". */
  readonly query: string;
  /** The authority of an absolute-form request target, sent as Host instead of the Host header; "" otherwise. */
  targetAuthority = '';
  /** Path and query sent upstream; rewrite-target changes it. */
  upstreamPath: string;
  /** Extra headers for the upstream request: set (replacing any of the same name), added or removed (see header-list.ts). */
  requestHeaders: HeaderEntry[] | undefined = undefined;
  /** Extra headers for the response, as requestHeaders. */
  responseHeaders: HeaderEntry[] | undefined = undefined;
  timeouts: UpstreamTimeouts;
  upstream: UpstreamProfile = PLAIN_HTTP;
  /** Largest request body accepted, in bytes; -1 for no limit. */
  maxBodyBytes = -1;
  /** Upgrade protocols tunnelled (lowercase); portico.dev/allowed-upgrades adds to websocket. */
  allowedUpgrades: ReadonlySet<string> = DEFAULT_UPGRADES;
  /** performance.now() when the request arrived */
  readonly startTime: number;
  requestId = '';
  /** "host:port" of the pod that answered; "" when none did (set by the forwarder). */
  upstreamAddress = '';
  /** ms from sending to the pod until its response headers; -1 when no pod answered. */
  upstreamMillis = -1;
  /** Response body bytes passed on from the pod (or of portico's own error answer). */
  responseBytes = 0;
  /** Why portico answered with an error itself (for the access log, never the client); "" otherwise. */
  error = '';

  constructor(
    req: ProxyRequest,
    res: ProxyResponse,
    route: Route,
    clientIp: string,
    secure: boolean,
    host: string,
    path: string,
    query: string,
    timeouts: UpstreamTimeouts,
    startTime: number,
  ) {
    this.req = req;
    this.res = res;
    this.clientResponse = res;
    this.route = route;
    this.clientIp = clientIp;
    this.secure = secure;
    this.host = host;
    this.path = path;
    this.query = query;
    this.upstreamPath = query ? path + query : path;
    this.timeouts = timeouts;
    this.startTime = startTime;
  }
}

/** A step of a route's chain. It either answers (res) or calls the next handler. */
export type Handler = (ctx: RequestContext) => void;

/** The request context a response belongs to, set while its route handles it (compile.ts). */
export { kContext };

export function contextOf(res: ProxyResponse): RequestContext | undefined {
  return (res as ProxyResponse & { [kContext]?: RequestContext })[kContext];
}
