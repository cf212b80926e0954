// One PolicyConfig object per distinct policy value: clusters give thousands of Ingresses
// the same body size, rate limit or IP allow-list, and each kept its own copy (about
// 90 bytes for a rate limit, 250 for an allow-list of two ranges: 4 MB at 10,000
// Ingresses with three such policies). Policy configs are immutable, and what a policy
// keeps per route (rate-limit buckets) is keyed by the route, never by its config, so
// sharing the object changes nothing a request sees.
import type { PolicyConfig } from '../model/config.ts';

/**
 * Shared values by key; cleared when full, so that values unique to each Ingress (a CORS
 * origin) cannot grow it. Not util/shared-by-value.ts: its WeakRef and key per distinct
 * value would cost about as much as the copies saved when values are unique.
 */
const shared = new Map<string, PolicyConfig>();
const MAX_SHARED = 1000;
/**
 * Values whose key would be longer are not shared: the key is kept with the value, and a
 * config may hold a whole CA bundle (upstream-ca-secret), 1,000 of which would be megabytes.
 */
const MAX_KEY_LENGTH = 512;

/** `{ name, config }`, or an equal one made before. Only plain data is shared: anything else (a RegExp, a Map, an undefined field) is kept as given. */
export function sharedPolicyConfig(name: string, config: unknown): PolicyConfig {
  const key = plainKey(config);
  if (key === undefined || key.length > MAX_KEY_LENGTH) return { name, config };
  const id = `${name}\0${key}`;
  let policy = shared.get(id);
  if (policy === undefined) {
    if (shared.size >= MAX_SHARED) shared.clear();
    policy = { name, config };
    shared.set(id, policy);
  }
  return policy;
}

/**
 * A text that is the same for two values only when they are equal plain data (objects
 * of Object's prototype with the same keys in the same order, arrays, strings, finite
 * numbers, booleans, null); undefined for anything else. JSON.stringify is exact for
 * such data, and native: checking first and then stringifying kept the first translation
 * at 10,000 Ingresses with policies as fast as before, where building the text in
 * JavaScript added about 0.2 s.
 */
export function plainKey(value: unknown): string | undefined {
  return isPlain(value) ? JSON.stringify(value) : undefined;
}

function isPlain(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
      // Too long to share anyway (MAX_KEY_LENGTH): not worth quoting.
      return value.length <= MAX_KEY_LENGTH;
    case 'boolean':
      return true;
    case 'number':
      // -0 and 0 print alike; NaN and the infinities do not survive JSON.
      return Number.isFinite(value) && !Object.is(value, -0);
    case 'object': {
      if (value === null) return true;
      if (Array.isArray(value)) {
        // A hole reads as undefined: not plain.
        for (let i = 0; i < value.length; i++) if (!isPlain(value[i])) return false;
        return true;
      }
      if (Object.getPrototypeOf(value) !== Object.prototype || Object.getOwnPropertySymbols(value).length > 0) return false;
      for (const field in value) if (Object.hasOwn(value, field) && !isPlain((value as Record<string, unknown>)[field])) return false;
      return true;
    }
    default:
      return false;
  }
}
