// Gateway API RequestMirror filter: a copy of each request goes to another backend,
// whose answer is thrown away; the client's request goes on as if nothing happened.
// Only requests without a body are mirrored (a streamed body cannot be read twice
// without buffering it; documented in README "Gateway API"). Not an annotation: the
// translation of HTTPRoute filters makes its config.
import type { BackendConfig } from '../model/config.ts';
import type { Handler, RequestContext } from '../proxy/context.ts';
import type { Middleware, PolicyDefinition } from './types.ts';
import { undici } from '../proxy/upstreams.ts';

export interface MirrorTarget {
  readonly backend: BackendConfig;
  /** 0-100: the share of requests mirrored (percent or fraction in the filter). */
  readonly percent: number;
}

/** Every RequestMirror filter of a rule: each gets its own copy. */
export interface RequestMirrorConfig {
  readonly mirrors: readonly MirrorTarget[];
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'content-length', 'expect']);

function hasBody(ctx: RequestContext): boolean {
  const raw = ctx.req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name === 'transfer-encoding') return true;
    if (name === 'content-length' && raw[i + 1] !== '0') return true;
  }
  return false;
}

function mirror(ctx: RequestContext, origin: string): void {
  const raw = ctx.req.rawHeaders;
  const headers: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (!HOP_BY_HOP.has(raw[i]!.toLowerCase())) headers.push(raw[i]!, raw[i + 1]!);
  undici().request(origin + ctx.upstreamPath, { method: ctx.req.method as 'GET', headers }).then(
    (res) => res.body.dump(),
    () => {
      // A mirror that fails must not affect the client's request.
    },
  );
}

export const requestMirrorPolicy: PolicyDefinition<RequestMirrorConfig> = {
  name: 'request-mirror',
  annotations: [],
  order: 72,
  parse: () => undefined,
  create(config): Middleware {
    const targets = config.mirrors.map((m) => {
      const addresses = m.backend.error === undefined ? m.backend.addresses : [];
      return { percent: m.percent, origins: addresses.map((a) => `http://${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}`), next: 0 };
    });
    return (handler: Handler): Handler => (ctx) => {
      if (!ctx.req.upgrade && !hasBody(ctx)) {
        for (const t of targets) {
          if (t.origins.length > 0 && (t.percent >= 100 || Math.random() * 100 < t.percent)) mirror(ctx, t.origins[t.next++ % t.origins.length]!);
        }
      }
      handler(ctx);
    };
  },
};
