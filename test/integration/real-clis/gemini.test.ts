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
 * installation's), so the cases run at the same time.
 */
import { describe, expect, it } from "vitest";
import { renderOutput, vendorFor } from "../../../src/cli/render-output.js";
import { parseJsonLine } from "../../../src/core/cli/vendors.js";
import { runUsage } from "../../../src/core/pricing/run-usage.js";
import type { Agent } from "../../../src/core/types.js";
import { GEMINI_MAX_ATTEMPTS } from "../../../src/run-pod/supervisor/cli-setup/gemini.js";
import { RESUME_PROMPT } from "../../../src/run-pod/supervisor/provider-retry/resume-argv.js";
import { geminiHistory, offeredTools, startGeminiServer } from "../../fakes/models/gemini-generate.js";
import { bareGit, type ConversationStore } from "./realtime-helpers.js";
import {
  createAgent,
  FAST_PROVIDER_RETRIES,
  finishedAgent,
  forgeRecipe,
  keySecret,
  podLog,
  type RealCliEnv,
  realCliSuite,
  SINK_HEADERS_KEY,
} from "./setup.js";

const MODEL = "gemini-2.5-pro";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** gemini takes 2 s to start on an idle machine, 20 s and more on a loaded one; each turn starts it. */
const RUN_TIMEOUT_MS = 420_000;

let env: RealCliEnv;
let store: ConversationStore;
const suite = realCliSuite({
  vendor: "gemini",
  api: "gemini",
  model: MODEL,
  startModel: startGeminiServer,
  baseUrl: (model) => model.origin,
  runTimeoutMs: RUN_TIMEOUT_MS,
  realtime: true,
  onStart: (started) => {
    env = started.env;
    store = started.store as ConversationStore;
  },
});
const { skip: SKIP, stationWithModel, run, cliEvents, post, prompt, untilAccepted } = suite;

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

