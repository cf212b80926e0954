// Reports problems as Kubernetes Events on the Ingress or Service they concern, so that
// `kubectl describe` shows them (and scale-to-zero's Sleeping/Waking on Services). Deduplicated (a repeat bumps count and
// lastTimestamp on the existing Event, as client-go's recorder does) and rate-limited
// per object and overall, so a broken object cannot flood the API server.
import type { Logger } from 'pino';
import type { Problem } from '../model/config.ts';
import type { Ingress, ObjectRef, Service } from '../model/k8s.ts';
import type { KubeClient } from '../kube/client.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { randomBytes } = process.getBuiltinModule('node:crypto');

export interface EventRecorderOptions {
  client: KubeClient;
  log: Logger;
  /** Reporting instance (the pod name). */
  instance: string;
  /** Current Ingress objects, keyed "ns/name" (for the involved object's uid). */
  ingresses: () => ReadonlyMap<string, Ingress>;
  /** Current Service objects, keyed "ns/name". */
  services?: () => ReadonlyMap<string, Service>;
  /** Events kept for deduplication before a repeat makes a new Event. */
  dedupeWindowMs?: number;
}

/** What an Event needs to point at an object of a kind the recorder does not look up itself. */
export interface InvolvedObject {
  apiVersion: string;
  uid?: string;
  resourceVersion?: string;
}

class TokenBucket {
  private tokens: number;
  private last = Date.now();
  private readonly burst: number;
  private readonly perSecond: number;
  constructor(burst: number, perSecond: number) {
    this.burst = burst;
    this.perSecond = perSecond;
    this.tokens = burst;
  }
  take(): boolean {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

interface Sent {
  name: string;
  namespace: string;
  count: number;
  at: number;
}

export class EventRecorder {
  private readonly o: EventRecorderOptions;
  private readonly sent = new Map<string, Sent>();
  private readonly perObject = new Map<string, TokenBucket>();
  private readonly overall = new TokenBucket(50, 5);
  active = false;

  constructor(options: EventRecorderOptions) {
    this.o = options;
  }

  /** Records Warning Events for the problems that concern Ingresses and Services (the leader only). Never throws. */
  async record(problems: readonly Problem[]): Promise<void> {
    if (!this.active) return;
    await Promise.all(problems.filter((p) => (p.object.kind === 'Ingress' || p.object.kind === 'Service') && p.object.namespace).map((p) => this.recordOne(p, 'Warning')));
  }

  /**
   * An Event about something this replica did (scale-to-zero's Sleeping, Waking,
   * WakeTimeout): written whether or not it leads. Never throws.
   */
  async recordAction(object: ObjectRef, type: 'Normal' | 'Warning', reason: string, message: string, involved?: InvolvedObject): Promise<void> {
    await this.recordOne({ object, severity: 'warning', reason, message }, type, involved);
  }

  private involvedObject(ref: ObjectRef, involved: InvolvedObject | undefined): Record<string, string | undefined> {
    // Kinds other than Ingress and Service (a CacheInvalidation) come with their apiVersion and uid.
    if (involved) return { apiVersion: involved.apiVersion, kind: ref.kind, namespace: ref.namespace, name: ref.name, uid: involved.uid, resourceVersion: involved.resourceVersion };
    const key = `${ref.namespace}/${ref.name}`;
    const obj = ref.kind === 'Service' ? this.o.services?.().get(key) : this.o.ingresses().get(key);
    return {
      apiVersion: ref.kind === 'Service' ? 'v1' : 'networking.k8s.io/v1',
      kind: ref.kind,
      namespace: ref.namespace,
      name: ref.name,
      uid: obj?.metadata.uid,
      resourceVersion: obj?.metadata.resourceVersion,
    };
  }

  private async recordOne(p: Problem, type: 'Normal' | 'Warning', involved?: InvolvedObject): Promise<void> {
    const objectKey = `${p.object.kind} ${p.object.namespace}/${p.object.name}`;
    let bucket = this.perObject.get(objectKey);
    if (!bucket) {
      // Like client-go's spam filter: a burst of 25 per object, then one every 5 minutes.
      bucket = new TokenBucket(25, 1 / 300);
      this.perObject.set(objectKey, bucket);
    }
    if (!bucket.take() || !this.overall.take()) {
      this.o.log.debug({ object: objectKey, reason: p.reason }, 'event rate-limited');
      return;
    }
    const key = `${objectKey}|${p.reason}|${p.message}`;
    const now = new Date();
    const window = this.o.dedupeWindowMs ?? 10 * 60_000;
    const prior = this.sent.get(key);
    try {
      if (prior && now.getTime() - prior.at < window) {
        prior.count += 1;
        prior.at = now.getTime();
        await this.o.client.write('PATCH', `/api/v1/namespaces/${prior.namespace}/events/${prior.name}`, {
          body: { count: prior.count, lastTimestamp: now.toISOString() },
          contentType: 'application/merge-patch+json',
        });
        return;
      }
      const name = `${p.object.name}.${randomBytes(8).toString('hex')}`;
      await this.o.client.write('POST', `/api/v1/namespaces/${p.object.namespace}/events`, {
        body: {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { name, namespace: p.object.namespace },
          involvedObject: this.involvedObject(p.object, involved),
          reason: p.reason,
          message: p.message,
          type,
          count: 1,
          firstTimestamp: now.toISOString(),
          lastTimestamp: now.toISOString(),
          source: { component: 'portico' },
          reportingComponent: 'portico.dev/ingress-controller',
          reportingInstance: this.o.instance,
        },
      });
      this.sent.set(key, { name, namespace: p.object.namespace!, count: 1, at: now.getTime() });
      this.prune(now.getTime(), window);
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message, object: objectKey, reason: p.reason }, 'could not record event');
    }
  }

  private prune(now: number, window: number): void {
    if (this.sent.size < 10_000) return;
    for (const [k, v] of this.sent) if (now - v.at >= window) this.sent.delete(k);
  }
}
