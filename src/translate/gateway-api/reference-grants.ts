// ReferenceGrant: the only way a Gateway API reference crosses a namespace. A grant
// lives in the namespace of what is referred to (the Service, the Secret) and names
// who may refer to it (group, kind, namespace) and what (group, kind, optional name).
import type { Snapshot } from '../../model/config.ts';
import type { ReferenceGrant } from '../../model/k8s.ts';

export interface ReferenceFrom {
  readonly group: string;
  readonly kind: string;
  readonly namespace: string;
}

export interface ReferenceTo {
  /** "" for the core group (Service, Secret). */
  readonly group: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

export class ReferenceGrants {
  /** By the namespace they live in (the target's). */
  private readonly byNamespace = new Map<string, ReferenceGrant[]>();

  constructor(snapshot: Snapshot) {
    for (const grant of snapshot.referenceGrants.values()) {
      const ns = grant.metadata.namespace ?? 'default';
      let list = this.byNamespace.get(ns);
      if (list === undefined) this.byNamespace.set(ns, (list = []));
      list.push(grant);
    }
  }

  /** Whether `from` may refer to `to`: same namespace, or a grant in the target's namespace says so. */
  permits(from: ReferenceFrom, to: ReferenceTo): boolean {
    if (from.namespace === to.namespace) return true;
    for (const grant of this.byNamespace.get(to.namespace) ?? []) {
      const fromOk = (grant.spec?.from ?? []).some((f) => f.group === from.group && f.kind === from.kind && f.namespace === from.namespace);
      if (!fromOk) continue;
      const toOk = (grant.spec?.to ?? []).some((t) => (t.group ?? '') === to.group && t.kind === to.kind && (t.name === undefined || t.name === '' || t.name === to.name));
      if (toOk) return true;
    }
    return false;
  }
}
