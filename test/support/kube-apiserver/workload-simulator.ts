// A stand-in for the Deployment/StatefulSet controller plus the EndpointSlice controller,
// for one workload behind one Service: it follows the workload's spec.replicas (whatever
// wrote it) and, after a boot delay, publishes ready endpoints and the workload's status;
// at 0 it withdraws the endpoints at once. Tests of scale-to-zero drive it through the
// API (the scale subresource) and see what a real cluster would show.
import { findByKind, resourceId, type ResourceKind } from './kinds.ts';
import type { Registry } from './registry.ts';
import { objectKey, type KubeObj, type StoreEvent } from './store.ts';

export interface WorkloadAddress {
  ip: string;
  port: number;
}

export interface SimulateWorkloadOptions {
  kind: 'Deployment' | 'StatefulSet';
  /** Default "default". */
  namespace?: string;
  name: string;
  /** The Service whose EndpointSlices carry the pods (label kubernetes.io/service-name). */
  service: string;
  /** One per pod, in order: N replicas publish the first min(N, addresses.length). */
  addresses: WorkloadAddress[];
  /** The EndpointSlice port's name (the Service port's name); unnamed when absent. */
  portName?: string;
  /** How long a scale-up takes until its pods are ready (endpoints published). Default 0. */
  bootDelayMs?: number;
  /**
   * Called with the replicas at start (if the workload exists) and on each change of
   * spec.replicas, before the endpoints change (e.g. to start a backend late).
   */
  onScale?: (replicas: number) => void;
}

export interface WorkloadSimulation {
  /** spec.replicas values seen, in order (the value at start first, if the workload existed). */
  readonly scaleHistory: number[];
  /** The EndpointSlices it writes: one per distinct port among the addresses. */
  readonly sliceNames: string[];
  /** Ready endpoints currently published. */
  readonly readyEndpoints: number;
  /** Resolves once exactly `count` ready endpoints are published; rejects if stopped first. */
  waitForEndpoints(count: number): Promise<void>;
  /** Stops following the workload; cancels a pending boot. The slices stay as they are. */
  stop(): void;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const SLICE_KIND = findByKind('EndpointSlice')!;
const SERVICE_KIND = findByKind('Service')!;

function replicasOf(obj: KubeObj | undefined): number {
  const spec = obj && isObject(obj.spec) ? obj.spec : undefined;
  return typeof spec?.replicas === 'number' ? spec.replicas : 0;
}

export class WorkloadSimulator implements WorkloadSimulation {
  readonly scaleHistory: number[] = [];
  readonly sliceNames: string[];
  private readonly registry: Registry;
  private readonly resource: ResourceKind;
  private readonly namespace: string;
  private readonly key: string;
  private readonly options: SimulateWorkloadOptions;
  private readonly ports: number[];
  private readonly unsubscribe: () => void;
  private readonly onStop: (s: WorkloadSimulator) => void;
  private readonly waiters: { count: number; resolve: () => void; reject: (err: Error) => void }[] = [];
  private observed: number | undefined;
  private published = 0;
  private bootTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(registry: Registry, options: SimulateWorkloadOptions, onStop: (s: WorkloadSimulator) => void) {
    const resource = findByKind(options.kind, 'apps/v1');
    if (!resource?.scaleSubresource) throw new Error(`kube-apiserver: simulateWorkload needs kind Deployment or StatefulSet, not ${options.kind}`);
    if (options.addresses.length === 0) throw new Error('kube-apiserver: simulateWorkload needs at least one address');
    this.registry = registry;
    this.resource = resource;
    this.options = options;
    this.namespace = options.namespace ?? 'default';
    this.key = objectKey(resource, this.namespace, options.name);
    this.ports = [...new Set(options.addresses.map((a) => a.port))];
    this.sliceNames = this.ports.map((port) => `${options.service}-sim-${port}`);
    this.onStop = onStop;
    const id = resourceId(resource);
    this.unsubscribe = registry.store.subscribe((event: StoreEvent) => {
      if (resourceId(event.resource) === id && event.key === this.key) this.observe(event.type === 'DELETED' ? 0 : replicasOf(event.object));
    });
    this.writeSlices();
    const current = registry.store.get(resource, this.key);
    if (current) this.observe(replicasOf(current));
  }

  get readyEndpoints(): number {
    return this.published;
  }

