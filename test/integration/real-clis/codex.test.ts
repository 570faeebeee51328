/**
 * End to end with the REAL codex CLI (the pinned @openai/codex on the real node, from a Station image with the CLI preinstalled)
 * through the controller, the real init, supervisor and courier, against the local OpenAI Responses
 * API (test/fakes/models/openai-responses.ts):
 * - an interactive run under the default `permission_mode: auto` whose model reads the clone with a shell
 *   command (no codex sandbox: the pod is the sandbox) and edits it through codex's own `apply_patch` tool ends Succeeded with
 *   status.sessionId from codex's `thread.started` line, tokens from its `turn.completed` line,
 *   `output.select` and `kubectl agent logs` on its real lines, and the edit as a pull request on
 *   the GitHub fake;
 * - a rejected key (401) and a persistent rate limit (429) each end Failed, after the bounded
 *   retries the codex setup configures, with what the provider answered in the failure reason;
 * - a realtime session of three turns, each continuing the thread, then a resume in a fresh pod
 *   that the model server proves received the earlier history.
 *
 * Each case has a model server of its own (the Station's OPENAI_BASE_URL wins over the
 * installation's), so the cases run at the same time. The scenarios are vendor-scenarios.ts's; this
 * file is codex's row.
 */
import { expect } from "vitest";
import { renderOutput } from "../../../src/cli/render-output.js";
import { runUsage } from "../../../src/core/pricing/run-usage.js";
import { CODEX_STREAM_MAX_RETRIES } from "../../../src/run-pod/supervisor/cli-setup/codex.js";
import { RESUME_PROMPT } from "../../../src/run-pod/supervisor/provider-retry/resume-argv.js";
import type { ModelStep } from "../../fakes/models/base.js";
import {
  messageTexts,
  type OpenAiResponsesServer,
  offeredTools,
  startOpenAiResponsesServer,
} from "../../fakes/models/openai-responses.js";
import { type RealCliVendorRow, realCliVendorTests } from "./vendor-scenarios.js";

/** A model codex has metadata for: it offers exec_command and the freeform apply_patch. */
const MODEL = "gpt-5.5";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** codex starts in about a second on an idle machine, 10 s and more on a loaded one; each turn starts it. */
const RUN_TIMEOUT_MS = 420_000;

/** The prompts a request carried, without codex's own `<environment_context>` message. */
const userPrompts = (call: { body: unknown } | undefined) =>
  messageTexts(call ?? { body: undefined }, "user").filter((t) => !t.startsWith("<environment_context>"));

const NOTES_PATCH =
  "*** Begin Patch\n*** Add File: app/NOTES.md\n+# Notes\n+\n+Written by codex.\n*** End Patch\n";
const NOTES = "# Notes\n\nWritten by codex.\n";
const WRITE_NOTES: ModelStep = {
  text: "Writing the notes.",
  toolCall: { name: "apply_patch", input: { input: NOTES_PATCH } },
  usage: { input: 1100, output: 30 },
};

