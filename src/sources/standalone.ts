// Standalone mode's source: a directory of YAML/JSON manifests, read recursively and
// watched, feeding the ObjectStore as the Kubernetes API would.
//
// - Objects are tracked per file. A changed file replaces its objects; a deleted file
//   removes them.
// - A file that stops parsing keeps serving the objects last read from it, and one
//   rejected object keeps its last good version, as the API server would keep the
//   stored object when an update is rejected.
// - Two files defining the same object: the first in sorted path order wins.
// - Changes are noticed by watching each directory, not each file: a file replaced by
//   rename (sed -i, mv, editors' safe-write) would leave a file's watch on the old inode,
//   so later writes went unseen (Node's recursive fs.watch on Linux watches each file).
//   The files an event names are stat'ed and re-read at once (events that arrive while
//   a scan runs are gathered into the next one), and only the objects of those files are re-resolved: an edit
//   costs the same with 10 files or 10,000. A walk of the whole tree runs only when an
//   event names no file or a directory (created, removed, a symlink), and as the
//   periodic rescan of mtimes and sizes that catches missed events (network
//   filesystems), more often while watching fails.
import type { Dir, Dirent, FSWatcher, Stats } from 'node:fs';
import type { Problem } from '../model/config.ts';
import { objectKey, type KubeObject, type RoutingKind } from '../model/k8s.ts';
import { isManifestFile, parseManifestFile, type ManifestError } from './manifests.ts';
import type { ObjectStore } from './store.ts';
import { deepEqual } from '../util/deep-equal.ts';
import type { CacheInvalidation } from '../cache/invalidation-resource.ts';
import { SmallMap } from '../util/small-map.ts';
import { flatString } from '../util/flat-string.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
// fs.watch and fs.stat are looked up at each call: tests replace them on the module object.
const fs = process.getBuiltinModule('node:fs');
const { lstatSync, readFileSync } = fs;
const { lstat, opendir, readFile, realpath, stat } = process.getBuiltinModule('node:fs/promises');
const { basename, dirname, join } = process.getBuiltinModule('node:path');

export interface ManifestDirectorySourceOptions {
  dir: string;
  /** Written by this source alone (see applyFiles). */
  store: Pick<ObjectStore, 'upsert' | 'delete' | 'get'>;
  /** The full list of file problems, each time it changes (and once after the first load). */
  onProblems?: (problems: readonly Problem[]) => void;
  /** Quiet time after a file event before reading, in ms (events keep extending it, up to 10x); 0 (default): read at once. */
  debounceMs?: number;
  /** Interval of the safety-net rescan while the directory is watched, in ms. */
  rescanMs?: number;
  /** Interval of the rescan when it is not (watch: false, or fs.watch failed), in ms. */
  pollMs?: number;
  /** Use fs.watch (default true); without it, only the periodic rescan notices changes. */
  watch?: boolean;
  /** Says when watching fails and when it works again. */
  log?: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void; debug?(obj: object, msg: string): void };
  /** The CacheInvalidation objects of a file, each time it is read ([] once it is gone). */
  onCacheInvalidations?: (file: string, objects: readonly FileInvalidation[]) => void;
  /** Each new object as its file is parsed, before the store has it (the first load applies every file at its end). */
  onObjectRead?: (object: KubeObject) => void;
}

/** A CacheInvalidation found in a manifest file, and its line there. */
export interface FileInvalidation {
  readonly object: CacheInvalidation;
  readonly line: number | undefined;
}

/** Manifests larger than this are refused rather than read into memory. */
const MAX_FILE_BYTES = 64 * 1024 * 1024;

/** Concurrent stats in a walk: hides the thread-pool round trip without flooding it. */
const STAT_BATCH = 64;

/** Up to this many files named by events are read synchronously (see readNamed). */
const SYNC_READS_UP_TO = 16;
/**
 * Rescans wait at least this many times the last walk. Polled (no change events), the
 * rescan is how changes are seen: under ~20% of a core. Watched, it is only a safety net
 * for missed events: under ~2% (at 10,000 files a walk took 0.2-0.3 s, and rescans every
 * 2 s kept the loop 12-15% busy with nothing changing).
 */
const RESCAN_COST_FACTOR = { polling: 4, watching: 50 };

interface StoredObject {
  readonly object: KubeObject;
  readonly line: number | undefined;
}

/**
 * Changes when the file is written or replaced (a rename over it changes the inode).
 * Compared field by field: as one string it cost five number conversions and about 300
 * bytes per file in every walk, and a walk of 10,000 files holds all of them at once.
 */
interface Stamp {
  readonly mtimeMs: number;
  readonly ctimeMs: number;
  readonly size: number;
  readonly dev: number;
  readonly ino: number;
}

function stampOf(file: Stamp): Stamp {
  return { mtimeMs: file.mtimeMs, ctimeMs: file.ctimeMs, size: file.size, dev: file.dev, ino: file.ino };
}

function sameStamp(a: Stamp, b: Stamp): boolean {
  return a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.size === b.size && a.dev === b.dev && a.ino === b.ino;
}

