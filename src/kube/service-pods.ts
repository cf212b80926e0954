// The pods behind a Service, by name, as its EndpointSlices list them (ready ones only):
// how a replica learns how many replicas of portico serve (its own Service's pods).
import type { KubeClient } from './client.ts';

interface SliceLike {
  endpoints?: { conditions?: { ready?: boolean }; targetRef?: { kind?: string; name?: string } }[];
}

/** Names of the ready pods of the Service "ns/name"; throws when the slices cannot be read. */
export async function readyPodsOf(client: KubeClient, service: string): Promise<Set<string>> {
  const [namespace, name] = service.split('/') as [string, string];
  const list = await client.request<{ items?: SliceLike[] }>('GET', `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`, {
    query: { labelSelector: `kubernetes.io/service-name=${name}` },
  });
  const names = new Set<string>();
  for (const slice of list.items ?? []) {
    for (const ep of slice.endpoints ?? []) {
      // An unset ready condition means ready (the EndpointSlice API's rule).
      if (ep.conditions?.ready === false || ep.targetRef?.kind !== 'Pod' || !ep.targetRef.name) continue;
      names.add(ep.targetRef.name);
    }
  }
  return names;
}
