/**
 * End to end with the REAL claude CLI (the pinned @anthropic-ai/claude-code on the real node's Station
 * image) through the controller, the real init, supervisor and courier, against the local
 * Anthropic Messages API (test/fakes/models/anthropic-messages.ts):
 * - an interactive run whose model edits the cloned repository through claude's own Edit tool ends
 *   Succeeded with status.sessionId from claude's init and result lines, the cost from its result
 *   line, `output.select` and `kubectl agent logs` on its real lines, the definition's disallowed
 *   tool never offered to the model, a skills_source without settings.json not breaking the argv's
 *   `--settings`, and the edit as a pull request on the GitHub fake;
 * - a rejected key (401) ends Failed after the CLI's bounded retries (cli-setup/claude.ts) with
 *   what the provider answered; a provider that stays at its rate limit (429) is waited for and the
 *   session continued by the supervisor until the deadline, which then names the provider's answer;
 * - overloaded answers (529) past the CLI's own retries: the supervisor continues the same session
 *   (docs/provider-limits.md#riding-out-a-limit), the model receives the earlier history, the run
 *   succeeds with its edit delivered and status.providerRetries says so;
 * - a realtime session of three turns, each continuing the session, then a resume in a fresh pod
 *   that the model server proves received the earlier history.
 *
 * Each case has a model server of its own (the Station's ANTHROPIC_BASE_URL wins over the
 * installation's), so the cases run at the same time. The scenarios are vendor-scenarios.ts's; this
 * file is claude's row.
 */

import { expect } from "vitest";
import { renderOutput } from "../../../src/cli/render-output.js";
import { runUsage } from "../../../src/core/pricing/run-usage.js";
import { CLAUDE_MAX_RETRIES } from "../../../src/run-pod/supervisor/cli-setup/claude.js";
import { RESUME_PROMPT } from "../../../src/run-pod/supervisor/provider-retry/resume-argv.js";
import {
  type AnthropicMessagesServer,
  startAnthropicMessages,
  textsOf,
} from "../../fakes/models/anthropic-messages.js";
import type { ModelStep } from "../../fakes/models/base.js";
import { SINK_HEADERS_KEY } from "./setup.js";
import { type RealCliVendorRow, realCliVendorTests } from "./vendor-scenarios.js";

const MODEL = "claude-sonnet-4-6";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** claude starts in under a second on an idle machine, 10 s and more on a loaded one; each turn starts it. */
const RUN_TIMEOUT_MS = 420_000;

/** The tool names a model call offered. */
const offered = (call: { body: unknown } | undefined): string[] =>
  ((call?.body as { tools?: { name?: string }[] } | undefined)?.tools ?? []).map((t) => t.name ?? "");

/** What the model was sent, without claude's own `<system-reminder>` messages. */
const said = (call: { body: unknown } | undefined) =>
  textsOf(call?.body).filter((t) => !t.startsWith("<system-reminder>"));

/** The Edit call that fixes the README's typo. */
const FIX_TYPO: ModelStep = {
  text: "Fixing the typo.",
  toolCall: {
    name: "Edit",
    input: { file_path: "/workspace/app/README.md", old_string: "helo", new_string: "hello" },
  },
  usage: { input: 1000, output: 50 },
};