interface FileEntry {
  readonly stamp: Stamp;
  /** The objects served from this file (its last good content), by identity. */
  /** (Not a Map: 10,000 files of a few objects each held 3 MB of Maps.) */
  readonly objects: SmallMap<StoredObject>;
  readonly errors: readonly ManifestError[];
  /** Not routing input: handed to onCacheInvalidations. */
  readonly invalidations?: readonly FileInvalidation[];
  /** The last walk that saw the file (or the walk count when it was read): a file a walk did not see is gone. */
  seen: number;
}

interface FoundFile extends Stamp {
  readonly path: string;
  /** `path` relative to the directory, "/"-separated: the key of its entry. */
  readonly rel: string;
}

interface DirWatch {
  readonly watcher: FSWatcher;
  /** Path relative to the root as last walked; undefined if watched only as a symlink's target. */
  rel: string | undefined;
  /** The walk that last saw the directory. */
  walk: number;
}

const NO_ERRORS: readonly ManifestError[] = Object.freeze([]);

/** "Kind/ns/name": what makes two definitions the same object. */
const READ_CONCURRENCY = 16;
/** How long a file that just read empty gets to be written (see holdEmptied). */
const EMPTIED_RECHECK_MS = 100;
/**
 * A file that reads as partly written (its size changed during the read, or it does not
 * parse and was modified this recently) is read again this much later before it counts.
 */
const PARTIAL_RECHECK_MS = 25;
const JUST_WRITTEN_MS = 2_000;

/** Flat: kept as keys for as long as the object is served, and as a tree of its pieces it was two 32-byte nodes and a copy of "Kind/" each (30,000 at 10,000 Ingress files). */
function identity(kind: string, namespace: string | undefined, name: string): string {
  return flatString(`${kind}/${objectKey(namespace, name)}`);
}

function identityOf(obj: KubeObject): string {
  return identity(obj.kind, obj.metadata.namespace, obj.metadata.name);
}

function describeObject(obj: KubeObject): string {
  return `${obj.kind} ${objectKey(obj.metadata.namespace, obj.metadata.name)}`;
}

function where(file: string, line: number | undefined): string {
  return line === undefined ? file : `${file}:${line}`;
}

function errorCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** fs.stat with a callback: about half the CPU of fs.promises.stat, which counts at thousands of files. */
function statOrUndefined(path: string): Promise<Stats | undefined> {
  return new Promise((resolve) => fs.stat(path, (err, st) => resolve(err ? undefined : st)));
}

/** statOrUndefined of each path, at once: one promise for the batch (a walk stats every file every 2 s, and its garbage counts: see bench/rescan-garbage.ts). */
function statAll(paths: readonly string[]): Promise<(Stats | undefined)[]> {
  return new Promise((resolve) => {
    const stats = new Array<Stats | undefined>(paths.length);
    let pending = paths.length;
    if (pending === 0) return resolve(stats);
    paths.forEach((path, i) =>
      fs.stat(path, (err, st) => {
        stats[i] = err ? undefined : st;
        if (--pending === 0) resolve(stats);
      }),
    );
  });
}

class DirectoryGone extends Error {}

/**
 * The files that define one object: a path, or a set when more than one does (rare). Not
 * a set each: at 10,000 Ingress files the sets held 3.6 MB.
 */
type DefiningFiles = string | Set<string>;

function firstPath(paths: Iterable<string>): string {
  let first: string | undefined;
  for (const p of paths) if (first === undefined || p < first) first = p;
  return first!;
}

export class ManifestDirectorySource {
  /** Resolves after the first full load (rejects if start() failed). */
  readonly ready: Promise<void>;
  private readonly o: Required<Omit<ManifestDirectorySourceOptions, 'onProblems' | 'log' | 'onCacheInvalidations' | 'onObjectRead'>> & Pick<ManifestDirectorySourceOptions, 'onProblems' | 'log' | 'onCacheInvalidations' | 'onObjectRead'>;
  private readonly files = new Map<string, FileEntry>();
  /** Files named by watch events since the last scan: re-read even if their stamp looks unchanged. */
  private dirty = new Set<string>();
  /** An event named no file (or a directory outside the tree): the next scan walks the whole tree. */
  private walkNeeded = true;
  /**
   * Identities defined in more than one file, with those files. An identity defined in one
   * file is found in that file's entry (applyFiles): a map of every identity to its file
   * held 1.8 MB at 40,000 objects.
   */
  private readonly duplicated = new Map<string, Set<string>>();
  /** Files that currently have errors. */
  private readonly failing = new Set<string>();
  /** Files that read empty once and are read again before their objects are dropped. */
  /** Held emptied or gone files, with when the hold began. */
  private readonly emptiedOnce = new Map<string, number>();
  /** Files the last reads found partly written (see PARTIAL_RECHECK_MS), and those already given a second read. */
  private readonly partial = new Set<string>();
  private readonly partialOnce = new Set<string>();
  private dirProblem: Problem | undefined;
  private reportedProblems: string | undefined;
  /** One watch per directory, by "dev:ino". */
  private readonly watches = new Map<string, DirWatch>();
  /** Directories whose watcher failed: polled from then on rather than re-watched and failing again. */
  private readonly unwatchable = new Set<string>();
  /** Why part of the tree is not watched, while that lasts (rescans then run every pollMs). */
  private unwatched: string | undefined;
  private walks = 0;
  /** Files read so far (for debug logs and tests of the per-file path). */
  private reads = 0;
  private lastWalkMs = 0;
  /** When the last walk began (performance.now()). */
  private walkBegan = 0;
  private debounceTimer: NodeJS.Timeout | undefined;
  private pendingScan: NodeJS.Immediate | undefined;
  /** When the first event of the current burst arrived (performance.now()). */
  private burstStart = 0;
  private rescanTimer: NodeJS.Timeout | undefined;
  private rescanPending = false;
  private scanning: Promise<void> | undefined;
  private scanAgain = false;
  /** The scan in progress walks the tree (the periodic rescan at 10,000 files takes ~0.1 s). */
  private walking = false;
  /** A read of named files running beside a walk, so that a walk does not hold an edit back. */
  private readingBeside: Promise<void> | undefined;
  /** While a walk runs: the files a read beside it applied, newer than what the walk saw. */
  private appliedDuringWalk: Set<string> | undefined;
  private stopped = false;
  private settleReady!: (err?: Error) => void;

