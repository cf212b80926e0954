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

/** Users held in an array up to this many, in a Set beyond (detach is a scan of the array). */
const MAX_LISTED_USERS = 8;
const NO_USERS: readonly EndpointUser[] = [];

function isList(users: EndpointUser | readonly EndpointUser[]): users is readonly EndpointUser[] {
  return Array.isArray(users);
}

export class EndpointRegistry {
  /** Backends whose addresses moved after their routes were translated. */
  private readonly moved = new Map<string, readonly UpstreamAddress[]>();
  /**
   * The users of each backend: one as itself, a few in an array of their number, more in
   * a Set. Most backends serve the routes of one Ingress: a Set of two cost about 150
   * bytes, an array of two 64 (1 MB at 10,000 Ingresses with their routes compiled).
   */
  private readonly users = new Map<string, EndpointUser | readonly EndpointUser[] | Set<EndpointUser>>();
  /** Backends the control plane no longer follows: forgotten once no route of the table uses them. */
  private readonly released = new Set<string>();
  private readonly listeners: ((key: string, addresses: readonly UpstreamAddress[]) => void)[] = [];

  /** The addresses to send a backend's requests to now. */
  addresses(backend: BackendConfig): readonly UpstreamAddress[] {
    if (backend.error !== undefined) return backend.addresses;
    return this.moved.get(backend.key) ?? backend.addresses;
  }

  attach(key: string, user: EndpointUser): void {
    const users = this.users.get(key);
    if (users === undefined) {
      this.users.set(key, user);
    } else if (users instanceof Set) {
      users.add(user);
    } else if (!isList(users)) {
      if (users !== user) this.users.set(key, [users, user]);
    } else if (!users.includes(user)) {
      this.users.set(key, users.length < MAX_LISTED_USERS ? [...users, user] : new Set([...users, user]));
    }
  }

  detach(key: string, user: EndpointUser): void {
    const users = this.users.get(key);
    if (users === undefined) return;
    if (users instanceof Set) {
      users.delete(user);
      if (users.size === 0) this.users.delete(key);
    } else if (!isList(users)) {
      if (users === user) this.users.delete(key);
    } else {
      const i = users.indexOf(user);
      if (i < 0) return;
      if (users.length === 2) this.users.set(key, users[1 - i]!);
      else this.users.set(key, [...users.slice(0, i), ...users.slice(i + 1)]);
    }
  }

  /** The users of a backend, for a move. */
  private usersOf(key: string): Iterable<EndpointUser> {
    const users = this.users.get(key);
    if (users === undefined) return NO_USERS;
    if (users instanceof Set || isList(users)) return users;
    return [users];
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
      for (const user of this.usersOf(key)) user.setAddresses(addresses);
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
