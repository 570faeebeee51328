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
 * installation's), so the cases run at the same time.
 */
import { describe, expect, it } from "vitest";
import { renderOutput, vendorFor } from "../../../src/cli/render-output.js";
import { runUsage } from "../../../src/core/pricing/run-usage.js";
import { CLAUDE_MAX_RETRIES } from "../../../src/run-pod/supervisor/cli-setup/claude.js";
import { RESUME_PROMPT } from "../../../src/run-pod/supervisor/provider-retry/resume-argv.js";
import { startAnthropicMessages, textsOf } from "../../fakes/models/anthropic-messages.js";
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

const MODEL = "claude-sonnet-4-6";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** claude starts in under a second on an idle machine, 10 s and more on a loaded one; each turn starts it. */
const RUN_TIMEOUT_MS = 420_000;

let env: RealCliEnv;
let store: ConversationStore;
const suite = realCliSuite({
  vendor: "claude",
  api: "anthropic",
  model: MODEL,
  startModel: startAnthropicMessages,
  baseUrl: (model) => model.origin,
  runTimeoutMs: RUN_TIMEOUT_MS,
  topic: "readme",
  realtime: true,
  onStart: (started) => {
    env = started.env;
    store = started.store as ConversationStore;
  },
});
const { skip: SKIP, stationWithModel, run, cliEvents, post, prompt, untilAccepted } = suite;

/** The tool names a model call offered. */
const offered = (call: { body: unknown } | undefined): string[] =>
  ((call?.body as { tools?: { name?: string }[] } | undefined)?.tools ?? []).map((t) => t.name ?? "");