  constructor(options: ManifestDirectorySourceOptions) {
    this.o = { debounceMs: 0, rescanMs: 2000, pollMs: 500, watch: true, ...options };
    this.ready = new Promise<void>((resolve, reject) => {
      this.settleReady = (err) => (err ? reject(err) : resolve());
    });
    this.ready.catch(() => {}); // start() reports the failure to its caller
  }

  /** Loads every manifest under the directory and watches it. Throws if the directory does not exist. */
  async start(): Promise<void> {
    try {
      await this.checkDirectory();
      await this.serialized(); // the first walk also sets up the watches
    } catch (err) {
      this.stop();
      this.settleReady(err as Error);
      throw err;
    }
    this.settleReady();
  }

  stop(): void {
    this.stopped = true;
    this.closeWatches(() => true);
    clearTimeout(this.debounceTimer);
    clearImmediate(this.pendingScan);
    clearTimeout(this.rescanTimer);
  }

  /** How much work the source has done: full walks of the tree, and files read; whether a walk is in progress. */
  get work(): { readonly walks: number; readonly reads: number; readonly walking: boolean } {
    return { walks: this.walks, reads: this.reads, walking: this.walking };
  }

  /** Current problems with the manifest files. */
  problems(): Problem[] {
    const problems: Problem[] = [];
    if (this.dirProblem) problems.push(this.dirProblem);
    for (const path of [...this.failing].sort()) {
      for (const e of this.files.get(path)!.errors) {
        problems.push({ object: { kind: 'File', name: path }, severity: 'error', reason: 'InvalidManifest', message: `${where(path, e.line)}: ${e.message}` });
      }
    }
    problems.push(...this.duplicateProblems());
    return problems;
  }

  private async checkDirectory(): Promise<void> {
    let isDirectory: boolean;
    try {
      isDirectory = (await stat(this.o.dir)).isDirectory();
    } catch (err) {
      if (errorCode(err) === 'ENOENT') throw new Error(`--manifests ${this.o.dir}: no such directory`);
      throw new Error(`--manifests ${this.o.dir}: ${(err as Error).message}`);
    }
    if (!isDirectory) throw new Error(`--manifests ${this.o.dir}: not a directory`);
  }

  // ---- change detection ----

  /** Watches one directory, before it is listed, so that no change after the listing goes unseen. */
  private watchDir(id: string, path: string, rel: string | undefined, walk: number, failures: string[]): void {
    if (!this.o.watch || this.stopped) return;
    const known = this.watches.get(id);
    if (known) {
      if (known.walk !== walk || rel !== undefined) known.rel = rel;
      known.walk = walk;
      return;
    }
    if (this.unwatchable.has(id)) return;
    let watcher: FSWatcher;
    try {
      watcher = fs.watch(path, { persistent: false }, (_event, name) => {
        const dirRel = this.watches.get(id)?.rel;
        if (name && dirRel !== undefined) this.dirty.add(dirRel ? `${dirRel}/${name}` : String(name));
        else this.walkNeeded = true;
        this.scheduleScan();
      });
    } catch (err) {
      const code = errorCode(err);
      if (code !== 'ENOENT' && code !== 'ENOTDIR') failures.push(`${path}: ${code ?? (err as Error).message}`); // else gone meanwhile
      return;
    }
    watcher.on('error', (err: Error) => {
      watcher.close();
      if (this.watches.get(id)?.watcher === watcher) this.watches.delete(id);
      this.unwatchable.add(id);
      this.setUnwatched(`${path}: ${errorCode(err) ?? err.message}`);
    });
    this.watches.set(id, { watcher, rel, walk });
  }

  private closeWatches(which: (w: DirWatch) => boolean): void {
    for (const [id, w] of this.watches) {
      if (!which(w)) continue;
      w.watcher.close();
      this.watches.delete(id);
    }
  }

