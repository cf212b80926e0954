// Gateway API RequestRedirect filter: answers with a redirect built from the request
// URL, with the scheme, hostname, port and path the filter replaces. Port rules of the
// spec: without a port, the well-known port of a changed scheme (80, 443), else the
// listener's port; the port is left out of Location when it is the scheme's default.
// Not an annotation: the translation of HTTPRoute filters makes its config.
import type { Handler } from '../proxy/context.ts';
import type { Middleware, PolicyDefinition } from './types.ts';
import { rewrittenPath, type PathRewrite } from './url-rewrite.ts';

export interface RequestRedirectConfig {
  readonly scheme?: string;
  readonly hostname?: string;
  readonly port?: number;
  readonly path?: PathRewrite;
  readonly statusCode: number;
  /** The listener the route is served on: the defaults of scheme and port. */
  readonly listenerPort: number;
  readonly listenerScheme: 'http' | 'https';
}

const WELL_KNOWN: Readonly<Record<string, number>> = { http: 80, https: 443 };

export function redirectTarget(config: RequestRedirectConfig, host: string, path: string, query: string): string {
  const scheme = config.scheme ?? config.listenerScheme;
  let port = config.port;
  if (port === undefined) port = config.scheme !== undefined ? (WELL_KNOWN[scheme] ?? config.listenerPort) : config.listenerPort;
  const hostname = config.hostname ?? host;
  const authority = port === WELL_KNOWN[scheme] ? hostname : `${hostname}:${port}`;
  const newPath = config.path === undefined ? path : rewrittenPath(config.path, path);
  return `${scheme}://${authority}${newPath}${query}`;
}

export const requestRedirectPolicy: PolicyDefinition<RequestRedirectConfig> = {
  name: 'request-redirect',
  annotations: [],
  order: 31,
  parse: () => undefined,
  create(config): Middleware {
    const status = config.statusCode;
    return (): Handler => (ctx) => {
      const res = ctx.res;
      if (res.headersSent || res.destroyed) return;
      res.writeHead(status, { location: redirectTarget(config, ctx.host, ctx.path, ctx.query), 'content-length': '0' });
      res.end();
    };
  },
};
