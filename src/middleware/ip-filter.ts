// portico.dev/ip-allow and portico.dev/ip-deny: only listed client addresses pass, or
// listed ones are refused (403). CIDR lists of IPv4 and IPv6 ranges; IPv4-mapped IPv6
// client addresses match IPv4 ranges. The client address is ctx.clientIp (the socket
// peer, or what a trusted proxy says: see src/proxy/client-ip.ts).
//
// Invalid entries are skipped with a warning; the rest of the list applies. These are
// security policies, so they fail closed: a list with no valid entry at all refuses
// every client (error reported), since letting everyone through would silently open
// what the author meant to restrict.
import { sendError } from '../proxy/errors.ts';
import type { Handler, RequestContext } from '../proxy/context.ts';
import { annotation, reportInvalid } from './annotations.ts';
import { parseCidrList, sharedCidrSet } from './cidr.ts';
import type { Middleware, PolicyDefinition, PolicyParseInput } from './types.ts';

export const IP_ALLOW = 'portico.dev/ip-allow';
export const IP_DENY = 'portico.dev/ip-deny';

export interface IpFilterConfig {
  /** Normalized CIDRs. */
  readonly cidrs: readonly string[];
  /** Refuse everyone: the list had no valid entry (fail closed). */
  readonly refuseAll?: true;
}

function parseFilter(input: PolicyParseInput, name: string, what: 'ip-allow' | 'ip-deny'): IpFilterConfig | undefined {
  const value = annotation(input, name);
  if (value === undefined) return undefined;
  if (value === '' && what === 'ip-deny') {
    // An empty deny list denies nobody; said out loud in case a value went missing.
    input.report({ severity: 'warning', reason: 'InvalidAnnotation', message: `annotation ${name}: empty list; nobody is denied` });
    return undefined;
  }
  const { valid, invalid } = parseCidrList(value);
  for (const entry of invalid) {
    reportInvalid(input, name, entry, 'an IPv4 or IPv6 address or CIDR such as 10.0.0.0/8 or 2001:db8::/32', 'this entry is skipped', 'warning');
  }
  if (valid.length === 0) {
    input.report({
      severity: 'error',
      reason: 'InvalidAnnotation',
      message: `annotation ${name}: no valid address or CIDR in ${JSON.stringify(value)}; ${what} fails closed: every client gets 403`,
    });
    return { cidrs: [], refuseAll: true };
  }
  return { cidrs: valid };
}

function forbidden(ctx: RequestContext): void {
  sendError(ctx.res, 403, `access from ${ctx.clientIp || 'an unknown address'} is not allowed`);
}

function refuseEveryone(): Middleware {
  return () => forbidden;
}

export const ipDenyPolicy: PolicyDefinition<IpFilterConfig> = {
  name: 'ip-deny',
  annotations: [IP_DENY],
  order: 10,
  parse: (input) => parseFilter(input, IP_DENY, 'ip-deny'),
  create(config): Middleware {
    if (config.refuseAll) return refuseEveryone();
    const denied = sharedCidrSet(config.cidrs);
    return (next: Handler): Handler => (ctx) => {
      if (denied.has(ctx.clientIp)) forbidden(ctx);
      else next(ctx);
    };
  },
};

export const ipAllowPolicy: PolicyDefinition<IpFilterConfig> = {
  name: 'ip-allow',
  annotations: [IP_ALLOW],
  order: 11,
  parse: (input) => parseFilter(input, IP_ALLOW, 'ip-allow'),
  create(config): Middleware {
    if (config.refuseAll) return refuseEveryone();
    const allowed = sharedCidrSet(config.cidrs);
    return (next: Handler): Handler => (ctx) => {
      if (allowed.has(ctx.clientIp)) next(ctx);
      else forbidden(ctx);
    };
  },
};
