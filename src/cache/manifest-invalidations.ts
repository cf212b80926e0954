// Standalone mode: CacheInvalidation objects in the manifest directory are applied to
// the cache once when they appear, and again when their spec changes; the result is
// logged (there is no API server to write status to). Re-reading a file that did not
// change, or a rescan, applies nothing; removing the object and adding it back applies
// it again.
import type { Logger } from 'pino';
import type { FileInvalidation } from '../sources/standalone.ts';
import type { Invalidate } from './invalidation.ts';
import { describeInvalidation, requestOf, ttlOf } from './invalidation-resource.ts';

export class ManifestInvalidations {
  private readonly invalidate: Invalidate;
  private readonly log: Logger;
  /** file -> "ns/name" -> the spec applied (JSON). */
  private readonly applied = new Map<string, Map<string, string>>();
  private chain: Promise<void> = Promise.resolve();

  constructor(invalidate: Invalidate, log: Logger) {
    this.invalidate = invalidate;
    this.log = log;
  }

  /** The objects a file holds now ([]: the file is gone). Applies the new and changed ones, in order. */
  fileRead(file: string, objects: readonly FileInvalidation[]): void {
    const before = this.applied.get(file) ?? new Map<string, string>();
    const now = new Map<string, string>();
    for (const { object, line } of objects) {
      const key = `${object.metadata.namespace ?? 'default'}/${object.metadata.name}`;
      const spec = JSON.stringify(object.spec ?? null);
      now.set(key, spec);
      if (before.get(key) === spec) continue;
      const where = `${file}${line === undefined ? '' : `:${line}`}`;
      this.chain = this.chain.then(() => this.apply(describeInvalidation(object), where, object));
    }
    if (now.size > 0) this.applied.set(file, now);
    else this.applied.delete(file);
  }

  private async apply(what: string, where: string, object: FileInvalidation['object']): Promise<void> {
    const read = requestOf(object);
    const ttl = ttlOf(object);
    const error = 'error' in read ? read.error : ttl.error;
    if (error !== undefined || !('request' in read)) {
      this.log.warn({ object: what, file: where }, `${where}: ${what} not applied: ${error}`);
      return;
    }
    try {
      const result = await this.invalidate(read.request);
      if (result.ok) this.log.info({ object: what, file: where, removed: result.removed }, `${where}: ${what} applied: ${result.message}`);
      else this.log.warn({ object: what, file: where }, `${where}: ${what} not applied: ${result.message}`);
    } catch (err) {
      this.log.warn({ object: what, file: where }, `${where}: ${what} not applied: ${(err as Error).message}`);
    }
  }
}