  /** Enters (reason) or leaves (undefined) polling mode, saying so once per change. */
  private setUnwatched(reason: string | undefined): void {
    if (!this.o.watch || this.stopped) return;
    const was = this.unwatched;
    this.unwatched = reason;
    if (was === undefined && reason !== undefined) {
      this.o.log?.warn({ dir: this.o.dir, reason }, `cannot watch the manifest directory; rescanning it every ${this.o.pollMs} ms instead`);
      this.scheduleRescan(); // sooner than the safety-net interval
    } else if (was !== undefined && reason === undefined) {
      this.o.log?.info({ dir: this.o.dir }, 'watching the manifest directory again');
    }
  }

  /**
   * Scans once events have been quiet for debounceMs (a write is often several events),
   * but no later than 10x debounceMs after the first one, so a stream of writes cannot
   * hold changes back.
   */
  private scheduleScan(): void {
    if (this.stopped) return;
    // No quiet time: read once the events of this I/O turn are in (a scan that runs
    // gathers what arrives meanwhile into the next one).
    if (this.o.debounceMs <= 0) {
      this.pendingScan ??= setImmediate(() => {
        this.pendingScan = undefined;
        this.requestScan();
      });
      return;
    }
    const now = performance.now();
    if (this.debounceTimer) clearTimeout(this.debounceTimer);
    else this.burstStart = now;
    const wait = Math.max(0, Math.min(this.o.debounceMs, this.burstStart + 10 * this.o.debounceMs - now));
    this.debounceTimer = setTimeout(() => {
      this.debounceTimer = undefined;
      this.requestScan();
    }, wait);
  }

  /** Sets the next periodic rescan, counted from the end of the last scan. */
  private scheduleRescan(): void {
    clearTimeout(this.rescanTimer);
    if (this.stopped) return;
    const polling = !this.o.watch || this.unwatched !== undefined;
    const every = polling ? Math.min(this.o.pollMs, this.o.rescanMs) : this.o.rescanMs;
    this.rescanPending = true;
    this.rescanTimer = setTimeout(() => {
      this.rescanPending = false;
      this.walkNeeded = true;
      this.requestScan();
    }, Math.max(every, RESCAN_COST_FACTOR[polling ? 'polling' : 'watching'] * this.lastWalkMs));
    this.rescanTimer.unref();
  }

  /** Runs a scan now, or right after the one in progress. */
  private requestScan(): void {
    if (this.stopped) return;
    if (this.scanning) {
      if (this.walking && this.readingBeside === undefined && this.dirty.size > 0 && !this.walkNeeded && this.unwatched === undefined) {
        this.readingBeside = this.readBeside().finally(() => {
          this.readingBeside = undefined;
          if (!this.scanAgain) return;
          if (this.scanning === undefined) {
            this.scanAgain = false;
            this.requestScan();
          } else if (this.dirty.size > 0) this.requestScan(); // events during this read, the walk still going
        });
        this.readingBeside.catch((err: unknown) => this.setDirProblem(`cannot read the manifest directory: ${(err as Error).message}`));
        return;
      }
      this.scanAgain = true;
      return;
    }
    this.serialized().catch((err: unknown) => {
      // Unexpected (a bug or an unreadable tree): keep serving, say so.
      this.setDirProblem(`cannot read the manifest directory: ${(err as Error).message}`);
    });
  }

  /** One scan at a time: the first load too, so that an early event cannot race it. */
  private async serialized(): Promise<void> {
    // Never two reads of named files at once: they could apply out of order.
    const scan = (this.readingBeside ?? Promise.resolve()).catch(() => {}).then(() => this.scan());
    const walks = this.walks;
    this.scanning = scan;
    try {
      await scan;
    } finally {
      this.scanning = undefined;
      if (this.scanAgain) {
        this.scanAgain = false;
        this.requestScan();
      }
      // Counted from the end of the last walk: reads of named files every second must not
      // put the safety net off for ever.
      if (this.walks !== walks || !this.rescanPending) this.scheduleRescan();
    }
  }

  // ---- scanning ----

  private async scan(): Promise<void> {
    const forced = this.dirty;
    this.dirty = new Set();
    if (!this.walkNeeded && this.unwatched === undefined) {
      const updates = await this.readNamed(forced);
      if (updates !== undefined) {
        if (this.stopped) return;
        this.holdPartial(updates);
        this.holdEmptied(updates);
        this.applyFiles(updates);
        this.report();
        return;
      }
    }
    this.walkNeeded = false;
    this.walking = true;
    this.appliedDuringWalk = new Set();
    try {
      await this.walkAndApply(forced);
    } finally {
      this.walking = false;
      this.appliedDuringWalk = undefined;
    }
  }