describe.skipIf(SKIP)("the real claude CLI on the local plane", () => {
  it.concurrent(
    "edits the clone through Edit: Succeeded, session and cost from its lines, select and logs on them, disallowed tools never offered, the edit as a PR",
    async () => {
      const recipe = forgeRecipe(env, "acme/app");
      const model = await stationWithModel("cl-edit", {
        prompt: "Fix the {topic} typo.",
        permission_mode: "bypass",
        disallowed_tools: ["Bash"],
        resources: {
          ...recipe.resources,
          secrets: [keySecret("anthropic")],
          // Serves no settings.json: the init carries on without it, the argv still has --settings.
          skills_source: `${store.url}/skills`,
        },
        delivery: recipe.delivery,
        output: {
          select: [{ event: "tool_call", tool: "Edit" }, { event: "result" }],
          sinks: [{ type: "http", url: env.listener.url, headers_secret: SINK_HEADERS_KEY }],
        },
      });
      model.script([
        {
          text: "Fixing the typo.",
          toolCall: {
            name: "Edit",
            input: { file_path: "/workspace/app/README.md", old_string: "helo", new_string: "hello" },
          },
          usage: { input: 1000, output: 50 },
        },
        { text: "Fixed README.md.", usage: { input: 1200, output: 10 } },
      ]);
      const agent = await run("cl-edit-1", "cl-edit");
      expect(agent.status?.failureReason ?? "").toBe("");
      expect(agent.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
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
      expect(sessionId).toMatch(UUID);
      expect(init).toMatchObject({ type: "system", subtype: "init", session_id: sessionId, model: MODEL });
      expect(init.tools).not.toContain("Bash");
      expect(result).toMatchObject({ type: "result", is_error: false, session_id: sessionId });

      // kubectl agent status / logs on claude's lines: the cost is the result line's.
      expect(vendorFor(output.split("\n"), MODEL)).toBe("claude");
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
      expect(output).toBe(await podLog(env, agent, "agent"));

      // output.select: the Edit call and the result, nothing else of the CLI's.
      const selected = cliEvents("cl-edit-1");
      expect(selected.map((e) => e.type)).toEqual(["assistant", "result"]);
      expect(selected[0]).toMatchObject({
        message: {
          content: [{ type: "tool_use", name: "Edit", input: { file_path: "/workspace/app/README.md" } }],
        },
      });

      // Two model calls, nothing else (no probe, no telemetry); Bash was never offered.
      expect(model.journal().map((e) => `${e.method} ${e.path}`)).toEqual([
        "POST /v1/messages",
        "POST /v1/messages",
      ]);
      expect(model.journal()[0]?.headers["x-api-key"]).toBe("<present>");
      expect(offered(model.modelCalls()[0])).toEqual(expect.arrayContaining(["Edit", "Write", "Read"]));
      expect(offered(model.modelCalls()[0])).not.toContain("Bash");

      // The edit is the pull request's diff.
      const pulls = env.forge?.github.pulls.filter((p) => p.head === "agent/cl-edit-1") ?? [];
      expect(pulls).toHaveLength(1);
      expect(agent.status?.prUrl).toBe(pulls[0]?.htmlUrl);
      expect(
        await bareGit(env.forge?.root ?? "", "acme/app", [
          "diff",
          "--name-status",
          "main",
          "agent/cl-edit-1",
        ]),
      ).toBe("M\tREADME.md\n");
      expect(await bareGit(env.forge?.root ?? "", "acme/app", ["show", "agent/cl-edit-1:README.md"])).toBe(
        "hello world\n",
      );
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "a rejected key (401) ends Failed after the bounded retries with the CLI's message and the provider's status",
    async () => {
      const model = await stationWithModel("cl-401", { prompt: "Say hi." });
      model.fallback({ error: { status: 401 } });
      const agent = await run("cl-401-1", "cl-401");
      expect(agent.status).toMatchObject({
        phase: "Failed",
        failureReason:
          "claude exited with code 1: Invalid API key · Fix external API key (API 401 authentication_error)",
      });
      expect(model.modelCalls()).toHaveLength(1 + Number(CLAUDE_MAX_RETRIES));
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "a provider that stays at its rate limit (429): the supervisor waits and continues the session until the deadline, then Failed naming the provider's last answer",
    async () => {
      const model = await stationWithModel(
        "cl-429",
        { prompt: "Say hi." },
        { deadlineMinutes: 2, env: FAST_PROVIDER_RETRIES },
      );
      model.fallback({ error: { status: 429 }, retryAfterSeconds: 1 });
      const agent = await run("cl-429-1", "cl-429");
      expect(agent.status).toMatchObject({
        phase: "Failed",
        exitCode: 124,
        failureReason:
          "run deadline exceeded; the provider's last answer: anthropic 429: API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit",
      });
      // The CLI's own bounded retries, then the supervisor's, each a process of the same run.
      const retries = agent.status?.providerRetries;
      expect(retries?.count ?? 0).toBeGreaterThanOrEqual(1);
      expect(retries?.last).toMatchObject({ provider: "anthropic", status: 429 });
      expect(model.modelCalls().length).toBeGreaterThanOrEqual(1 + Number(CLAUDE_MAX_RETRIES));
      // Each wait is in the run's log (what kubectl agent logs shows), and the status counts them.
      const waits = (agent.status?.output ?? "")
        .split("\n")
        .filter((l) => l.includes('"kind":"provider-limit"'));
      expect(waits).toHaveLength(retries?.count ?? 0);
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "overloaded past the CLI's own retries (529): the supervisor continues the same session, the history carried, and the edit lands",
    async () => {
      const recipe = forgeRecipe(env, "acme/app");
      const model = await stationWithModel(
        "cl-limit",
        {
          prompt: "Fix the {topic} typo.",
          permission_mode: "bypass",
          resources: { ...recipe.resources, secrets: [keySecret("anthropic")] },
          delivery: recipe.delivery,
          output: { sinks: [{ type: "http", url: env.listener.url, headers_secret: SINK_HEADERS_KEY }] },
        },
        { env: FAST_PROVIDER_RETRIES },
      );
      model.script([
        {
          text: "Fixing the typo.",
          toolCall: {
            name: "Edit",
            input: { file_path: "/workspace/app/README.md", old_string: "helo", new_string: "hello" },
          },
          usage: { input: 1000, output: 50 },
        },
        // The CLI's own retries of its next request all fail: it gives up, the supervisor does not.
        ...Array.from({ length: 1 + Number(CLAUDE_MAX_RETRIES) }, () => ({ error: { status: 529 } })),
        { text: "Fixed README.md.", usage: { input: 1300, output: 10 } },
      ]);
      const agent = await run("cl-limit-1", "cl-limit");
      expect(agent.status?.failureReason ?? "").toBe("");
      expect(agent.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
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
      expect(await bareGit(env.forge?.root ?? "", "acme/app", ["show", "agent/cl-limit-1:README.md"])).toBe(
        "hello world\n",
      );
      // While it waited, the sink heard why.
      expect(env.listener.eventsFor("cl-limit-1").filter((e) => e.kind === "provider-limit")).toMatchObject([
        { provider: "anthropic", status: 529, retry: 1, reason: "overloaded" },
      ]);
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "with ~30 % of model requests answered 429 (with and without retry-after), 529, 503 or a dropped stream at random (seeded): Succeeded with the model's edit",
    async () => {
      const recipe = forgeRecipe(env, "acme/app");
      const model = await stationWithModel(
        "cl-chaos",
        {
          prompt: "Fix the {topic} typo.",
          permission_mode: "bypass",
          resources: { ...recipe.resources, secrets: [keySecret("anthropic")] },
          delivery: recipe.delivery,
        },
        { env: FAST_PROVIDER_RETRIES },
      );
      // Seed 7: the first two requests are limited (test/fakes/models/base.ts seededRandom).
      model.faults({ rate: 0.3, seed: 7 });
      model.script([
        {
          text: "Fixing the typo.",
          toolCall: {
            name: "Edit",
            input: { file_path: "/workspace/app/README.md", old_string: "helo", new_string: "hello" },
          },
          usage: { input: 1000, output: 50 },
        },
        { text: "Fixed README.md.", usage: { input: 1300, output: 10 } },
      ]);
      const agent = await run("cl-chaos-1", "cl-chaos");
      expect(agent.status?.failureReason ?? "", agent.status?.output).toBe("");
      expect(agent.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
      // The provider did limit it: some requests were answered by a fault, not by the script.
      const faulted = model.modelCalls().filter((c) => c.step && ("error" in c.step || "cut" in c.step));
      expect(faulted.length).toBeGreaterThan(0);
      expect(await bareGit(env.forge?.root ?? "", "acme/app", ["show", "agent/cl-chaos-1:README.md"])).toBe(
        "hello world\n",
      );
    },
    RUN_TIMEOUT_MS,
  );

  it.concurrent(
    "a realtime session of three turns continues one claude session; a resume in a fresh pod sends the earlier history",
    async () => {
      const model = await stationWithModel("cl-rt", {
        prompt: "Remember the number 42.",
        execution: "realtime",
        resources: { secrets: [keySecret("anthropic")], conversation: { source: `${store.url}/conv` } },
      });
      model.script([{ text: "Noted: 42." }, { text: "You said 42." }, { text: "Still 42." }]);
      await createAgent(env, "cl-rt-a", "cl-rt");
      const { accepted: second } = await untilAccepted("cl-rt-a", "Which number?");
      const sessionId = String(second.body.sessionId ?? "");
      expect(sessionId).toMatch(UUID);
      expect(await prompt("cl-rt-a", "Say it once more.")).toMatchObject({ status: 202 });
      expect(await post("cl-rt-a", "close")).toMatchObject({ status: 202 });
      const first = await finishedAgent(env, "cl-rt-a", RUN_TIMEOUT_MS);
      expect(first.status?.failureReason ?? "").toBe("");
      expect(first.status).toMatchObject({ phase: "Succeeded", sessionId });

      // One claude process per turn, each continuing the session: every request carries the
      // conversation so far (the definition's prompt was turn 1).
      const calls = model.modelCalls();
      expect(calls).toHaveLength(3);
      const said = (i: number) => textsOf(calls[i]?.body).filter((t) => !t.startsWith("<system-reminder>"));
      expect(said(0)).toEqual(["Remember the number 42."]);
      expect(said(1)).toEqual(["Remember the number 42.", "Noted: 42.", "Which number?"]);
      expect(said(2)).toEqual([
        "Remember the number 42.",
        "Noted: 42.",
        "Which number?",
        "You said 42.",
        "Say it once more.",
      ]);
      expect(store.saves(sessionId)).toBeGreaterThan(0);

      // A fresh pod resumes it: the init restores the saved .claude, the turn runs --resume <id>.
      model.script([{ text: "It was 42." }]);
      await createAgent(env, "cl-rt-b", "cl-rt", { resumeSession: sessionId });
      const { accepted } = await untilAccepted("cl-rt-b", "What was the number?");
      expect(accepted.body).toEqual({ turn: 1, queued: 1, sessionId });
      expect(await post("cl-rt-b", "close")).toMatchObject({ status: 202 });
      const resumed = await finishedAgent(env, "cl-rt-b", RUN_TIMEOUT_MS);
      expect(resumed.status?.failureReason ?? "").toBe("");
      expect(resumed.status).toMatchObject({ phase: "Succeeded", sessionId });
      const resumedCalls = model.modelCalls().slice(3);
      expect(resumedCalls).toHaveLength(1);
      expect(textsOf(resumedCalls[0]?.body).filter((t) => !t.startsWith("<system-reminder>"))).toEqual([
        "Remember the number 42.",
        "Noted: 42.",
        "Which number?",
        "You said 42.",
        "Say it once more.",
        "Still 42.",
        "What was the number?",
      ]);
      // The resumed turn announced the same session.
      expect(resumed.status?.output ?? "").toContain(`"session_id":"${sessionId}"`);
    },
    RUN_TIMEOUT_MS * 2,
  );
});
