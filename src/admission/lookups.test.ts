/**
 * The webhook as an oracle: what a review can make it read and reveal. Lookups happen only for
 * what the review's user may read, every read takes a token from the per-process bucket, and
 * found objects are reused for a while.
 */
import { describe, expect, it } from "vitest";
import { minimalAgent, minimalDefinition, minimalStation } from "../../test/support/validation-fixtures.js";
import type { Resource } from "../kube/resources.js";
import type { ReadAttributes, ReviewUser } from "./access.js";
import { type AdmissionChecks, lookupLimits, MSG_LOOKUPS_EXHAUSTED, reviewWarnings } from "./lookups.js";
import type { AdmissionRequest } from "./review.js";

const NS = "ai-agents";
const alice: ReviewUser = { username: "alice", groups: ["system:authenticated"] };

function agentReview(stationRef: string, userInfo: ReviewUser | null = alice): AdmissionRequest {
  const object = minimalAgent();
  object.spec = {
    stationRef,
    files: [{ path: "a", url: "https://x.example/a", headers_secret: "files-auth" }],
  };
  return {
    uid: "u",
    kind: { group: "agents.re-cinq.com", version: "v1beta1", kind: "Agent" },
    operation: "CREATE",
    namespace: NS,
    object,
    ...(userInfo ? { userInfo } : {}),
  };
}

/** A cluster with Station writer-station → AgentDefinition writer, and agent-secrets without files-auth. */
function cluster(readable: (what: ReadAttributes) => boolean = () => true) {
  const reads: string[] = [];
  const accessChecks: string[] = [];
  const objects: Record<string, unknown> = {
    "stations/writer-station": minimalStation(),
    // Spent: $2 of $1 in the last 24h, the newest run ended at 00:00:00.
    "stations/spent-station": {
      ...minimalStation(),
      metadata: { name: "spent-station", namespace: NS, managedFields: [{ manager: "x" }] },
      spec: { ...minimalStation().spec, budget: { limitUSD: 1, window: "24h" } },
      status: { spend: [{ agent: "u1", completedAt: "1970-01-01T00:00:00Z", costUSD: "2" }] },
    },
    "agentdefinitions/writer": minimalDefinition(),
    "secrets/agent-secrets": { data: { "gh-token": "c2VjcmV0" } },
  };
  let now = 0;
  const checks: AdmissionChecks = {
    namespace: NS,
    modes: { batchEnabled: true, realtimeEnabled: true },
    reader: {
      get: async <T>(r: Resource, _ns: string, name: string) => {
        reads.push(`${r.plural}/${name}`);
        return objects[`${r.plural}/${name}`] as T | undefined;
      },
    },
    mayRead: async (_user, what) => {
      accessChecks.push(`${what.resource}/${what.name}`);
      return readable(what);
    },
    lookupTimeoutMs: 1000,
    limits: lookupLimits(() => now),
    now: () => now,
  };
  return { checks, reads, accessChecks, advance: (ms: number) => (now += ms) };
}

describe("reviewWarnings: what a review reveals, and to whom", () => {
  it("tells a user who may read everything what is wrong, naming the key", async () => {
    const c = cluster();
    expect(await reviewWarnings(agentReview("nowhere"), c.checks)).toEqual([
      'Station nowhere does not exist in namespace ai-agents: the controller will fail this Agent with "Station nowhere not found"',
      'spec.files[0].headers_secret: key "files-auth" is not in Secret agent-secrets in namespace ai-agents',
    ]);
  });

  it("looks nothing up and says nothing about neighbours for a review that names no user", async () => {
    const c = cluster();
    expect(await reviewWarnings(agentReview("nowhere", null), c.checks)).toEqual([]);
    expect(await reviewWarnings(agentReview("nowhere", { username: "" }), c.checks)).toEqual([]);
    expect(c.reads).toEqual([]);
    expect(c.accessChecks).toEqual([]);
  });

  it("does not read or reveal what the user may not get: agent-secrets' key names, a Station", async () => {
    const c = cluster((what) => what.resource !== "secrets");
    expect(await reviewWarnings(agentReview("nowhere"), c.checks)).toEqual([
      'Station nowhere does not exist in namespace ai-agents: the controller will fail this Agent with "Station nowhere not found"',
    ]);
    expect(c.reads).toEqual(["stations/nowhere"]);

    const d = cluster((what) => what.resource === "secrets");
    expect(await reviewWarnings(agentReview("nowhere"), d.checks)).toEqual([
      'spec.files[0].headers_secret: key "files-auth" is not in Secret agent-secrets in namespace ai-agents',
    ]);
    expect(d.reads).toEqual(["secrets/agent-secrets"]);
  });

  it("warns that an Agent on a Station whose budget is spent will wait, to a user who may read the Station", async () => {
    const c = cluster();
    expect(await reviewWarnings(agentReview("spent-station"), c.checks)).toContain(
      "this Agent will stay Pending: budget of Station spent-station reached: $2 spent of $1 in the last 24h; the run starts when the window frees room at 1970-01-02T00:00:00Z",
    );
    // Nobody else learns the budget or the spend.
    const d = cluster((what) => what.resource !== "stations");
    const hidden = await reviewWarnings(agentReview("spent-station"), d.checks);
    expect(hidden.join("\n")).not.toMatch(/budget|\$/);
    // Once the window has moved on, nothing to say.
    const e = cluster();
    e.advance(86_400_000 + 1000);
    expect((await reviewWarnings(agentReview("spent-station"), e.checks)).join("\n")).not.toContain("budget");
  });

  it("says it could not check when the access review itself fails", async () => {
    const c = cluster();
    c.checks.mayRead = async () => {
      throw new Error("localsubjectaccessreviews is forbidden");
    };
    expect(await reviewWarnings(agentReview("nowhere"), c.checks)).toContain(
      "could not check Station nowhere: cannot tell whether the requesting user may read it: localsubjectaccessreviews is forbidden",
    );
  });

  it("reuses found objects for 10 s, so a burst naming one Station costs one read of each", async () => {
    const c = cluster();
    for (let i = 0; i < 20; i++) await reviewWarnings(agentReview("writer-station"), c.checks);
    expect(c.reads).toEqual(["stations/writer-station", "agentdefinitions/writer", "secrets/agent-secrets"]);
    c.advance(10_000);
    await reviewWarnings(agentReview("writer-station"), c.checks);
    expect(c.reads).toHaveLength(6);
  });

  it("slows a caller probing names to the bucket's rate: past it, nothing is looked up", async () => {
    const c = cluster();
    const answers: string[][] = [];
    // Each new name costs an access check and a read; the bucket holds 30.
    for (let i = 0; i < 20; i++) answers.push(await reviewWarnings(agentReview(`probe-${i}`), c.checks));
    const readsBefore = c.reads.length + c.accessChecks.length;
    expect(readsBefore).toBeLessThanOrEqual(30);
    expect(answers.at(-1)).toContain(`could not check Station probe-19: ${MSG_LOOKUPS_EXHAUSTED}`);
    c.advance(1000); // 10 more tokens
    await reviewWarnings(agentReview("probe-x"), c.checks);
    expect(c.reads.length + c.accessChecks.length).toBeLessThanOrEqual(readsBefore + 10);
    expect(c.reads).toContain("stations/probe-x");
  });
});