  /**
   * Reads the files that events named while a walk runs: an edit is served without
   * waiting for the walk, and the walk leaves what this applied alone.
   */
  private async readBeside(): Promise<void> {
    const named = this.dirty;
    this.dirty = new Set();
    const updates = await this.readNamed(named);
    if (this.stopped) return;
    if (updates === undefined) {
      // A directory or a symlink: walk the tree again once this walk is done.
      for (const name of named) this.dirty.add(name);
      this.walkNeeded = true;
      this.scanAgain = true;
      return;
    }
    this.holdPartial(updates);
    this.holdEmptied(updates);
    this.applyFiles(updates);
    this.report();
  }

  private async walkAndApply(forced: ReadonlySet<string>): Promise<void> {
    let changed: FoundFile[];
    try {
      changed = await this.walk(forced);
    } catch (err) {
      if (!(err instanceof DirectoryGone)) throw err;
      this.closeWatches(() => true); // they follow the old inodes
      this.setUnwatched('the directory is gone');
      // Keep serving what was read: an emptied mount or a moved directory is more likely a mistake than an intent.
      this.setDirProblem(`${this.o.dir}: the directory is gone; still serving the objects last read from it`);
      this.report();
      return;
    }
    this.dirProblem = undefined;

    const walk = this.walks;
    const updates = new Map<string, FileEntry | undefined>();
    // A few reads at a time: the disk and the parsing stop waiting for each other (10,000
    // files at start: 4.7 s one by one).
    for (let i = 0; i < changed.length; i += READ_CONCURRENCY) {
      const batch = changed.slice(i, i + READ_CONCURRENCY);
      const read = await Promise.all(batch.map((file) => this.readEntry(file.rel, file, this.files.get(file.rel))));
      // undefined: vanished between listing and reading.
      batch.forEach((file, j) => updates.set(file.rel, read[j]));
    }
    for (const [path, entry] of this.files) if (entry.seen !== walk) updates.set(path, undefined);
    if (this.stopped) return;
    // Read beside the walk after it listed them: newer than what the walk saw.
    for (const path of this.appliedDuringWalk ?? []) updates.delete(path);
    this.holdPartial(updates);
    // What the walk saw, it saw when it began (perhaps before a writer's second step).
    this.holdEmptied(updates, this.walkBegan);
    this.applyFiles(updates);
    this.report();
  }

  /**
   * A file read while it was being written (truncated, then written in parts, as editors
   * and `>` redirections do) is read again a moment later before it replaces what it
   * served or is reported broken: a route does not flap through the half-written state.
   */
  private holdPartial(updates: Map<string, FileEntry | undefined>): void {
    for (const path of this.partial) {
      this.partial.delete(path);
      if (!updates.has(path) || this.partialOnce.has(path)) {
        this.partialOnce.delete(path);
        continue;
      }
      updates.delete(path);
      this.partialOnce.add(path);
      this.dirty.add(path);
      setTimeout(() => this.requestScan(), PARTIAL_RECHECK_MS).unref();
    }
    for (const path of updates.keys()) this.partialOnce.delete(path);
  }

  /**
   * A file that had objects and now reads empty is most often being written in place
   * (truncated, then written): its objects are dropped only if it is still empty when
   * read again a moment later, so a reader never serves the gap between the two.
   * A file that is gone waits the same moment: `rm -r` of the directory removes the files
   * before the directory, and a directory gone keeps serving (see scan).
   */
  private holdEmptied(updates: Map<string, FileEntry | undefined>, seenAt = performance.now()): void {
    for (const [path, entry] of updates) {
      const before = this.files.get(path);
      const hadContent = (before?.objects.size ?? 0) > 0 || before?.invalidations !== undefined;
      const emptied = hadContent && (entry === undefined || (entry.objects.size === 0 && entry.invalidations === undefined && entry.errors.length === 0));
      const heldAt = this.emptiedOnce.get(path);
      if (!emptied) {
        this.emptiedOnce.delete(path);
        continue;
      }
      if (heldAt !== undefined) {
        // Still empty when seen again a moment later: it is. Seen again sooner (another
        // event of the same write, a walk that began meanwhile), it proves nothing yet.
        if (seenAt - heldAt >= EMPTIED_RECHECK_MS) {
          this.emptiedOnce.delete(path);
        } else {
          updates.delete(path);
          this.dirty.add(path);
          setTimeout(() => this.requestScan(), EMPTIED_RECHECK_MS - (seenAt - heldAt)).unref();
        }
        continue;
      }
      updates.delete(path);
      this.emptiedOnce.set(path, performance.now());
      this.dirty.add(path);
      setTimeout(() => this.requestScan(), EMPTIED_RECHECK_MS).unref();
    }
  }

