// Strict-Transport-Security on HTTPS answers of hosts that have a usable certificate
// (RouteConfig.tls), set globally by --hsts, --hsts-max-age, --hsts-include-subdomains
// and --hsts-preload, as ingress-nginx's hsts* settings are. Not on plain HTTP (RFC 6797
// section 7.2: ignored there) and not on hosts served with the default certificate.
import type { Handler } from '../proxy/context.ts';
import type { Middleware, PolicyDefinition } from './types.ts';

export interface HstsSettings {
  readonly enabled: boolean;
  /** seconds */
  readonly maxAge: number;
  readonly includeSubdomains: boolean;
  readonly preload: boolean;
}

let header: [string, string] | undefined = ['strict-transport-security', 'max-age=15724800'];

/** Set once at start from the flags. */
export function configureHsts(settings: HstsSettings): void {
  header = settings.enabled
    ? ['strict-transport-security', `max-age=${settings.maxAge}${settings.includeSubdomains ? '; includeSubDomains' : ''}${settings.preload ? '; preload' : ''}`]
    : undefined;
}

export const hstsPolicy: PolicyDefinition<Record<string, never>> = {
  name: 'hsts',
  annotations: [],
  order: 35,
  defaultConfig: {},
  parse() {
    return undefined;
  },
  applies(_config, route) {
    return header !== undefined && route?.tls === true;
  },
  create(): Middleware {
    const value = header;
    return (next: Handler): Handler => (ctx) => {
      if (ctx.secure && value !== undefined) (ctx.responseHeaders ??= []).push(value);
      next(ctx);
    };
  },
};
