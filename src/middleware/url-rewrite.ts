// Gateway API URLRewrite filter: the Host the pod sees, and the path: replaced whole
// (ReplaceFullPath) or only the part the PathPrefix match covered (ReplacePrefixMatch).
// The query is kept. Not an annotation: the translation of HTTPRoute filters makes
// its config.
import type { Handler } from '../proxy/context.ts';
import { withHeaders, type HeaderList } from './header-list.ts';
import type { Middleware, PolicyDefinition } from './types.ts';

export type PathRewrite =
  | { readonly type: 'ReplaceFullPath'; readonly value: string }
  | { readonly type: 'ReplacePrefixMatch'; readonly value: string; /** the match's PathPrefix */ readonly prefix: string };

export interface UrlRewriteConfig {
  readonly hostname?: string;
  readonly path?: PathRewrite;
}

function trimSlashes(path: string): string {
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === 0x2f) end--;
  return path.slice(0, end);
}

/**
 * The path after replacing the matched prefix, as the spec's table says: prefix /foo
 * with replacement /xyz (or /xyz/) sends /foo/bar as /xyz/bar and /foo/ as /xyz/; with
 * replacement "" or /, /foo/bar as /bar and /foo as /.
 */
export function replacePrefix(path: string, prefix: string, replacement: string): string {
  const rest = path.slice(trimSlashes(prefix).length); // "" or "/..."
  const out = trimSlashes(replacement) + rest;
  return out === '' ? '/' : out;
}

/** The path (and query) sent upstream for `path` under `rewrite`. */
export function rewrittenPath(rewrite: PathRewrite, path: string): string {
  return rewrite.type === 'ReplaceFullPath' ? rewrite.value : replacePrefix(path, rewrite.prefix, rewrite.value);
}

export const urlRewritePolicy: PolicyDefinition<UrlRewriteConfig> = {
  name: 'url-rewrite',
  annotations: [],
  order: 61,
  parse: () => undefined,
  create(config): Middleware {
    const host: HeaderList | undefined = config.hostname !== undefined ? [['host', config.hostname]] : undefined;
    const path = config.path;
    return (next: Handler): Handler => (ctx) => {
      if (path !== undefined) ctx.upstreamPath = rewrittenPath(path, ctx.path) + ctx.query;
      if (host !== undefined) ctx.requestHeaders = withHeaders(ctx.requestHeaders, host);
      next(ctx);
    };
  },
};
