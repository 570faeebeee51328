/**
 * Prerequisites (docs/run-pod.md#the-init step 3): executables the active tools need, installed with the
 * first package manager found (apt-get, dnf, apk) when missing.
 */

import type { Env } from "../common/run-env.js";
import type { Command } from "./commands.js";

export type PackageManagerTool = "apt" | "dnf" | "apk";

export interface PackageManager {
  /** The `tool` of `init/installing` and of an install failure. */
  tool: PackageManagerTool;
  /** The executable looked up on PATH. */
  binary: string;
  /** The install steps, run in order; the first non-zero one fails the install. */
  commands(packages: readonly string[], env: Env): Command[];
}

export const PACKAGE_MANAGERS: readonly PackageManager[] = [
  {
    tool: "apt",
    binary: "apt-get",
    commands: (packages, env) => {
      const aptEnv = { ...env, DEBIAN_FRONTEND: "noninteractive" };
      return [
        { argv: ["apt-get", "update"], env: aptEnv },
        { argv: ["apt-get", "install", "-y", "--no-install-recommends", ...packages], env: aptEnv },
      ];
    },
  },
  {
    tool: "dnf",
    binary: "dnf",
    commands: (packages, env) => [{ argv: ["dnf", "install", "-y", ...packages], env }],
  },
  {
    tool: "apk",
    binary: "apk",
    commands: (packages, env) => [{ argv: ["apk", "add", "--no-cache", ...packages], env }],
  },
];

/**
 * Packages providing each executable the plan can need (`requiredExecutables` in plan.ts: git);
 * git fetches over https, so it brings the CA bundle. Any other name is its own package.
 */
const PACKAGES: Readonly<Record<string, readonly string[]>> = {
  git: ["git", "ca-certificates"],
};

/** The packages to install for the missing executables, without duplicates, in first-need order. */
export function packagesFor(executables: readonly string[]): string[] {
  const out: string[] = [];
  for (const exe of executables) for (const p of PACKAGES[exe] ?? [exe]) if (!out.includes(p)) out.push(p);
  return out;
}

/** The first package manager whose binary is present, by the caller's PATH lookup. */
export function pickPackageManager(present: (binary: string) => boolean): PackageManager | undefined {
  return PACKAGE_MANAGERS.find((pm) => present(pm.binary));
}
