/**
 * What a real node could leave behind on the machine, as a comparable snapshot: sysctls, mount
 * points, top-level cgroups, network links, firewall rules, the foreign paths, node processes and
 * the machine lock. The real-node test takes one before a plane starts and compares after it stops
 * (and after its owner was killed and the watchdog cleaned up).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { onPath } from "../images.js";
import { FOREIGN_PATHS, MACHINE } from "./config.js";

export interface Footprint {
  sysctls: Record<string, string>;
  mounts: string[];
  cgroups: string[];
  links: string[];
  firewall: string;
  paths: string[];
  processes: string[];
  lock: boolean;
}

const SYSCTL_ROOTS = ["/proc/sys/vm", "/proc/sys/kernel", "/proc/sys/net/ipv4", "/proc/sys/net/bridge"];

function readSysctls(): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    let entries: string[];
    try {
      entries = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of entries) {
      const path = join(dir, name);
      // Per-interface and per-neighbour settings come and go with the links (compared apart).
      if (/\/net\/ipv4\/(conf|neigh)\/(?!all$|default$)/.test(path)) continue;
      let st: ReturnType<typeof statSync>;
      try {
        st = statSync(path);
      } catch {
        continue;
      }
      if (st.isDirectory()) walk(path);
      else if (st.mode & 0o444) {
        try {
          out[path.slice("/proc/sys/".length).replaceAll("/", ".")] = readFileSync(path, "utf8").trim();
        } catch {}
      }
    }
  };
  for (const root of SYSCTL_ROOTS) walk(root);
  return out;
}

/** Sysctls that change by themselves whatever runs: the last pid handed out, random values, open ptys. */
const VOLATILE = /^kernel\.(ns_last_pid|random\.|pty\.nr)/;

/** The sysctls that hold still: the volatile ones left out, and any other that changed between two reads. */
export function stableSysctls(): Record<string, string> {
  const a = readSysctls();
  const b = readSysctls();
  return Object.fromEntries(Object.entries(a).filter(([k, v]) => b[k] === v && !VOLATILE.test(k)));
}

function firewallRules(): string {
  const dump = (tool: string) => {
    const [cmd = "", ...args] = tool.split(" ");
    if (!onPath(cmd)) return "";
    try {
      return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })
        .split("\n")
        .filter((l) => !l.startsWith("#"))
        .map((l) => l.replace(/\[\d+:\d+\]/g, "[0:0]"))
        .join("\n");
    } catch {
      return `${tool} failed`;
    }
  };
  // nftables tables of their own and ipsets (the NetworkPolicy engine's) do not show in iptables-save.
  return [dump("iptables-save"), dump("ip6tables-save"), dump("nft list tables"), dump("ipset list -n")].join(
    "\n",
  );
}

/** Processes a node runs: the kubelet, containerd, its shims, and anything in the node's cgroups. */
function nodeProcesses(): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim();
      const cgroup = readFileSync(`/proc/${pid}/cgroup`, "utf8");
      if (
        /(^|\/)(kubelet|kube-proxy|kube-router|containerd|containerd-shim-runc-v2) /.test(`${cmd} `) ||
        cgroup.includes(MACHINE.cgroupRoot)
      )
        found.push(`${pid} ${cmd}`);
    } catch {}
  }
  return found.sort();
}

export function takeFootprint(sysctlKeys?: string[]): Footprint {
  const sysctls = stableSysctls();
  const picked =
    sysctlKeys === undefined ? sysctls : Object.fromEntries(sysctlKeys.map((k) => [k, sysctls[k] ?? ""]));
  const cgroups: string[] = [];
  for (const h of readdirSync("/sys/fs/cgroup")) {
    const dir = join("/sys/fs/cgroup", h);
    try {
      for (const c of readdirSync(dir)) if (statSync(join(dir, c)).isDirectory()) cgroups.push(`${h}/${c}`);
    } catch {}
  }
  return {
    sysctls: picked,
    mounts: readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .map((l) => l.split(" ")[4] ?? "")
      .filter((m) => m !== "")
      .sort(),
    cgroups: cgroups.sort(),
    links: execFileSync("ip", ["-o", "link"], { encoding: "utf8" })
      .split("\n")
      .map((l) => l.split(":")[1]?.trim() ?? "")
      .filter((l) => l !== "")
      .sort(),
    firewall: firewallRules(),
    paths: FOREIGN_PATHS.filter((p) => existsSync(p)),
    processes: nodeProcesses(),
    lock: existsSync(MACHINE.lockFile),
  };
}
