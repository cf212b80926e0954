// --challenge-secret ns/name: the key that signs challenge nonces and clearances, read
// once at start from the Secret's `key` (at least 16 bytes; `openssl rand -base64 32`),
// so every replica signs with the same key and a clearance from one is valid on all.
// Standalone mode reads the Secret from the manifest directory, cluster mode from the
// API (one GET). Anything wrong (no such Secret, no `key`, too short) is logged as an
// error and a key is generated instead: the challenge keeps working on this replica.
import type { Logger } from 'pino';
import { parseAllDocuments } from 'yaml';
import type { KubeClient } from '../kube/client.ts';
import { isManifestFile } from '../sources/manifests.ts';
import { MIN_KEY_BYTES } from './tokens.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { readdir, readFile } = process.getBuiltinModule('node:fs/promises');
const { join } = process.getBuiltinModule('node:path');
const { randomBytes } = process.getBuiltinModule('node:crypto');

export interface SecretLike {
  readonly data?: Readonly<Record<string, unknown>>;
  readonly stringData?: Readonly<Record<string, unknown>>;
}

/** "ns/name" or "name" (namespace "default"), or undefined when it is neither. */
export function parseSecretRef(text: string): { namespace: string; name: string } | undefined {
  const parts = text.trim().split('/');
  const valid = (s: string | undefined): s is string => s !== undefined && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(s);
  if (parts.length === 1 && valid(parts[0])) return { namespace: 'default', name: parts[0] };
  if (parts.length === 2 && valid(parts[0]) && valid(parts[1])) return { namespace: parts[0], name: parts[1] };
  return undefined;
}

/** The key bytes of a Secret, or why there are none. */
export function keyFromSecret(secret: SecretLike): Buffer | string {
  const plain = secret.stringData?.key;
  const encoded = secret.data?.key;
  let key: Buffer;
  if (typeof plain === 'string') key = Buffer.from(plain, 'utf8');
  else if (typeof encoded === 'string') key = Buffer.from(encoded, 'base64');
  else return 'it has no "key" entry';
  if (key.length < MIN_KEY_BYTES) return `its "key" has ${key.length} bytes; at least ${MIN_KEY_BYTES} are needed (openssl rand -base64 32)`;
  return key;
}

/** The Secret `namespace/name` among the manifests under `dir` (recursively), or undefined. */
export async function findSecretInManifests(dir: string, namespace: string, name: string): Promise<SecretLike | undefined> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile() || entry.name.startsWith('.') || !isManifestFile(entry.name)) continue;
    const path = join(entry.parentPath, entry.name);
    const text = await readFile(path, 'utf8').catch(() => '');
    if (!text.includes('Secret')) continue;
    for (const doc of parseAllDocuments(text)) {
      if (!('toJS' in doc)) continue;
      const o = doc.toJS() as { kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } } & SecretLike | null;
      if (o?.kind === 'Secret' && o.metadata?.name === name && (o.metadata.namespace ?? 'default') === namespace) return o;
    }
  }
  return undefined;
}

export interface ChallengeKeySource {
  readonly ref: string | undefined;
  readonly manifests?: string;
  readonly kube?: KubeClient;
  readonly log: Logger;
}

/** The key to sign challenges with: from the Secret when one is named and usable, else generated. */
export async function loadChallengeKey(source: ChallengeKeySource): Promise<Buffer> {
  if (source.ref === undefined || source.ref === '') return randomBytes(32);
  const fallback = (why: string): Buffer => {
    source.log.error({ flag: '--challenge-secret', secret: source.ref }, `--challenge-secret ${source.ref}: ${why}; under-attack challenges are signed with a key generated at start, so clearances are valid on this replica only`);
    return randomBytes(32);
  };
  const ref = parseSecretRef(source.ref);
  if (ref === undefined) return fallback('not a Secret reference (expected namespace/name)');
  let secret: SecretLike | undefined;
  try {
    if (source.manifests !== undefined) secret = await findSecretInManifests(source.manifests, ref.namespace, ref.name);
    else if (source.kube !== undefined) secret = await source.kube.request<SecretLike>('GET', `/api/v1/namespaces/${ref.namespace}/secrets/${ref.name}`);
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (status !== 404) return fallback(`cannot read the Secret: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (secret === undefined) return fallback('no such Secret');
  const key = keyFromSecret(secret);
  if (typeof key === 'string') return fallback(key);
  source.log.info({ secret: source.ref }, `under-attack challenges are signed with the key of Secret ${ref.namespace}/${ref.name}`);
  return key;
}
