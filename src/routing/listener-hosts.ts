// Gateway listeners sharing a port are told apart by hostname before any route is
// looked at: a request goes to the most specific listener whose hostname covers its
// Host (exact, then the longest wildcard, then a listener without hostname), and only
// the routes attached to that listener can serve it (listener isolation).

export class ListenerHosts<T> {
  private readonly exact = new Map<string, T>();
  /** "*.foo.com" is stored under "foo.com". */
  private readonly wildcard = new Map<string, T>();
  private readonly any: T | undefined;
  /** As given: a table patch makes a new ListenerHosts from it. */
  readonly byHostname: ReadonlyMap<string, T>;

  constructor(byHostname: ReadonlyMap<string, T>) {
    this.byHostname = byHostname;
    let any: T | undefined;
    for (const [hostname, value] of byHostname) {
      if (hostname === '') any = value;
      else if (hostname.startsWith('*.')) this.wildcard.set(hostname.slice(2), value);
      else this.exact.set(hostname, value);
    }
    this.any = any;
  }

  /** The value of the listener that takes `host`, or undefined when none does. */
  select(host: string): T | undefined {
    const exact = this.exact.get(host);
    if (exact !== undefined) return exact;
    if (this.wildcard.size > 0) {
      for (let dot = host.indexOf('.'); dot > 0; dot = host.indexOf('.', dot + 1)) {
        const hit = this.wildcard.get(host.slice(dot + 1));
        if (hit !== undefined) return hit;
      }
    }
    return this.any;
  }
}
