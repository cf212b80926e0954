// ingress-nginx's access controls that portico does not apply (an IP allow- or deny-list
// not translated to portico.dev/ip-allow or ip-deny, external or basic authentication,
// client certificates): an Ingress moved with one of them left on would otherwise be
// served to everyone, with only a warning to say so. Its routes answer 403 to every
// client instead, with one error naming the annotations, until they are translated or
// removed: as portico's own IP lists, an access control that cannot be applied fails closed.
import { sendError } from '../proxy/errors.ts';
import type { Handler, RequestContext } from '../proxy/context.ts';
import { untranslatedAccessControls } from './nginx-annotations.ts';
import type { Middleware, PolicyDefinition } from './types.ts';

export interface NginxAccessConfig {
  /** The annotations that close the route (full names). */
  readonly annotations: readonly string[];
}

function refuse(ctx: RequestContext): void {
  sendError(ctx.res, 403, 'access to this route is restricted by an ingress-nginx annotation that portico does not apply');
}

const refuseEveryone: Middleware = (): Handler => refuse;

export const nginxAccessPolicy: PolicyDefinition<NginxAccessConfig> = {
  name: 'ingress-nginx-access',
  // It reads nginx.ingress.kubernetes.io/* annotations only.
  annotations: [],
  readsForeignAnnotations: true,
  // Before every other policy: nothing else answers for such a route.
  order: 5,
  parse(input) {
    const names = untranslatedAccessControls(input.annotations);
    if (names.length === 0) return undefined;
    const what = names.length === 1 ? `annotation ${names[0]} restricts` : `annotations ${names.join(', ')} restrict`;
    input.report({
      severity: 'error',
      reason: 'IngressNginxAnnotation',
      message:
        `${what} who may use this Ingress, and portico does not apply ${names.length === 1 ? 'it' : 'them'}: every client gets 403 until ` +
        `${names.length === 1 ? 'it is' : 'they are'} translated (the IP lists to portico.dev/ip-allow and ip-deny) or removed (an access control left behind fails closed)`,
    });
    return { annotations: names };
  },
  create: () => refuseEveryone,
};
