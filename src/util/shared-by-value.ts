// One immutable object per distinct value, shared by everything that asks for the same
// value while any holder keeps it: the compiled state of a policy (a CIDR set, CORS
// rules) is the same for every route naming the same config, and 10,000 Ingresses make
// 20,000 and more routes. Entries go when no holder is left (WeakRef).
export class SharedByValue<T extends object> {
  private readonly values = new Map<string, WeakRef<T>>();
  private readonly forget = new FinalizationRegistry<string>((key) => {
    if (this.values.get(key)?.deref() === undefined) this.values.delete(key);
  });

  /** The value made by `make` for `key`, made once while held. */
  get(key: string, make: () => T): T {
    let value = this.values.get(key)?.deref();
    if (value === undefined) {
      value = make();
      this.values.set(key, new WeakRef(value));
      this.forget.register(value, key);
    }
    return value;
  }

  /** Distinct values held (tests). */
  get size(): number {
    return this.values.size;
  }
}
