// The live addresses of each backend ("ns/service:port"), which the forwarders of every
// route to it read. An EndpointSlice change that only moves ready addresses updates an
// entry here, and with it the balancers and pools of the routes in service: no route
// is translated, compiled or matched again. A route built from an older translation
// than the last endpoint change of its backend takes the addresses from here too.
import type { BackendConfig, EndpointUpdate, UpstreamAddress } from '../model/config.ts';

/** Something serving a backend's addresses (a route's forwarder). */
export interface EndpointUser {
  setAddresses(addresses: readonly UpstreamAddress[]): void;
}

export class EndpointRegistry {
  /** Backends whose addresses moved after their routes were translated. */
  private readonly moved = new Map<string, readonly UpstreamAddress[]>();
  private readonly users = new Map<string, Set<EndpointUser>>();
  /** Backends the control plane no longer follows: forgotten once no route of the table uses them. */
  private readonly released = new Set<string>();
  private readonly listeners: ((key: string, addresses: readonly UpstreamAddress[]) => void)[] = [];

  /** The addresses to send a backend's requests to now. */
  addresses(backend: BackendConfig): readonly UpstreamAddress[] {
    if (backend.error !== undefined) return backend.addresses;
    return this.moved.get(backend.key) ?? backend.addresses;
  }

  attach(key: string, user: EndpointUser): void {
    let set = this.users.get(key);
    if (set === undefined) this.users.set(key, (set = new Set()));
    set.add(user);
  }

  detach(key: string, user: EndpointUser): void {
    const set = this.users.get(key);
    if (set === undefined) return;
    set.delete(user);
    if (set.size === 0) this.users.delete(key);
  }

  /** Called with each backend whose addresses moved (the pools count what routes use). */
  onMove(listener: (key: string, addresses: readonly UpstreamAddress[]) => void): void {
    this.listeners.push(listener);
  }

  /** Moves backends to their new addresses; `replace`: these are all there are (a worker's first message). */
  apply(updates: readonly EndpointUpdate[], replace = false): void {
    if (replace) for (const key of this.moved.keys()) this.released.add(key);
    for (const [key, addresses] of updates) {
      if (addresses === null) {
        this.released.add(key);
        continue;
      }
      this.released.delete(key);
      if (this.moved.get(key) === addresses) continue;
      this.moved.set(key, addresses);
      for (const listener of this.listeners) listener(key, addresses);
      for (const user of this.users.get(key) ?? []) user.setAddresses(addresses);
    }
  }

  /**
   * After a swap: backends the control plane let go of and that no route in service uses
   * are forgotten (while one does, its routes' own addresses may be older than these).
   */
  sweep(): void {
    for (const key of this.released) {
      if (this.users.has(key)) continue;
      this.released.delete(key);
      this.moved.delete(key);
    }
  }

  /** Backends with moved addresses (for tests and /debug output). */
  get size(): number {
    return this.moved.size;
  }
}
