// Certificates served on the HTTPS listener, chosen per connection by SNI.
// update() swaps them live after each rebuild; an unchanged Secret reuses its
// SecureContext. Told which hosts changed (the config's delta), an update costs those
// hosts: a renewed Secret at 20,000 TLS hosts must not walk the 20,000. A context is
// built when a handshake first needs one, or at once for the few certificates a routine
// change brings, and only the most recently used are kept: each holds about 37 KB of
// OpenSSL memory and takes 0.4 ms to build, which at 10,000 certificates was 370 MB and
// 4 s per serving process.
import type { CertificateConfig, Problem, RoutingConfig } from '../model/config.ts';
import type { SecureContext, SecureVersion, TlsOptions } from 'node:tls';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { execFile } = process.getBuiltinModule('node:child_process');
const { createHash } = process.getBuiltinModule('node:crypto');
const { readFile } = process.getBuiltinModule('node:fs/promises');
const tls = process.getBuiltinModule('node:tls');
const { fileURLToPath } = process.getBuiltinModule('node:url');
const { promisify } = process.getBuiltinModule('node:util');

/** The protocol versions and cipher suites every certificate is served with (--tls-min-version, --tls-ciphers). */
export interface TlsPolicy {
  readonly minVersion: SecureVersion;
  /** OpenSSL cipher list; TLS 1.3 suites ("TLS_...") included. */
  readonly ciphers: string;
}

/** TLS 1.3's suites, as Node enables them. */
export const TLS13_CIPHERS = 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256';

/**
 * TLS 1.2: forward-secret AEAD suites only (Mozilla's "intermediate" list: no CBC, no
 * SHA-1 MACs, no RSA key exchange); TLS 1.3 as Node enables it.
 */
export const DEFAULT_TLS_CIPHERS =
  `${TLS13_CIPHERS}:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305`;

export const DEFAULT_TLS_POLICY: TlsPolicy = { minVersion: 'TLSv1.2', ciphers: DEFAULT_TLS_CIPHERS };

/**
 * A cipher list as given to --tls-ciphers, with TLS 1.3's suites added when it names
 * none (Node turns TLS 1.3 off for a list without them). Throws when OpenSSL knows
 * none of its ciphers.
 */
export function tlsCipherList(text: string): string {
  const list = text.split(':').some((c) => c.startsWith('TLS_')) ? text : `${TLS13_CIPHERS}:${text}`;
  tls.createSecureContext({ ciphers: list });
  return list;
}

export const DEFAULT_CERTIFICATE_CN = 'portico default certificate';

const execFileAsync = promisify(execFile);

/** What changed since an earlier map (see CertificateStore.update). */
export interface CertificateChanges {
  /** The map the changes are relative to: they are used only if it is the map of the store's last update. */
  readonly from: ReadonlyMap<string, CertificateConfig>;
  /** Every host whose certificate is not the very object it was in `from` (a host gone included); more is harmless. */
  readonly hosts: Iterable<string>;
}

/**
 * The changes of `config` installed after `previous`: the hosts its delta names
 * (RoutingConfig.delta.certificates), when the delta follows `previous`.
 */
export function certificateChangesSince(config: RoutingConfig, previous: RoutingConfig | undefined): CertificateChanges | undefined {
  const delta = config.delta;
  if (delta?.certificates === undefined || previous === undefined || previous.serial !== delta.base) return undefined;
  return { from: previous.certificates, hosts: delta.certificates };
}

/** One certificate and key (PEM), and what TLS made of them once a handshake needed them. */
interface Entry {
  readonly certificate: CertificateConfig;
  /** of cert+key (pemFingerprint): the key of byPem */
  readonly fingerprint: string;
  /** Built and among the most recently used; undefined: not built, or let go. */
  context: SecureContext | undefined;
  /** why createSecureContext refused the PEM, once it did (then it is not tried again) */
  error: string | undefined;
  /**
   * While it is byPem's entry of its fingerprint: how many hosts of the last map have a
   * certificate of that fingerprint (it leaves byPem at 0). Kept here rather than in a
   * map by fingerprint (0.4 MB at 10,000 certificates).
   */
  uses: number;
}

