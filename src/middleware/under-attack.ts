// portico.dev/under-attack: browsers prove a little work before they reach the route, to
// shed bot floods. A request without a valid clearance cookie gets a challenge page
// (src/challenge/page.ts); its solution comes back as a cookie on the same URL, and the
// answer is a 303 to that URL with the clearance cookie (HttpOnly, SameSite=Lax, Secure on
// TLS, bound to the host, valid for under-attack-ttl). Nothing is stored on the server:
// nonces and clearances are signed (src/challenge/tokens.ts), so a flood of bad
// solutions costs one HMAC and one SHA-256 each, and no memory.
//
// Only GET and HEAD can be sent back after the check; any other method (and an upgrade)
// without clearance gets 403 with a message saying what to do.
//
// portico.dev/under-attack-difficulty: the zero bits asked for (each one doubles the
// work). portico.dev/under-attack-ttl: how long a clearance lasts. Invalid values are
// reported and the default is used: the protection stays on.
import type { Handler, RequestContext } from '../proxy/context.ts';
import { sendError } from '../proxy/errors.ts';
import { parseAnnotationDuration, parseBool } from '../util/units.ts';
import { checkClearance, checkSolution, issueClearance, issueNonce } from '../challenge/tokens.ts';
import { challengePage, SOLUTION_COOKIE } from '../challenge/page.ts';
import { challengeCounts } from '../challenge/metrics.ts';
import { cookieValue } from '../challenge/cookies.ts';
import { annotation, reportIgnored, reportInvalid } from './annotations.ts';
import type { Middleware, PolicyDefinition } from './types.ts';

export const UNDER_ATTACK = 'portico.dev/under-attack';
export const UNDER_ATTACK_DIFFICULTY = 'portico.dev/under-attack-difficulty';
export const UNDER_ATTACK_TTL = 'portico.dev/under-attack-ttl';

/**
 * 2^17 (131,072) hashes on average: about a second on a phone. Measured here
 * (bench/challenge-hash-rate.ts): 126,000 hashes/s per worker in headless Chromium on
 * this shared, loaded VM core; a phone core taken as 2-6 times slower, with the page's
 * 4 workers: 0.4-1.3 s (a single-core browser: 2-4 s). See README.
 */
export const DEFAULT_DIFFICULTY = 17;
export const MAX_DIFFICULTY = 32;
export const DEFAULT_TTL_SECONDS = 3600;
/** How long a page's nonce can be solved and sent back. */
export const NONCE_TTL_SECONDS = 300;
export const CLEARANCE_COOKIE = 'portico_clearance';

export interface UnderAttackConfig {
  readonly difficulty: number;
  readonly ttlSeconds: number;
}

const CLEARANCE_PREFIX = `${CLEARANCE_COOKIE}=`;
const SOLUTION_PREFIX = `${SOLUTION_COOKIE}=`;
const NOT_REPLAYABLE = 'this site checks browsers before letting them in, and a request of this kind cannot be sent again after the check: open any page of this site in a browser first (it sets a cookie), then send the request again';

