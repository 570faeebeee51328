/**
 * src/core/run-job/: the run's Job and its pod. buildJob (job.ts) makes them from the Station's
 * template; its parts are the containers, their env, volumes and security contexts, the deadline
 * and the names every run shares; beside them what a failed Job creation and a pod that never
 * starts mean for the Agent.
 *
 * Builds the run's Job and its pod from the Station's pod template (docs/run-pod.md#the-job-and-its-pod-template,
 * docs/agent-clis.md#compatibility, docs/supervisor.md#realtime-sessions). The Station template is
 * deep-copied and only the listed elements are changed; everything else (labels, annotations,
 * extra containers, nodeSelector, tolerations, …) is kept. Its parts: the containers
 * (containers.ts), their env (env.ts), volumes and security contexts (security.ts),
 * the deadline (deadline.ts) and the names every run shares (layout.ts), re-exported here.
 */
import type { V1Container, V1Job, V1PodSpec, V1PodTemplateSpec } from "@kubernetes/client-node";
import { cliArgv, execCommand } from "../cli/argv.js";
import { effectiveModel, routeModel } from "../cli/routing.js";
import { renderPrompt } from "../cli/templating.js";
import type { ControllerSettings } from "../input.js";
import { stationTemplateProblem, withoutNulls } from "../policy/station-policy.js";
import type { Agent, AgentDefinition, Station } from "../types.js";
import { agentContainer, courierContainer, initContainer } from "./containers.js";
import { deadlineMinutesOf } from "./deadline.js";
import { egressEnv, egressProblem, withEgressEnv } from "./egress-env.js";
import type { RunContext } from "./env.js";
import { credentialProblem, gatewayVendorOf, providerKeyInPod, providerKeyRefusal } from "./gateway-env.js";
import {
  ANNOTATION_MODEL_GATEWAY,
  LABEL_AGENT,
  LABEL_COMPONENT,
  LABEL_EXECUTION,
  LABEL_STATION,
} from "./layout.js";
import { jobNameFor, shortenName } from "./names.js";
import { podSecurityContext, runVolumes, stationContainer } from "./security.js";
import { vendorKeyProblem } from "./vendor-key.js";

export {
  agentDeadlineMs,
  COURIER_MARGIN_MS,
  type DeadlineBudget,
  deadlineBudget,
  deadlineMinutesOf,
  TAIL_MARGIN_MS,
} from "./deadline.js";
export { realtimeRunToken } from "./env.js";
export * from "./layout.js";

/** Why the Station template cannot run, or undefined when it can (../policy/station-policy.ts). */
export function templateProblem(
  template: unknown,
  settings?: Pick<ControllerSettings, "runPodPolicy">,
): string | undefined {
  return stationTemplateProblem(template, settings?.runPodPolicy);
}

export type JobBuildResult = { ok: true; job: V1Job } | { ok: false; reason: string };

/**
 * Builds the Job for an interactive run, a realtime run or a batch fallback. Returns a failure
 * reason (`invalid Station template: …` / `invalid AgentDefinition: …`, with the model gateway on
 * `model gateway: …` for a definition that names no key for the model's vendor and
 * `provider key in the run pod: …`; with its egress proxy `invalid Station egress: …` and
 * `egress credential of the <role> too long: …`) instead of throwing.
 */
