/**
 * The Job builder's test fixtures (src/core/job-*.test.ts): the settings and the one-call build each
 * row starts from, and readers for the pod, a container and its env.
 */
import type { V1Container, V1Job } from "@kubernetes/client-node";
import type { ControllerSettings } from "../../src/core/input.js";
import { buildJob } from "../../src/core/run-job/job.js";
import type { AgentDefinitionSpec } from "../../src/core/types.js";
import { agent, definition, input, station } from "./core-builders.js";

// The installation lets Stations name the `runner` ServiceAccount (RUN_POD_SERVICE_ACCOUNTS).
export const settings: ControllerSettings = {
  ...input().settings,
  runPodPolicy: { serviceAccounts: ["runner"], volumeKinds: [] },
};

export function build(
  opts: {
    def?: Partial<AgentDefinitionSpec>;
    agentSpec?: Parameters<ReturnType<typeof agent>["spec"]>[0];
    stationSpec?: Parameters<ReturnType<typeof station>["spec"]>[0];
    mode?: "interactive" | "realtime";
    name?: string;
  } = {},
): V1Job {
  const r = buildJob(
    agent(opts.name ?? "run-1")
      .spec({ parameters: { ticket: "ENG-1" }, ...opts.agentSpec })
      .build(),
    station()
      .spec(opts.stationSpec ?? {})
      .build(),
    definition()
      .spec(opts.def ?? {})
      .build(),
    settings,
    opts.mode ?? "interactive",
  );
  if (!r.ok) throw new Error(r.reason);
  return r.job;
}
export const podSpec = (job: V1Job) =>
  job.spec?.template.spec as NonNullable<V1Job["spec"]>["template"]["spec"] & object;
export const container = (job: V1Job, name: string) =>
  [...(podSpec(job).initContainers ?? []), ...podSpec(job).containers].find(
    (c) => c.name === name,
  ) as V1Container;
export const envOf = (c: V1Container) =>
  Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
export const secretRef = (key: string) => ({ secretKeyRef: { name: "agent-secrets", key, optional: false } });

/**
 * A Station template with something of everything the builder keeps, replaces or rewires (labels,
 * volumes, an init container, a sidecar, an agent container with its own env, mounts and security
 * context), and the Job built from it with a recipe env that shadows the Station's.
 */
export function wiredJob(): V1Job {
  const template = {
    metadata: {
      labels: { team: "x", "agents.re-cinq.com/component": "spoofed" },
      annotations: { note: "kept" },
    },
    spec: {
      nodeSelector: { pool: "agents" },
      tolerations: [{ key: "k", operator: "Exists" }],
      serviceAccountName: "runner",
      volumes: [
        { name: "cache", emptyDir: {} },
        { name: "workspace", configMap: { name: "evil" } },
      ],
      initContainers: [{ name: "station-init", image: "busybox" }],
      containers: [
        {
          name: "agent",
          image: "node:22",
          args: ["--dropped"],
          env: [
            { name: "STATION_VAR", value: "s" },
            { name: "HOME", value: "/root" },
            { name: "SHARED", value: "station" },
          ],
          volumeMounts: [
            { name: "cache", mountPath: "/cache" },
            { name: "workspace", mountPath: "/elsewhere" },
          ],
          resources: { limits: { memory: "4Gi" } },
          workingDir: "/src",
          securityContext: { readOnlyRootFilesystem: true, runAsUser: 0 },
        },
        { name: "sidecar", image: "proxy" },
      ],
    },
  };
  return build({
    stationSpec: { template },
    def: { resources: { env: [{ name: "SHARED", value: "recipe" }] } },
  });
}
