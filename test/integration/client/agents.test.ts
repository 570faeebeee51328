/**
 * The typed client (`ai-agent-subsystem/client`, src/client) against the real API server with the
 * controller running: create, get, list, watch and waitForTerminal on Agents whose run pods kwok
 * ends as scripted, and ajv validation refusing a bad Agent before anything is sent.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type Agent,
  AgentsClient,
  AgentValidationError,
  type AgentWatchEvent,
  exitCodeOf,
  phaseOf,
  WaitTimeoutError,
} from "../../../src/client/index.js";
import { AGENTS } from "../../../src/kube/resources.js";
import { eventually, kubeconfigPath } from "../../harness/context.js";
import {
  CLAUDE_LINES,
  type ClientEnv,
  createDefinition,
  createKwokStation,
  startClientEnv,
} from "./setup.js";

let env: ClientEnv;
let agents: AgentsClient;

beforeAll(async () => {
  env = await startClientEnv("client-agents");
  await createDefinition(env, "def");
  await createKwokStation(env, "ok", "def", { exitCode: 0, runTime: "1s", logs: { agent: CLAUDE_LINES } });
  await createKwokStation(env, "three", "def", { exitCode: 3, logs: { agent: "it broke" } });
  await createKwokStation(env, "forever", "def", { exitCode: 0, runTime: "30m" });
  agents = await AgentsClient.connect({ kubeconfig: kubeconfigPath(), namespace: env.ns });
});

afterAll(async () => {
  await agents?.close();
  await env?.close();
});

const phases = (seen: Agent[]) => seen.map(phaseOf).filter((p, i, all) => p !== all[i - 1]);

describe("AgentsClient on the local plane", () => {
  it("connect reads the kubeconfig it is given and defaults to its context's namespace", async () => {
    const other = await AgentsClient.connect({ kubeconfig: kubeconfigPath() });
    try {
      expect(other.namespace).toBe("default");
      expect(await other.get("nothing-here")).toBeUndefined();
    } finally {
      await other.close();
    }
    await expect(AgentsClient.connect({ kubeconfig: "/nonexistent/kubeconfig" })).rejects.toThrow(
      "kubeconfig /nonexistent/kubeconfig does not exist",
    );
    await expect(AgentsClient.connect({ kubeconfig: kubeconfigPath(), context: "nope" })).rejects.toThrow(
      'context "nope" does not exist in the kubeconfig',
    );
  });

  it("create (generateName) → get → waitForTerminal: Succeeded with exit code 0 and the pod's output", async () => {
    const created = await agents.create({
      metadata: { generateName: "ok-", labels: { team: "qa" } },
      spec: { stationRef: "ok", parameters: { topic: "the tests" } },
    });
    const name = created.metadata.name ?? "";
    expect(name).toMatch(/^ok-[a-z0-9]{5}$/);
    expect(created).toMatchObject({
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Agent",
      metadata: { namespace: env.ns, labels: { team: "qa" } },
      spec: { stationRef: "ok", parameters: { topic: "the tests" } },
    });
    const read = await agents.get(name);
    expect(read?.metadata.uid).toBe(created.metadata.uid);

    const seen: Agent[] = [];
    const done = await agents.waitForTerminal(name, { timeoutMs: 120_000, onUpdate: (a) => seen.push(a) });
    expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
    expect(exitCodeOf(done)).toBe(0);
    expect(done.status?.output).toContain(CLAUDE_LINES[5]);
    expect(phases(seen).at(-1)).toBe("Succeeded");
    expect(seen[0]?.metadata.uid).toBe(created.metadata.uid);
  });

  it("waitForTerminal on a failed run: the pod's exit code", async () => {
    await agents.create({ metadata: { name: "three-1" }, spec: { stationRef: "three" } });
    const done = await agents.waitForTerminal("three-1", { timeoutMs: 120_000 });
    expect(done.status).toMatchObject({ phase: "Failed", exitCode: 3 });
    expect(exitCodeOf(done)).toBe(3);
    expect(done.status?.output).toContain("it broke");
  });

  it("waitForTerminal on a run the controller refuses: Failed with the literal reason, exit code 1", async () => {
    await agents.create({ metadata: { name: "lost-1" }, spec: { stationRef: "no-such-station" } });
    const done = await agents.waitForTerminal("lost-1", { timeoutMs: 120_000 });
    expect(done.status).toMatchObject({
      phase: "Failed",
      failureReason: "Station no-such-station not found",
    });
    expect(exitCodeOf(done)).toBe(1);
  });

  it("refuses an Agent that breaks the schema before sending it; the error names each field", async () => {
    const request = vi.spyOn(agents.kube, "request");
    try {
      const refused = await agents
        .create({
          metadata: { name: "bad-1" },
          spec: {
            stationRef: "ok",
            files: [{ path: "a.md", url: "ftp://files.example.com/a.md" }],
            // A misspelt field, as an untyped caller (JSON from elsewhere) might send it.
            ...({ taskID: "T-1" } as object),
          },
        })
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      expect(refused).toBeInstanceOf(AgentValidationError);
      const error = refused as AgentValidationError;
      expect(error.issues.map((i) => i.path).sort()).toEqual(["spec.files[0].url", "spec.taskID"]);
      expect(error.message).toContain("invalid Agent, nothing was sent:");
      expect(error.message).toContain(
        'spec.files[0].url must be an http:// or https:// URL; no other scheme is fetched; got "ftp://files.example.com/a.md".',
      );
      expect(error.message).toContain("spec.taskID is not a known field of Agent.");

      const nameless = await agents.create({ spec: { stationRef: "ok" } }).catch((err: unknown) => err);
      expect(nameless).toBeInstanceOf(AgentValidationError);
      expect((nameless as AgentValidationError).issues).toEqual([
        expect.objectContaining({
          path: "metadata.name",
          message: "metadata.name or metadata.generateName is required.",
        }),
      ]);
      expect(request).not.toHaveBeenCalled();
    } finally {
      request.mockRestore();
    }
    expect(await agents.get("bad-1")).toBeUndefined();
  });

  it("passes the API server's refusal on as a KubeApiError (an Agent that exists already)", async () => {
    await agents.create({ metadata: { name: "twice" }, spec: { stationRef: "forever" } });
    await expect(
      agents.create({ metadata: { name: "twice" }, spec: { stationRef: "forever" } }),
    ).rejects.toMatchObject({ name: "KubeApiError", status: 409 });
  });

  it("get answers undefined for an Agent that does not exist", async () => {
    expect(await agents.get("nobody")).toBeUndefined();
  });

  it("list: the namespace's Agents oldest first, or one Station's", async () => {
    await agents.create({ metadata: { name: "list-a" }, spec: { stationRef: "forever" } });
    await agents.create({ metadata: { name: "list-b" }, spec: { stationRef: "three" } });
    const all = (await agents.list()).map((a) => a.metadata.name);
    expect(all).toEqual(expect.arrayContaining(["list-a", "list-b", "three-1", "lost-1"]));
    const stamps = (await agents.list()).map((a) => a.metadata.creationTimestamp ?? "");
    expect([...stamps].sort()).toEqual(stamps);
    const forever = (await agents.list({ station: "forever" })).map((a) => a.metadata.name);
    expect(forever).toContain("list-a");
    expect(forever).not.toContain("list-b");
    expect((await agents.list({ station: "forever" })).every((a) => a.spec.stationRef === "forever")).toBe(
      true,
    );
  });

  it("watch: ADDED, then MODIFIED through the phases to Succeeded, for the named Agent only", async () => {
    // Watch from just after another Agent's creation, so the named one's ADDED cannot be missed.
    const other = await agents.create({ metadata: { name: "other" }, spec: { stationRef: "ok" } });
    const stop = new AbortController();
    const giveUp = setTimeout(() => stop.abort(), 120_000);
    const events: AgentWatchEvent[] = [];
    const watching = (async () => {
      for await (const event of agents.watch({
        name: "watched",
        resourceVersion: other.metadata.resourceVersion,
        signal: stop.signal,
      })) {
        events.push(event);
        if (phaseOf(event.object) === "Succeeded") stop.abort();
      }
    })();
    await agents.create({ metadata: { name: "watched" }, spec: { stationRef: "ok" } });
    await watching;
    clearTimeout(giveUp);
    const seen = phases(events.map((e) => e.object));
    expect(seen.at(-1), `events: ${JSON.stringify(events.map((e) => [e.type, phaseOf(e.object)]))}`).toBe(
      "Succeeded",
    );
    expect(events[0]?.type).toBe("ADDED");
    expect(events.every((e) => e.object.metadata.name === "watched")).toBe(true);
    expect(events.slice(1).every((e) => e.type === "MODIFIED")).toBe(true);
    expect(seen[0]).toBe("Pending");
    expect(seen).toContain("Running");
  });

  it("waitForTerminal gives up after timeoutMs with WaitTimeoutError naming the last phase", async () => {
    await agents.create({ metadata: { name: "slow-1" }, spec: { stationRef: "forever" } });
    await eventually(
      "slow-1 Running",
      async () => phaseOf((await agents.get("slow-1")) as Agent) === "Running",
    );
    const err = await agents.waitForTerminal("slow-1", { timeoutMs: 1500 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WaitTimeoutError);
    expect((err as WaitTimeoutError).message).toBe("Agent slow-1 is still Running after 1500 ms");

    const abort = new AbortController();
    const waiting = agents.waitForTerminal("slow-1", { signal: abort.signal }).catch((e: unknown) => e);
    abort.abort();
    const stopped = await waiting;
    expect(stopped).toBeInstanceOf(WaitTimeoutError);
    expect((stopped as Error).message).toMatch(
      /^stopped waiting for Agent slow-1 \(last phase (Pending|Running)\)$/,
    );
  });

  it("waitForTerminal fails for a missing Agent and for one deleted while it waits", async () => {
    await expect(agents.waitForTerminal("nobody")).rejects.toThrow(
      `Agent nobody not found in namespace ${env.ns}`,
    );

    await agents.create({ metadata: { name: "doomed" }, spec: { stationRef: "forever" } });
    await eventually(
      "doomed Running",
      async () => phaseOf((await agents.get("doomed")) as Agent) === "Running",
    );
    const waiting = agents.waitForTerminal("doomed", { timeoutMs: 120_000 }).catch((e: unknown) => e);
    await env.client.delete(AGENTS, env.ns, "doomed");
    const err = await waiting;
    expect((err as Error).message).toBe("Agent doomed was deleted while it was Running");
  });
});
