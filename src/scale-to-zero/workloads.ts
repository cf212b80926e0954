// The Kubernetes calls scale-to-zero makes on a workload: read it, note its replica
// count before sleeping, and scale it through its `scale` subresource. Every write
// carries the resourceVersion it was decided on, so two replicas that decide at once
// cannot both act: the second gets 409 Conflict and reads again.
import type { KubeClient } from '../kube/client.ts';
import { KubeApiError } from '../kube/client.ts';
import type { SleepPolicy } from '../model/config.ts';
import { REPLICAS_BEFORE_SLEEP } from './policy.ts';

export interface WorkloadState {
  /** spec.replicas (1 when unset, as the API server defaults it). */
  readonly replicas: number;
  /** The replica count noted before the last sleep, if any. */
  readonly before: number | undefined;
  readonly resourceVersion: string;
}

type Target = SleepPolicy['target'];

interface WorkloadObject {
  metadata?: { resourceVersion?: string; annotations?: Record<string, string> };
  spec?: { replicas?: number };
}

export class Workloads {
  private readonly client: KubeClient;

  constructor(client: KubeClient) {
    this.client = client;
  }

  private path(namespace: string, target: Target): string {
    const plural = target.kind === 'Deployment' ? 'deployments' : 'statefulsets';
    return `/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/${plural}/${encodeURIComponent(target.name)}`;
  }

  /** The workload's state; undefined when it does not exist. */
  async read(namespace: string, target: Target): Promise<WorkloadState | undefined> {
    let obj: WorkloadObject;
    try {
      obj = await this.client.request<WorkloadObject>('GET', this.path(namespace, target));
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw err;
    }
    const noted = Number(obj.metadata?.annotations?.[REPLICAS_BEFORE_SLEEP]);
    return {
      replicas: obj.spec?.replicas ?? 1,
      before: Number.isSafeInteger(noted) && noted > 0 ? noted : undefined,
      resourceVersion: obj.metadata?.resourceVersion ?? '',
    };
  }

  /** Notes the replica count on the workload (portico.dev/replicas-before-sleep); returns the new resourceVersion. */
  async noteReplicas(namespace: string, target: Target, replicas: number, resourceVersion: string): Promise<string> {
    const obj = await this.client.request<WorkloadObject>('PATCH', this.path(namespace, target), {
      body: { metadata: { resourceVersion, annotations: { [REPLICAS_BEFORE_SLEEP]: String(replicas) } } },
      contentType: 'application/merge-patch+json',
    });
    return obj.metadata?.resourceVersion ?? '';
  }

  /** Sets spec.replicas through the scale subresource, if the workload is still at resourceVersion. */
  async scale(namespace: string, target: Target, replicas: number, resourceVersion: string): Promise<void> {
    await this.client.request('PATCH', `${this.path(namespace, target)}/scale`, {
      body: { metadata: { resourceVersion }, spec: { replicas } },
      contentType: 'application/merge-patch+json',
    });
  }
}
