import { describe, expect, it } from "vitest";
import { AddressPolicy, type Cidr, parseCidr, permittedAddresses } from "./address-policy.js";

const cidrs = (...list: string[]) => list.map((c) => parseCidr(c) as Cidr);

describe("the egress address policy (docs/gateway.md#address-policy)", () => {
  it.each([
    ["8.8.8.8", undefined],
    ["2606:4700:4700::1111", undefined],
    ["::ffff:8.8.8.8", undefined],
    ["64:ff9b::808:808", undefined],
    ["10.0.0.1", "a private address"],
    ["172.31.255.255", "a private address"],
    ["192.168.1.1", "a private address"],
    ["127.0.0.1", "a loopback address"],
    ["::1", "a loopback address"],
    ["::ffff:127.0.0.1", "a loopback address"],
    ["::ffff:7f00:1", "a loopback address"],
    ["169.254.169.254", "a link-local address"],
    ["fe80::1", "a link-local address"],
    ["100.64.0.1", "a shared (CGNAT) address"],
    ["fd12:3456::1", "a unique-local address"],
    ["0.0.0.0", "an unspecified address"],
    ["::", "an unspecified address"],
    ["224.0.0.1", "a multicast address"],
    ["ff02::1", "a multicast address"],
    ["255.255.255.255", "a reserved address"],
    ["64:ff9b::a00:1", "a private address (through NAT64)"],
  ])("%s with no range allowed: %s", (address, why) => {
    expect(new AddressPolicy([]).refusal(address)).toBe(why);
  });

  it.each([
    ["10.0.0.1", ["10.0.0.0/8"]],
    ["::ffff:10.1.2.3", ["10.1.0.0/16"]],
    ["127.0.0.1", ["127.0.0.1/32"]],
    ["fd00::5", ["fd00::/64"]],
    ["64:ff9b::a00:1", ["10.0.0.0/24"]],
  ])("%s inside GATEWAY_EGRESS_PRIVATE_CIDRS %j is permitted", (address, allowed) => {
    expect(new AddressPolicy(cidrs(...allowed)).refusal(address)).toBeUndefined();
  });

  it("a range allowed does not allow its neighbours", () => {
    expect(new AddressPolicy(cidrs("10.1.0.0/16")).refusal("10.2.0.1")).toBe("a private address");
  });

  it.each([
    ["10.0.0.0/8", { address: "10.0.0.0", prefix: 8, family: "ipv4" }],
    ["FD00::/8", { address: "fd00::", prefix: 8, family: "ipv6" }],
    ["10.0.0.0/33", undefined],
    ["fd00::/129", undefined],
    ["10.0.0.0", undefined],
    ["example.com/8", undefined],
    ["10.0.0.0/-1", undefined],
    ["10.0.0.0/", undefined],
  ])("parseCidr(%j)", (text, cidr) => {
    expect(parseCidr(text)).toEqual(cidr);
  });

  it("a name resolving to a public and a private address is served on the public one only", () => {
    const choice = permittedAddresses(new AddressPolicy([]), [
      { address: "10.0.0.1", family: 4 },
      { address: "8.8.8.8", family: 4 },
      { address: "fd00::1", family: 6 },
    ]);
    expect(choice).toEqual({ ok: true, addresses: [{ address: "8.8.8.8", family: 4 }] });
  });

  it("a name resolving to private addresses only is refused, naming the first", () => {
    const choice = permittedAddresses(new AddressPolicy([]), [
      { address: "169.254.169.254", family: 4 },
      { address: "10.0.0.1", family: 4 },
    ]);
    expect(choice).toEqual({ ok: false, address: "169.254.169.254", why: "a link-local address" });
  });
});