const codex: RealCliVendorRow<OpenAiResponsesServer> = {
  vendor: "codex",
  prefix: "cx",
  suite: {
    api: "openai",
    model: MODEL,
    startModel: (host) => startOpenAiResponsesServer({ host }),
    baseUrl: (model) => model.url,
    runTimeoutMs: RUN_TIMEOUT_MS,
    realtime: true,
  },
  modelCall: "POST /v1/responses",
  sessionId: UUID,
  sessionNoun: "thread",
  file: { path: "NOTES.md", status: "A", content: NOTES },
  change: {
    spec: { prompt: "Write the {topic} file." },
    edit: WRITE_NOTES,
    done: { text: "Wrote app/NOTES.md.", usage: { input: 1300, output: 10 } },
  },

  edit: {
    title:
      "edits the clone through apply_patch under permission_mode auto: Succeeded, thread and tokens from its lines, select and logs on them, the edit as a PR",
    spec: { prompt: "Write the {topic} file." },
    select: [{ event: "tool_call" }, { event: "usage" }],
    script: [
      {
        toolCall: { name: "exec_command", input: { cmd: "cat app/README.md" } },
        usage: { input: 1000, output: 20 },
      },
      { ...WRITE_NOTES, usage: { input: 1100, output: 30, cacheRead: 900 } },
      { text: "Wrote app/NOTES.md.", usage: { input: 1200, output: 10, cacheRead: 1000 } },
    ],
    expectLines(agent, model, { suite }) {
      const output = agent.status?.output ?? "";
      const sessionId = agent.status?.sessionId ?? "";
      // The pod's log also holds the witness's, the supervisor's and its lifecycle lines; codex's
      // own are the JSON lines with a `type`.
      const cliText = output
        .split("\n")
        .filter((l) => l.startsWith("{") && typeof (JSON.parse(l) as { type?: unknown }).type === "string")
        .join("\n");
      const lines = cliText.split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines[0], output).toEqual({ type: "thread.started", thread_id: sessionId });
      // The shell command ran in the pod (without codex's own sandbox, docs/agent-clis.md) and read the clone.
      const command = lines.find(
        (l) => l.type === "item.completed" && (l.item as { type: string }).type === "command_execution",
      )?.item as { exit_code: number; aggregated_output: string } | undefined;
      expect(command).toMatchObject({ exit_code: 0, aggregated_output: "helo world\n" });
      expect(lines.at(-1)).toEqual({
        type: "turn.completed",
        usage: {
          input_tokens: 3300,
          cached_input_tokens: 1900,
          cache_write_input_tokens: 0,
          output_tokens: 60,
          reasoning_output_tokens: 0,
        },
      });

      // kubectl agent status / logs on codex's lines; input_tokens (3300) include the 1900 cached ones.
      expect(
        runUsage({ vendor: "codex", execution: "interactive", model: MODEL, lines: output })?.usage,
      ).toEqual({
        inputTokens: 1400,
        outputTokens: 60,
        cacheReadTokens: 1900,
        cacheWriteTokens: 0,
      });
      expect(renderOutput(cliText, "codex")).toEqual([
        `[session] ${sessionId}`,
        "[tool] shell · /bin/bash -lc 'cat app/README.md' · exit 0",
        "Writing the notes.",
        "[tool] edit · add /workspace/app/NOTES.md",
        "Wrote app/NOTES.md.",
        "[result] success · 3300 in / 60 out tokens · 1900 cached",
      ]);

      // output.select: the two tool calls and the usage, nothing else of the CLI's.
      const selected = suite.cliEvents("cx-edit-1");
      expect(
        selected.map((e) => `${e.type} ${(e.item as { type?: string } | undefined)?.type ?? ""}`.trim()),
      ).toEqual(["item.completed command_execution", "item.completed file_change", "turn.completed"]);

      // codex's own tools offered (no WebSocket probe, no model list: the scenario counts the calls).
      expect(offeredTools(model.modelCalls()[0] ?? { body: undefined })).toEqual(
        expect.arrayContaining([
          { name: "exec_command", type: "function" },
          { name: "apply_patch", type: "custom" },
        ]),
      );
      expect(model.modelCalls()[0]?.headers.authorization).toBe("<present>");
    },
  },

  unauthorized: {
    how: "after the bounded retries with the provider's answer",
    reason:
      /^codex exited with code 1: unexpected status 401 Unauthorized: Incorrect API key provided: sk-test\. You can find your API key at https:\/\/platform\.openai\.com\/account\/api-keys\., url: http:\/\/[\d.]+:\d+\/v1\/responses, request id: req_\w+$/,
    calls: CODEX_STREAM_MAX_RETRIES + 1,
  },

  rateLimited: {
    how: "waited for and continued until the deadline",
    reason:
      /^run deadline exceeded; the provider's last answer: openai 429: exceeded retry limit, last status: 429 Too Many Requests/,
    minCalls: CODEX_STREAM_MAX_RETRIES + 1,
  },

  limitPastCli: {
    what: "overloaded",
    tries: "retries",
    status: 503,
    // More failures than codex's own request and stream retries together (each up to
    // CODEX_STREAM_MAX_RETRIES).
    answers: (CODEX_STREAM_MAX_RETRIES + 1) ** 2,
    expectResumed(agent, model) {
      expect(agent.status?.providerRetries?.count ?? 0, agent.status?.output).toBeGreaterThanOrEqual(1);
      expect(agent.status?.providerRetries?.last).toMatchObject({ provider: "openai", status: 503 });
      // The resumed process sent the thread so far (the prompt and the patch) and the continuation.
      const last = JSON.stringify(model.modelCalls().at(-1)?.body ?? "");
      expect(last).toContain("Write the notes file.");
      expect(last).toContain("apply_patch");
      expect(last).toContain(JSON.stringify(RESUME_PROMPT).slice(1, -1));
    },
  },

  // Seed 8: the first request is answered 503.
  chaos: { seed: 8 },

  realtime: {
    script: [
      { text: "Noted: 42.", usage: { input: 100, output: 5 } },
      { text: "You said 42.", usage: { input: 200, output: 6 } },
      { text: "Still 42.", usage: { input: 300, output: 7 } },
    ],
    // A prompt that looks like an option is the prompt: `exec resume <id> … -- <prompt>`.
    third: "-x: say it once more.",
    expectTurns(model, first) {
      const calls = model.modelCalls();
      expect(calls).toHaveLength(3);
      expect(userPrompts(calls[0])).toEqual(["Remember the number 42."]);
      expect(userPrompts(calls[1])).toEqual(["Remember the number 42.", "Which number?"]);
      expect(userPrompts(calls[2])).toEqual([
        "Remember the number 42.",
        "Which number?",
        "-x: say it once more.",
      ]);
      expect(messageTexts(calls[2] ?? { body: undefined }, "assistant")).toEqual([
        "Noted: 42.",
        "You said 42.",
      ]);
      // Each turn's turn.completed reports the thread's running total: the last one is the session's.
      const lines = first.status?.output ?? "";
      expect(runUsage({ vendor: "codex", execution: "realtime", model: MODEL, lines })?.usage).toEqual({
        inputTokens: 600,
        outputTokens: 18,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
      });
    },
    // The init restores the saved .codex, the turn runs `exec resume <id>`.
    expectResumed([resumedCall]) {
      expect(messageTexts(resumedCall ?? { body: undefined }, "assistant")).toEqual([
        "Noted: 42.",
        "You said 42.",
        "Still 42.",
      ]);
      expect(userPrompts(resumedCall).at(-1)).toBe("What was the number?");
    },
    announced: (sessionId) => `{"type":"thread.started","thread_id":"${sessionId}"}`,
  },
};

realCliVendorTests(codex);
