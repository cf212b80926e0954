// portico.dev/ip-allow and portico.dev/ip-deny: only listed client addresses pass, or
// listed ones are refused (403). CIDR lists of IPv4 and IPv6 ranges; IPv4-mapped IPv6
// client addresses match IPv4 ranges. The client address is ctx.clientIp (the socket
// peer, or what a trusted proxy says: see src/proxy/client-ip.ts).
//
// These are security policies, so a list with a mistake fails closed: if any entry is
// not an address or CIDR, the list is not applied and the route refuses every client
// (403), with one error naming the Ingress, the annotation and the bad entries. Not
// "skip the bad entry": in a deny list that lets in the addresses the typo meant to
// refuse, and a half-applied allow list is a surprise found by the users it locks out.
// ingress-nginx does the same with a bad whitelist-source-range (the location is denied).
import { sendError } from '../proxy/errors.ts';
import type { Handler, RequestContext } from '../proxy/context.ts';
import { annotation, INVALID_ANNOTATION, reportInvalidEntries } from './annotations.ts';
import { parseCidrList, sharedCidrSet, type CidrSet } from './cidr.ts';
import type { Middleware, PolicyDefinition, PolicyParseInput } from './types.ts';

export const IP_ALLOW = 'portico.dev/ip-allow';
export const IP_DENY = 'portico.dev/ip-deny';

export interface IpFilterConfig {
  /** Normalized CIDRs. */
  readonly cidrs: readonly string[];
  /** Refuse everyone: the list had a mistake, or allows nobody (fail closed). */
  readonly refuseAll?: true;
}

const EXPECTED = 'IPv4 or IPv6 addresses or CIDRs such as 10.0.0.0/8 or 2001:db8::/32';
const REFUSE_ALL: IpFilterConfig = { cidrs: [], refuseAll: true };

function parseFilter(input: PolicyParseInput, name: string, what: 'ip-allow' | 'ip-deny'): IpFilterConfig | undefined {
  const value = annotation(input, name);
  if (value === undefined) return undefined;
  const { valid, invalid } = parseCidrList(value);
  if (invalid.length > 0) {
    reportInvalidEntries(input, name, invalid, EXPECTED, `${what} is not applied and every client gets 403 until it is fixed (an IP list with a mistake fails closed)`);
    return REFUSE_ALL;
  }
  if (valid.length > 0) return { cidrs: valid };
  // Empty: a deny list of nobody denies nobody, an allow list of nobody allows nobody.
  // Said out loud either way, in case a templated value went missing.
  if (what === 'ip-deny') {
    input.report({ severity: 'warning', reason: INVALID_ANNOTATION, message: `annotation ${name}: empty list; nobody is denied` });
    return undefined;
  }
  input.report({ severity: 'error', reason: INVALID_ANNOTATION, message: `annotation ${name}: empty list; nobody is allowed: every client gets 403` });
  return REFUSE_ALL;
}

function forbidden(ctx: RequestContext): void {
  sendError(ctx.res, 403, `access from ${ctx.clientIp || 'an unknown address'} is not allowed`);
}

// A route's handlers: one closure each over the set and the next handler (a closure made
// inside create() would also keep create()'s scope: 40 more bytes a route).
function denyListed(denied: CidrSet, next: Handler): Handler {
  return (ctx) => {
    if (denied.has(ctx.clientIp)) forbidden(ctx);
    else next(ctx);
  };
}

function allowListed(allowed: CidrSet, next: Handler): Handler {
  return (ctx) => {
    if (allowed.has(ctx.clientIp)) next(ctx);
    else forbidden(ctx);
  };
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
    return (next: Handler): Handler => denyListed(denied, next);
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
    return (next: Handler): Handler => allowListed(allowed, next);
  },
};
