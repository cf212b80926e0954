// Reading portico.dev/* annotations and reporting bad values the same way in every policy.
import type { PolicyParseInput } from './types.ts';

export const INVALID_ANNOTATION = 'InvalidAnnotation';

/** The annotation's value, trimmed; undefined when the Ingress does not set it. */
export function annotation(input: PolicyParseInput, name: string): string | undefined {
  const value = input.annotations[name];
  return value === undefined ? undefined : value.trim();
}

/**
 * Reports an invalid value: "annotation portico.dev/x: invalid value "y": expected ...; <what happens>".
 * `severity` error when the policy is off or fails closed because of it, warning when only part of it is ignored.
 */
export function reportInvalid(
  input: PolicyParseInput,
  name: string,
  value: string,
  expected: string,
  consequence: string,
  severity: 'warning' | 'error' = 'error',
): void {
  input.report({ severity, reason: INVALID_ANNOTATION, message: `annotation ${name}: invalid value ${JSON.stringify(value)}: expected ${expected}; ${consequence}` });
}

/**
 * Reports the invalid entries of a list annotation as ONE problem: "annotation x: invalid
 * entry "y": expected ...; <what happens>" (or "invalid entries "y", "z""). One mistake in
 * a list is one line, whatever the list's policy then does about it.
 */
export function reportInvalidEntries(
  input: PolicyParseInput,
  name: string,
  entries: readonly string[],
  expected: string,
  consequence: string,
  severity: 'warning' | 'error' = 'error',
): void {
  const quoted = entries.map((e) => JSON.stringify(e)).join(', ');
  const what = entries.length === 1 ? `invalid entry ${quoted}` : `invalid entries ${quoted}`;
  input.report({ severity, reason: INVALID_ANNOTATION, message: `annotation ${name}: ${what}: expected ${expected}; ${consequence}` });
}

/** Reports a valid annotation that has no effect (a burst without a rate...). */
export function reportIgnored(input: PolicyParseInput, name: string, why: string): void {
  input.report({ severity: 'warning', reason: INVALID_ANNOTATION, message: `annotation ${name}: ${why}` });
}
