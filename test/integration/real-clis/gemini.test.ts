/**
 * End to end with the REAL gemini CLI (the pinned @google/gemini-cli on the real node's Station
 * image) through the controller, the real init, supervisor and courier, against the local Gemini
 * API (test/fakes/models/gemini-generate.ts):
 * - an interactive run whose model edits the cloned repository through gemini's own `write_file`
 *   tool ends Succeeded with status.sessionId from gemini's `init` line, tokens from its `result`
 *   line, `output.select` and `kubectl agent logs` on its real lines, the definition's
 *   disallowed tool never offered to the model, and the edit as a pull request on the GitHub fake;
 * - a rejected key (401) and a persistent rate limit (429) each end Failed, within the CLI's
 *   bounded attempts, with the provider's answer in the failure reason;
 * - a realtime session of three turns, each continuing the session, then a resume in a fresh pod
 *   that the model server proves received the earlier history.
 *
 * Each case has a model server of its own (the Station's GOOGLE_GEMINI_BASE_URL wins over the
 * installation's), so the cases run at the same time. The scenarios are vendor-scenarios.ts's; this
 * file is gemini's row.
 */
import { expect } from "vitest";
import { renderOutput } from "../../../src/cli/render-output.js";
import { parseJsonLine } from "../../../src/core/cli/vendors.js";
import { runUsage } from "../../../src/core/pricing/run-usage.js";
import type { Agent } from "../../../src/core/types.js";
import { GEMINI_MAX_ATTEMPTS } from "../../../src/run-pod/supervisor/cli-setup/gemini.js";
import { RESUME_PROMPT } from "../../../src/run-pod/supervisor/provider-retry/resume-argv.js";
import type { ModelStep } from "../../fakes/models/base.js";
import {
  type GeminiServer,
  geminiHistory,
  offeredTools,
  startGeminiServer,
} from "../../fakes/models/gemini-generate.js";
import { type RealCliVendorRow, realCliVendorTests } from "./vendor-scenarios.js";

const MODEL = "gemini-2.5-pro";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** gemini takes 2 s to start on an idle machine, 20 s and more on a loaded one; each turn starts it. */
const RUN_TIMEOUT_MS = 420_000;

/**
 * The CLI's message in a failed Agent's reason, checking the exit code: the HTTP status mod 256, or
 * 1 when gemini outlived the supervisor's grace after printing its result line (it takes 1-2 s to
 * exit on a busy machine; the supervisor then stops it and takes the code from the result line).
 */
function failure(agent: Agent, httpStatus: number): string {
  const reason = agent.status?.failureReason ?? "";
  const match = /^gemini exited with code (\d+): (.*)$/s.exec(reason);
  expect(match, reason).not.toBeNull();
  expect([String(httpStatus % 256), "1"]).toContain(match?.[1]);
  return match?.[2] ?? "";
}

const NOTES = "# Notes\n\nWritten by gemini.\n";
const WRITE_NOTES: ModelStep = {
  text: "Writing the notes.",
  toolCall: { name: "write_file", input: { file_path: "app/NOTES.md", content: NOTES } },
  usage: { input: 1000, output: 50 },
};

