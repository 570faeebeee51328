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
 * installation's), so the cases run at the same time.
 */
import { describe, expect, it } from "vitest";
import { renderOutput, vendorFor } from "../../../src/cli/render-output.js";
import { runUsage } from "../../../src/core/pricing/run-usage.js";
import { CODEX_STREAM_MAX_RETRIES } from "../../../src/run-pod/supervisor/cli-setup/codex.js";
import { RESUME_PROMPT } from "../../../src/run-pod/supervisor/provider-retry/resume-argv.js";
import {
  messageTexts,
  offeredTools,
  startOpenAiResponsesServer,
} from "../../fakes/models/openai-responses.js";
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

/** A model codex has metadata for: it offers exec_command and the freeform apply_patch. */
const MODEL = "gpt-5.5";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** codex starts in about a second on an idle machine, 10 s and more on a loaded one; each turn starts it. */
const RUN_TIMEOUT_MS = 420_000;

let env: RealCliEnv;
let store: ConversationStore;
const suite = realCliSuite({
  vendor: "codex",
  api: "openai",
  model: MODEL,
  startModel: (host) => startOpenAiResponsesServer({ host }),
  baseUrl: (model) => model.url,
  runTimeoutMs: RUN_TIMEOUT_MS,
  realtime: true,
  onStart: (started) => {
    env = started.env;
    store = started.store as ConversationStore;
  },
});
const { skip: SKIP, stationWithModel, run, cliEvents, post, prompt, untilAccepted } = suite;

/** The prompts a request carried, without codex's own `<environment_context>` message. */
const userPrompts = (call: { body: unknown } | undefined) =>
  messageTexts(call ?? { body: undefined }, "user").filter((t) => !t.startsWith("<environment_context>"));

const NOTES_PATCH =
  "*** Begin Patch\n*** Add File: app/NOTES.md\n+# Notes\n+\n+Written by codex.\n*** End Patch\n";