export interface CertificateStoreLimits {
  /** Contexts kept built; the least recently used past this are let go and built again when asked for. */
  readonly maxContexts?: number;
  /** An update that brings at most this many new certificates builds them at once (a problem is reported with the change); more are built at first use. */
  readonly eagerBuilds?: number;
}

/** Contexts kept when not told (--tls-contexts has the same default): the hosts of a busy edge handshaking within a few minutes; 37 MB. */
const DEFAULT_MAX_CONTEXTS = 1000;
/** A routine change (a renewal, a new Ingress) is built and checked with the change; a start-up or a mass change is not. */
const DEFAULT_EAGER_BUILDS = 16;

export class CertificateStore {
  private readonly defaultKey: string;
  private readonly defaultCert: string;
  private readonly defaultContext: SecureContext;
  /**
   * lowercase host or "*.suffix" -> its certificate, only while some host of the last map is
   * not written as its key (see unnormalized); otherwise a host's certificate is looked up in
   * that map itself and its entry in byCertificate: a map of every TLS host here as well
   * held 0.9 MB at 20,000 hosts.
   */
  private byHost: ReadonlyMap<string, Entry> | undefined = undefined;
  /** fingerprint of cert+key -> entry, reused across updates */
  private byPem = new Map<string, Entry>();
  /** The entries with a built context, least recently used first. */
  private readonly built = new Set<Entry>();
  private readonly maxContexts: number;
  private readonly eagerBuilds: number;
  /** Hears each certificate TLS refuses, once, when that is found (at an update or at first use). */
  onRejected: ((problem: Problem) => void) | undefined = undefined;
  /** Secret -> how many hosts of the last map have a certificate of it that TLS refused, and its problem */
  private invalid = new Map<string, { hosts: number; readonly problem: Problem }>();
  /** Hosts of the last map that are not written as their byHost key (case, trailing dot): two may share a key, so changes are not patched. */
  private unnormalized = 0;
  /**
   * The entry of each certificate object seen: a routing config keeps the objects of the
   * certificates it did not change, so an update hashes only the new ones.
   */
  private byCertificate = new WeakMap<CertificateConfig, Entry>();
  /** The map of the last update and its problems (see update). */
  private lastCertificates: ReadonlyMap<string, CertificateConfig> | undefined;
  private lastProblems: Problem[] = [];
  private readonly policy: TlsPolicy;
  /** Gateway API: "*." covers one or more labels, and host "" is the listener's own default. */
  private readonly gateway: boolean;

  /** Takes a PEM key and certificate (chain) served to clients whose SNI matches no host. */
  constructor(defaultKey: string, defaultCert: string, policy: TlsPolicy = DEFAULT_TLS_POLICY, gateway = false, limits: CertificateStoreLimits = {}) {
    this.defaultKey = defaultKey;
    this.defaultCert = defaultCert;
    this.policy = policy;
    this.gateway = gateway;
    this.maxContexts = Math.max(1, limits.maxContexts ?? DEFAULT_MAX_CONTEXTS);
    this.eagerBuilds = limits.eagerBuilds ?? DEFAULT_EAGER_BUILDS;
    this.defaultContext = tls.createSecureContext({ key: defaultKey, cert: defaultCert, ...policy });
    this.sniCallback = this.sniCallback.bind(this);
  }

  /**
   * Loads the default certificate from files, or, without paths, generates a
   * self-signed one (clients see it for unknown names, as with other ingress controllers).
   */
  static async create(
    defaultCertPath?: string,
    defaultKeyPath?: string,
    policy: TlsPolicy = DEFAULT_TLS_POLICY,
    /** A default certificate generated before (the primary's, so every worker serves the same one). */
    generated?: { readonly cert: string; readonly key: string },
    limits: CertificateStoreLimits = {},
  ): Promise<CertificateStore> {
    if (defaultCertPath === undefined && defaultKeyPath === undefined) {
      const { cert, key } = generated ?? (await generateSelfSigned());
      return new CertificateStore(key, cert, policy, false, limits);
    }
    if (defaultCertPath === undefined || defaultKeyPath === undefined) {
      throw new Error('the default certificate needs both a certificate file and a key file');
    }
    const cert = await readPem(defaultCertPath, 'default certificate');
    const key = await readPem(defaultKeyPath, 'default key');
    try {
      return new CertificateStore(key, cert, policy, false, limits);
    } catch (err) {
      throw new Error(`invalid default certificate ${defaultCertPath} with key ${defaultKeyPath}: ${errorMessage(err)}`, { cause: err });
    }
  }

