// Ingresses by the IngressClass they name, so that an IngressClass change looks again
// only at the Ingresses it can change: those naming a class whose standing moved (became
// or stopped being portico's, appeared or went away) by spec.ingressClassName or the
// legacy annotation, and, when portico's default class came or went, those naming none.
import { LEGACY_CLASS_ANNOTATION, type Ingress } from '../model/k8s.ts';
import type { ClassSelection } from './ingress-class.ts';
import { KeySets } from '../util/key-sets.ts';

/** The group of the Ingresses that name no class (the default class decides for them). */
const NO_CLASS = '';

/** The class an Ingress names (either way of naming it), undefined for none. */
function classNameOf(ingress: Ingress): string | undefined {
  const className = ingress.spec?.ingressClassName;
  if (className !== undefined && className !== '') return className;
  return ingress.metadata.annotations?.[LEGACY_CLASS_ANNOTATION];
}

export class IngressClassIndex {
  private readonly byClass = new KeySets();
  /** Ingress key -> its class key, to move it when it names another class. */
  private readonly classOf = new Map<string, string>();
  /** "c:<name>" made once per class name, not once per Ingress (10,000 Ingresses name the same few classes). */
  private readonly keys = new Map<string, string>();

  private classKeyOf(ingress: Ingress): string {
    const name = classNameOf(ingress);
    if (name === undefined) return NO_CLASS;
    let key = this.keys.get(name);
    if (key === undefined) this.keys.set(name, (key = `c:${name}`));
    return key;
  }

  /** Record the class `ingress` names (undefined: the Ingress is gone). */
  set(key: string, ingress: Ingress | undefined): void {
    const before = this.classOf.get(key);
    const now = ingress === undefined ? undefined : this.classKeyOf(ingress);
    if (before === now) return;
    if (before !== undefined) this.byClass.delete(before, key);
    if (now === undefined) this.classOf.delete(key);
    else {
      this.classOf.set(key, now);
      this.byClass.add(now, key);
    }
  }

  /**
   * The Ingresses whose standing may differ between two selections of classes: whether
   * they are served, and why not (the reason names the class when it does not exist).
   */
  affected(before: ClassSelection, after: ClassSelection): Set<string> {
    const out = new Set<string>();
    const names = new Set([...before.names, ...after.names, ...before.ours, ...after.ours]);
    for (const name of names) {
      if (before.ours.has(name) === after.ours.has(name) && before.names.has(name) === after.names.has(name)) continue;
      for (const key of this.byClass.members(`c:${name}`)) out.add(key);
    }
    if (before.hasOurDefault !== after.hasOurDefault) for (const key of this.byClass.members(NO_CLASS)) out.add(key);
    return out;
  }
}
