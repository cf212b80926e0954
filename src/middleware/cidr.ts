// CIDR lists ("10.0.0.0/8, 2001:db8::/32 192.168.1.7"), shared by the IP filters and
// --trusted-proxies. Parsing keeps the valid entries and names the invalid ones, so a
// typo costs one entry, not the whole list. Matching uses node:net BlockList.
import { SharedByValue } from '../util/shared-by-value.ts';
import { exactLength } from '../util/exact-length.ts';
import { flatString } from '../util/flat-string.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { BlockList, isIP } = process.getBuiltinModule('node:net');

export interface ParsedCidrList {
  /** Valid entries, normalized to "address/prefix". */
  readonly valid: readonly string[];
  /** Entries that are not an IP address or CIDR, as written. */
  readonly invalid: readonly string[];
}

/** Splits on commas and whitespace; empty entries are dropped. */
export function splitList(text: string): string[] {
  return text.split(/[\s,]+/).filter((s) => s !== '');
}

/** "10.0.0.0/8" or "1.2.3.4" (a single address: /32 or /128) -> "address/prefix"; undefined if invalid. */
export function normalizeCidr(entry: string): string | undefined {
  const slash = entry.indexOf('/');
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const family = isIP(address);
  if (family === 0) return undefined;
  const max = family === 4 ? 32 : 128;
  if (slash === -1) return `${address.toLowerCase()}/${max}`;
  const prefixText = entry.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  if (prefix > max) return undefined;
  return `${address.toLowerCase()}/${prefix}`;
}

export function parseCidrList(text: string): ParsedCidrList {
  const valid: string[] = [];
  const invalid: string[] = [];
  for (const entry of splitList(text)) {
    const cidr = normalizeCidr(entry);
    if (cidr === undefined) invalid.push(entry);
    else if (!valid.includes(cidr)) valid.push(flatString(cidr));
  }
  // Kept in the policy config of each Ingress naming the list: flat entries (not
  // `${address}/${prefix}` pieces and a slice of the annotation) in a store of the list's length.
  return { valid: exactLength(valid), invalid };
}

/** "::ffff:1.2.3.4" -> "1.2.3.4"; "fe80::1%eth0" -> "fe80::1"; anything else unchanged. */
export function canonicalIp(ip: string): string {
  if (ip.length > 7 && ip.charCodeAt(0) === 0x3a /* : */ && ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4) return ip.slice(7);
  const zone = ip.indexOf('%');
  return zone === -1 ? ip : ip.slice(0, zone);
}

/** A set of address ranges, matched against client addresses (IPv4, IPv6, IPv4-mapped IPv6). */
export class CidrSet {
  private readonly list = new BlockList();
  readonly size: number;

  /** `cidrs`: normalized entries, as ParsedCidrList.valid holds them. */
  constructor(cidrs: readonly string[]) {
    for (const cidr of cidrs) {
      const slash = cidr.lastIndexOf('/');
      const address = cidr.slice(0, slash);
      const family = isIP(address) === 4 ? 'ipv4' : 'ipv6';
      this.list.addSubnet(address, Number(cidr.slice(slash + 1)), family);
    }
    this.size = cidrs.length;
  }

  /** false for anything that is not an IP address (an empty peer address, say). */
  has(ip: string): boolean {
    if (this.size === 0) return false;
    const address = canonicalIp(ip);
    const family = isIP(address);
    if (family === 0) return false;
    return this.list.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }
}

/**
 * One CidrSet per distinct list, shared by every route that names it: each is a native
 * BlockList (a few KB of malloc), and 10,000 Ingresses with the same allow-list compile
 * 40,000 routes. Entries go when no route holds their set any more.
 */
const sharedSets = new SharedByValue<CidrSet>();

/** The CidrSet of `cidrs` (normalized entries), shared with routes that name the same list. */
export function sharedCidrSet(cidrs: readonly string[]): CidrSet {
  return sharedSets.get(cidrs.join(' '), () => new CidrSet(cidrs));
}
