// The scale-to-zero annotations of a Service -> its SleepPolicy, or what is wrong with
// them. Pure: translation attaches valid policies to backends (the proxy holds requests
// for them), and the sleep manager reports the problems as Warning Events. A Service
// with a bad value gets no policy at all: it is never put to sleep by accident.
import type { SleepPolicy } from '../model/config.ts';
import type { Service } from '../model/k8s.ts';
import { parseBool, parseDuration } from '../util/units.ts';

export const SCALE_TO_ZERO = 'portico.dev/scale-to-zero';
export const SLEEP_AFTER = 'portico.dev/sleep-after';
export const SCALE_TARGET = 'portico.dev/scale-target';
export const WAKE_TIMEOUT = 'portico.dev/wake-timeout';
export const MAX_HELD_REQUESTS = 'portico.dev/max-held-requests';
/** On the workload: its replica count when portico put it to sleep, restored by a wake. */
export const REPLICAS_BEFORE_SLEEP = 'portico.dev/replicas-before-sleep';

export const DEFAULT_SLEEP_AFTER_MS = 15 * 60_000;
export const DEFAULT_WAKE_TIMEOUT_MS = 2 * 60_000;
export const DEFAULT_MAX_HELD = 1000;

export interface SleepPolicyResult {
  /** Present when scale-to-zero is on and every value is valid. */
  readonly policy?: SleepPolicy;
  /** One sentence per bad value, naming the annotation. */
  readonly problems: readonly string[];
}

const OFF: SleepPolicyResult = Object.freeze({ problems: [] });
/** Policies are shared by value: Services with the same annotations get the same object. */
const interned = new Map<string, SleepPolicy>();

export function sleepPolicyOf(service: Service): SleepPolicyResult {
  const annotations = service.metadata.annotations;
  const on = annotations?.[SCALE_TO_ZERO];
  if (on === undefined) return OFF;
  const problems: string[] = [];
  const enabled = parseBool(on);
  if (enabled === undefined) problems.push(`annotation ${SCALE_TO_ZERO}: ${JSON.stringify(on)} is not true or false`);
  if (enabled === false) return OFF;

  const duration = (name: string, fallback: number): number => {
    const text = annotations![name];
    if (text === undefined) return fallback;
    const ms = parseDuration(text);
    if (ms === undefined || ms <= 0) {
      problems.push(`annotation ${name}: ${JSON.stringify(text)} is not a positive duration such as "15m" or "90s"`);
      return fallback;
    }
    return ms;
  };
  const sleepAfterMs = duration(SLEEP_AFTER, DEFAULT_SLEEP_AFTER_MS);
  const wakeTimeoutMs = duration(WAKE_TIMEOUT, DEFAULT_WAKE_TIMEOUT_MS);

  let maxHeld = DEFAULT_MAX_HELD;
  const heldText = annotations![MAX_HELD_REQUESTS];
  if (heldText !== undefined) {
    const n = /^\d+$/.test(heldText.trim()) ? Number(heldText.trim()) : NaN;
    if (!Number.isSafeInteger(n) || n < 1) problems.push(`annotation ${MAX_HELD_REQUESTS}: ${JSON.stringify(heldText)} is not a whole number of at least 1`);
    else maxHeld = n;
  }

  let target: SleepPolicy['target'] = { kind: 'Deployment', name: service.metadata.name };
  const targetText = annotations![SCALE_TARGET];
  if (targetText !== undefined) {
    const m = /^(deployment|deployments|statefulset|statefulsets)\/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/i.exec(targetText.trim());
    if (m === null) {
      problems.push(`annotation ${SCALE_TARGET}: ${JSON.stringify(targetText)} is not deployment/<name> or statefulset/<name>`);
    } else {
      target = { kind: m[1]!.toLowerCase().startsWith('deployment') ? 'Deployment' : 'StatefulSet', name: m[2]! };
    }
  }
  if (problems.length > 0) return { problems };

  const key = `${sleepAfterMs}|${wakeTimeoutMs}|${maxHeld}|${target.kind}|${target.name}`;
  let policy = interned.get(key);
  if (policy === undefined) {
    policy = Object.freeze({ sleepAfterMs, wakeTimeoutMs, maxHeld, target: Object.freeze(target) });
    if (interned.size < 100_000) interned.set(key, policy);
  }
  return { policy, problems };
}

/** "deployment/web", as users write it in portico.dev/scale-target. */
export function describeTarget(target: SleepPolicy['target']): string {
  return `${target.kind.toLowerCase()}/${target.name}`;
}
