/**
 * The batch scenarios every vendor file repeats, written once: run an Agent to the end with a
 * given outcome, and poll errors that clear. A vendor row says only what differs between the
 * vendors: the provider name, the Station, the fake's poll path, what its batch id looks like and
 * what its cleanup removes. Each vendor file keeps its own controller and fake and asserts its
 * own CLI lines; adding a vendor is one row and a call per scenario.
 */
import { expect } from "vitest";
import type { BatchProviderName } from "../../../src/batch/provider.js";
import type { Agent } from "../../../src/core/types.js";
import type { FaultRule, RecordedRequest } from "../../fakes/providers/base.js";
import {
  type BatchEnv,
  createAgent,
  expectPollFaultsThenSuccess,
  hasFinalizer,
  waitAgent,
  waitRunningBatch,
  waitTerminal,
} from "./setup.js";

/** One vendor of the batch tests: what differs from the others. */
export interface BatchVendorRow<Outcome> {
  provider: BatchProviderName;
  /** The Station (and BatchDefinition) the vendor file creates. */
  station: string;
  fake: {
    requests: RecordedRequest[];
    inject(rule: FaultRule): void;
    setOutcome(batchId: string, outcome: Outcome): void;
    finish(batchId: string): void;
  };
  /** The path the controller polls for this batch. */
  pollPath(batchId: string): string;
  /** The vendor's checks on a Running Agent's batch (id shape, what else it says). */
  expectRunning(running: Agent, batchId: string): void;
  /** After the finalizer is released: the vendor's objects of this batch are gone. */
  expectCleanedUp(batchId: string): void;
}

/** Creates the Agent, waits for its batch, ends it with `outcome`, returns the terminal Agent. */
export async function runTo<O>(env: BatchEnv, vendor: BatchVendorRow<O>, name: string, outcome: O) {
  await createAgent(env, name, vendor.station);
  const running = await waitRunningBatch(env, name);
  const batchId = running.status?.batchId as string;
  expect(running.status).toMatchObject({ phase: "Running", batchProvider: vendor.provider });
  vendor.expectRunning(running, batchId);
  expect(running.status?.startedAt).toBeTruthy();
  expect(hasFinalizer(running)).toBe(true);
  vendor.fake.setOutcome(batchId, outcome);
  vendor.fake.finish(batchId);
  const done = await waitTerminal(env, name);
  expect(done.status?.batchId).toBe(batchId);
  expect(done.status?.completedAt).toBeTruthy();
  await waitAgent(env, name, "finalizer released", (a) => !hasFinalizer(a));
  vendor.expectCleanedUp(batchId);
  return { done, batchId, uid: running.metadata.uid as string };
}

/** Poll errors (500, 429, malformed body) keep the Agent Running; it completes once they clear. */
export async function pollFaultsThenSuccess<O>(
  env: BatchEnv,
  vendor: BatchVendorRow<O>,
  name: string,
  outcome: O,
): Promise<Agent> {
  await createAgent(env, name, vendor.station);
  const running = await waitRunningBatch(env, name);
  const batchId = running.status?.batchId as string;
  const path = vendor.pollPath(batchId);
  vendor.fake.setOutcome(batchId, outcome);
  const done = await expectPollFaultsThenSuccess(env, name, batchId, () => vendor.fake.finish(batchId), {
    inject: (rule) => vendor.fake.inject({ ...rule, method: "GET", path }),
    pollsSeen: () => vendor.fake.requests.filter((r) => r.method === "GET" && r.path === path).length,
  });
  expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0, batchId });
  return done;
}
