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
 * installation's), so the cases run at the same time. The scenarios are vendor-scenarios.ts's; this
 * file is opencode's row (no limit past its retries, chaos or realtime run yet).
 */
import { expect } from "vitest";
import { renderOutput } from "../../../src/cli/render-output.js";
import { runUsage } from "../../../src/core/pricing/run-usage.js";
import {
  type AnthropicMessagesServer,
  startAnthropicMessages,
} from "../../fakes/models/anthropic-messages.js";
import type { ModelStep } from "../../fakes/models/base.js";
import { type RealCliVendorRow, realCliVendorTests } from "./vendor-scenarios.js";

const MODEL = "opencode/anthropic/claude-sonnet-4-6";
/** opencode alone takes 4 s to start on an idle machine, over a minute on a loaded one. */
const RUN_TIMEOUT_MS = 420_000;

const NOTES = "# Notes\n\nWritten by opencode.\n";
const WRITE_NOTES: ModelStep = {
  text: "Writing the notes.",
  toolCall: { name: "write", input: { filePath: "app/NOTES.md", content: NOTES } },
  usage: { input: 1000, output: 50 },
};

const opencode: RealCliVendorRow<AnthropicMessagesServer> = {
  vendor: "opencode",
  prefix: "oc",
  suite: {
    api: "anthropic",
    model: MODEL,
    startModel: startAnthropicMessages,
    baseUrl: (model) => model.origin,
    runTimeoutMs: RUN_TIMEOUT_MS,
    deadlineMinutes: 7,
  },
  modelCall: "POST /v1/messages",
  sessionId: /^ses_/,
  sessionNoun: "session",
  file: { path: "NOTES.md", status: "A", content: NOTES },

  edit: {
    title:
      "edits the clone through its write tool: Succeeded, session and cost from its lines, select and logs on them, the edit as a PR",
    spec: { prompt: "Write the {topic} file.", permission_mode: "auto" },
    select: [{ event: "tool_call", tool: "write" }, { event: "result" }],
    script: [WRITE_NOTES, { text: "Wrote app/NOTES.md.", usage: { input: 1200, output: 10 } }],
    expectLines(agent, _model, { env }) {
      const output = agent.status?.output ?? "";
      expect(output).toContain(`"sessionID":"${agent.status?.sessionId}"`);

      // kubectl agent status: opencode's own cost, summed over its two steps ($3 / $15 per Mtok).
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

      // output.select: the write call and the last step, nothing else of the CLI's.
      const cliEvents = env.listener.eventsFor("oc-edit-1").filter((e) => typeof e.type === "string");
      expect(cliEvents.map((e) => e.type)).toEqual(["tool_use", "step_finish"]);
      expect(cliEvents[1]).toMatchObject({ part: { reason: "stop" } });
    },
  },

  unauthorized: {
    how: "at once with the provider's answer",
    reason: "opencode exited with code 1: invalid x-api-key (HTTP 401)",
    calls: 1,
    expectMore(agent) {
      expect(renderOutput(agent.status?.output ?? "", "opencode")).toEqual([
        "[result] failed",
        "[error] invalid x-api-key (HTTP 401)",
      ]);
    },
  },

  rateLimited: {
    how: "waited for (its retry-after) and continued until the deadline",
    retryAfterSeconds: 1,
    reason:
      /^run deadline exceeded; the provider's last answer: anthropic 429: Number of request tokens has exceeded your per-minute rate limit/,
    last: { status: 429, retryAfterSeconds: 1 },
  },
};

realCliVendorTests(opencode);