  /**
   * Installs the certificates of a new routing config. Returns a problem per Secret
   * whose PEM TLS refused (when it was built: at once for the few new certificates of a
   * routine change, otherwise at first use, which onRejected hears); its hosts get the
   * default certificate, others are unaffected. With `changes` relative to the map of the
   * last update, only the hosts they name are looked at; without (a first build, a caller
   * that does not know), the whole map is.
   */
  update(certificates: ReadonlyMap<string, CertificateConfig>, changes?: CertificateChanges): Problem[] {
    // Every routing change installs a config, and one whose certificates did not change
    // has the same map: at 20,000 TLS hosts, hashing every PEM again took 80 ms a change.
    if (certificates === this.lastCertificates) return this.lastProblems;
    if (changes !== undefined && changes.from === this.lastCertificates && this.unnormalized === 0 && this.patch(certificates, changes.from, changes.hosts)) {
      return this.lastProblems;
    }
    return this.rebuild(certificates);
  }

  /** The entry of a certificate: known by its object, else by its PEM, else new (and then in `fresh`). */
  private entryOf(certificate: CertificateConfig, byPem: ReadonlyMap<string, Entry>, fresh?: Entry[]): Entry {
    let entry = this.byCertificate.get(certificate);
    if (entry === undefined) {
      const fingerprint = pemFingerprint(certificate);
      entry = byPem.get(fingerprint) ?? this.byPem.get(fingerprint);
      if (entry === undefined) {
        entry = { certificate, fingerprint, context: undefined, error: undefined, uses: 0 };
        fresh?.push(entry);
      }
      this.byCertificate.set(certificate, entry);
    }
    return entry;
  }

  /** Builds the new certificates of an update now when they are few (a routine change): its problems are then known with it. */
  private buildFew(fresh: readonly Entry[]): void {
    if (fresh.length <= this.eagerBuilds) for (const entry of fresh) this.build(entry);
  }

  private rebuild(certificates: ReadonlyMap<string, CertificateConfig>): Problem[] {
    const byPem = new Map<string, Entry>();
    const fresh: Entry[] = [];
    let unnormalized = 0;
    // The counts are of the new map alone: nothing reads them until it is installed.
    for (const [host, certificate] of certificates) {
      const entry = this.entryOf(certificate, byPem, fresh);
      countUse(byPem, entry);
      if (normalizeHost(host) !== host) unnormalized++;
    }
    let byHost: Map<string, Entry> | undefined;
    if (unnormalized > 0) {
      byHost = new Map();
      for (const [host, certificate] of certificates) byHost.set(normalizeHost(host), this.byCertificate.get(certificate)!);
    }
    // Swap whole maps: a handshake in progress sees either the old or the new set.
    this.byHost = byHost;
    this.byPem = byPem;
    this.unnormalized = unnormalized;
    this.lastCertificates = certificates;
    // Contexts of certificates no longer served go now, not when they age out.
    for (const entry of this.built) if (byPem.get(entry.fingerprint) !== entry) this.release(entry);
    this.buildFew(fresh);
    this.recountInvalid();
    return this.lastProblems;
  }

  /** invalid and lastProblems from the whole last map (a rebuild, or a refusal found at a handshake: rare). */
  private recountInvalid(): void {
    const invalid = new Map<string, { hosts: number; readonly problem: Problem }>();
    for (const certificate of this.lastCertificates?.values() ?? []) {
      const entry = this.byCertificate.get(certificate);
      if (entry?.error !== undefined) countInvalid(invalid, certificate.secret, entry, 1);
    }
    this.invalid = invalid;
    this.lastProblems = problemsOf(invalid);
  }

