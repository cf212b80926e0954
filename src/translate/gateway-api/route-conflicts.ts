// HTTPRoute and GRPCRoute on one listener with intersecting hostnames: the GRPCRoute
// spec says exactly one of the two is accepted there, the older (then the first by
// "namespace/name"), and the other gets Accepted: False. Routes are taken oldest first
// and each is refused on a listener where an accepted route of the other kind already
// shares a hostname with it. Work is only done on listeners that have both kinds.
import type { Problem } from '../../model/config.ts';
import type { RouteParentStatus } from '../../model/k8s.ts';
import { compareStrings, condition, createdAt } from './conditions.ts';
import { intersectHostnames } from './hostnames.ts';
import type { RouteFragment } from './index.ts';
import type { Attachment } from './route-parents.ts';

/** Per refused route: its attachments refused, with the route that holds the hostname. */
export type Rejections = Map<RouteFragment, Map<Attachment, string>>;

function overlaps(a: readonly string[], b: readonly string[]): boolean {
  // "" (no hostname) covers every name; intersectHostnames handles wildcards either way.
  return a.some((x) => intersectHostnames(x === '' ? undefined : x, b).length > 0);
}

const nameOf = (f: RouteFragment) => `${f.route.metadata.namespace ?? 'default'}/${f.route.metadata.name}`;

export function crossKindConflicts(fragments: readonly RouteFragment[]): Rejections {
  const rejected: Rejections = new Map();
  /** Listener -> the kinds attached to it. */
  const kinds = new Map<string, Set<string>>();
  for (const f of fragments) {
    for (const a of f.attachments) {
      let set = kinds.get(a.listener);
      if (set === undefined) kinds.set(a.listener, (set = new Set()));
      set.add(f.route.kind);
    }
  }
  const shared = new Set([...kinds].filter(([, set]) => set.size > 1).map(([listener]) => listener));
  if (shared.size === 0) return rejected;

  const candidates = fragments
    .filter((f) => f.attachments.some((a) => shared.has(a.listener)))
    .sort((a, b) => compareStrings(createdAt(a.route.metadata), createdAt(b.route.metadata)) || compareStrings(nameOf(a), nameOf(b)));
  /** Listener -> accepted attachments so far, with their route. */
  const accepted = new Map<string, { fragment: RouteFragment; attachment: Attachment }[]>();
  for (const f of candidates) {
    for (const a of f.attachments) {
      if (!shared.has(a.listener)) continue;
      const here = accepted.get(a.listener) ?? [];
      const holder = here.find((h) => h.fragment.route.kind !== f.route.kind && overlaps(h.attachment.hostnames, a.hostnames));
      if (holder !== undefined) {
        let lost = rejected.get(f);
        if (lost === undefined) rejected.set(f, (lost = new Map()));
        lost.set(a, `${holder.fragment.route.kind} ${nameOf(holder.fragment)}`);
      } else {
        here.push({ fragment: f, attachment: a });
        accepted.set(a.listener, here);
      }
    }
  }
  return rejected;
}

/** The fragment without the refused attachments: their routes dropped, a parent left with none not Accepted. */
export function withoutRejected(fragment: RouteFragment, lost: ReadonlyMap<Attachment, string>): RouteFragment {
  const attachments = fragment.attachments.filter((a) => !lost.has(a));
  const dropped = [...lost.keys()];
  const routes = fragment.routes.filter((r) => !dropped.some((a) => a.port === r.port && a.listenerHost === r.listenerHost));
  const generation = fragment.route.metadata.generation;
  const problems: Problem[] = [...fragment.problems];
  const parents: RouteParentStatus[] = fragment.parents.map((p, i) => {
    const mine = [...lost].filter(([a]) => a.parent === i);
    if (mine.length === 0) return p;
    const where = mine.map(([a, holder]) => `listener ${a.section} (held by the older ${holder})`).join(', ');
    const message = `hostnames shared with a route of the other kind on ${where}; an HTTPRoute and a GRPCRoute cannot share a hostname on a listener`;
    problems.push({ object: { kind: fragment.route.kind, namespace: fragment.route.metadata.namespace ?? 'default', name: fragment.route.metadata.name }, severity: 'error', reason: 'HostnameConflict', message });
    if (attachments.some((a) => a.parent === i)) return p; // still attached to another listener of this parent
    return { ...p, conditions: p.conditions.map((c) => (c.type === 'Accepted' ? condition('Accepted', false, 'HostnameConflict', message, generation) : c)) };
  });
  return { ...fragment, routes, parents, problems, attachments };
}