export function buildJob(
  agent: Agent,
  station: Station,
  definition: AgentDefinition,
  settings: ControllerSettings,
  mode: "interactive" | "realtime",
  /** When the Job is created (epoch ms); without it the supervisor counts from its own start. */
  createdAt?: number,
): JobBuildResult {
  // One copy, its nulls dropped, is both checked and built from: the API server reads a null as
  // absent, so checking the raw template could judge a different pod (../policy/station-template/normalize.ts).
  const template = withoutNulls(station.spec.template) as V1PodTemplateSpec;
  const problem = templateProblem(template, settings);
  if (problem) return { ok: false, reason: `invalid Station template: ${problem}` };
  const def = definition.spec;
  const model = effectiveModel(agent, definition);
  if (routeModel(model) === "exec" && !execCommand(def)) {
    return {
      ok: false,
      reason:
        "invalid AgentDefinition: tool_config.command must be a non-empty array of strings for the exec model",
    };
  }
  if (settings.gateway) {
    const problem =
      credentialProblem(agent, model) ?? vendorKeyProblem(definition, agent.metadata.namespace ?? "", model);
    if (problem) return { ok: false, reason: problem };
  }
  const realtime = mode === "realtime";
  const prompt = renderPrompt(def.prompt, agent.spec.parameters);
  const ctx: RunContext = {
    agent,
    station,
    def,
    settings,
    realtime,
    model,
    prompt,
    ...(createdAt !== undefined ? { createdAt } : {}),
  };
  if (settings.gateway?.egressProxyUrl) {
    const problem = egressProblem(ctx);
    if (problem) return { ok: false, reason: problem };
  }

  const spec = template.spec as V1PodSpec;
  const agentName = agent.metadata.name ?? "";
  const stationName = station.metadata.name ?? "";
  const runLabels: Record<string, string> = {
    [LABEL_COMPONENT]: "job",
    [LABEL_AGENT]: shortenName(agentName),
    [LABEL_STATION]: shortenName(stationName),
    ...(realtime ? { [LABEL_EXECUTION]: "realtime" } : {}),
  };
  // The execution label is the controller's alone: a Station template cannot make an interactive
  // run look realtime to the prompt API or the realtime NetworkPolicy (docs/decisions.md D-107).
  const { [LABEL_EXECUTION]: _forged, ...templateLabels } = template.metadata?.labels ?? {};
  template.metadata = {
    ...template.metadata,
    labels: { ...templateLabels, ...runLabels },
    annotations: {
      ...template.metadata?.annotations,
      "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
    },
  };

  const supervisorArgs = realtime ? (agent.spec.resumeSession ? [] : [prompt]) : cliArgv(def, model, prompt);
  // The Station's own containers share the agent's egress (docs/gateway.md#egress).
  const stationEgress = settings.gateway ? egressEnv(ctx, settings.gateway, "agent") : [];
  const stationOwn = (c: V1Container) => withEgressEnv(stationContainer(c), stationEgress);
  spec.containers = spec.containers.map((c) =>
    c.name === "agent" ? agentContainer(ctx, c, supervisorArgs) : stationOwn(c),
  );
  if (def.delivery?.pullRequest) spec.containers.push(courierContainer(ctx));
  // docs/decisions.md D-21: the Station's own init containers run after the controller's.
  spec.initContainers = [initContainer(ctx), ...(spec.initContainers ?? []).map(stationOwn)];
  spec.volumes = runVolumes(spec.volumes);
  spec.restartPolicy = "Never";
  spec.securityContext = podSecurityContext();
  spec.automountServiceAccountToken = false;
  if (settings.gateway) {
    // The last word on the built pod, whatever added the key: the recipe, the Station's template
    // or its sidecars (docs/gateway.md#run-credentials).
    const leak = providerKeyInPod(spec, def);
    if (leak) return { ok: false, reason: providerKeyRefusal(leak) };
  }

  // The vendor the run's credential allows: its calls are metered by the gateway.
  const meteredVendor = settings.gateway ? gatewayVendorOf(model) : undefined;
  const job: V1Job = {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: jobNameFor(agentName),
      namespace: agent.metadata.namespace ?? settings.namespace,
      labels: runLabels,
      ...(meteredVendor !== undefined ? { annotations: { [ANNOTATION_MODEL_GATEWAY]: meteredVendor } } : {}),
      ownerReferences: [
        {
          apiVersion: "agents.re-cinq.com/v1beta1",
          kind: "Agent",
          name: agentName,
          uid: agent.metadata.uid ?? "",
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      ttlSecondsAfterFinished: 3600,
      activeDeadlineSeconds: deadlineMinutesOf(station) * 60,
      backoffLimit: 0,
      template,
    },
  };
  return { ok: true, job };
}
