// Ingress backends -> BackendConfig: the Service port named by the Ingress, and the
// ready addresses of that port in the Service's EndpointSlices.
//
// Results are memoized per Service: an entry stays valid while the Service object
// and its EndpointSlice objects are the same objects (the store replaces objects on
// change, never mutates them). A recomputed result that equals the previous one is
// replaced by the previous object, so routes keep their identity when a slice changes
// without changing the ready addresses.
import type { BackendConfig, BackendError, Severity, Snapshot, TranslateOptions, UpstreamAddress } from '../model/config.ts';
import { SERVICE_NAME_LABEL } from '../model/k8s.ts';
import type { EndpointSlice, IngressBackend, Service, ServicePort } from '../model/k8s.ts';
import { sleepPolicyOf } from '../scale-to-zero/policy.ts';
import { exactLength } from '../util/exact-length.ts';
import { flatString } from '../util/flat-string.ts';
import { SmallMap } from '../util/small-map.ts';

/** What is wrong with a backend, relative to the backend's field path (e.g. ".service.port.name"). */
export interface BackendIssue {
  readonly severity: Severity;
  readonly reason: BackendError;
  readonly field: string;
  readonly detail: string;
}

export interface BackendResult {
  readonly config: BackendConfig;
  readonly issue?: BackendIssue;
  /** "ns/service" this result was computed from; absent when it depends on the Ingress alone. */
  readonly serviceKey?: string;
}

interface ServiceEntry {
  service: Service | undefined;
  slices: EndpointSlice[];
  /** Last rebuild this entry was checked against the snapshot. */
  epoch: number;
  /** By port (one or two for most Services: a Map each cost about 250 bytes at 10,000 Services). */
  results: SmallMap<BackendResult>;
  /** Results before the last change, to reuse equal ones. */
  previous: SmallMap<BackendResult> | undefined;
}

export class BackendResolver {
  private readonly services = new Map<string, ServiceEntry>();
  /** Results that depend on nothing but the Ingress (resource backends, malformed refs). */
  private readonly fixed = new Map<string, BackendResult>();
  private epoch = 0;
  private snapshot: Snapshot | undefined;
  private options: TranslateOptions | undefined;

  /** Call once per rebuild, before any resolve(). */
  begin(snapshot: Snapshot, options: TranslateOptions): void {
    this.epoch++;
    this.snapshot = snapshot;
    this.options = options;
  }

  /** Forget Services no rebuild asked about since begin(); call after a rebuild. */
  prune(): void {
    for (const [key, entry] of this.services) if (entry.epoch !== this.epoch) this.services.delete(key);
  }

  resolve(namespace: string, backend: IngressBackend): BackendResult {
    const svc = backend.service;
    if (!svc) {
      const res = backend.resource;
      const key = res ? `${namespace}/${res.kind}:${res.name}` : `${namespace}/:`;
      return this.fixedResult(key, () =>
        invalid(key, namespace, '', '', res ? '.resource' : '', res ? 'resource backends are not supported; use a Service backend' : 'backend has no service'),
      );
    }
    const portRef = svc.port;
    const port = portRef?.number !== undefined ? String(portRef.number) : portRef?.name;
    if (port === undefined || port === '') {
      const key = `${namespace}/${svc.name}:`;
      return this.fixedResult(key, () => invalid(key, namespace, svc.name, '', '.service.port', 'must give a port number or a port name'));
    }
    const serviceKey = `${namespace}/${svc.name}`;
    const entry = this.serviceEntry(serviceKey);
    let result = entry.results.get(port);
    if (!result) {
      result = { ...computeBackend(namespace, svc.name, portRef!.number, portRef!.name, entry, this.options!), serviceKey };
      const before = entry.previous?.get(port);
      if (before && sameBackend(before, result)) result = before;
      entry.results.set(port, result);
    }
    return result;
  }

  /**
   * The slices of Service `serviceKey` changed: what each of its resolved ports resolves
   * to now, as [key, addresses] for the ports whose ready addresses changed. 'structural'
   * when anything else about a port changed too (an error, a problem's text, the
   * protocol): then the readers must be translated again. Call after begin().
   */
  recheck(serviceKey: string): (readonly [string, readonly UpstreamAddress[]])[] | 'structural' {
    const known = this.services.get(serviceKey);
    if (known === undefined) return [];
    const before = known.results;
    const entry = this.serviceEntry(serviceKey);
    if (entry.results === before) return [];
    const out: (readonly [string, readonly UpstreamAddress[]])[] = [];
    const namespace = serviceKey.slice(0, serviceKey.indexOf('/'));
    const name = serviceKey.slice(serviceKey.indexOf('/') + 1);
    for (const [port, old] of before.entries()) {
      const fresh = this.resolve(namespace, { service: { name, port: /^\d+$/.test(port) ? { number: Number(port) } : { name: port } } });
      if (fresh === old) continue;
      if (!sameExceptAddresses(old, fresh)) return 'structural';
      out.push([fresh.config.key, fresh.config.addresses]);
    }
    return out;
  }