const gemini: RealCliVendorRow<GeminiServer> = {
  vendor: "gemini",
  prefix: "gm",
  suite: {
    api: "gemini",
    model: MODEL,
    startModel: startGeminiServer,
    baseUrl: (model) => model.origin,
    runTimeoutMs: RUN_TIMEOUT_MS,
    realtime: true,
  },
  modelCall: `POST /v1beta/models/${MODEL}:streamGenerateContent`,
  sessionId: UUID,
  sessionNoun: "session",
  file: { path: "NOTES.md", status: "A", content: NOTES },
  change: {
    spec: { prompt: "Write the {topic} notes.", permission_mode: "bypass" },
    edit: WRITE_NOTES,
    done: { text: "Wrote app/NOTES.md.", usage: { input: 1300, output: 10 } },
  },

  edit: {
    title:
      "edits the clone through write_file: Succeeded, session and tokens from its lines, select and logs on them, disallowed tools never offered, the edit as a PR",
    spec: {
      prompt: "Write the {topic} file.",
      permission_mode: "bypass",
      disallowed_tools: ["run_shell_command"],
    },
    select: [{ event: "tool_call", tool: "write_file" }, { event: "result" }],
    script: [WRITE_NOTES, { text: "Wrote app/NOTES.md.", usage: { input: 1200, output: 10 } }],
    expectLines(agent, model, { suite }) {
      const output = agent.status?.output ?? "";
      const sessionId = agent.status?.sessionId ?? "";
      // The agent container's log also holds the supervisor's and its witness's own lines.
      const jsonLines = output.split("\n").filter((l) => parseJsonLine(l) !== undefined);
      const init = jsonLines.map((l) => parseJsonLine(l)).find((j) => j?.type === "init");
      expect(init).toMatchObject({ type: "init", session_id: sessionId, model: MODEL });

      // kubectl agent status / logs on gemini's lines.
      expect(
        runUsage({ vendor: "gemini", execution: "interactive", model: MODEL, lines: output })?.usage,
      ).toEqual({
        inputTokens: 2200,
        outputTokens: 60,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
      });
      const rendered = renderOutput(jsonLines.join("\n"), "gemini");
      expect(rendered.slice(0, 5)).toEqual([
        `[session] ${sessionId} · ${MODEL}`,
        "[user] Write the notes file.",
        "Writing the notes.",
        "[tool] write_file · app/NOTES.md",
        "[tool result]",
      ]);
      expect(rendered.at(-2)).toBe("Wrote app/NOTES.md.");
      expect(rendered.at(-1)).toMatch(/^\[result\] success · 2200 in \/ 60 out tokens · 1 tool call · /);

      // output.select: the write call and the result, nothing else of the CLI's.
      const selected = suite.cliEvents("gm-edit-1");
      expect(selected.map((e) => e.type)).toEqual(["tool_use", "result"]);
      expect(selected[0]).toMatchObject({
        tool_name: "write_file",
        parameters: { file_path: "app/NOTES.md" },
      });

      // The denied tool was never offered.
      const offered = offeredTools(model.modelCalls()[0] as never);
      expect(offered).toContain("write_file");
      expect(offered).not.toContain("run_shell_command");
    },
  },

  unauthorized: {
    how: "at once with the provider's answer",
    reason: (agent) =>
      expect(failure(agent, 401)).toBe(
        "API error 401 UNAUTHENTICATED: Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
      ),
    calls: 1,
  },

  // gemini's own attempts at a 429 take about half a minute: the scenario's two minutes leave room for a retry.
  rateLimited: {
    how: "waited for and continued until the deadline",
    reason:
      /^run deadline exceeded; the provider's last answer: gemini 429: .*Resource has been exhausted \(e\.g\. check quota\)/,
    minCalls: GEMINI_MAX_ATTEMPTS + 1,
  },

  limitPastCli: {
    what: "a rate limit",
    tries: "attempts",
    status: 429,
    answers: GEMINI_MAX_ATTEMPTS,
    expectResumed(agent, model) {
      const waits = (agent.status?.output ?? "")
        .split("\n")
        .filter((l) => l.includes('"kind":"provider-limit"'));
      expect(agent.status?.providerRetries, waits.join("\n")).toMatchObject({
        count: 1,
        last: { provider: "gemini", status: 429 },
      });
      const last = JSON.stringify(model.modelCalls().at(-1)?.body ?? "");
      expect(last).toContain("write_file");
      expect(last).toContain(JSON.stringify(RESUME_PROMPT).slice(1, -1));
    },
  },

  // Seed 23: the first request is answered 429 with retry-after.
  chaos: { seed: 23 },

  realtime: {
    script: [{ text: "Noted: 42." }, { text: "You said 42." }, { text: "Still 42." }],
    third: "Say it once more.",
    expectTurns(model) {
      const firstCalls = model.modelCalls();
      const userTexts = (i: number) =>
        geminiHistory(firstCalls[i] as never)
          .filter((t) => t.role === "user" && t.text !== "")
          .map((t) => t.text.replace(/^<session_context>[\s\S]*<\/session_context>/, ""));
      expect(firstCalls.length).toBeGreaterThanOrEqual(3);
      expect(userTexts(0).at(-1)).toBe("Remember the number 42.");
      expect(userTexts(1).slice(-2)).toEqual(["Remember the number 42.", "Which number?"]);
      expect(userTexts(2).slice(-3)).toEqual([
        "Remember the number 42.",
        "Which number?",
        "Say it once more.",
      ]);
    },
    // The init restores the saved .gemini, the turn runs --resume=<id>.
    expectResumed([resumedCall]) {
      const history = geminiHistory(resumedCall as never);
      expect(history.filter((t) => t.role === "model").map((t) => t.text)).toEqual([
        "Noted: 42.",
        "You said 42.",
        "Still 42.",
      ]);
      expect(history.at(-1)).toMatchObject({ role: "user", text: "What was the number?" });
    },
    announced: (sessionId) => `"session_id":"${sessionId}"`,
  },
};

realCliVendorTests(gemini);