const claude: RealCliVendorRow<AnthropicMessagesServer> = {
  vendor: "claude",
  prefix: "cl",
  suite: {
    api: "anthropic",
    model: MODEL,
    startModel: startAnthropicMessages,
    baseUrl: (model) => model.origin,
    runTimeoutMs: RUN_TIMEOUT_MS,
    topic: "readme",
    realtime: true,
  },
  modelCall: "POST /v1/messages",
  sessionId: UUID,
  sessionNoun: "session",
  file: { path: "README.md", status: "M", content: "hello world\n" },
  change: {
    spec: { prompt: "Fix the {topic} typo.", permission_mode: "bypass" },
    edit: FIX_TYPO,
    done: { text: "Fixed README.md.", usage: { input: 1300, output: 10 } },
  },

  edit: {
    title:
      "edits the clone through Edit: Succeeded, session and cost from its lines, select and logs on them, disallowed tools never offered, the edit as a PR",
    spec: { prompt: "Fix the {topic} typo.", permission_mode: "bypass", disallowed_tools: ["Bash"] },
    // Serves no settings.json: the init carries on without it, the argv still has --settings.
    resources: ({ store }) => ({ skills_source: `${store?.url}/skills` }),
    select: [{ event: "tool_call", tool: "Edit" }, { event: "result" }],
    script: [FIX_TYPO, { text: "Fixed README.md.", usage: { input: 1200, output: 10 } }],
    expectLines(agent, model, { suite }) {
      const output = agent.status?.output ?? "";
      // The agent container's log: claude's lines among the supervisor's own log lines.
      const lines = output
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown> & { type?: string; subtype?: string });
      const init = lines.find((l) => l.type === "system" && l.subtype === "init") ?? {};
      const result = (lines.filter((l) => l.type === "result").at(-1) ?? {}) as Record<string, unknown> & {
        total_cost_usd?: number;
        usage: { input_tokens?: number; output_tokens?: number };
      };
      const sessionId = agent.status?.sessionId ?? "";
      expect(init).toMatchObject({ type: "system", subtype: "init", session_id: sessionId, model: MODEL });
      expect(init.tools).not.toContain("Bash");
      expect(result).toMatchObject({ type: "result", is_error: false, session_id: sessionId });

      // kubectl agent status / logs on claude's lines: the cost is the result line's.
      expect(result.total_cost_usd).toBeGreaterThan(0);
      expect(
        runUsage({ vendor: "claude", execution: "interactive", model: MODEL, lines: output }),
      ).toMatchObject({
        costUsd: result.total_cost_usd,
        costSource: "reported",
        usage: { inputTokens: result.usage.input_tokens, outputTokens: result.usage.output_tokens },
      });
      // From the session line to the result line (the container's own non-JSON lines, if any, aside).
      const rendered = renderOutput(output, "claude");
      const from = rendered.indexOf(`[session] ${sessionId} · ${MODEL}`);
      const to = rendered.findIndex((l) => l.startsWith("[result]"));
      expect(from).toBeGreaterThanOrEqual(0);
      expect(rendered.slice(from, to)).toEqual([
        `[session] ${sessionId} · ${MODEL}`,
        "Fixing the typo.",
        "[tool] Edit · /workspace/app/README.md",
        "[tool result] The file /workspace/app/README.md has been updated successfully.",
        "Fixed README.md.",
      ]);
      expect(rendered[to]).toMatch(/^\[result\] success · cost \$\d+\.\d{4} · 2 turns · /);

      // output.select: the Edit call and the result, nothing else of the CLI's.
      const selected = suite.cliEvents("cl-edit-1");
      expect(selected.map((e) => e.type)).toEqual(["assistant", "result"]);
      expect(selected[0]).toMatchObject({
        message: {
          content: [{ type: "tool_use", name: "Edit", input: { file_path: "/workspace/app/README.md" } }],
        },
      });

      // The key went out; Bash was never offered.
      expect(model.journal()[0]?.headers["x-api-key"]).toBe("<present>");
      expect(offered(model.modelCalls()[0])).toEqual(expect.arrayContaining(["Edit", "Write", "Read"]));
      expect(offered(model.modelCalls()[0])).not.toContain("Bash");
    },
  },

  unauthorized: {
    how: "after the bounded retries with the CLI's message and the provider's status",
    reason:
      "claude exited with code 1: Invalid API key · Fix external API key (API 401 authentication_error)",
    calls: 1 + Number(CLAUDE_MAX_RETRIES),
  },

  rateLimited: {
    how: "the supervisor waits and continues the session until the deadline",
    retryAfterSeconds: 1,
    reason:
      "run deadline exceeded; the provider's last answer: anthropic 429: API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit",
    minCalls: 1 + Number(CLAUDE_MAX_RETRIES),
    last: { provider: "anthropic", status: 429 },
    expectMore(agent) {
      // Each wait is in the run's log (what kubectl agent logs shows), and the status counts them.
      const waits = (agent.status?.output ?? "")
        .split("\n")
        .filter((l) => l.includes('"kind":"provider-limit"'));
      expect(waits).toHaveLength(agent.status?.providerRetries?.count ?? 0);
    },
  },

  limitPastCli: {
    what: "overloaded",
    tries: "retries",
    status: 529,
    answers: 1 + Number(CLAUDE_MAX_RETRIES),
    spec: ({ env }) => ({
      output: { sinks: [{ type: "http", url: env.listener.url, headers_secret: SINK_HEADERS_KEY }] },
    }),
    expectResumed(agent, model, { env }) {
      expect(agent.status?.providerRetries).toMatchObject({
        count: 1,
        last: { provider: "anthropic", status: 529 },
      });
      // The resumed process sent the earlier conversation (the prompt, the Edit and its result) and
      // the continuation, not the first message alone.
      const last = textsOf(model.modelCalls().at(-1)?.body);
      expect(last).toContain("Fix the readme typo.");
      expect(last.some((t) => t.includes("has been updated successfully"))).toBe(true);
      expect(last.at(-1)).toBe(RESUME_PROMPT);
      // Both processes' tokens count.
      expect(agent.status?.usage?.inputTokens ?? 0).toBeGreaterThanOrEqual(1000 + 1300);
      // While it waited, the sink heard why.
      expect(env.listener.eventsFor("cl-limit-1").filter((e) => e.kind === "provider-limit")).toMatchObject([
        { provider: "anthropic", status: 529, retry: 1, reason: "overloaded" },
      ]);
    },
  },

  // Seed 7: the first two requests are limited.
  chaos: { seed: 7 },

  realtime: {
    script: [{ text: "Noted: 42." }, { text: "You said 42." }, { text: "Still 42." }],
    third: "Say it once more.",
    // The session the second turn was accepted into is the one the run ended with.
    expectSecondAccepted: (second, sessionId) => expect(String(second.body.sessionId ?? "")).toBe(sessionId),
    expectTurns(model) {
      const calls = model.modelCalls();
      expect(calls).toHaveLength(3);
      expect(said(calls[0])).toEqual(["Remember the number 42."]);
      expect(said(calls[1])).toEqual(["Remember the number 42.", "Noted: 42.", "Which number?"]);
      expect(said(calls[2])).toEqual([
        "Remember the number 42.",
        "Noted: 42.",
        "Which number?",
        "You said 42.",
        "Say it once more.",
      ]);
    },
    // The init restores the saved .claude, the turn runs --resume <id>.
    expectResumed(calls) {
      expect(calls).toHaveLength(1);
      expect(said(calls[0])).toEqual([
        "Remember the number 42.",
        "Noted: 42.",
        "Which number?",
        "You said 42.",
        "Say it once more.",
        "Still 42.",
        "What was the number?",
      ]);
    },
    announced: (sessionId) => `"session_id":"${sessionId}"`,
  },
};

realCliVendorTests(claude);
