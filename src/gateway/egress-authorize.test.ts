import { describe, expect, it } from "vitest";
import { issueEgressCredential } from "../core/egress/credential.js";
import { issueRunCredential } from "../core/run-job/gateway-credential.js";
import { egressAuthorizer } from "./egress-authorize.js";
import { type RunState, RunUnconfirmedError } from "./ports.js";

const KEY = Buffer.from("k".repeat(32));
const RUN = { namespace: "ai-agents", name: "fix-readme", uid: "6f1c2e0a-1111-4c2b-9d3e-0123456789ab" };
const agentCredential = issueEgressCredential(KEY, {
  ...RUN,
  role: "agent",
  destinations: ["docs.example.com:443", "*.pkg.example:443"],
});

function authorize(state: RunState | Error = { state: "active" }) {
  const asked: string[] = [];
  const check = egressAuthorizer({
    credentialKey: KEY,
    runs: {
      runState: async (run) => {
        asked.push(run.uid);
        if (state instanceof Error) throw state;
        return state;
      },
    },
  });
  return { check, asked };
}

describe("egress authorisation (docs/gateway.md#egress)", () => {
  it("a signed destination of an active run's role is allowed, naming the run and role", async () => {
    const { check, asked } = authorize();
    expect(await check(agentCredential, "docs.example.com", 443)).toEqual({
      ok: true,
      who: { ...RUN, role: "agent" },
    });
    expect(await check(agentCredential, "a.pkg.example", 443)).toMatchObject({ ok: true });
    expect(asked).toEqual([RUN.uid, RUN.uid]);
  });

  const refusals: {
    name: string;
    credential: string;
    host: string;
    port: number;
    state?: RunState | Error;
    status: number;
    reason: RegExp;
  }[] = [
    {
      name: "another host",
      credential: agentCredential,
      host: "evil.example",
      port: 443,
      status: 403,
      reason:
        /^not a destination of the agent \(it may reach docs\.example\.com:443, \*\.pkg\.example:443\); its Station may list more hosts in spec\.egress\.allowHosts$/,
    },
    {
      name: "another port of a signed host",
      credential: agentCredential,
      host: "docs.example.com",
      port: 22,
      status: 403,
      reason: /^not a destination of the agent/,
    },
    {
      name: "the wildcard's own suffix",
      credential: agentCredential,
      host: "pkg.example",
      port: 443,
      status: 403,
      reason: /^not a destination/,
    },
    {
      name: "a forged credential",
      credential: issueEgressCredential(Buffer.from("o".repeat(32)), {
        ...RUN,
        role: "agent",
        destinations: ["evil.example:443"],
      }),
      host: "evil.example",
      port: 443,
      status: 407,
      reason: /signature does not hold/,
    },
    {
      name: "the run's model credential",
      credential: issueRunCredential(KEY, { ...RUN, vendor: "anthropic" }),
      host: "docs.example.com",
      port: 443,
      status: 407,
      reason: /not an egress credential/,
    },
    {
      name: "a run that has ended",
      credential: agentCredential,
      host: "docs.example.com",
      port: 443,
      state: { state: "terminal", phase: "Succeeded" },
      status: 403,
      reason: /^the run has ended \(phase Succeeded\)$/,
    },
    {
      name: "a deleted Agent",
      credential: agentCredential,
      host: "docs.example.com",
      port: 443,
      state: { state: "deleted" },
      status: 403,
      reason: /no longer exists/,
    },
    {
      name: "another namespace",
      credential: agentCredential,
      host: "docs.example.com",
      port: 443,
      state: { state: "foreign", served: "team-b" },
      status: 403,
      reason: /only one this gateway serves/,
    },
    {
      name: "a run that cannot be confirmed (fail closed)",
      credential: agentCredential,
      host: "docs.example.com",
      port: 443,
      state: new RunUnconfirmedError("the API server did not answer"),
      status: 503,
      reason: /cannot confirm .* \(the API server did not answer\)/,
    },
  ];
  for (const r of refusals) {
    it(`refuses ${r.name} with ${r.status}`, async () => {
      const decision = await authorize(r.state).check(r.credential, r.host, r.port);
      expect(decision).toMatchObject({ ok: false, status: r.status });
      expect(decision.ok ? "" : decision.reason).toMatch(r.reason);
    });
  }

  it("a forged credential is refused before the run is looked up", async () => {
    const { check, asked } = authorize();
    await check("agx1.e30.AAAA", "docs.example.com", 443);
    expect(asked).toEqual([]);
  });
});
