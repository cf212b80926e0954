// HTTPRoute filters -> the policies that carry them out (src/middleware). A filter
// is per rule, but ReplacePrefixMatch and the redirect port depend on the match and
// the listener, so policies are made per (match, listener).
import type { PolicyConfig } from '../../model/config.ts';
import type { HTTPHeaderFilter, HTTPPathModifier, HTTPRouteFilter } from '../../model/k8s.ts';
import type { HeaderEdits, HeaderModifierConfig } from '../../middleware/header-modifier.ts';
import type { RequestRedirectConfig } from '../../middleware/request-redirect.ts';
import type { UrlRewriteConfig } from '../../middleware/url-rewrite.ts';

/** What a filter's path modifier needs from the match it applies to. */
export interface MatchedPath {
  readonly type: 'Exact' | 'Prefix' | 'RegularExpression';
  readonly value: string;
}

export interface FilterContext {
  readonly path: MatchedPath;
  readonly listenerPort: number;
  readonly listenerProtocol: 'HTTP' | 'HTTPS';
}

export type FilterResult = { readonly policies: PolicyConfig[]; readonly mirrors: HTTPRouteFilter[] } | { readonly error: string };

function edits(filter: HTTPHeaderFilter | undefined): HeaderEdits {
  const lowerFirst = <T extends { name: string }>(list: readonly T[] | undefined): T[] => {
    // "Only the first entry with an equivalent name MUST be considered."
    const seen = new Set<string>();
    return (list ?? []).filter((h) => !seen.has(h.name.toLowerCase()) && seen.add(h.name.toLowerCase()));
  };
  return {
    set: lowerFirst(filter?.set).map((h) => [h.name, h.value] as const),
    add: lowerFirst(filter?.add).map((h) => [h.name, h.value] as const),
    remove: [...new Set((filter?.remove ?? []).map((n) => n.toLowerCase()))],
  };
}

function pathModifier(mod: HTTPPathModifier | undefined, matched: MatchedPath): { path?: UrlRewriteConfig['path'] } | { error: string } {
  if (mod === undefined) return {};
  if (mod.type === 'ReplaceFullPath') return { path: { type: 'ReplaceFullPath', value: mod.replaceFullPath ?? '/' } };
  if (mod.type === 'ReplacePrefixMatch') {
    if (matched.type !== 'Prefix') return { error: 'ReplacePrefixMatch needs a PathPrefix match' };
    return { path: { type: 'ReplacePrefixMatch', value: mod.replacePrefixMatch ?? '/', prefix: matched.value } };
  }
  return { error: `path modifier type ${String(mod.type)} is not supported` };
}

/** The policies of a rule's (or backendRef's) filters, in the order listed; mirrors are returned apart (they need backends). */
export function filterPolicies(filters: readonly HTTPRouteFilter[] | undefined, ctx: FilterContext): FilterResult {
  const policies: PolicyConfig[] = [];
  const mirrors: HTTPRouteFilter[] = [];
  let headers: { request?: HeaderEdits; response?: HeaderEdits } | undefined;
  for (const [i, filter] of (filters ?? []).entries()) {
    const where = `filters[${i}] (${filter.type})`;
    switch (filter.type) {
      case 'RequestHeaderModifier':
        headers = { ...headers, request: edits(filter.requestHeaderModifier) };
        break;
      case 'ResponseHeaderModifier':
        headers = { ...headers, response: edits(filter.responseHeaderModifier) };
        break;
      case 'RequestRedirect': {
        const r = filter.requestRedirect ?? {};
        const path = pathModifier(r.path, ctx.path);
        if ('error' in path) return { error: `${where}: ${path.error}` };
        const config: RequestRedirectConfig = {
          ...(r.scheme !== undefined ? { scheme: r.scheme.toLowerCase() } : {}),
          ...(r.hostname !== undefined ? { hostname: r.hostname } : {}),
          ...(r.port !== undefined ? { port: r.port } : {}),
          ...path,
          statusCode: r.statusCode ?? 302,
          listenerPort: ctx.listenerPort,
          listenerScheme: ctx.listenerProtocol === 'HTTPS' ? 'https' : 'http',
        };
        policies.push({ name: 'request-redirect', config });
        break;
      }
      case 'URLRewrite': {
        const u = filter.urlRewrite ?? {};
        const path = pathModifier(u.path, ctx.path);
        if ('error' in path) return { error: `${where}: ${path.error}` };
        const config: UrlRewriteConfig = { ...(u.hostname !== undefined ? { hostname: u.hostname } : {}), ...path };
        policies.push({ name: 'url-rewrite', config });
        break;
      }
      case 'RequestMirror':
        mirrors.push(filter);
        break;
      default:
        return { error: `${where}: filter type ${filter.type} is not supported` };
    }
  }
  if (headers !== undefined) {
    const config: HeaderModifierConfig = headers;
    policies.push({ name: 'header-modifier', config });
  }
  return { policies, mirrors };
}
