// Every Matcher implementation under test, in one place: a new matcher adds one line here.
import type { MatcherFactory } from '../../../src/routing/matcher.ts';
import { createLinearMatcher } from '../../../src/routing/linear/index.ts';
import { createPrefixMapMatcher } from '../../../src/routing/prefix-map/index.ts';

export interface Implementation {
  readonly name: string;
  readonly createMatcher: MatcherFactory;
}

/** The reference the others are compared with in the randomized test. */
export const REFERENCE: Implementation = { name: 'linear', createMatcher: createLinearMatcher };

export const IMPLEMENTATIONS: readonly Implementation[] = [
  { name: 'prefix-map', createMatcher: createPrefixMapMatcher },
  REFERENCE,
];
