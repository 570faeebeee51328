/**
 * The soak's command line (docs/soak.md#running-it): parsed and checked, each bad flag named.
 */
import { randomInt } from "node:crypto";
import { NS } from "../../test/own-node/install-support.js";

export interface SoakArgs {
  seed: number;
  durationMs?: number;
  agents?: number;
  /** Agents created per minute. */
  rate: number;
  faults?: number;
  /** How long to wait, after the last Agent is created, for every Agent to end (default: the longest stuck bound and a minute). */
  drainMs?: number;
  kubeconfig?: string;
  namespace: string;
  execImage?: string;
}

/** "90s", "10m", "2h" or plain seconds. */
export function parseDuration(flag: string, text: string | undefined): number {
  const m = /^(\d+(?:\.\d+)?)(s|m|h)?$/.exec(text ?? "");
  if (!m) throw new Error(`${flag} must be a duration like 90s, 10m or 2h, got: "${text ?? ""}"`);
  return Number(m[1]) * { s: 1_000, m: 60_000, h: 3_600_000 }[(m[2] ?? "s") as "s" | "m" | "h"];
}

export function parseArgs(argv: readonly string[]): SoakArgs {
  const value = (flag: string) => {
    const i = argv.indexOf(flag);
    return i < 0 ? undefined : argv[i + 1];
  };
  const int = (flag: string, min: number, max = Number.MAX_SAFE_INTEGER) => {
    const text = value(flag);
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new Error(`${flag} must be an integer from ${min} to ${max}, got: "${text}"`);
    return n;
  };
  const duration = value("--duration");
  const a: SoakArgs = {
    seed: int("--seed", 0, 0xffffffff) ?? randomInt(0, 0xffffffff),
    rate: int("--rate", 1) ?? 20,
    namespace: value("--namespace") ?? NS,
  };
  if (duration !== undefined) a.durationMs = parseDuration("--duration", duration);
  const drain = value("--drain");
  if (drain !== undefined) a.drainMs = parseDuration("--drain", drain);
  const agents = int("--agents", 1);
  if (agents !== undefined) a.agents = agents;
  const faults = int("--faults", 0);
  if (faults !== undefined) a.faults = faults;
  const kubeconfig = value("--kubeconfig");
  if (kubeconfig !== undefined) a.kubeconfig = kubeconfig;
  const execImage = value("--exec-image");
  if (execImage !== undefined) a.execImage = execImage;
  if (a.durationMs === undefined && a.agents === undefined) a.durationMs = 10 * 60_000;
  if (a.kubeconfig !== undefined && a.execImage === undefined)
    throw new Error("--kubeconfig needs --exec-image (an image with sh that the cluster's nodes can pull)");
  return a;
}
