// src/cache/invalidation.ts
export type InvalidationRequest =
  | { readonly type: 'Purge'; readonly host: string; readonly paths: readonly string[] }
  | { readonly type: 'Ban'; readonly host: string; readonly pattern: string };
export interface InvalidationResult { readonly ok: boolean; readonly message: string; readonly removed?: number }
/** Validates (bad regex, empty host → ok:false with a clear message) and applies to every worker's cache. */
export type Invalidate = (request: InvalidationRequest) => Promise<InvalidationResult>;
