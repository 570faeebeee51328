/**
 * The host firewall as it was before kube-proxy or the NetworkPolicy engine started, recorded in
 * <node dir>/teardown/ for scripts/cluster/node-teardown.sh, which removes what they added: nftables
 * tables, KUBE-* iptables chains (kube-proxy's and kube-router's), ipsets (kube-router's).
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { onPath } from "../images.js";

/** `nft list tables` lines ("table ip nat"). */
export function nftTables(): string[] {
  return execFileSync("nft", ["list", "tables"], { encoding: "utf8" })
    .split("\n")
    .filter((l) => l.startsWith("table "));
}

/** `<family> <table> <chain>` for each KUBE-* chain. */
export function kubeChains(): string[] {
  const chains: string[] = [];
  for (const [tool, family] of [
    ["iptables-save", "ip"],
    ["ip6tables-save", "ip6"],
  ] as const) {
    let table = "";
    for (const line of execFileSync(tool, [], { encoding: "utf8" }).split("\n")) {
      if (line.startsWith("*")) table = line.slice(1);
      const chain = /^:(KUBE-\S+)/.exec(line)?.[1];
      if (chain) chains.push(`${family} ${table} ${chain}`);
    }
  }
  return chains;
}

/** The names of the host's ipsets (none when ipset is not installed). */
export function ipsets(): string[] {
  if (!onPath("ipset")) return [];
  return execFileSync("ipset", ["list", "-n"], { encoding: "utf8" })
    .split("\n")
    .filter((l) => l !== "");
}

/**
 * Writes teardown/nft-tables, kube-chains and ipsets, each unless already there: the first of
 * kube-proxy and the engine to start records the machine as it was before either.
 */
export async function recordFirewall(teardownDir: string): Promise<void> {
  for (const [file, read] of [
    ["nft-tables", nftTables],
    ["kube-chains", kubeChains],
    ["ipsets", ipsets],
  ] as const) {
    const path = join(teardownDir, file);
    if (!existsSync(path)) await writeFile(path, `${read().join("\n")}\n`);
  }
}