describe.skipIf(SKIP)("the real codex CLI on the local plane", () => {
  it.concurrent(
    "edits the clone through apply_patch under permission_mode auto: Succeeded, thread and tokens from its lines, select and logs on them, the edit as a PR",
    async () => {
      const recipe = forgeRecipe(env, "acme/app");
      const model = await stationWithModel("cx-edit", {
        prompt: "Write the {topic} file.",
        resources: { ...recipe.resources, secrets: [keySecret("openai")] },
        delivery: recipe.delivery,
        output: {
          select: [{ event: "tool_call" }, { event: "usage" }],
          sinks: [{ type: "http", url: env.listener.url, headers_secret: SINK_HEADERS_KEY }],
        },
      });
      model.script([
        {
          toolCall: { name: "exec_command", input: { cmd: "cat app/README.md" } },
          usage: { input: 1000, output: 20 },
        },
        {
          text: "Writing the notes.",
          toolCall: { name: "apply_patch", input: { input: NOTES_PATCH } },
          usage: { input: 1100, output: 30, cacheRead: 900 },
        },
        { text: "Wrote app/NOTES.md.", usage: { input: 1200, output: 10, cacheRead: 1000 } },
      ]);
      const agent = await run("cx-edit-1", "cx-edit");
      expect(agent.status?.failureReason ?? "").toBe("");
      expect(agent.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
      const output = agent.status?.output ?? "";
      const sessionId = agent.status?.sessionId ?? "";
      expect(sessionId).toMatch(UUID);
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

      // kubectl agent status / logs on codex's lines.
      expect(vendorFor(output.split("\n"), MODEL)).toBe("codex");
      // input_tokens (3300) include the 1900 cached ones.
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
      expect(output).toBe(await podLog(env, agent, "agent"));

      // output.select: the two tool calls and the usage, nothing else of the CLI's.
      const selected = cliEvents("cx-edit-1");
      expect(
        selected.map((e) => `${e.type} ${(e.item as { type?: string } | undefined)?.type ?? ""}`.trim()),
      ).toEqual(["item.completed command_execution", "item.completed file_change", "turn.completed"]);

      // Three model calls, nothing else (no WebSocket probe, no model list); codex's own tools offered.
      expect(model.journal().map((e) => `${e.method} ${e.path}`)).toEqual(
        Array(3).fill("POST /v1/responses"),
      );
      expect(offeredTools(model.modelCalls()[0] ?? { body: undefined })).toEqual(
        expect.arrayContaining([
          { name: "exec_command", type: "function" },
          { name: "apply_patch", type: "custom" },
        ]),
      );
      expect(model.modelCalls()[0]?.headers.authorization).toBe("<present>");

      // The edit is the pull request's diff.
      const pulls = env.forge?.github.pulls.filter((p) => p.head === "agent/cx-edit-1") ?? [];
      expect(pulls).toHaveLength(1);
      expect(agent.status?.prUrl).toBe(pulls[0]?.htmlUrl);
      expect(
        await bareGit(env.forge?.root ?? "", "acme/app", [
          "diff",
          "--name-status",
          "main",
          "agent/cx-edit-1",
        ]),
      ).toBe("A\tNOTES.md\n");
      expect(await bareGit(env.forge?.root ?? "", "acme/app", ["show", "agent/cx-edit-1:NOTES.md"])).toBe(
        "# Notes\n\nWritten by codex.\n",
      );
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "a rejected key (401) ends Failed after the bounded retries with the provider's answer",
    async () => {
      const model = await stationWithModel("cx-401", { prompt: "Say hi." });
      model.fallback({ error: { status: 401 } });
      const agent = await run("cx-401-1", "cx-401");
      expect(agent.status?.phase).toBe("Failed");
      expect(agent.status?.failureReason).toMatch(
        /^codex exited with code 1: unexpected status 401 Unauthorized: Incorrect API key provided: sk-test\. You can find your API key at https:\/\/platform\.openai\.com\/account\/api-keys\., url: http:\/\/[\d.]+:\d+\/v1\/responses, request id: req_\w+$/,
      );
      expect(model.modelCalls()).toHaveLength(CODEX_STREAM_MAX_RETRIES + 1);
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "a provider that stays at its rate limit (429): waited for and continued until the deadline, then Failed naming the provider's last answer",
    async () => {
      const model = await stationWithModel(
        "cx-429",
        { prompt: "Say hi." },
        { deadlineMinutes: 2, env: FAST_PROVIDER_RETRIES },
      );
      model.fallback({ error: { status: 429 } });
      const agent = await run("cx-429-1", "cx-429");
      expect(agent.status).toMatchObject({ phase: "Failed", exitCode: 124 });
      expect(agent.status?.failureReason).toMatch(
        /^run deadline exceeded; the provider's last answer: openai 429: exceeded retry limit, last status: 429 Too Many Requests/,
      );
      expect(agent.status?.providerRetries?.count ?? 0).toBeGreaterThanOrEqual(1);
      expect(model.modelCalls().length).toBeGreaterThanOrEqual(CODEX_STREAM_MAX_RETRIES + 1);
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "overloaded past the CLI's own retries (503): the supervisor continues the same thread, the history carried, and the edit lands",
    async () => {
      const recipe = forgeRecipe(env, "acme/app");
      const model = await stationWithModel(
        "cx-limit",
        {
          prompt: "Write the {topic} file.",
          resources: { ...recipe.resources, secrets: [keySecret("openai")] },
          delivery: recipe.delivery,
        },
        { env: FAST_PROVIDER_RETRIES },
      );
      model.script([
        {
          text: "Writing the notes.",
          toolCall: { name: "apply_patch", input: { input: NOTES_PATCH } },
          usage: { input: 1100, output: 30 },
        },
        // More failures than codex's own request and stream retries together (each up to
        // CODEX_STREAM_MAX_RETRIES): it gives up, the supervisor does not.
        ...Array.from({ length: (CODEX_STREAM_MAX_RETRIES + 1) ** 2 }, () => ({ error: { status: 503 } })),
        { text: "Wrote app/NOTES.md.", usage: { input: 1300, output: 10 } },
      ]);
      const agent = await run("cx-limit-1", "cx-limit");
      expect(agent.status?.failureReason ?? "").toBe("");
      expect(agent.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
      expect(agent.status?.providerRetries?.count ?? 0, agent.status?.output).toBeGreaterThanOrEqual(1);
      expect(agent.status?.providerRetries?.last).toMatchObject({ provider: "openai", status: 503 });
      // The resumed process sent the thread so far (the prompt and the patch) and the continuation.
      const last = JSON.stringify(model.modelCalls().at(-1)?.body ?? "");
      expect(last).toContain("Write the notes file.");
      expect(last).toContain("apply_patch");
      expect(last).toContain(JSON.stringify(RESUME_PROMPT).slice(1, -1));
      expect(await bareGit(env.forge?.root ?? "", "acme/app", ["show", "agent/cx-limit-1:NOTES.md"])).toBe(
        "# Notes\n\nWritten by codex.\n",
      );
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "with ~30 % of model requests answered 429 (with and without retry-after), 529, 503 or a dropped stream at random (seeded): Succeeded with the model's edit",
    async () => {
      const recipe = forgeRecipe(env, "acme/app");
      const model = await stationWithModel(
        "cx-chaos",
        {
          prompt: "Write the {topic} file.",
          resources: { ...recipe.resources, secrets: [keySecret("openai")] },
          delivery: recipe.delivery,
        },
        { env: FAST_PROVIDER_RETRIES },
      );
      // Seed 8: the first request is answered 503 (test/fakes/models/base.ts seededRandom).
      model.faults({ rate: 0.3, seed: 8 });
      model.script([
        {
          text: "Writing the notes.",
          toolCall: { name: "apply_patch", input: { input: NOTES_PATCH } },
          usage: { input: 1100, output: 30 },
        },
        { text: "Wrote app/NOTES.md.", usage: { input: 1300, output: 10 } },
      ]);
      const agent = await run("cx-chaos-1", "cx-chaos");
      expect(agent.status?.failureReason ?? "", agent.status?.output).toBe("");
      expect(agent.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
      // The provider did limit it: some requests were answered by a fault, not by the script.
      const faulted = model.modelCalls().filter((c) => c.step && ("error" in c.step || "cut" in c.step));
      expect(faulted.length).toBeGreaterThan(0);
      expect(await bareGit(env.forge?.root ?? "", "acme/app", ["show", "agent/cx-chaos-1:NOTES.md"])).toBe(
        "# Notes\n\nWritten by codex.\n",
      );
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "a realtime session of three turns continues one codex thread; a resume in a fresh pod sends the earlier history",
    async () => {
      const model = await stationWithModel("cx-rt", {
        prompt: "Remember the number 42.",
        execution: "realtime",
        resources: { secrets: [keySecret("openai")], conversation: { source: `${store.url}/conv` } },
      });
      model.script([
        { text: "Noted: 42.", usage: { input: 100, output: 5 } },
        { text: "You said 42.", usage: { input: 200, output: 6 } },
        { text: "Still 42.", usage: { input: 300, output: 7 } },
      ]);
      await createAgent(env, "cx-rt-a", "cx-rt");
      await untilAccepted("cx-rt-a", "Which number?");
      // A prompt that looks like an option is the prompt: `exec resume <id> … -- <prompt>`.
      expect(await prompt("cx-rt-a", "-x: say it once more.")).toMatchObject({ status: 202 });
      expect(await post("cx-rt-a", "close")).toMatchObject({ status: 202 });
      const first = await finishedAgent(env, "cx-rt-a", RUN_TIMEOUT_MS);
      expect(first.status?.failureReason ?? "").toBe("");
      expect(first.status?.phase).toBe("Succeeded");
      const sessionId = first.status?.sessionId ?? "";
      expect(sessionId).toMatch(UUID);

      // One codex process per turn, each resuming the thread: every request carries the
      // conversation so far (the initial prompt was turn 1).
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
      expect(store.saves(sessionId)).toBeGreaterThan(0);

      // A fresh pod resumes it: the init restores the saved .codex, the turn runs `exec resume <id>`.
      model.script([{ text: "It was 42." }]);
      await createAgent(env, "cx-rt-b", "cx-rt", { resumeSession: sessionId });
      const { accepted } = await untilAccepted("cx-rt-b", "What was the number?");
      expect(accepted.body).toEqual({ turn: 1, queued: 1, sessionId });
      expect(await post("cx-rt-b", "close")).toMatchObject({ status: 202 });
      const resumed = await finishedAgent(env, "cx-rt-b", RUN_TIMEOUT_MS);
      expect(resumed.status?.failureReason ?? "").toBe("");
      expect(resumed.status).toMatchObject({ phase: "Succeeded", sessionId });
      const resumedCall = model.modelCalls()[3];
      expect(messageTexts(resumedCall ?? { body: undefined }, "assistant")).toEqual([
        "Noted: 42.",
        "You said 42.",
        "Still 42.",
      ]);
      expect(userPrompts(resumedCall).at(-1)).toBe("What was the number?");
      expect(resumed.status?.output ?? "").toContain(`{"type":"thread.started","thread_id":"${sessionId}"}`);
    },
    RUN_TIMEOUT_MS * 2,
  );
});