  /**
   * Re-reads just the files that watch events named. Undefined when that is not enough
   * and the tree must be walked: a name that is a directory or a symlink (new watches
   * to set up), or a removed directory that held manifests.
   */
  private async readNamed(names: ReadonlySet<string>): Promise<Map<string, FileEntry | undefined> | undefined> {
    const updates = new Map<string, FileEntry | undefined>();
    // A few files are read synchronously: a small file costs tens of microseconds that
    // way, while each async step is a thread-pool round trip, and on a busy machine those
    // round trips were the tail of the change latency (10-50 ms). Many at once (a copied
    // tree) stay async, so the event loop is not held.
    const sync = names.size <= SYNC_READS_UP_TO;
    for (const rel of names) {
      // Dotfiles and dot-directories are skipped, as in walk().
      if (rel.split('/').some((part) => part.startsWith('.'))) continue;
      const path = join(this.o.dir, rel);
      let st: Stats;
      try {
        st = sync ? lstatSync(path) : await lstat(path);
      } catch (err) {
        if (errorCode(err) !== 'ENOENT' && errorCode(err) !== 'ENOTDIR') return undefined;
        // The whole directory gone is not its files deleted: the walk keeps serving them.
        if (!(await statOrUndefined(this.o.dir))?.isDirectory()) return undefined;
        if (this.files.has(rel)) updates.set(rel, undefined);
        else if (this.holdsFiles(rel)) return undefined; // a directory went away
        continue;
      }
      if (!st.isFile()) return undefined; // a directory or a symlink
      if (!isManifestFile(basename(rel))) continue;
      const file: FoundFile = { path, rel, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, size: st.size, dev: st.dev, ino: st.ino };
      const next = await this.readEntry(rel, file, this.files.get(rel), sync);
      updates.set(rel, next);
    }
    return updates;
  }

  /** true when some known manifest file lies under the directory `rel`. */
  private holdsFiles(rel: string): boolean {
    const prefix = rel + '/';
    for (const path of this.files.keys()) if (path.startsWith(prefix)) return true;
    return false;
  }

  /**
   * Walks every manifest file under the directory (paths relative to it, "/"-separated),
   * watching what it visits, and returns the files whose stamp differs from their entry's
   * (or that `forced` names); each file it sees gets its entry marked with this walk, so
   * the files it did not see are the ones gone. Streamed: a directory is read a few entries
   * at a time and each stat is compared and dropped at once. Holding the whole tree's
   * listing and stats until the walk ended left several MB of garbage per walk at 10,000
   * files, promoted to the old generation by the scavenges during the walk and resident
   * until the next full GC (the missed 200 MiB at 10,000 Ingresses, issue 12).
   */
  private async walk(forced: ReadonlySet<string>): Promise<FoundFile[]> {
    const began = performance.now();
    this.walkBegan = began;
    const walk = ++this.walks;
    const root = this.o.dir;
    const changed: FoundFile[] = [];
    const visited = new Set<string>();
    const targetDirs = new Set<string>();
    const targetIds = new Set<string>();
    const failures: string[] = [];
    let rootStat;
    try {
      rootStat = await stat(root);
    } catch (err) {
      if (errorCode(err) === 'ENOENT' || errorCode(err) === 'ENOTDIR') throw new DirectoryGone();
      throw err;
    }
    if (!rootStat.isDirectory()) throw new DirectoryGone();

    // A symlinked manifest changes in its target's directory, which may lie outside the tree.
    const watchTarget = async (link: string): Promise<void> => {
      let dir;
      try {
        dir = dirname(await realpath(link));
        if (targetDirs.has(dir)) return;
        targetDirs.add(dir);
        const st = await stat(dir);
        targetIds.add(`${st.dev}:${st.ino}`);
        this.watchDir(`${st.dev}:${st.ino}`, dir, undefined, walk, failures);
      } catch {
        // gone meanwhile: the next walk sees it
      }
    };

    /** Stats one batch of a directory's entries (following symlinks), then compares or descends. */
    const visitBatch = async (dir: string, rel: string, batch: readonly Dirent[]): Promise<void> => {
      // join(dir, name) for every name (no slashes in it), without normalizing each path again.
      const prefix = join(dir, 'x').slice(0, -1);
      // Few objects per file: the walk's garbage regrew the young generation of a quiet process (src/util/idle-gc.ts).
      const paths = batch.map((e) => prefix + e.name);
      const stats = await statAll(paths); // follows symlinks
      for (let j = 0; j < batch.length; j++) {
        const entry = batch[j]!;
        const st = stats[j];
        if (!st) continue; // dangling link or removed meanwhile
        const path = paths[j]!;
        const entryRel = rel ? `${rel}/${entry.name}` : entry.name;
        if (st.isDirectory()) {
          const subId = `${st.dev}:${st.ino}`;
          if (visited.has(subId)) continue; // symlink loop, or the same tree linked twice
          await visit(path, entryRel, subId);
        } else if (st.isFile() && isManifestFile(entry.name)) {
          const known = this.files.get(entryRel);
          if (known) known.seen = walk;
          if (!known || !sameStamp(known.stamp, st) || forced.has(entryRel)) {
            changed.push({ path, rel: entryRel, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, size: st.size, dev: st.dev, ino: st.ino });
          }
          if (entry.isSymbolicLink() && this.o.watch) await watchTarget(path);
        }
      }
    };

    const visit = async (dir: string, rel: string, id: string): Promise<void> => {
      visited.add(id);
      this.watchDir(id, dir, rel, walk, failures);
      let handle: Dir;
      try {
        handle = await opendir(dir, { bufferSize: STAT_BATCH });
      } catch (err) {
        if (dir === root && errorCode(err) === 'ENOENT') throw new DirectoryGone();
        return; // a subdirectory removed meanwhile, or unreadable: its files count as gone
      }
      let batch: Dirent[] = [];
      try {
        // dotfiles, editor swap files and .git are skipped
        for await (const e of handle) {
          if (e.name.startsWith('.') || !(e.isDirectory() || e.isSymbolicLink() || (e.isFile() && isManifestFile(e.name)))) continue;
          batch.push(e);
          if (batch.length < STAT_BATCH) continue;
          const full = batch;
          batch = [];
          await visitBatch(dir, rel, full);
        }
      } catch (err) {
        if (dir === root && errorCode(err) === 'ENOENT') throw new DirectoryGone();
        // removed while being read: what was not listed counts as gone
      }
      if (batch.length > 0) await visitBatch(dir, rel, batch);
    };
    await visit(root, '', `${rootStat.dev}:${rootStat.ino}`);

    this.closeWatches((w) => w.walk !== walk); // directories gone, moved out or replaced
    for (const id of this.unwatchable) if (visited.has(id) || targetIds.has(id)) failures.push(`directory ${id}: its watcher failed`);
    this.setUnwatched(failures.length === 0 ? undefined : failures.length === 1 ? failures[0] : `${failures[0]} (and ${failures.length - 1} more)`);
    this.lastWalkMs = performance.now() - began;
    // Debug: a change read while a walk stats the tree shares the event loop with it (the latency benches name the walks a slow sample overlapped).
    this.o.log?.debug?.({ walkMs: Math.round(this.lastWalkMs), changed: changed.length }, 'manifest directory walked');
    return changed;
  }

