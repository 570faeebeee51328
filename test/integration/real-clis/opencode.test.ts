/**
 * End to end with the REAL opencode CLI (the pinned opencode-ai on the real node's Station image)
 * through the controller, the real init, supervisor and courier, against the local Anthropic
 * Messages server (the installation's AGENT_ANTHROPIC_BASE_URL; opencode routes
 * `opencode/anthropic/…` models there): a run whose model edits the cloned repository through
 * opencode's own `write` tool ends Succeeded with its session and cost read from opencode's lines,
 * `output.select` forwards exactly the selected lines, `kubectl agent logs` renders them, and the
 * edit arrives as a pull request on the GitHub fake; a rejected key and a persistent rate limit
 * each end Failed with the provider's answer in the failure reason.
 *
 * Each case has a model server of its own (the Station's ANTHROPIC_BASE_URL wins over the
 * installation's), so the cases run at the same time.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { renderOutput, vendorFor } from "../../../src/cli/render-output.js";
import { runUsage } from "../../../src/core/pricing/run-usage.js";
import { startAnthropicMessages } from "../../fakes/models/anthropic-messages.js";
import {
  FAST_PROVIDER_RETRIES,
  forgeRecipe,
  keySecret,
  podLog,
  type RealCliEnv,
  realCliSuite,
  SINK_HEADERS_KEY,
} from "./setup.js";

const MODEL = "opencode/anthropic/claude-sonnet-4-6";
/** opencode alone takes 4 s to start on an idle machine, over a minute on a loaded one. */
const RUN_TIMEOUT_MS = 420_000;

let env: RealCliEnv;
const suite = realCliSuite({
  vendor: "opencode",
  api: "anthropic",
  model: MODEL,
  startModel: startAnthropicMessages,
  baseUrl: (model) => model.origin,
  runTimeoutMs: RUN_TIMEOUT_MS,
  deadlineMinutes: 7,
  onStart: (started) => {
    env = started.env;
  },
});
const { skip: SKIP, stationWithModel, run } = suite;

/** git reading a forge's bare repository directly (a few milliseconds; the forge's server is not involved). */
const git = (args: string[]): string =>
  execFileSync("git", args, {
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", GIT_CONFIG_NOSYSTEM: "1" },
  }).replace(/\n$/, "");

describe.skipIf(SKIP)("the real opencode CLI on the local plane", () => {
  it.concurrent(
    "edits the clone through its write tool: Succeeded, session and cost from its lines, select and logs on them, the edit as a PR",
    async () => {
      const recipe = forgeRecipe(env, "acme/app");
      const model = await stationWithModel("oc-edit", {
        prompt: "Write the {topic} file.",
        permission_mode: "auto",
        resources: { ...recipe.resources, secrets: [keySecret("anthropic")] },
        delivery: recipe.delivery,
        output: {
          select: [{ event: "tool_call", tool: "write" }, { event: "result" }],
          sinks: [{ type: "http", url: env.listener.url, headers_secret: SINK_HEADERS_KEY }],
        },
      });
      model.script([
        {
          text: "Writing the notes.",
          toolCall: {
            name: "write",
            input: { filePath: "app/NOTES.md", content: "# Notes\n\nWritten by opencode.\n" },
          },
          usage: { input: 1000, output: 50 },
        },
        { text: "Wrote app/NOTES.md.", usage: { input: 1200, output: 10 } },
      ]);
      const agent = await run("oc-edit-1", "oc-edit");
      expect(agent.status?.failureReason ?? "").toBe("");
      expect(agent.status?.phase).toBe("Succeeded");
      expect(agent.status?.exitCode).toBe(0);
      const output = agent.status?.output ?? "";
      expect(agent.status?.sessionId).toMatch(/^ses_/);
      expect(output).toContain(`"sessionID":"${agent.status?.sessionId}"`);

      // kubectl agent status: opencode's own cost, summed over its two steps ($3 / $15 per Mtok).
      const lines = output.split("\n");
      expect(vendorFor(lines, MODEL)).toBe("opencode");
      expect(
        runUsage({ vendor: "opencode", execution: "interactive", model: MODEL, lines: output }),
      ).toMatchObject({
        costUsd: expect.closeTo(0.0075, 4),
        costSource: "reported",
        usage: { inputTokens: 2200, outputTokens: 60 },
      });
      // kubectl agent logs.
      expect(renderOutput(output, "opencode")).toEqual([
        `[session] ${agent.status?.sessionId}`,
        "Writing the notes.",
        "[tool] write · app/NOTES.md",
        "[tool result] Wrote file successfully.",
        "Wrote app/NOTES.md.",
        "[result] success · cost $0.0075 · 2200 in / 60 out tokens · 2 steps",
      ]);
      expect(output).toBe(await podLog(env, agent, "agent"));

      // output.select: the write call and the last step, nothing else of the CLI's.
      const cliEvents = env.listener.eventsFor("oc-edit-1").filter((e) => typeof e.type === "string");
      expect(cliEvents.map((e) => e.type)).toEqual(["tool_use", "step_finish"]);
      expect(cliEvents[1]).toMatchObject({ part: { reason: "stop" } });

      // Two model calls, both to the scripted model: no title request, nothing else.
      expect(model.journal().map((e) => `${e.method} ${e.path}`)).toEqual([
        "POST /v1/messages",
        "POST /v1/messages",
      ]);

      // The edit is the pull request's diff.
      const pulls = env.forge?.github.pulls.filter((p) => p.head === "agent/oc-edit-1") ?? [];
      expect(pulls).toHaveLength(1);
      expect(agent.status?.prUrl).toBe(pulls[0]?.htmlUrl);
      const repo = ["--git-dir", join(env.forge?.root ?? "", "acme/app.git")];
      expect(git([...repo, "diff", "--name-status", "main", "agent/oc-edit-1"])).toBe("A\tNOTES.md");
      // git() drops the output's last newline: the file is the scripted content to the byte.
      expect(git([...repo, "show", "agent/oc-edit-1:NOTES.md"])).toBe("# Notes\n\nWritten by opencode.");
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "a rejected key (401) ends Failed at once with the provider's answer",
    async () => {
      const model = await stationWithModel("oc-401", { prompt: "Say hi." });
      model.fallback({ error: { status: 401 } });
      const agent = await run("oc-401-1", "oc-401");
      expect(agent.status?.phase).toBe("Failed");
      expect(agent.status?.failureReason).toBe("opencode exited with code 1: invalid x-api-key (HTTP 401)");
      expect(model.modelCalls()).toHaveLength(1);
      expect(renderOutput(agent.status?.output ?? "", "opencode")).toEqual([
        "[result] failed",
        "[error] invalid x-api-key (HTTP 401)",
      ]);
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "a provider that stays at its rate limit (429): waited for (its retry-after) and continued until the deadline, then Failed naming the provider's last answer",
    async () => {
      const model = await stationWithModel(
        "oc-429",
        { prompt: "Say hi." },
        { deadlineMinutes: 2, env: FAST_PROVIDER_RETRIES },
      );
      model.fallback({ error: { status: 429 }, retryAfterSeconds: 1 });
      const agent = await run("oc-429-1", "oc-429");
      expect(agent.status).toMatchObject({ phase: "Failed", exitCode: 124 });
      expect(agent.status?.failureReason).toMatch(
        /^run deadline exceeded; the provider's last answer: anthropic 429: Number of request tokens has exceeded your per-minute rate limit/,
      );
      expect(agent.status?.providerRetries).toMatchObject({ last: { status: 429, retryAfterSeconds: 1 } });
    },
    RUN_TIMEOUT_MS,
  );
});
