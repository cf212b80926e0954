// portico.dev/max-body-size: the largest request body accepted ("512k", "10m", "1g";
// binary multiples). The forwarder enforces ctx.maxBodyBytes: 413 from Content-Length
// before any byte is read or sent to the pod, and while streaming a chunked body.
// "0" means no limit (as nginx's client_max_body_size 0). Without the annotation the
// global --max-body-size applies (1m by default, as nginx's).
//
// An invalid value is reported and the global limit applies.
import type { Handler } from '../proxy/context.ts';
import { parseSize } from '../util/units.ts';
import { annotation, reportInvalid } from './annotations.ts';
import type { Middleware, PolicyDefinition } from './types.ts';

export const MAX_BODY_SIZE = 'portico.dev/max-body-size';

export interface MaxBodySizeConfig {
  readonly bytes: number;
}

export const maxBodySizePolicy: PolicyDefinition<MaxBodySizeConfig> = {
  name: 'max-body-size',
  annotations: [MAX_BODY_SIZE],
  order: 50,
  parse(input) {
    const text = annotation(input, MAX_BODY_SIZE);
    if (text === undefined) return undefined;
    const bytes = parseSize(text);
    if (bytes === undefined || !Number.isSafeInteger(bytes)) {
      reportInvalid(input, MAX_BODY_SIZE, text, 'a size such as 512k, 10m or 1g', 'the global --max-body-size applies');
      return undefined;
    }
    return { bytes };
  },
  create(config): Middleware {
    const bytes = config.bytes === 0 ? -1 : config.bytes;
    return (next: Handler): Handler => withBodyLimit(bytes, next);
  },
};

/** A route's handler: one closure over the limit and the next handler. */
function withBodyLimit(bytes: number, next: Handler): Handler {
  return (ctx) => {
    ctx.maxBodyBytes = bytes;
    next(ctx);
  };
}