  /**
   * Applies the certificates of `hosts` (changed since `from`, the last map) alone. False,
   * having changed nothing, when a host is not written as its key (see unnormalized).
   */
  private patch(certificates: ReadonlyMap<string, CertificateConfig>, from: ReadonlyMap<string, CertificateConfig>, hosts: Iterable<string>): boolean {
    const changed: [string, CertificateConfig | undefined, CertificateConfig | undefined][] = [];
    for (const host of hosts) {
      if (normalizeHost(host) !== host) return false;
      const before = from.get(host);
      const now = certificates.get(host);
      if (before !== now) changed.push([host, before, now]);
    }
    const added: [CertificateConfig, Entry][] = [];
    const fresh: Entry[] = [];
    // The new certificates first: one with the PEM of a certificate it replaces reuses its entry.
    for (const [, , now] of changed) {
      if (now === undefined) continue;
      const entry = this.entryOf(now, this.byPem, fresh);
      countUse(this.byPem, entry);
      added.push([now, entry]);
    }
    // Built now if few, so a refused one is counted with this change.
    this.buildFew(fresh);
    let problemsChanged = false;
    for (const [now, entry] of added) {
      if (entry.error !== undefined) problemsChanged = countInvalid(this.invalid, now.secret, entry, 1) || problemsChanged;
    }
    for (const [, before] of changed) {
      if (before === undefined) continue;
      const entry = this.entryOf(before, this.byPem);
      const counted = this.byPem.get(entry.fingerprint);
      const left = (counted?.uses ?? 1) - 1;
      if (left > 0) counted!.uses = left;
      else {
        this.byPem.delete(entry.fingerprint);
        if (entry.context !== undefined) this.release(entry);
      }
      if (entry.error !== undefined) problemsChanged = countInvalid(this.invalid, before.secret, entry, -1) || problemsChanged;
    }
    // One swap: a handshake in progress sees either the old or the new set (the hosts are
    // all written as their keys here, so `certificates` is what contextFor reads).
    this.lastCertificates = certificates;
    if (problemsChanged) this.lastProblems = problemsOf(this.invalid);
    return true;
  }

  /** Picks the context for a handshake: exact host, then "*.parent", then the default. */
  sniCallback(servername: string, callback: (err: Error | null, context?: SecureContext) => void): void {
    callback(null, this.contextFor(servername));
  }

  /** The context a handshake for servername gets (exported for tests and diagnostics). */
  contextFor(servername: string): SecureContext {
    const host = normalizeHost(servername);
    // A certificate TLS refuses is passed over, as if its host had none.
    const exact = this.entryFor(host);
    let context = exact !== undefined ? this.contextOf(exact) : undefined;
    if (context !== undefined) return context;
    for (let dot = host.indexOf('.'); dot > 0 && dot < host.length - 1; dot = host.indexOf('.', dot + 1)) {
      const wildcard = this.entryFor(`*${host.slice(dot)}`);
      if (wildcard !== undefined && (context = this.contextOf(wildcard)) !== undefined) return context;
      if (!this.gateway) break;
    }
    const fallback = this.gateway ? this.entryFor('') : undefined;
    return (fallback !== undefined ? this.contextOf(fallback) : undefined) ?? this.defaultContext;
  }

  /** The entry of a host written as its key (lowercase, no trailing dot). */
  private entryFor(host: string): Entry | undefined {
    if (this.byHost !== undefined) return this.byHost.get(host);
    const certificate = this.lastCertificates?.get(host);
    return certificate === undefined ? undefined : this.byCertificate.get(certificate);
  }

  /** The entry's context, built now if it is not; undefined when TLS refuses it. */
  private contextOf(entry: Entry): SecureContext | undefined {
    if (entry.context !== undefined) {
      // Most recently used last.
      this.built.delete(entry);
      this.built.add(entry);
      return entry.context;
    }
    if (entry.error !== undefined) return undefined;
    const context = this.build(entry);
    if (context === undefined) {
      // The next update reports it too, as one that found it would have.
      this.recountInvalid();
      this.onRejected?.(invalidCertificate(entry.certificate.secret, entry.error!));
    }
    return context;
  }

  private build(entry: Entry): SecureContext | undefined {
    try {
      entry.context = tls.createSecureContext({ key: entry.certificate.key, cert: entry.certificate.cert, ...this.policy });
    } catch (err) {
      entry.error = errorMessage(err);
      return undefined;
    }
    this.built.add(entry);
    if (this.built.size > this.maxContexts) this.release(this.built.values().next().value!);
    return entry.context;
  }

  private release(entry: Entry): void {
    entry.context = undefined;
    this.built.delete(entry);
  }