  waitForEndpoints(count: number): Promise<void> {
    if (this.published === count) return Promise.resolve();
    if (this.stopped) return Promise.reject(new Error('workload simulation stopped'));
    return new Promise((resolve, reject) => this.waiters.push({ count, resolve, reject }));
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.unsubscribe();
    clearTimeout(this.bootTimer);
    for (const w of this.waiters.splice(0)) w.reject(new Error('workload simulation stopped'));
    this.onStop(this);
  }

  /**
   * A store listener must not write (a nested write would reach other watchers before the
   * event being delivered), so the reaction runs as a microtask, after the write's fan-out.
   */
  private observe(replicas: number): void {
    if (replicas === this.observed) return;
    this.observed = replicas;
    this.scaleHistory.push(replicas);
    clearTimeout(this.bootTimer);
    this.bootTimer = undefined;
    queueMicrotask(() => {
      if (this.stopped || this.observed !== replicas) return;
      this.options.onScale?.(replicas);
      if (this.stopped || this.observed !== replicas) return;
      // Scaling down or to zero withdraws endpoints at once; scaling up waits for the boot.
      const ready = Math.min(this.published, replicas);
      if (ready !== this.published) this.publish(ready);
      this.writeStatus(replicas, replicas === 0 ? 0 : ready);
      if (replicas === 0) return;
      this.bootTimer = setTimeout(() => {
        this.bootTimer = undefined;
        if (this.stopped || this.observed !== replicas) return;
        this.publish(Math.min(replicas, this.options.addresses.length));
        this.writeStatus(replicas, replicas);
      }, this.options.bootDelayMs ?? 0);
    });
  }

  private publish(count: number): void {
    this.published = count;
    this.writeSlices();
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      if (this.waiters[i]!.count === count) this.waiters.splice(i, 1)[0]!.resolve();
    }
  }

  /** The Service's slices as the EndpointSlice controller keeps them: present, with endpoints [] when nothing is ready. */
  private writeSlices(): void {
    const { service, portName, addresses, name } = this.options;
    const svc = this.registry.store.get(SERVICE_KIND, objectKey(SERVICE_KIND, this.namespace, service));
    const podPrefix = this.resource.kind === 'StatefulSet' ? name : `${name}-sim`;
    this.ports.forEach((port, p) => {
      const endpoints = addresses
        .slice(0, this.published)
        .map((a, i) => ({ a, i }))
        .filter(({ a }) => a.port === port)
        .map(({ a, i }) => ({
          addresses: [a.ip],
          conditions: { ready: true, serving: true, terminating: false },
          targetRef: { kind: 'Pod', namespace: this.namespace, name: `${podPrefix}-${i}` },
        }));
      const metadata: Record<string, unknown> = {
        name: this.sliceNames[p],
        namespace: this.namespace,
        labels: { 'kubernetes.io/service-name': service, 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' },
      };
      if (svc) metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Service', name: service, uid: svc.metadata.uid, controller: true, blockOwnerDeletion: true }];
      const port0: Record<string, unknown> = { port, protocol: 'TCP' };
      if (portName) port0.name = portName;
      const existing = this.registry.store.get(SLICE_KIND, objectKey(SLICE_KIND, this.namespace, this.sliceNames[p]!));
      this.registry.apply({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: existing ? { ...existing.metadata, ...metadata } : metadata,
        addressType: 'IPv4',
        ports: [port0],
        endpoints,
      } as KubeObj);
    });
  }

  /** The workload's status as its controller reports it (zero counts are omitted on the wire, as omitempty does). */
  private writeStatus(replicas: number, ready: number): void {
    const current = this.registry.store.get(this.resource, this.key);
    if (!current) return;
    const status: Record<string, number> = { observedGeneration: current.metadata.generation ?? 1 };
    const counts: Record<string, number> = { replicas, updatedReplicas: replicas, readyReplicas: ready, availableReplicas: ready };
    if (this.resource.kind === 'StatefulSet') counts.currentReplicas = replicas;
    for (const [field, value] of Object.entries(counts)) if (value) status[field] = value;
    // A StatefulSet's replicas and availableReplicas have no omitempty.
    if (this.resource.kind === 'StatefulSet') {
      status.replicas = replicas;
      status.availableReplicas = ready;
    }
    this.registry.update(this.resource, this.namespace, this.options.name, { ...current, status }, 'status');
  }
}
