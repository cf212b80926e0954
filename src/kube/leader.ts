// Leader election over a coordination.k8s.io/v1 Lease, as client-go's leaderelection
// does it: optimistic concurrency (update with resourceVersion, 409 = someone else
// won), expiry judged by the local clock from when the record was last seen to change
// (not by the renewTime written by another machine, whose clock may be off), and a
// leader that cannot renew within the renew deadline stops acting as leader.
import type { Logger } from 'pino';
import type { Lease } from '../model/k8s.ts';
import { KubeApiError, type KubeClient } from './client.ts';
import { describeApiError, type ApiOutageLog } from './api-outage-log.ts';

export interface LeaderElectionOptions {
  client: KubeClient;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  log: Logger;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
  /** Where failed attempts are told, to be logged once per outage (each is then a debug line). */
  outage?: ApiOutageLog;
}

const WHO = 'leader election';

const LEASE_BASE = '/apis/coordination.k8s.io/v1';

/** Kubernetes MicroTime: RFC 3339 with microseconds. */
function microTime(date = new Date()): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  private readonly o: LeaderElectionOptions;
  private leading = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  /** The last record seen and when (local clock) it was seen to change. */
  private observedKey = '';
  private observedAt = 0;
  private lastRenew = 0;
  private deadlineTimer: NodeJS.Timeout | undefined;

  constructor(options: LeaderElectionOptions) {
    this.o = options;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    void this.tick();
  }

  /** Gives the lease up when leading, so a standby takes over at once instead of after expiry. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.deadlineTimer);
    if (!this.leading) return;
    this.setLeading(false);
    try {
      const lease = await this.get();
      if (lease?.spec?.holderIdentity === this.o.identity) {
        await this.put({ ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1 } });
      }
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message }, 'could not release the leader lease; it expires by itself');
    }
  }

  private path(name?: string): string {
    const base = `${LEASE_BASE}/namespaces/${this.o.namespace}/leases`;
    return name ? `${base}/${name}` : base;
  }

  private async get(): Promise<Lease | undefined> {
    try {
      return await this.o.client.request<Lease>('GET', this.path(this.o.name), { signal: AbortSignal.timeout(this.o.retryPeriodMs * 2) });
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  private put(lease: Lease): Promise<Lease> {
    return this.o.client.request<Lease>('PUT', this.path(this.o.name), { body: lease, signal: AbortSignal.timeout(this.o.retryPeriodMs * 2) });
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.tryAcquireOrRenew();
      this.o.outage?.succeeded(WHO);
    } catch (err) {
      // Another replica won the race: the API works.
      const conflict = err instanceof KubeApiError && (err.status === 409 || err.status === 404);
      if (conflict) this.o.outage?.succeeded(WHO);
      else this.o.outage?.failed(WHO, describeApiError(err));
      this.o.log[conflict || this.o.outage ? 'debug' : 'warn']({ err: (err as Error).message }, 'leader election attempt failed');
    }
    if (!this.stopped) this.timer = setTimeout(() => void this.tick(), this.o.retryPeriodMs);
  }

  private async tryAcquireOrRenew(): Promise<void> {
    const { identity, leaseDurationMs } = this.o;
    const now = Date.now();
    const lease = await this.get();
    const spec = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      renewTime: microTime(),
    };
    if (!lease) {
      await this.o.client.request<Lease>('POST', this.path(), {
        body: {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.o.name, namespace: this.o.namespace },
          spec: { ...spec, acquireTime: microTime(), leaseTransitions: 0 },
        },
        signal: AbortSignal.timeout(this.o.retryPeriodMs * 2),
      });
      this.renewed();
      return;
    }

    const holder = lease.spec?.holderIdentity ?? '';
    const key = `${holder}|${lease.spec?.renewTime ?? ''}|${lease.metadata.resourceVersion ?? ''}`;
    if (key !== this.observedKey) {
      this.observedKey = key;
      this.observedAt = now;
    }
    const expired = !holder || now > this.observedAt + (lease.spec?.leaseDurationSeconds ?? 15) * 1000;

    if (holder !== identity && !expired) {
      if (this.leading) this.setLeading(false);
      return;
    }
    const transitions = (lease.spec?.leaseTransitions ?? 0) + (holder === identity ? 0 : 1);
    await this.put({
      ...lease,
      spec: {
        ...lease.spec,
        ...spec,
        acquireTime: holder === identity ? lease.spec?.acquireTime : microTime(),
        leaseTransitions: transitions,
      },
    });
    this.renewed();
  }

  private renewed(): void {
    this.lastRenew = Date.now();
    if (!this.leading) this.setLeading(true);
    // If no renewal succeeds within the renew deadline, stop acting as leader even if the
    // API calls hang: another replica may take the lease once it expires.
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = setTimeout(() => {
      if (this.leading && Date.now() - this.lastRenew >= this.o.renewDeadlineMs) {
        this.o.log.warn('could not renew the leader lease within the renew deadline; stepping down');
        this.setLeading(false);
      }
    }, this.o.renewDeadlineMs);
    this.deadlineTimer.unref();
  }

  private setLeading(leading: boolean): void {
    if (this.leading === leading) return;
    this.leading = leading;
    this.o.log.info({ identity: this.o.identity, lease: `${this.o.namespace}/${this.o.name}` }, leading ? 'became leader' : 'no longer leader');
    if (leading) this.o.onStartedLeading();
    else this.o.onStoppedLeading();
  }
}
