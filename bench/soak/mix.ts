/**
 * The soak's mix of Agents (docs/soak.md#the-mix): which Stations exist, and which Station each
 * created Agent goes to, drawn from the seed like the fault schedule so a replay creates the same
 * Agents in the same order. Pure: the objects are data, the runner applies them.
 */

import { fakeCliEnv } from "../../test/fakes/cli/script.js";
import { podScriptAnnotations } from "../../test/harness/pod-script.js";
import { REAL_NODE_SCHEDULING } from "../../test/harness/real-node/index.js";
import { seededRandom } from "./schedule.js";

export const MIX_PARTS = [
  "kwok-ok",
  "kwok-fail",
  "cli-allow",
  "cli-forbid",
  "cli-replace",
  "batch-anthropic",
  "batch-gemini",
  "batch-openai",
  "exec",
] as const;
export type MixPart = (typeof MIX_PARTS)[number];

/** Relative weights: kwok pods carry the volume, the real node a few runs at a time. */
export const MIX_WEIGHTS: Record<MixPart, number> = {
  "kwok-ok": 40,
  "kwok-fail": 10,
  "cli-allow": 10,
  "cli-forbid": 4,
  "cli-replace": 4,
  "batch-anthropic": 8,
  "batch-gemini": 8,
  "batch-openai": 8,
  exec: 20,
};

export interface MixEntry {
  /** The Agent's name: soak-<index>-<part>. */
  name: string;
  part: MixPart;
  /** When set, the soak deletes the Agent this long after creating it (a delete mid-run). */
  deleteAfterMs?: number;
}

export const DELETE_CHANCE = 0.05;

/** The first `n` Agents of the mix for `seed`, over the parts this target has. */
export function drawMix(seed: number, n: number, parts: readonly MixPart[]): MixEntry[] {
  if (parts.length === 0) throw new Error("mix: parts must name at least one part of the mix");
  // Its own stream: the schedule's draws do not shift when the mix changes, nor the reverse.
  const rand = seededRandom((seed ^ 0x5eed5eed) >>> 0);
  const total = parts.reduce((s, p) => s + MIX_WEIGHTS[p], 0);
  const out: MixEntry[] = [];
  for (let i = 0; i < n; i++) {
    const x = rand() * total;
    let below = 0;
    const part =
      parts.find((p) => {
        below += MIX_WEIGHTS[p];
        return x < below;
      }) ?? (parts[parts.length - 1] as MixPart);
    const doomed = rand() < DELETE_CHANCE;
    const after = 2_000 + Math.floor(rand() * 20_000);
    out.push({ name: `soak-${i}-${part}`, part, ...(doomed ? { deleteAfterMs: after } : {}) });
  }
  return out;
}

/** How long each part's runs take, as the Stations below script them. */
export const RUN_SECONDS = { kwok: 3, cli: 6, exec: 5 } as const;
/** The Stations' deadline and the batch timeout: the stuck bounds derive from them. */
export const DEADLINE_MINUTES = 5;
export const BATCH_TIMEOUT_MINUTES = 10;
/** Never pruned during a soak: the soak deletes what it saw terminal itself. */
const HISTORY = 100_000;

export interface ObjectImages {
  /** The agent image (batch Stations need a template; their runs start no pod). */
  agentImage: string;
  /** A Station image with the fake CLIs. */
  fakeCliImage: string;
  /** An image with `sh` for the exec part (on another cluster: any image the nodes can pull). */
  execImage: string;
  /** This machine's real node (tainted and labelled, docs/real-node.md); another cluster's nodes need no selector. */
  realNode: boolean;
}

const MODELS = {
  anthropic: "claude-sonnet-4-6",
  gemini: "gemini-3.1-flash-lite",
  openai: "gpt-5-mini",
} as const;
const KEY_NAMES = {
  anthropic: "ANTHROPIC_API_KEY",
  gemini: "GEMINI_API_KEY",
  openai: "OPENAI_API_KEY",
} as const;