  /** Reads and parses one file into its next entry; undefined if it is gone. */
  private async readEntry(rel: string, file: FoundFile, previous: FileEntry | undefined, sync = false): Promise<FileEntry | undefined> {
    if (file.size > MAX_FILE_BYTES) {
      return { stamp: stampOf(file), objects: previous?.objects ?? new SmallMap<StoredObject>(), errors: [{ file: rel, message: `larger than ${MAX_FILE_BYTES / 1024 / 1024} MiB; not read` }], invalidations: previous?.invalidations, seen: this.walks };
    }
    let bytes: Buffer;
    try {
      this.reads++;
      bytes = sync ? readFileSync(file.path) : await readFile(file.path);
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return undefined;
      return { stamp: stampOf(file), objects: previous?.objects ?? new SmallMap<StoredObject>(), errors: [{ file: rel, message: `cannot read: ${(err as Error).message}` }], invalidations: previous?.invalidations, seen: this.walks };
    }
    const parsed = parseManifestFile(rel, bytes.toString('utf8'));
    // Read while being written: the size changed since the stat, or it was just modified
    // and does not parse, or has more broken objects than before (a document cut short).
    const worse = parsed.failed || (previous !== undefined && parsed.errors.length > previous.errors.length);
    if (bytes.length !== file.size || (worse && Date.now() - file.mtimeMs < JUST_WRITTEN_MS)) this.partial.add(rel);
    // A file that does not parse as a whole keeps serving its last good content.
    if (parsed.failed) return { stamp: stampOf(file), objects: previous?.objects ?? new SmallMap<StoredObject>(), errors: parsed.errors, invalidations: previous?.invalidations, seen: this.walks };

    const objects = new SmallMap<StoredObject>();
    const errors: ManifestError[] = [...parsed.errors];
    parsed.objects.forEach((object, i) => {
      const id = identityOf(object);
      const line = parsed.lines[i];
      const first = objects.get(id);
      if (first) {
        errors.push({ file: rel, line, message: `${describeObject(object)} is already defined at line ${first.line ?? '?'} of this file; this definition is ignored` });
        return;
      }
      // Same content as before: keep the old object, so everything memoized on it stays valid.
      const before = previous?.objects.get(id)?.object;
      const kept = before && deepEqual(before, object) ? before : object;
      objects.set(id, { object: kept, line });
      if (kept === object) this.o.onObjectRead?.(object);
    });
    // A rejected object keeps its last good version.
    for (const e of parsed.errors) {
      if (!e.ref) continue;
      const id = identity(e.ref.kind, e.ref.namespace, e.ref.name);
      const before = previous?.objects.get(id);
      if (before && !objects.has(id)) objects.set(id, before);
    }
    errors.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
    // Most files have no error: one shared empty list, not an empty array each (0.3 MB at 10,000 files).
    return { stamp: stampOf(file), objects, errors: errors.length === 0 ? NO_ERRORS : errors, invalidations: parsed.invalidations.length > 0 ? parsed.invalidations : undefined, seen: this.walks };
  }

  // ---- applying ----