  /** Contexts built and kept (for tests and diagnostics). */
  get builtContexts(): number {
    return this.built.size;
  }

  /** The default certificate and key (PEM). */
  get defaultPems(): { readonly cert: string; readonly key: string } {
    return { cert: this.defaultCert, key: this.defaultKey };
  }

  /** An empty store for one Gateway HTTPS port, with the same default certificate and TLS policy. */
  forGatewayListener(): CertificateStore {
    const store = new CertificateStore(this.defaultKey, this.defaultCert, this.policy, true, { maxContexts: this.maxContexts, eagerBuilds: this.eagerBuilds });
    store.onRejected = this.onRejected;
    return store;
  }

  /** Hosts with a certificate not known to be refused (for diagnostics). */
  get hosts(): number {
    let n = 0;
    if (this.byHost !== undefined) {
      for (const entry of this.byHost.values()) if (entry.error === undefined) n++;
    } else {
      // Without a walk of the map (a patched update must not cost the whole map): its hosts less those refused.
      n = this.lastCertificates?.size ?? 0;
      for (const refused of this.invalid.values()) n -= refused.hosts;
    }
    return n;
  }

  /** Options for https.createServer (or tls.createServer). */
  httpsServerOptions(): TlsOptions {
    return {
      key: this.defaultKey,
      cert: this.defaultCert,
      SNICallback: this.sniCallback,
      ...this.policy,
      ALPNProtocols: ['http/1.1'],
    };
  }
}

function normalizeHost(name: string): string {
  const lower = name.toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

function pemFingerprint(certificate: CertificateConfig): string {
  return createHash('sha256').update(certificate.cert).update('\0').update(certificate.key).digest('base64');
}

/** Counts a host of `secret` whose certificate TLS refused (`by` 1) or no longer has it (-1); true when the Secret's problem came or went. */
function countInvalid(invalid: Map<string, { hosts: number; readonly problem: Problem }>, secret: string, entry: Entry, by: 1 | -1): boolean {
  const known = invalid.get(secret);
  if (known === undefined) {
    if (by < 0) return false;
    invalid.set(secret, { hosts: 1, problem: invalidCertificate(secret, entry.error ?? 'unknown error') });
    return true;
  }
  known.hosts += by;
  if (known.hosts > 0) return false;
  invalid.delete(secret);
  return true;
}

/** One problem per Secret TLS refused. */
function problemsOf(invalid: ReadonlyMap<string, { readonly problem: Problem }>): Problem[] {
  return Array.from(invalid.values(), (i) => i.problem);
}

function invalidCertificate(secret: string, error: string): Problem {
  const slash = secret.indexOf('/');
  const object = slash === -1 ? { kind: 'Secret', name: secret } : { kind: 'Secret', namespace: secret.slice(0, slash), name: secret.slice(slash + 1) };
  return {
    object,
    severity: 'error',
    reason: 'InvalidCertificate',
    message: `TLS rejected the certificate or key (${error}); its hosts are served the default certificate`,
  };
}

async function readPem(path: string, what: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the ${what} file ${path}: ${errorMessage(err)}`, { cause: err });
  }
  if (!text.includes('-----BEGIN ')) throw new Error(`the ${what} file ${path} is not PEM (no "-----BEGIN" line)`);
  return text;
}

/** A new self-signed default certificate (see ./self-signed-process.ts for why in a child process). */
export async function generateSelfSigned(): Promise<{ cert: string; key: string }> {
  // The sources in development (type stripping), the compiled file in dist/.
  const script = fileURLToPath(new URL(`./self-signed-process.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url));
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync(process.execPath, [script], { encoding: 'utf8', maxBuffer: 1 << 20 }));
  } catch (err) {
    throw new Error(`could not generate the default certificate: ${errorMessage(err)}`, { cause: err });
  }
  return JSON.parse(stdout) as { cert: string; key: string };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * One more host has a certificate of `entry`'s fingerprint: `entry` becomes byPem's entry
 * of it, with the count of the one it replaces (another object of the same PEM) plus one.
 */
function countUse(byPem: Map<string, Entry>, entry: Entry): void {
  const counted = byPem.get(entry.fingerprint);
  entry.uses = (counted?.uses ?? 0) + 1;
  if (counted !== entry) byPem.set(entry.fingerprint, entry);
}