const definition = (ns: string, name: string, spec: Record<string, unknown>) => ({
  apiVersion: "agents.re-cinq.com/v1beta1",
  kind: "AgentDefinition",
  metadata: { name, namespace: ns },
  spec,
});

const station = (
  ns: string,
  name: string,
  podSpec: Record<string, unknown>,
  spec: Record<string, unknown>,
) => ({
  apiVersion: "agents.re-cinq.com/v1beta1",
  kind: "Station",
  metadata: { name, namespace: ns },
  spec: {
    agentDefRef: name,
    deadlineMinutes: DEADLINE_MINUTES,
    successfulRunsHistoryLimit: HISTORY,
    failedRunsHistoryLimit: HISTORY,
    ...spec,
    template: podSpec,
  },
});

/** The AgentDefinition and Station of each part, named after the part. */
export function mixObjects(ns: string, parts: readonly MixPart[], images: ObjectImages): unknown[] {
  const out: unknown[] = [];
  const onNode = images.realNode ? REAL_NODE_SCHEDULING : {};
  const claudeKey = { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "anthropic-key" }] };
  for (const part of parts) {
    if (part === "kwok-ok" || part === "kwok-fail") {
      out.push(
        definition(ns, part, { prompt: "Summarise {topic}.", model: MODELS.anthropic, resources: claudeKey }),
        station(
          ns,
          part,
          {
            metadata: {
              annotations: podScriptAnnotations({
                exitCode: part === "kwok-ok" ? 0 : 3,
                runTime: `${RUN_SECONDS.kwok}s`,
                logs: { agent: `soak ${part}` },
              }),
            },
            // No node selector: the kwok nodes take them (the real node is tainted).
            spec: { containers: [{ name: "agent", image: images.agentImage }] },
          },
          { maxConcurrentRuns: 20 },
        ),
      );
    } else if (part.startsWith("cli-")) {
      const policy = { "cli-allow": "Allow", "cli-forbid": "Forbid", "cli-replace": "Replace" }[
        part as string
      ];
      out.push(
        definition(ns, part, {
          prompt: "Summarise {topic}.",
          model: MODELS.anthropic,
          permission_mode: "bypass",
          resources: claudeKey,
        }),
        station(
          ns,
          part,
          {
            spec: {
              ...onNode,
              containers: [
                {
                  name: "agent",
                  image: images.fakeCliImage,
                  env: fakeCliEnv({ answer: `soak ${part}`, durationMs: RUN_SECONDS.cli * 1000 }),
                },
              ],
            },
          },
          { concurrencyPolicy: policy, maxConcurrentRuns: 2 },
        ),
      );
    } else if (part.startsWith("batch-")) {
      const vendor = part.slice("batch-".length) as keyof typeof MODELS;
      out.push(
        definition(ns, part, {
          prompt: "Summarise {topic}.",
          model: MODELS[vendor],
          execution: "batch",
          batch: { timeoutMinutes: BATCH_TIMEOUT_MINUTES, onTimeout: "fail" },
          resources: { secrets: [{ name: KEY_NAMES[vendor], ref: `${vendor}-key` }] },
        }),
        station(ns, part, { spec: { containers: [{ name: "agent", image: images.agentImage }] } }, {}),
      );
    } else {
      out.push(
        definition(ns, part, {
          prompt: "run",
          model: "exec",
          tool_config: { command: ["sh", "-c", `sleep ${RUN_SECONDS.exec}; echo soak exec`] },
        }),
        station(
          ns,
          part,
          { spec: { ...onNode, containers: [{ name: "agent", image: images.execImage }] } },
          { maxConcurrentRuns: 3 },
        ),
      );
    }
  }
  return out;
}

/** The Agent of one mix entry. */
export function agentObject(ns: string, e: MixEntry): unknown {
  return {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Agent",
    metadata: { name: e.name, namespace: ns, labels: { "soak.example/part": e.part } },
    spec: { stationRef: e.part, parameters: { topic: e.name } },
  };
}
