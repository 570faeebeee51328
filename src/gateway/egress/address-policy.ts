/**
 * Which resolved addresses the egress listener may connect to (docs/gateway.md#address-policy).
 * Loopback, private, link-local, shared (CGNAT), unique-local, unspecified, multicast and other
 * non-public ranges are refused, in IPv4 and IPv6, unless the installation allows a range with
 * GATEWAY_EGRESS_PRIVATE_CIDRS: a signed destination is a name, and a name can resolve anywhere,
 * the cluster's own Services and the node's metadata endpoint included. The check applies to the
 * address then connected to, never to the name, so a second resolution cannot change it.
 *
 * IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`) are judged as the IPv4 address they carry (Node's
 * BlockList does so), and so are the NAT64 well-known prefix's (`64:ff9b::/96`), which a DNS64
 * resolver answers for IPv4-only hosts.
 */
import { BlockList, isIP } from "node:net";

export type IpFamily = "ipv4" | "ipv6";

export interface Cidr {
  address: string;
  prefix: number;
  family: IpFamily;
}

/** `address/prefix`, or undefined when it is not one. */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf("/");
  if (slash < 0) return undefined;
  const address = text.slice(0, slash);
  const rawPrefix = text.slice(slash + 1);
  const version = isIP(address);
  if (version === 0 || !/^[0-9]{1,3}$/.test(rawPrefix)) return undefined;
  const prefix = Number(rawPrefix);
  if (prefix > (version === 4 ? 32 : 128)) return undefined;
  return { address: address.toLowerCase(), prefix, family: version === 4 ? "ipv4" : "ipv6" };
}

/** The refused ranges, by the words the refusal uses for them. */
const SPECIAL_RANGES: ReadonlyArray<readonly [kind: string, cidrs: readonly string[]]> = [
  ["a loopback", ["127.0.0.0/8", "::1/128"]],
  ["an unspecified", ["0.0.0.0/8", "::/128"]],
  ["a private", ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]],
  ["a shared (CGNAT)", ["100.64.0.0/10"]],
  ["a link-local", ["169.254.0.0/16", "fe80::/10"]],
  ["a unique-local", ["fc00::/7", "fec0::/10"]],
  ["a multicast", ["224.0.0.0/4", "ff00::/8"]],
  [
    "a reserved",
    [
      "192.0.0.0/24",
      "192.0.2.0/24",
      "198.18.0.0/15",
      "198.51.100.0/24",
      "203.0.113.0/24",
      "240.0.0.0/4",
      "100::/64",
      "2001:db8::/32",
    ],
  ],
];

function blockListOf(cidrs: readonly Cidr[]): BlockList {
  const list = new BlockList();
  for (const c of cidrs) list.addSubnet(c.address, c.prefix, c.family);
  return list;
}

const SPECIAL = SPECIAL_RANGES.map(
  ([kind, cidrs]) => [kind, blockListOf(cidrs.map((c) => parseCidr(c) as Cidr))] as const,
);

const NAT64 = /^64:ff9b::([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;

/** The IPv4 address a NAT64 well-known-prefix address carries; undefined for any other. */
function nat64Embedded(address: string): string | undefined {
  // The URL parser writes an IPv6 address in its one canonical form.
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const m = NAT64.exec(canonical);
  if (m === null) return undefined;
  const hi = Number.parseInt(m[1] as string, 16);
  const lo = Number.parseInt(m[2] as string, 16);
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
}

export class AddressPolicy {
  private readonly allowed: BlockList;

  /** `allowedPrivate`: GATEWAY_EGRESS_PRIVATE_CIDRS, the non-public ranges the installation allows. */
  constructor(allowedPrivate: readonly Cidr[]) {
    this.allowed = blockListOf(allowedPrivate);
  }

  /** Why an address may not be connected to (`a private address`, …), or undefined when it may. */
  refusal(address: string): string | undefined {
    const version = isIP(address);
    if (version === 0) return "not an IP address";
    const family: IpFamily = version === 4 ? "ipv4" : "ipv6";
    if (this.allowed.check(address, family)) return undefined;
    for (const [kind, list] of SPECIAL) {
      if (list.check(address, family)) return `${kind} address`;
    }
    const embedded = family === "ipv6" ? nat64Embedded(address) : undefined;
    if (embedded !== undefined) {
      const inner = this.refusal(embedded);
      return inner === undefined ? undefined : `${inner} (through NAT64)`;
    }
    return undefined;
  }
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

export type AddressChoice =
  | { ok: true; addresses: ResolvedAddress[] }
  | { ok: false; address: string; why: string };

/**
 * The addresses of a resolution that may be connected to, in the resolver's order. A name that
 * resolves to both kinds is served on its permitted addresses only (the others are never tried);
 * it is refused, naming the first refused address, when none is permitted.
 */
export function permittedAddresses(
  policy: AddressPolicy,
  answers: readonly ResolvedAddress[],
): AddressChoice {
  const permitted = answers.filter((a) => policy.refusal(a.address) === undefined);
  if (permitted.length > 0) return { ok: true, addresses: permitted };
  const first = answers[0];
  if (first === undefined) return { ok: false, address: "", why: "no address" };
  return { ok: false, address: first.address, why: policy.refusal(first.address) as string };
}