describe.skipIf(SKIP)("the real gemini CLI on the local plane", () => {
  it.concurrent(
    "edits the clone through write_file: Succeeded, session and tokens from its lines, select and logs on them, disallowed tools never offered, the edit as a PR",
    async () => {
      const recipe = forgeRecipe(env, "acme/app");
      const model = await stationWithModel("gm-edit", {
        prompt: "Write the {topic} file.",
        permission_mode: "bypass",
        disallowed_tools: ["run_shell_command"],
        resources: { ...recipe.resources, secrets: [keySecret("gemini")] },
        delivery: recipe.delivery,
        output: {
          select: [{ event: "tool_call", tool: "write_file" }, { event: "result" }],
          sinks: [{ type: "http", url: env.listener.url, headers_secret: SINK_HEADERS_KEY }],
        },
      });
      model.script([
        {
          text: "Writing the notes.",
          toolCall: {
            name: "write_file",
            input: { file_path: "app/NOTES.md", content: "# Notes\n\nWritten by gemini.\n" },
          },
          usage: { input: 1000, output: 50 },
        },
        { text: "Wrote app/NOTES.md.", usage: { input: 1200, output: 10 } },
      ]);
      const agent = await run("gm-edit-1", "gm-edit");
      expect(agent.status?.failureReason ?? "").toBe("");
      expect(agent.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
      const output = agent.status?.output ?? "";
      const sessionId = agent.status?.sessionId ?? "";
      expect(sessionId).toMatch(UUID);
      // The agent container's log also holds the supervisor's and its witness's own lines.
      const jsonLines = output.split("\n").filter((l) => parseJsonLine(l) !== undefined);
      const init = jsonLines.map((l) => parseJsonLine(l)).find((j) => j?.type === "init");
      expect(init).toMatchObject({ type: "init", session_id: sessionId, model: MODEL });

      // kubectl agent status / logs on gemini's lines.
      expect(vendorFor(output.split("\n"), MODEL)).toBe("gemini");
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
      expect(output).toBe(await podLog(env, agent, "agent"));

      // output.select: the write call and the result, nothing else of the CLI's.
      const selected = cliEvents("gm-edit-1");
      expect(selected.map((e) => e.type)).toEqual(["tool_use", "result"]);
      expect(selected[0]).toMatchObject({
        tool_name: "write_file",
        parameters: { file_path: "app/NOTES.md" },
      });

      // Two chat calls to the named model, nothing else; the denied tool was never offered.
      expect(model.journal().map((e) => `${e.method} ${e.path}`)).toEqual([
        `POST /v1beta/models/${MODEL}:streamGenerateContent`,
        `POST /v1beta/models/${MODEL}:streamGenerateContent`,
      ]);
      const offered = offeredTools(model.modelCalls()[0] as never);
      expect(offered).toContain("write_file");
      expect(offered).not.toContain("run_shell_command");

      // The edit is the pull request's diff.
      const pulls = env.forge?.github.pulls.filter((p) => p.head === "agent/gm-edit-1") ?? [];
      expect(pulls).toHaveLength(1);
      expect(agent.status?.prUrl).toBe(pulls[0]?.htmlUrl);
      expect(
        await bareGit(env.forge?.root ?? "", "acme/app", [
          "diff",
          "--name-status",
          "main",
          "agent/gm-edit-1",
        ]),
      ).toBe("A\tNOTES.md\n");
      expect(await bareGit(env.forge?.root ?? "", "acme/app", ["show", "agent/gm-edit-1:NOTES.md"])).toBe(
        "# Notes\n\nWritten by gemini.\n",
      );
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "a rejected key (401) ends Failed at once with the provider's answer",
    async () => {
      const model = await stationWithModel("gm-401", { prompt: "Say hi." });
      model.fallback({ error: { status: 401 } });
      const agent = await run("gm-401-1", "gm-401");
      expect(agent.status?.phase).toBe("Failed");
      expect(failure(agent, 401)).toBe(
        "API error 401 UNAUTHENTICATED: Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
      );
      expect(model.modelCalls()).toHaveLength(1);
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "a provider that stays at its rate limit (429): waited for and continued until the deadline, then Failed naming the provider's last answer",
    async () => {
      // gemini's own attempts at a 429 take about half a minute: two minutes leave room for a retry.
      const model = await stationWithModel(
        "gm-429",
        { prompt: "Say hi." },
        { deadlineMinutes: 2, env: FAST_PROVIDER_RETRIES },
      );
      model.fallback({ error: { status: 429 } });
      const agent = await run("gm-429-1", "gm-429");
      expect(agent.status).toMatchObject({ phase: "Failed", exitCode: 124 });
      expect(agent.status?.failureReason).toMatch(
        /^run deadline exceeded; the provider's last answer: gemini 429: .*Resource has been exhausted \(e\.g\. check quota\)/,
      );
      expect(agent.status?.providerRetries?.count ?? 0).toBeGreaterThanOrEqual(1);
      expect(model.modelCalls().length).toBeGreaterThan(GEMINI_MAX_ATTEMPTS);
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "a rate limit past the CLI's own attempts (429): the supervisor continues the same session, the history carried, and the edit lands",
    async () => {
      const recipe = forgeRecipe(env, "acme/app");
      const model = await stationWithModel(
        "gm-limit",
        {
          prompt: "Write the {topic} notes.",
          permission_mode: "bypass",
          resources: { ...recipe.resources, secrets: [keySecret("gemini")] },
          delivery: recipe.delivery,
        },
        { env: FAST_PROVIDER_RETRIES },
      );
      model.script([
        {
          text: "Writing the notes.",
          toolCall: {
            name: "write_file",
            input: { file_path: "app/NOTES.md", content: "# Notes\n\nWritten by gemini.\n" },
          },
          usage: { input: 1000, output: 50 },
        },
        ...Array.from({ length: GEMINI_MAX_ATTEMPTS }, () => ({ error: { status: 429 } })),
        { text: "Wrote app/NOTES.md.", usage: { input: 1300, output: 10 } },
      ]);
      const agent = await run("gm-limit-1", "gm-limit");
      expect(agent.status?.failureReason ?? "").toBe("");
      expect(agent.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
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
      expect(await bareGit(env.forge?.root ?? "", "acme/app", ["show", "agent/gm-limit-1:NOTES.md"])).toBe(
        "# Notes\n\nWritten by gemini.\n",
      );
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "with ~30 % of model requests answered 429 (with and without retry-after), 529, 503 or a dropped stream at random (seeded): Succeeded with the model's edit",
    async () => {
      const recipe = forgeRecipe(env, "acme/app");
      const model = await stationWithModel(
        "gm-chaos",
        {
          prompt: "Write the {topic} notes.",
          permission_mode: "bypass",
          resources: { ...recipe.resources, secrets: [keySecret("gemini")] },
          delivery: recipe.delivery,
        },
        { env: FAST_PROVIDER_RETRIES },
      );
      // Seed 23: the first request is answered 429 with retry-after (test/fakes/models/base.ts seededRandom).
      model.faults({ rate: 0.3, seed: 23 });
      model.script([
        {
          text: "Writing the notes.",
          toolCall: {
            name: "write_file",
            input: { file_path: "app/NOTES.md", content: "# Notes\n\nWritten by gemini.\n" },
          },
          usage: { input: 1000, output: 50 },
        },
        { text: "Wrote app/NOTES.md.", usage: { input: 1300, output: 10 } },
      ]);
      const agent = await run("gm-chaos-1", "gm-chaos");
      expect(agent.status?.failureReason ?? "", agent.status?.output).toBe("");
      expect(agent.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
      // The provider did limit it: some requests were answered by a fault, not by the script.
      const faulted = model.modelCalls().filter((c) => c.step && ("error" in c.step || "cut" in c.step));
      expect(faulted.length).toBeGreaterThan(0);
      expect(await bareGit(env.forge?.root ?? "", "acme/app", ["show", "agent/gm-chaos-1:NOTES.md"])).toBe(
        "# Notes\n\nWritten by gemini.\n",
      );
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "a realtime session of three turns continues one gemini session; a resume in a fresh pod sends the earlier history",
    async () => {
      const model = await stationWithModel("gm-rt", {
        prompt: "Remember the number 42.",
        execution: "realtime",
        resources: { secrets: [keySecret("gemini")], conversation: { source: `${store.url}/conv` } },
      });
      model.script([{ text: "Noted: 42." }, { text: "You said 42." }, { text: "Still 42." }]);
      await createAgent(env, "gm-rt-a", "gm-rt");
      await untilAccepted("gm-rt-a", "Which number?");
      expect(await prompt("gm-rt-a", "Say it once more.")).toMatchObject({ status: 202 });
      expect(await post("gm-rt-a", "close")).toMatchObject({ status: 202 });
      const first = await finishedAgent(env, "gm-rt-a", RUN_TIMEOUT_MS);
      expect(first.status?.failureReason ?? "").toBe("");
      expect(first.status?.phase).toBe("Succeeded");
      const sessionId = first.status?.sessionId ?? "";
      expect(sessionId).toMatch(UUID);

      // One gemini process per turn, each continuing the session: every request carries the
      // conversation so far (the initial prompt was turn 1).
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
      expect(store.saves(sessionId)).toBeGreaterThan(0);

      // A fresh pod resumes it: the init restores the saved .gemini, the turn runs --resume=<id>.
      model.script([{ text: "It was 42." }]);
      const before = model.modelCalls().length;
      await createAgent(env, "gm-rt-b", "gm-rt", { resumeSession: sessionId });
      const { accepted } = await untilAccepted("gm-rt-b", "What was the number?");
      expect(accepted.body).toEqual({ turn: 1, queued: 1, sessionId });
      expect(await post("gm-rt-b", "close")).toMatchObject({ status: 202 });
      const resumed = await finishedAgent(env, "gm-rt-b", RUN_TIMEOUT_MS);
      expect(resumed.status?.failureReason ?? "").toBe("");
      expect(resumed.status).toMatchObject({ phase: "Succeeded", sessionId });
      const [resumedCall] = model.modelCalls().slice(before);
      const history = geminiHistory(resumedCall as never);
      expect(history.filter((t) => t.role === "model").map((t) => t.text)).toEqual([
        "Noted: 42.",
        "You said 42.",
        "Still 42.",
      ]);
      expect(history.at(-1)).toMatchObject({ role: "user", text: "What was the number?" });
      // The resumed turn announced the same session.
      expect(resumed.status?.output ?? "").toContain(`"session_id":"${sessionId}"`);
    },
    RUN_TIMEOUT_MS * 2,
  );
});