  /** The result for `port` of `serviceKey` resolved since begin(), if any. */
  current(serviceKey: string, port: string): BackendResult | undefined {
    const entry = this.services.get(serviceKey);
    return entry?.epoch === this.epoch ? entry.results.get(port) : undefined;
  }

  /**
   * resolve(namespace, backend) === result, but without building key strings in
   * the common case: this runs for every backend of every Ingress on every rebuild.
   */
  isCurrent(namespace: string, backend: IngressBackend, result: BackendResult): boolean {
    const serviceKey = result.serviceKey;
    if (serviceKey === undefined) return this.resolve(namespace, backend) === result;
    const current = this.serviceEntry(serviceKey).results.get(result.config.port);
    return current !== undefined ? current === result : this.resolve(namespace, backend) === result;
  }

  private fixedResult(key: string, make: () => BackendResult): BackendResult {
    let result = this.fixed.get(key);
    if (!result) this.fixed.set(key, (result = make()));
    return result;
  }

  private serviceEntry(key: string): ServiceEntry {
    let entry = this.services.get(key);
    if (entry?.epoch === this.epoch) return entry;
    const snapshot = this.snapshot!;
    const service = snapshot.services.get(key);
    const sliceMap = snapshot.endpointSlicesByService.get(key);
    if (!entry) {
      entry = { service, slices: sliceMap ? [...sliceMap.values()] : [], epoch: this.epoch, results: new SmallMap(), previous: undefined };
      this.services.set(key, entry);
      return entry;
    }
    entry.epoch = this.epoch;
    if (entry.service !== service || !sameSlices(entry.slices, sliceMap)) {
      entry.service = service;
      entry.slices = sliceMap ? [...sliceMap.values()] : [];
      entry.previous = entry.results;
      entry.results = new SmallMap();
    }
    return entry;
  }
}

/** The map holds exactly these slice objects, in this order (no allocation: this runs for every Service on every rebuild). */
function sameSlices(known: readonly EndpointSlice[], current: ReadonlyMap<string, EndpointSlice> | undefined): boolean {
  if (!current) return known.length === 0;
  if (current.size !== known.length) return false;
  let i = 0;
  for (const slice of current.values()) if (slice !== known[i++]) return false;
  return true;
}

function sameBackend(a: BackendResult, b: BackendResult): boolean {
  const x = a.config;
  const y = b.config;
  if (x.key !== y.key || x.error !== y.error || x.appProtocol !== y.appProtocol || x.sleep !== y.sleep || x.addresses.length !== y.addresses.length) return false;
  for (let i = 0; i < x.addresses.length; i++) {
    if (x.addresses[i]!.host !== y.addresses[i]!.host || x.addresses[i]!.port !== y.addresses[i]!.port) return false;
  }
  const p = a.issue;
  const q = b.issue;
  return p === q || (p !== undefined && q !== undefined && p.reason === q.reason && p.field === q.field && p.detail === q.detail && p.severity === q.severity);
}

/** The same backend but for its ready addresses (and the same problem, if any). */
function sameExceptAddresses(a: BackendResult, b: BackendResult): boolean {
  const x = a.config;
  const y = b.config;
  if (x.key !== y.key || x.error !== y.error || x.appProtocol !== y.appProtocol || x.sleep !== y.sleep) return false;
  const p = a.issue;
  const q = b.issue;
  return p === q || (p !== undefined && q !== undefined && p.reason === q.reason && p.field === q.field && p.detail === q.detail && p.severity === q.severity);
}

function invalid(key: string, namespace: string, service: string, port: string, field: string, detail: string): BackendResult {
  return {
    config: { key, namespace, service, port, addresses: [], error: 'InvalidBackend' },
    issue: { severity: 'error', reason: 'InvalidBackend', field, detail },
  };
}

