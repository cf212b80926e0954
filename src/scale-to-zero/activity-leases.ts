// How portico replicas agree on when a Service was last used: one coordination.k8s.io
// Lease per sleepable Service, "portico-activity-<service>" in its namespace, whose
// spec.renewTime is the last request any replica saw. A replica writes it at most once
// per sleep-after/4 while the Service is active, never per request. The leader reads
// it before putting the Service to sleep, and marks the Lease with the resourceVersion
// it read: if any replica wrote activity in between, that write fails (409) and the
// Service stays awake.
import type { KubeClient } from '../kube/client.ts';
import { KubeApiError } from '../kube/client.ts';

const SLEPT_AT = 'portico.dev/slept-at';

interface Lease {
  metadata?: { resourceVersion?: string; annotations?: Record<string, string> };
  spec?: { renewTime?: string; holderIdentity?: string };
}

export interface ActivityRecord {
  /** Date.now() scale; 0 when the Lease has no renewTime. */
  readonly lastActive: number;
  readonly resourceVersion: string;
}

/** RFC 3339 with microseconds, as Lease times are written (MicroTime). */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '000Z');
}

export function activityLeaseName(service: string): string {
  return `portico-activity-${service}`;
}

export class ActivityLeases {
  private readonly client: KubeClient;
  private readonly identity: string;

  constructor(client: KubeClient, identity: string) {
    this.client = client;
    this.identity = identity;
  }

  private path(namespace: string, name?: string): string {
    const base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
    return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
  }

  /** The shared record of a Service; undefined when no replica wrote one yet. */
  async read(namespace: string, service: string): Promise<ActivityRecord | undefined> {
    try {
      const lease = await this.client.request<Lease>('GET', this.path(namespace, activityLeaseName(service)));
      const at = Date.parse(lease.spec?.renewTime ?? '');
      return { lastActive: Number.isNaN(at) ? 0 : at, resourceVersion: lease.metadata?.resourceVersion ?? '' };
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  /** Records activity at `at` (Date.now() scale). */
  async touch(namespace: string, service: string, at: number): Promise<void> {
    const name = activityLeaseName(service);
    const spec = { renewTime: microTime(at), holderIdentity: this.identity };
    try {
      await this.client.request('PATCH', this.path(namespace, name), { body: { spec }, contentType: 'application/merge-patch+json' });
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 404)) throw err;
      await this.create(namespace, service, spec, undefined).catch((e: unknown) => {
        // Another replica created it meanwhile: write over it.
        if (!(e instanceof KubeApiError && e.status === 409)) throw e;
        return this.client.request('PATCH', this.path(namespace, name), { body: { spec }, contentType: 'application/merge-patch+json' });
      });
    }
  }

  /**
   * The leader's claim before a sleep: succeeds only if nobody wrote since `read` (or,
   * with no record, nobody created one). Returns false when someone did.
   */
  async claimSleep(namespace: string, service: string, read: ActivityRecord | undefined, lastActive: number): Promise<boolean> {
    const annotations = { [SLEPT_AT]: new Date().toISOString() };
    try {
      if (read === undefined) {
        await this.create(namespace, service, { renewTime: microTime(lastActive), holderIdentity: this.identity }, annotations);
      } else {
        await this.client.request('PATCH', this.path(namespace, activityLeaseName(service)), {
          body: { metadata: { resourceVersion: read.resourceVersion, annotations } },
          contentType: 'application/merge-patch+json',
        });
      }
      return true;
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 409) return false;
      throw err;
    }
  }

  private create(namespace: string, service: string, spec: Lease['spec'], annotations: Record<string, string> | undefined): Promise<unknown> {
    return this.client.request('POST', this.path(namespace), {
      body: {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: activityLeaseName(service), namespace, labels: { 'app.kubernetes.io/managed-by': 'portico' }, ...(annotations ? { annotations } : {}) },
        spec,
      },
    });
  }
}