export const underAttackPolicy: PolicyDefinition<UnderAttackConfig> = {
  name: 'under-attack',
  annotations: [UNDER_ATTACK, UNDER_ATTACK_DIFFICULTY, UNDER_ATTACK_TTL],
  // After the cheaper refusals (IP filters, rate limit), the redirects (a plain-HTTP
  // request goes to HTTPS before it is checked) and CORS preflights; before the rest.
  order: 45,
  parse(input) {
    const on = annotation(input, UNDER_ATTACK);
    const difficultyText = annotation(input, UNDER_ATTACK_DIFFICULTY);
    const ttlText = annotation(input, UNDER_ATTACK_TTL);
    if (on === undefined) {
      if (difficultyText !== undefined) reportIgnored(input, UNDER_ATTACK_DIFFICULTY, `has no effect without ${UNDER_ATTACK}`);
      if (ttlText !== undefined) reportIgnored(input, UNDER_ATTACK_TTL, `has no effect without ${UNDER_ATTACK}`);
      return undefined;
    }
    const enabled = parseBool(on);
    if (enabled === undefined) {
      // A switch meant to protect a site fails closed: a typo keeps the check on.
      reportInvalid(input, UNDER_ATTACK, on, 'true or false', 'the check is on, as for "true"');
    } else if (!enabled) {
      return undefined;
    }
    let difficulty = DEFAULT_DIFFICULTY;
    if (difficultyText !== undefined) {
      const n = /^\d{1,2}$/.test(difficultyText) ? Number(difficultyText) : NaN;
      if (n >= 1 && n <= MAX_DIFFICULTY) difficulty = n;
      else reportInvalid(input, UNDER_ATTACK_DIFFICULTY, difficultyText, `zero bits from 1 to ${MAX_DIFFICULTY} (each one doubles the work)`, `the difficulty is ${DEFAULT_DIFFICULTY}`, 'warning');
    }
    let ttlSeconds = DEFAULT_TTL_SECONDS;
    if (ttlText !== undefined) {
      const ms = parseAnnotationDuration(ttlText);
      if (ms !== undefined && ms >= 1000) ttlSeconds = Math.floor(ms / 1000);
      else reportInvalid(input, UNDER_ATTACK_TTL, ttlText, 'a duration of at least 1s, such as 30m or 12h', 'clearances last 1h', 'warning');
    }
    return { difficulty, ttlSeconds };
  },
  create(config): Middleware {
    return (next: Handler): Handler => (ctx) => {
      const raw = ctx.req.rawHeaders;
      const now = Math.floor(Date.now() / 1000);
      const clearance = cookieValue(raw, CLEARANCE_PREFIX);
      if (clearance !== undefined && checkClearance(clearance, ctx.host, now)) {
        next(ctx);
        return;
      }
      const method = ctx.req.method;
      if ((method !== 'GET' && method !== 'HEAD') || ctx.req.upgrade) {
        sendError(ctx.res, 403, NOT_REPLAYABLE, { expose: true });
        return;
      }
      const solution = cookieValue(raw, SOLUTION_PREFIX);
      if (solution !== undefined) {
        if (checkSolution(solution, ctx.host, config.difficulty, now) === 'ok') {
          challengeCounts.solved++;
          cleared(ctx, now + config.ttlSeconds);
          return;
        }
        challengeCounts.failed++;
      }
      challenge(ctx, config.difficulty);
    };
  },
};

function cookieAttributes(ctx: RequestContext): string {
  return ctx.secure ? '; Path=/; HttpOnly; SameSite=Lax; Secure' : '; Path=/; HttpOnly; SameSite=Lax';
}

/** 303 back to the same URL, with the clearance (and the solution cookie deleted). */
function cleared(ctx: RequestContext, expiry: number): void {
  const res = ctx.res;
  if (res.headersSent || res.destroyed) return;
  const maxAge = expiry - Math.floor(Date.now() / 1000);
  res.writeHead(303, 'See Other', [
    'location', ctx.path + ctx.query,
    'set-cookie', `${CLEARANCE_COOKIE}=${issueClearance(ctx.host, expiry)}; Max-Age=${maxAge}${cookieAttributes(ctx)}`,
    'set-cookie', `${SOLUTION_COOKIE}=; Max-Age=0; Path=/; SameSite=Lax${ctx.secure ? '; Secure' : ''}`,
    'cache-control', 'no-store',
    'content-length', '0',
  ]);
  res.end();
}

function challenge(ctx: RequestContext, difficulty: number): void {
  const res = ctx.res;
  if (res.headersSent || res.destroyed) return;
  challengeCounts.issued++;
  const nonce = issueNonce(ctx.host, difficulty, Math.floor(Date.now() / 1000), NONCE_TTL_SECONDS);
  const body = Buffer.from(challengePage(ctx.host, nonce, difficulty, ctx.secure));
  const head = ctx.req.method === 'HEAD';
  ctx.responseBytes = head ? 0 : body.length;
  ctx.error = 'under-attack challenge';
  // 403: crawlers and scripts see they were not let in; browsers show the page all the same.
  res.writeHead(403, 'Forbidden', [
    'content-type', 'text/html; charset=utf-8',
    'content-length', String(body.length),
    'cache-control', 'no-store',
    'x-content-type-options', 'nosniff',
    'x-frame-options', 'DENY',
    'referrer-policy', 'no-referrer',
    'content-security-policy', "default-src 'none'; script-src 'unsafe-inline'; worker-src blob:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  ]);
  res.end(head ? undefined : body);
}
