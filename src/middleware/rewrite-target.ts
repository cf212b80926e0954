// portico.dev/rewrite-target: replaces the part of the path the route matched before
// forwarding. A Prefix route /api with target / sends /api/v1/x as /v1/x (and /api as
// /); with target /internal, as /internal/v1/x. An Exact route sends the target itself.
// The query is kept. There are no regex captures: "$1" is refused, not passed on.
//
// An invalid target is reported and the path is forwarded unchanged.
import type { RouteConfig } from '../model/config.ts';
import type { Handler } from '../proxy/context.ts';
import { annotation, reportInvalid } from './annotations.ts';
import type { Middleware, PolicyDefinition } from './types.ts';

export const REWRITE_TARGET = 'portico.dev/rewrite-target';

export interface RewriteTargetConfig {
  readonly target: string;
}

// RFC 3986 path characters; "%" only as an escape.
const PATH_CHARS = /^\/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*$/;

function invalidReason(target: string): string | undefined {
  if (/\$\d/.test(target)) return 'regex captures such as $1 are not supported: the target replaces the matched prefix';
  if (!PATH_CHARS.test(target)) return 'a path starting with "/", without query, fragment, spaces or control characters';
  if (target.split('/').some((s) => s === '.' || s === '..')) return 'a path without "." or ".." segments';
  return undefined;
}

/** The path sent upstream for `path` (which matched `route`). */
export function rewritePath(path: string, route: Pick<RouteConfig, 'path' | 'pathType'>, target: string): string {
  if (route.pathType === 'Exact') return target;
  // "/api/" and "/api" match the same requests; the matched prefix is "/api".
  let end = route.path.length;
  while (end > 0 && route.path.charCodeAt(end - 1) === 0x2f) end--;
  if (!path.startsWith(route.path.slice(0, end))) return path;
  const rest = path.slice(end);
  if (rest === '') return target;
  return target.endsWith('/') ? target + rest.slice(1) : target + rest;
}

export const rewriteTargetPolicy: PolicyDefinition<RewriteTargetConfig> = {
  name: 'rewrite-target',
  annotations: [REWRITE_TARGET],
  order: 60,
  parse(input) {
    const target = annotation(input, REWRITE_TARGET);
    if (target === undefined) return undefined;
    const reason = invalidReason(target);
    if (reason !== undefined) {
      reportInvalid(input, REWRITE_TARGET, target, reason, 'paths are forwarded unchanged');
      return undefined;
    }
    return { target };
  },
  readsRoute: true,
  create(config, _shared, _key, route): Middleware {
    // Without the route there is no matched prefix to replace.
    if (route === undefined) return (next) => next;
    const target = config.target;
    if (route.pathType === 'Exact') {
      return (next: Handler): Handler => (ctx) => {
        ctx.upstreamPath = target + ctx.query;
        next(ctx);
      };
    }
    return (next: Handler): Handler => (ctx) => {
      ctx.upstreamPath = rewritePath(ctx.path, route, target) + ctx.query;
      next(ctx);
    };
  },
};
