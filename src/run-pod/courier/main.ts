/**
 * `ai-agent-courier`: the run pod's delivery container (docs/run-pod.md#delivery; docs/decisions.md D-47, D-48, D-49). Waits
 * for the agent's exit code as the witness recorded it, skips a failed agent, otherwise delivers the workspace clone
 * as a pull request, and reports exactly one delivery event: bare on stdout (the controller reads
 * `prUrl` and `delivery failed: <reason>` from this container's log) and enveloped to the sinks.
 *
 * Exit codes: 0 for succeeded and skipped, 1 for failed (the pod, and so the Agent, fails).
 * Configured by the environment only; arguments are ignored.
 */

import { type LineWriter, RunEmitter, type RunEmitterOptions, stderrWriter } from "../common/emitter.js";
import type { Env } from "../common/run-env.js";
import { waitForAgentResult } from "./agent-result.js";
import { type DeliveryEvent, deliver } from "./deliver.js";
import { type RunProcess, redact, runProcess } from "./git.js";
import type { Fetch } from "./pulls.js";
import { courierSettings, resultWaitMs } from "./settings.js";

/** Test seams; production passes none. */
export interface CourierSeams {
  run?: RunProcess;
  fetch?: Fetch;
  stdout?: LineWriter;
  stderr?: LineWriter;
  dispatcher?: RunEmitterOptions["dispatcher"];
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  pollMs?: number;
  /** Whose result record is trusted; root (0) in a pod. */
  resultOwnerUid?: number;
  drainMs?: number;
  tmpDir?: string;
}

export async function runCourier(_argv: string[], env: Env, seams: CourierSeams = {}): Promise<number> {
  const settings = courierSettings(env);
  const stderr = seams.stderr ?? stderrWriter;
  const log = (line: string) => stderr(`[courier] ${redact(line, settings.token)}`);
  const emitter = new RunEmitter({
    env,
    // Delivery events are platform events: the vendor only classifies tool-native lines.
    vendor: "exec",
    ...(seams.stdout ? { stdout: seams.stdout } : {}),
    ...(seams.dispatcher ? { dispatcher: seams.dispatcher } : {}),
  });

  const event = await decide(env, settings, seams, log);
  emitter.event(event);
  if (event.status === "failed") log(`delivery failed: ${event.reason}`);
  if (!(await emitter.drain(seams.drainMs))) log("some sink deliveries did not finish before exit");
  return event.status === "failed" ? 1 : 0;
}

async function decide(
  env: Env,
  settings: ReturnType<typeof courierSettings>,
  seams: CourierSeams,
  log: (line: string) => void,
): Promise<DeliveryEvent> {
  // Nothing could be delivered without it: say so at once rather than after the agent's whole run.
  if (settings.token === "") return { kind: "delivery", status: "failed", reason: "DELIVERY_TOKEN is empty" };
  let result: Awaited<ReturnType<typeof waitForAgentResult>>;
  try {
    result = await waitForAgentResult({
      dir: settings.resultDir,
      waitMs: resultWaitMs(settings, (seams.now ?? Date.now)()),
      ...(seams.resultOwnerUid !== undefined ? { ownerUid: seams.resultOwnerUid } : {}),
      ...(seams.pollMs !== undefined ? { pollMs: seams.pollMs } : {}),
      ...(seams.now ? { now: seams.now } : {}),
      ...(seams.sleep ? { sleep: seams.sleep } : {}),
    });
  } catch (err) {
    return {
      kind: "delivery",
      status: "failed",
      reason: `reading ${settings.exitCodePath} failed: ${(err as Error).message}`,
    };
  }
  if (result.state === "timeout") {
    log(`${settings.exitCodePath} did not appear within ${settings.waitMs} ms`);
    return { kind: "delivery", status: "failed", reason: "no-agent-result" };
  }
  if (result.state === "gone") {
    log("the agent container's witness ended without recording a result (the container was killed)");
    return { kind: "delivery", status: "failed", reason: "no-agent-result" };
  }
  if (result.state === "untrusted") {
    // Only root writes there: anything else is tampering or a broken pod, never a success.
    log(`${result.why}; not delivering`);
    return { kind: "delivery", status: "failed", reason: `untrusted agent result: ${result.why}` };
  }
  if (result.code !== 0) {
    log(`the agent exited with code ${result.code}; not delivering`);
    return { kind: "delivery", status: "skipped", reason: "agent-failed" };
  }
  return deliver(settings, {
    run: seams.run ?? runProcess,
    env,
    log,
    ...(seams.fetch ? { fetch: seams.fetch } : {}),
    ...(seams.tmpDir ? { tmpDir: seams.tmpDir } : {}),
  });
}
