// Which Ingresses are portico's: by spec.ingressClassName, else by the legacy
// kubernetes.io/ingress.class annotation, else by the default IngressClass.
// Ingresses of other controllers get no Events or status (they are not our business),
// but why each one is not served is told (ignoredReason), for /routes and debug logs:
// a typo in a class name must not leave an Ingress silently unserved. An Ingress whose
// spec.ingressClassName names no IngressClass at all is no controller's, and may be meant
// for portico: it is marked (missingClass) and the controller logs it as a warning, still
// without Events or status (portico does not own it).
import type { Problem, Snapshot, TranslateOptions } from '../model/config.ts';
import { DEFAULT_CLASS_ANNOTATION, LEGACY_CLASS_ANNOTATION, type Ingress, type IngressClass } from '../model/k8s.ts';

export interface ClassSelection {
  /** true when portico serves this Ingress. */
  serves(ingress: Ingress): boolean;
  /** Why portico does not serve an Ingress it does not serve. */
  ignoredReason(ingress: Ingress): string;
  /** The class spec.ingressClassName names when no IngressClass of that name exists, else undefined. */
  missingClass(ingress: Ingress): string | undefined;
  /** Equal while the classes decide the same way (reasons may be reused). */
  readonly signature: string;
  /** Problems with the IngressClasses themselves (several defaults...). */
  readonly problems: readonly Problem[];
  /** The names of portico's classes. */
  readonly ours: ReadonlySet<string>;
  /** The names of every IngressClass. */
  readonly names: ReadonlySet<string>;
  /** Whether an Ingress naming no class is portico's. */
  readonly hasOurDefault: boolean;
}

function isDefaultClass(cls: IngressClass): boolean {
  return cls.metadata.annotations?.[DEFAULT_CLASS_ANNOTATION] === 'true';
}

export function selectClasses(snapshot: Snapshot, options: TranslateOptions): ClassSelection {
  const ours = new Set<string>();
  const defaults: IngressClass[] = [];
  for (const cls of snapshot.ingressClasses.values()) {
    if (cls.spec?.controller === options.controllerName) ours.add(cls.metadata.name);
    if (isDefaultClass(cls)) defaults.push(cls);
  }
  defaults.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
  const ourDefaults = defaults.filter((cls) => ours.has(cls.metadata.name));
  const hasOurDefault = ourDefaults.length > 0;

  const problems: Problem[] = [];
  if (defaults.length > 1 && hasOurDefault) {
    const names = defaults.map((cls) => cls.metadata.name).join(', ');
    for (const cls of ourDefaults) {
      problems.push({
        object: { kind: 'IngressClass', name: cls.metadata.name },
        severity: 'warning',
        reason: 'MultipleDefaultClasses',
        message: `metadata.annotations[${DEFAULT_CLASS_ANNOTATION}]: several IngressClasses are marked default (${names}); portico still serves Ingresses without a class`,
      });
    }
  }

  const signature = `${[...ours].sort().join(',')}|${hasOurDefault}|${[...snapshot.ingressClasses.keys()].sort().join(',')}`;
  return {
    problems,
    signature,
    ours,
    names: new Set(snapshot.ingressClasses.keys()),
    hasOurDefault,
    serves(ingress: Ingress): boolean {
      const className = ingress.spec?.ingressClassName;
      if (className !== undefined && className !== '') return ours.has(className);
      const legacy = ingress.metadata.annotations?.[LEGACY_CLASS_ANNOTATION];
      // ingress-nginx honours the legacy annotation for its own class name even without an IngressClass object.
      if (legacy !== undefined) return ours.has(legacy) || legacy === options.ingressClass;
      return hasOurDefault;
    },
    missingClass(ingress: Ingress): string | undefined {
      const className = ingress.spec?.ingressClassName;
      return className !== undefined && className !== '' && !snapshot.ingressClasses.has(className) ? className : undefined;
    },
    ignoredReason(ingress: Ingress): string {
      const className = ingress.spec?.ingressClassName;
      const served = [...ours].sort().join(', ') || `none: no IngressClass has spec.controller ${options.controllerName}`;
      if (className !== undefined && className !== '') {
        return snapshot.ingressClasses.has(className)
          ? `spec.ingressClassName ${JSON.stringify(className)} belongs to another controller (portico serves: ${served})`
          : `spec.ingressClassName ${JSON.stringify(className)} names no IngressClass (portico serves: ${served})`;
      }
      const legacy = ingress.metadata.annotations?.[LEGACY_CLASS_ANNOTATION];
      if (legacy !== undefined) return `annotation ${LEGACY_CLASS_ANNOTATION}: ${JSON.stringify(legacy)} is not portico's class (portico serves: ${served})`;
      return `no spec.ingressClassName, and no IngressClass of portico is marked ${DEFAULT_CLASS_ANNOTATION}: "true"`;
    },
  };
}
