// portico.dev/allowed-upgrades: the Upgrade protocols a route tunnels, besides
// "websocket" which every route tunnels ("websocket, foo", case-insensitive tokens).
// An upgrade to any other protocol is not tunnelled: the request goes to the pod as an
// ordinary request without its Upgrade header, as nginx sends it without upgrade config.
// That is what keeps "Upgrade: h2c" from opening a raw tunnel in which requests for
// other paths would reach the pod unchecked. h2c is tunnelled only when listed.
//
// An invalid value is reported and only websocket is tunnelled.
import type { Handler } from '../proxy/context.ts';
import { annotation, reportInvalid } from './annotations.ts';
import type { Middleware, PolicyDefinition } from './types.ts';

export const ALLOWED_UPGRADES = 'portico.dev/allowed-upgrades';

/** The tunnel every route allows. */
export const DEFAULT_UPGRADES: ReadonlySet<string> = new Set(['websocket']);

export interface AllowedUpgradesConfig {
  readonly protocols: readonly string[];
}

/** An HTTP token (RFC 9110 section 5.6.2), optionally "/version" as Upgrade allows. */
const PROTOCOL = /^[!#$%&'*+\-.^_`|~0-9a-z]+(\/[!#$%&'*+\-.^_`|~0-9a-z]+)?$/;

export const allowedUpgradesPolicy: PolicyDefinition<AllowedUpgradesConfig> = {
  name: 'allowed-upgrades',
  annotations: [ALLOWED_UPGRADES],
  order: 55,
  parse(input) {
    const text = annotation(input, ALLOWED_UPGRADES);
    if (text === undefined) return undefined;
    const protocols = text.split(',').map((t) => t.trim().toLowerCase()).filter((t) => t !== '');
    if (protocols.length === 0 || !protocols.every((p) => PROTOCOL.test(p))) {
      reportInvalid(input, ALLOWED_UPGRADES, text, 'a comma-separated list of protocol tokens, such as "websocket, h2c"', 'only websocket is tunnelled');
      return undefined;
    }
    return { protocols: [...new Set([...DEFAULT_UPGRADES, ...protocols])].sort() };
  },
  create(config): Middleware {
    const allowed: ReadonlySet<string> = new Set(config.protocols);
    return (next: Handler): Handler => (ctx) => {
      ctx.allowedUpgrades = allowed;
      next(ctx);
    };
  },
};

/**
 * The protocol of an Upgrade request value that the route allows, or undefined. A
 * client may offer several ("h2c, websocket"): the first allowed one is asked for.
 */
export function allowedUpgrade(offered: string, allowed: ReadonlySet<string>): string | undefined {
  for (const raw of offered.split(',')) {
    const protocol = raw.trim();
    if (allowed.has(protocol.toLowerCase())) return protocol;
  }
  return undefined;
}