  /**
   * Replaces the entries of the changed files (undefined: removed) and brings the
   * store in line for the objects they define or defined: work in proportion to the
   * change, not to the tree.
   */
  private applyFiles(updates: ReadonlyMap<string, FileEntry | undefined>): void {
    /** Each identity the changed files define or defined, with those files. */
    const touched = new Map<string, string | string[]>();
    /** Identities a changed file defined before: then no other file did unless `duplicated` says so. */
    const definedBefore = new Set<string>();
    const mention = (id: string, path: string) => {
      const paths = touched.get(id);
      if (paths === undefined) touched.set(id, path);
      else if (typeof paths === 'string') {
        if (paths !== path) touched.set(id, [paths, path]);
      } else if (!paths.includes(path)) paths.push(path);
    };
    for (const [path, entry] of updates) {
      if (this.readingBeside !== undefined) this.appliedDuringWalk?.add(path);
      if (entry?.invalidations !== undefined || this.files.get(path)?.invalidations !== undefined) this.o.onCacheInvalidations?.(path, entry?.invalidations ?? []);
      const before = this.files.get(path);
      if (before) {
        for (const id of before.objects.keys()) {
          mention(id, path);
          definedBefore.add(id);
        }
      }
      if (entry) {
        this.files.set(path, entry);
        for (const id of entry.objects.keys()) mention(id, path);
        if (entry.errors.length > 0) this.failing.add(path);
        else this.failing.delete(path);
      } else {
        this.files.delete(path);
        this.failing.delete(path);
      }
    }
    const { store } = this.o;
    /** Identity -> a file not changed now that defines it; made only when needed (an object defined again elsewhere). */
    let unchangedFiles: Map<string, string> | undefined;
    const definedElsewhere = (id: string): string | undefined => {
      if (unchangedFiles === undefined) {
        unchangedFiles = new Map();
        for (const [path, entry] of this.files) {
          if (updates.has(path)) continue;
          for (const other of entry.objects.keys()) if (!unchangedFiles.has(other)) unchangedFiles.set(other, path);
        }
      }
      return unchangedFiles.get(id);
    };
    for (const [id, paths] of touched) {
      const slash = id.indexOf('/');
      const kind = id.slice(0, slash) as RoutingKind;
      const key = id.slice(slash + 1);
      const applied = store.get(kind, key);
      // The files that define it now: those of `duplicated`, or the one file that did
      // (found only when a changed file did not: the store holds what some file defines),
      // with the changed files brought up to date.
      let files = this.duplicated.get(id);
      let single: string | undefined;
      if (files === undefined) {
        const other = !definedBefore.has(id) && applied !== undefined ? definedElsewhere(id) : undefined;
        if (other === undefined && typeof paths === 'string') single = this.files.get(paths)?.objects.has(id) ? paths : undefined;
        else files = new Set(other === undefined ? [] : [other]);
      }
      if (files !== undefined) {
        for (const path of typeof paths === 'string' ? [paths] : paths) {
          if (this.files.get(path)?.objects.has(id)) files.add(path);
          else files.delete(path);
        }
        if (files.size > 1) {
          this.duplicated.set(id, files);
        } else {
          this.duplicated.delete(id);
          single = files.size === 1 ? files.values().next().value : undefined;
          files = undefined;
        }
      }
      const defining = files ?? single;
      const winner = defining !== undefined ? this.winnerOf(id, defining) : undefined;
      // What the store holds is what this source put there (it is the only source in
      // standalone mode): no map of its own by identity (1.75 MB at 40,000 objects). The
      // store keeps its object when given an equal one, which upsert then finds unchanged.
      if (winner === undefined) {
        if (applied) store.delete(kind, key);
      } else if (applied !== winner) {
        store.upsert(winner);
      }
    }
  }

  /** Two files defining the same object: the first in sorted path order serves it. */
  private winnerOf(id: string, files: DefiningFiles): KubeObject {
    return this.files.get(typeof files === 'string' ? files : firstPath(files))!.objects.get(id)!.object;
  }

  /** A warning per definition that lost to the same object in an earlier file. */
  private duplicateProblems(): Problem[] {
    const lost: { path: string; line: number | undefined; problem: Problem }[] = [];
    for (const [id, files] of this.duplicated) {
      const paths = [...files].sort();
      const first = paths[0]!;
      const firstAt = where(first, this.files.get(first)!.objects.get(id)!.line);
      for (const path of paths.slice(1)) {
        const { object, line } = this.files.get(path)!.objects.get(id)!;
        lost.push({
          path,
          line,
          problem: {
            object: { kind: 'File', name: path },
            severity: 'warning',
            reason: 'DuplicateObject',
            message: `${where(path, line)}: ${describeObject(object)} is already defined in ${firstAt}; this definition is ignored`,
          },
        });
      }
    }
    lost.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : (a.line ?? 0) - (b.line ?? 0)));
    return lost.map((l) => l.problem);
  }

  private setDirProblem(message: string): void {
    this.dirProblem = { object: { kind: 'File', name: '.' }, severity: 'error', reason: 'ManifestDirectoryUnreadable', message };
    this.report();
  }

  /** Calls onProblems when the list changed (and after the first load). */
  private report(): void {
    if (this.stopped) return;
    const problems = this.problems();
    const signature = JSON.stringify(problems);
    if (signature === this.reportedProblems) return;
    this.reportedProblems = signature;
    this.o.onProblems?.(problems);
  }
}
