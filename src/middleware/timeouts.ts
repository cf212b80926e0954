// portico.dev/connect-timeout, portico.dev/response-timeout, portico.dev/idle-timeout:
// per-route upstream timeouts ("500ms", "5s", "2m", "1h30m"), replacing the
// --upstream-*-timeout defaults for this Ingress. connect: to open the connection to a
// pod (TLS included); response: from sending the request to the response headers;
// idle: without a byte once the response started.
//
// An invalid value is reported and that timeout keeps its default.
import type { Handler, UpstreamTimeouts } from '../proxy/context.ts';
import { parseAnnotationDuration } from '../util/units.ts';
import { annotation, reportInvalid } from './annotations.ts';
import type { Middleware, PolicyDefinition, PolicyParseInput } from './types.ts';

export const CONNECT_TIMEOUT = 'portico.dev/connect-timeout';
export const RESPONSE_TIMEOUT = 'portico.dev/response-timeout';
export const IDLE_TIMEOUT = 'portico.dev/idle-timeout';

export type TimeoutsConfig = Partial<Readonly<UpstreamTimeouts>>;

/** A day: beyond this a timeout is a typo, not a setting. */
const MAX_MS = 86_400_000;

function parseTimeout(input: PolicyParseInput, name: string): number | undefined {
  const text = annotation(input, name);
  if (text === undefined) return undefined;
  const ms = parseAnnotationDuration(text);
  if (ms === undefined || ms <= 0 || ms > MAX_MS) {
    reportInvalid(input, name, text, 'a duration above 0 and at most 24h, such as 500ms, 5s or 2m', 'the default timeout applies');
    return undefined;
  }
  return ms;
}

export const timeoutsPolicy: PolicyDefinition<TimeoutsConfig> = {
  name: 'timeouts',
  annotations: [CONNECT_TIMEOUT, RESPONSE_TIMEOUT, IDLE_TIMEOUT],
  order: 80,
  parse(input) {
    const config: { connect?: number; responseHeaders?: number; idle?: number } = {};
    const connect = parseTimeout(input, CONNECT_TIMEOUT);
    const responseHeaders = parseTimeout(input, RESPONSE_TIMEOUT);
    const idle = parseTimeout(input, IDLE_TIMEOUT);
    if (connect !== undefined) config.connect = connect;
    if (responseHeaders !== undefined) config.responseHeaders = responseHeaders;
    if (idle !== undefined) config.idle = idle;
    return Object.keys(config).length > 0 ? config : undefined;
  },
  create(config): Middleware {
    // The defaults are one frozen object per listener or compiler: merge once per such object.
    let base: UpstreamTimeouts | undefined;
    let merged: UpstreamTimeouts | undefined;
    return (next: Handler): Handler => (ctx) => {
      if (ctx.timeouts !== base || merged === undefined) {
        base = ctx.timeouts;
        merged = Object.freeze({
          connect: config.connect ?? base.connect,
          responseHeaders: config.responseHeaders ?? base.responseHeaders,
          idle: config.idle ?? base.idle,
        });
      }
      ctx.timeouts = merged;
      next(ctx);
    };
  },
};
