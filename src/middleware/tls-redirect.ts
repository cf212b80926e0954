// portico.dev/tls-redirect: plain-HTTP requests get 308 Permanent Redirect to
// https://<same host>[:port]<same path and query>. On by default for the hosts that
// have TLS on the Ingress (RouteConfig.tls), as ingress-nginx and others do; "false"
// turns it off, "true" turns it on for every host of the Ingress. 308 (not 301) keeps
// the method and body.
//
// An invalid value is reported and ignored: the default applies.
import type { Handler, RequestContext } from '../proxy/context.ts';
import { parseBool } from '../util/units.ts';
import { annotation, reportInvalid } from './annotations.ts';
import type { Middleware, PolicyDefinition } from './types.ts';

export const TLS_REDIRECT = 'portico.dev/tls-redirect';

export interface TlsRedirectConfig {
  /** true: always redirect; false: never; absent: when the route's host has TLS. */
  readonly force?: boolean;
}

let redirectPort = 443;

/**
 * The HTTPS port redirects point to, set once at start: the port clients reach portico's
 * HTTPS listener on (443 behind a Service or load balancer mapping 443 to it). 443, or
 * anything not a valid port, gives URLs without a port.
 */
export function configureRedirectPort(port: number): void {
  redirectPort = Number.isInteger(port) && port > 0 && port <= 65535 ? port : 443;
}

export function redirectLocation(ctx: RequestContext): string {
  const authority = redirectPort === 443 ? ctx.host : `${ctx.host}:${redirectPort}`;
  return `https://${authority}${ctx.path}${ctx.query}`;
}

function redirect(next: Handler): Handler {
  return (ctx) => {
    // Without a Host there is no URL to send the client to: serve it as it is.
    if (ctx.secure || ctx.host === '' || ctx.path === '*') {
      next(ctx);
      return;
    }
    const res = ctx.res;
    if (res.headersSent || res.destroyed) return;
    res.writeHead(308, { location: redirectLocation(ctx), 'content-length': '0' });
    res.end();
  };
}

export const tlsRedirectPolicy: PolicyDefinition<TlsRedirectConfig> = {
  name: 'tls-redirect',
  annotations: [TLS_REDIRECT],
  order: 30,
  defaultConfig: {},
  parse(input) {
    const text = annotation(input, TLS_REDIRECT);
    if (text === undefined) return undefined;
    const force = parseBool(text);
    if (force === undefined) {
      reportInvalid(input, TLS_REDIRECT, text, 'true or false', 'ignored: hosts with TLS are redirected to HTTPS (the default)');
      return undefined;
    }
    return { force };
  },
  applies(config, route) {
    return config.force ?? route?.tls === true;
  },
  create(): Middleware {
    return redirect;
  },
};