function computeBackend(
  namespace: string,
  name: string,
  portNumber: number | undefined,
  portName: string | undefined,
  entry: ServiceEntry,
  options: TranslateOptions,
): BackendResult {
  const port = portNumber !== undefined ? String(portNumber) : portName!;
  // Kept in the config of every route to the port: flat, not three pieces.
  const key = flatString(`${namespace}/${name}:${port}`);
  const svcName = `Service ${namespace}/${name}`;
  const fail = (error: BackendError, field: string, detail: string, severity: Severity = 'error', appProtocol?: string): BackendResult => ({
    config: { key, namespace, service: name, port, addresses: [], error, ...(appProtocol ? { appProtocol } : {}) },
    issue: { severity, reason: error, field, detail },
  });

  const service = entry.service;
  if (!service) return fail('ServiceNotFound', '.service.name', `${svcName} not found`);

  const portField = portNumber !== undefined ? '.service.port.number' : '.service.port.name';
  const servicePort: ServicePort | undefined =
    portNumber !== undefined ? service.spec?.ports?.find((p) => p.port === portNumber) : service.spec?.ports?.find((p) => p.name === portName);
  const appProtocol = servicePort?.appProtocol;

  if (service.spec?.type === 'ExternalName') {
    if (!options.allowExternalName) {
      return fail('ExternalNameDisabled', '.service.name', `${svcName} is of type ExternalName, which portico only routes to with --allow-external-name`);
    }
    // ExternalName Services often list no ports: a port number from the Ingress is used as is.
    const target = servicePort?.port ?? portNumber;
    if (target === undefined) return fail('PortNotFound', portField, `${svcName} has no port named ${JSON.stringify(portName)}`);
    const externalName = service.spec.externalName;
    if (!externalName) return fail('NoEndpoints', '.service.name', `${svcName} is of type ExternalName but has no spec.externalName`, 'warning');
    return {
      config: { key, namespace, service: name, port, addresses: [{ host: externalName.toLowerCase(), port: target }], ...(appProtocol ? { appProtocol } : {}) },
    };
  }

  if (!servicePort) {
    return fail('PortNotFound', portField, portNumber !== undefined ? `${svcName} has no port ${portNumber}` : `${svcName} has no port named ${JSON.stringify(portName)}`);
  }
  const addresses = readyAddresses(entry.slices, servicePort.name ?? '');
  // A Service that sleeps when idle: no endpoints is its normal state while asleep, and
  // the proxy holds requests until it wakes (src/scale-to-zero).
  const sleep = sleepPolicyOf(service).policy;
  if (sleep !== undefined) {
    return { config: { key, namespace, service: name, port, addresses, ...(appProtocol ? { appProtocol } : {}), sleep } };
  }
  if (addresses.length === 0) {
    const why = whyNoEndpoints(entry.slices, servicePort.name ?? '', namespace, name);
    return fail('NoEndpoints', '.service', `${svcName} port ${servicePort.port} has no ready endpoints: ${why}`, 'warning', appProtocol);
  }
  return { config: { key, namespace, service: name, port, addresses, ...(appProtocol ? { appProtocol } : {}) } };
}

/**
 * Why readyAddresses found nothing, in the user's terms: the usual mistakes are a slice
 * without the service-name label and a slice port named differently from the Service port.
 */
export function whyNoEndpoints(slices: readonly EndpointSlice[], portName: string, namespace: string, service: string): string {
  if (slices.length === 0) return `no EndpointSlice in namespace ${namespace} is labelled ${SERVICE_NAME_LABEL}=${service}`;
  const usable = slices.filter((slice) => slice.addressType !== 'FQDN');
  if (usable.length === 0) return 'its EndpointSlices are of addressType FQDN, which portico does not route to';
  const names = new Set<string>();
  let named = false;
  let endpoints = 0;
  let notReady = 0;
  for (const slice of usable) {
    for (const p of slice.ports ?? []) names.add(JSON.stringify(p.name ?? ''));
    if (!slice.ports?.some((p) => (p.name ?? '') === portName && p.port !== undefined)) continue;
    named = true;
    for (const endpoint of slice.endpoints ?? []) {
      endpoints++;
      if (endpoint.conditions?.ready === false) notReady++;
    }
  }
  if (!named) {
    const wanted = portName === '' ? 'an unnamed port' : `a port named ${JSON.stringify(portName)}`;
    return `its EndpointSlices have no ${wanted.replace(/^an? /, '')}, as the Service port is named (their ports: ${[...names].join(', ') || 'none'})`;
  }
  if (endpoints === 0) return 'its EndpointSlices list no endpoints';
  return `${notReady} of ${endpoints} endpoints are not ready`;
}

/** Ready endpoint addresses on the slice port named like the Service port, deduplicated and sorted. */
export function readyAddresses(slices: readonly EndpointSlice[], portName: string): UpstreamAddress[] {
  const seen = new Set<string>();
  const out: UpstreamAddress[] = [];
  for (const slice of slices) {
    if (slice.addressType === 'FQDN') continue;
    const slicePort = slice.ports?.find((p) => (p.name ?? '') === portName && p.port !== undefined);
    if (!slicePort) continue;
    const port = slicePort.port!;
    for (const endpoint of slice.endpoints ?? []) {
      // Absent "ready" means ready (EndpointSlice API); a terminating endpoint is reported not ready.
      if (endpoint.conditions?.ready === false) continue;
      // The addresses of one endpoint are fungible (same pod): use the first, as kube-proxy does.
      const host = endpoint.addresses?.[0];
      if (!host) continue;
      const id = `${host}|${port}`;
      if (seen.has(id)) continue;
      seen.add(id);
      out.push({ host, port });
    }
  }
  out.sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : a.port - b.port));
  return exactLength(out);
}
