import { describe, expect, it } from "vitest";
import { courierSettings, defaultBody, resultWaitMs } from "./settings.js";

describe("courierSettings", () => {
  it("reads the controller's courier env (job-env buildEnv 'courier')", () => {
    const s = courierSettings({
      HOME: "/agent",
      WORKSPACE_DIR: "/workspace",
      AGENT_NAME: "fix-readme",
      AGENT_DELIVERY: JSON.stringify({ repo: "app", base: "dev", title: "Fix it", body: "Why", draft: true }),
      DELIVERY_TOKEN: "t",
      TARGET_REPO: "acme/app",
      BRANCH_NAME: "agent/fix-readme",
      AGENT_DEADLINE_MS: "1630000",
      AGENT_RESULT_DIR: "/run/ai-agent-result",
      AGENT_REPOS: JSON.stringify([{ name: "app", url: "acme/app", ref: "develop", path: "src/app" }]),
    });
    expect(s).toMatchObject({
      delivery: { repo: "app", base: "dev", title: "Fix it", body: "Why", draft: true },
      token: "t",
      targetRepo: "acme/app",
      branch: "agent/fix-readme",
      resultDir: "/run/ai-agent-result",
      exitCodePath: "/run/ai-agent-result/exit-code",
      waitMs: 1635000,
      apiUrl: "https://api.github.com",
      serverUrl: "https://github.com",
      repos: [{ name: "app", url: "acme/app", ref: "develop", path: "src/app" }],
    });
  });

  it.each([
    ["AGENT_DELIVERY missing", {}, { title: "fix-readme", draft: false, repo: "", base: "" }],
    ["AGENT_DELIVERY not JSON", { AGENT_DELIVERY: "{" }, { title: "fix-readme" }],
    ["draft not a boolean", { AGENT_DELIVERY: '{"draft":"yes"}' }, { draft: false }],
  ])("falls back when %s", (_name, env, delivery) => {
    expect(courierSettings({ AGENT_NAME: "fix-readme", ...env }).delivery).toMatchObject(delivery);
  });

  it.each([
    [{}, undefined],
    [{ AGENT_DEADLINE_MS: "0" }, undefined],
    [{ AGENT_DEADLINE_MS: "soon" }, undefined],
    [{ AGENT_DEADLINE_MS: "1000" }, 6000],
  ])("waits AGENT_DEADLINE_MS + 5 s, or without bound: %j", (env, waitMs) => {
    expect(courierSettings(env).waitMs).toBe(waitMs);
  });

  it("defaults the branch to agent/<Agent name>, strips trailing slashes from the URLs and keeps valid AGENT_REPOS", () => {
    const s = courierSettings({
      AGENT_NAME: "x",
      GITHUB_API_URL: "http://127.0.0.1:1/",
      GITHUB_SERVER_URL: "http://127.0.0.1:2//",
      AGENT_REPOS: JSON.stringify([{ name: "app", url: "acme/app", path: "src/app" }, { url: "no-name" }]),
    });
    expect(s.branch).toBe("agent/x");
    expect(s.apiUrl).toBe("http://127.0.0.1:1");
    expect(s.serverUrl).toBe("http://127.0.0.1:2");
    expect(s.repos).toEqual([{ name: "app", url: "acme/app", path: "src/app" }]);
  });

  it("generates a PR body naming the Agent, Station and task", () => {
    expect(defaultBody({ agentName: "a", stationName: "s", taskId: "T-1" })).toBe(
      "Opened by ai-agent for Agent `a` on Station `s`.\n\nTask: `T-1`",
    );
    expect(defaultBody({ agentName: "a", stationName: "s", taskId: "" })).toBe(
      "Opened by ai-agent for Agent `a` on Station `s`.",
    );
  });
});

describe("resultWaitMs", () => {
  const now = 1_000_000;
  it.each([
    ["no deadline at all: no bound", { waitMs: undefined, reportBy: undefined }, undefined],
    ["only the relative budget", { waitMs: 65_000, reportBy: undefined }, 65_000],
    [
      "a late start: the report-by time (+5 s grace) ends the wait before the relative budget",
      { waitMs: 65_000, reportBy: now + 20_000 },
      25_000,
    ],
    ["the relative budget ends first", { waitMs: 10_000, reportBy: now + 60_000 }, 10_000],
    ["report-by long past: no wait left", { waitMs: 65_000, reportBy: now - 60_000 }, 0],
    ["only the report-by time", { waitMs: undefined, reportBy: now + 1_000 }, 6_000],
  ])("%s", (_name, settings, want) => {
    expect(resultWaitMs(settings, now)).toBe(want);
  });

  it("reads AGENT_DEADLINE_AT + AGENT_TAIL_MS as the report-by time", () => {
    const s = courierSettings({
      AGENT_DEADLINE_MS: "60000",
      AGENT_DEADLINE_AT: "5000000",
      AGENT_TAIL_MS: "30000",
    });
    expect(s.reportBy).toBe(5_030_000);
    expect(s.waitMs).toBe(65_000);
  });
});
