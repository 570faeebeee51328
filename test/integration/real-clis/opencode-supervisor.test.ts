/**
 * The REAL opencode CLI (the pinned opencode-ai, from the CLI cache) under the BUILT supervisor
 * (dist/agent/ai-agent-supervisor), as an interactive run pod runs it: HOME and the workspace are
 * fresh directories, stdin is /dev/null, the argv is core/argv.ts's, the environment is what the
 * Job builder gives the agent container (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL = the local
 * Anthropic Messages fake in Claude Code's form, AGENT_MODEL). No control plane: this pins what the
 * CLI does with the supervisor's CLI setup (cli-setup/opencode.ts) and what it prints; the
 * Kubernetes end-to-end test (opencode.test.ts) covers the rest.
 *
 * Each test has its own model server, so the runs go concurrently (opencode takes 4 s to start on
 * an idle machine and much longer on a busy one). The supervisor runs as the current user (the
 * cache lives under /root, which uid 1000 cannot enter); the real node's e2e runs it as uid 1000.
 *
 * The scenarios every CLI runs are supervisor-scenarios.ts's (this file is opencode's row);
 * opencode's own (bypass and auto outside the workspace) follows them.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { renderOutput } from "../../../src/cli/render-output.js";
import { cliArgv } from "../../../src/core/cli/argv.js";
import { runUsage } from "../../../src/core/pricing/run-usage.js";
import { lastCliError, lastSessionId } from "../../../src/core/readback/output.js";
import { passesSelect } from "../../../src/sinks/select.js";
import {
  type AnthropicMessagesServer,
  startAnthropicMessages,
  textsOf,
} from "../../fakes/models/anthropic-messages.js";
import { BRIEF_PROVIDER_RIDE, type SupervisedRun, supervisorHarness } from "./supervisor-harness.js";
import { supervisedCliTests } from "./supervisor-scenarios.js";

const MODEL = "opencode/anthropic/claude-sonnet-4-6";
/** A run on a loaded 2-core machine: start-up alone has taken over a minute there. */
const RUN_TIMEOUT_MS = 400_000;

const harness = supervisorHarness({
  vendor: "opencode",
  model: MODEL,
  startModel: startAnthropicMessages,
  modelEnv: (model: AnthropicMessagesServer) => ({
    ANTHROPIC_API_KEY: "sk-ant-supervisor-test-key",
    ANTHROPIC_BASE_URL: model.origin,
  }),
  deadlineMs: RUN_TIMEOUT_MS - 30_000,
});
const modelServer = harness.modelServer;

const argvFor = (prompt: string, def: Record<string, unknown> = {}) =>
  cliArgv({ model: MODEL, prompt, ...def } as never, MODEL, prompt);

interface Run extends Pick<SupervisedRun, "code" | "stdout" | "stderr"> {
  /** The CLI's own stdout lines as printed (the supervisor's own events have `kind`, not `type`). */
  cliLines: string[];
  home: string;
  workspace: string;
}

async function superviseOpencode(
  name: string,
  model: AnthropicMessagesServer,
  prompt: string,
  def: Record<string, unknown> = {},
  env: Record<string, string> = {},
): Promise<Run> {
  const dir = harness.runDir(name);
  const { code, stdout, stderr, cliText } = await harness.supervise(model, dir, argvFor(prompt, def), env);
  return { code, stdout, stderr, cliLines: cliText, ...dir };
}

const types = (run: Run) => run.cliLines.map((l) => JSON.parse(l).type);

supervisedCliTests(
  {
    vendor: "opencode",
    harness,
    // opencode takes 4 s to start on an idle machine and much longer on a busy one: each test has a
    // model server of its own and the runs go side by side.
    model: modelServer,
    concurrent: true,
    timeoutMs: RUN_TIMEOUT_MS,
    argv: argvFor,
    // Only model calls, at the base URL plus /v1: no session-title request, nothing else.
    modelCall: "POST /v1/messages",
    sessionId: /^ses_/,
    cliError: (run) => lastCliError("opencode", run.cliText.join("\n")),

    edit: {
      title:
        "edits a file through its own write tool; its last step_finish ends the run with cost and session",
      script: () => [
        {
          toolCall: { name: "write", input: { filePath: "hello.txt", content: "hi from opencode\n" } },
          text: "Writing hello.txt.",
          usage: { input: 1000, output: 50 },
        },
        { text: "Wrote hello.txt.", usage: { input: 1200, output: 10 } },
      ],
      file: { path: "hello.txt", content: "hi from opencode\n" },
      kind: (l) => String(l.type),
      kinds: ["step_start", "text", "tool_use", "step_finish", "step_start", "text", "step_finish"],
      session: (run) => lastSessionId("opencode", run.cliText.join("\n")) ?? "",
      expectMore(run, { dir, requests }) {
        const output = run.cliText.join("\n");
        // Priced by opencode from its catalog ($3 / $15 per million tokens for claude-sonnet-4-6).
        const cost = runUsage({ vendor: "opencode", execution: "interactive", model: MODEL, lines: output });
        expect(cost?.usage).toMatchObject({ inputTokens: 2200, outputTokens: 60 });
        expect(cost?.costUsd).toBeCloseTo(0.0075, 6);
        expect(renderOutput(output, "opencode")).toEqual([
          expect.stringMatching(/^\[session\] ses_/),
          "Writing hello.txt.",
          "[tool] write · hello.txt",
          "[tool result] Wrote file successfully.",
          "Wrote hello.txt.",
          "[result] success · cost $0.0075 · 2200 in / 60 out tokens · 2 steps",
        ]);
        const selected = run.cliText.filter((l) =>
          passesSelect([{ event: "tool_call", tool: "write" }], "opencode", l),
        );
        expect(selected.map((l) => JSON.parse(l).type)).toEqual(["tool_use"]);

        expect(requests.map((e) => (e.body as { model?: string }).model)).toEqual([
          "claude-sonnet-4-6",
          "claude-sonnet-4-6",
        ]);
        expect(requests[0]?.headers["x-api-key"]).toBe("<present>");
        // opencode 1.18 quotes a message argument that holds a space before sending it
        // (docs/agent-clis.md, "opencode"): the model reads the prompt in double quotes.
        expect(textsOf(requests[1]?.body)).toContain('"Write hello.txt"');
        // The dependency install found its package listed: nothing came from npm.
        expect(readdirSync(join(dir.home, ".config/opencode/node_modules"))).toEqual([".keep"]);
        expect(existsSync(join(dir.home, ".npm"))).toBe(false);
      },
    },

    unauthorized: {
      title: "a rejected key (401) fails at once with the provider's answer on an error line, exit 1",
      prompt: "Say hi",
      code: 1,
      // Not retried.
      calls: 1,
      error: "invalid x-api-key (HTTP 401)",
      expectMore: (run) => expect(run.cliLines.map((l) => l.type)).toEqual(["error"]),
    },

    limitToDeadline: {
      title:
        "a persistent rate limit (429): the CLI's own retries, then the supervisor's waits with the provider's retry-after, until the deadline (124)",
      prompt: "Say hi",
      answer: { error: { status: 429 }, retryAfterSeconds: 1 },
      // opencode's own five retries (each after the 1 s retry-after) and its start take most of
      // half a minute here: a minute leaves room for the supervisor's waits.
      env: { ...BRIEF_PROVIDER_RIDE, AGENT_DEADLINE_MS: "60000" },
      error: "Number of request tokens has exceeded your per-minute rate limit (HTTP 429)",
      event: { provider: "anthropic", status: 429, retryAfterSeconds: 1 },
    },
  },
  () => {
    it.concurrent(
      "permission_mode bypass (--auto) lets it write outside the workspace; auto refuses and ends the run",
      async () => {
        const outside = join(harness.root(), "outside");
        mkdirSync(outside, { recursive: true });
        const write = (file: string) => ({
          toolCall: { name: "write", input: { filePath: join(outside, file), content: "x\n" } },
        });
        const bypassModel = await modelServer();
        bypassModel.script([write("bypass.txt"), { text: "Done." }]);
        const autoModel = await modelServer();
        autoModel.script([write("auto.txt"), { text: "Done." }]);
        const [bypass, auto] = await Promise.all([
          superviseOpencode("bypass", bypassModel, "Write outside", { permission_mode: "bypass" }),
          superviseOpencode("auto", autoModel, "Write outside", { permission_mode: "auto" }),
        ]);
        expect(bypass.code, bypass.stderr).toBe(0);
        expect(readFileSync(join(outside, "bypass.txt"), "utf8")).toBe("x\n");
        expect(auto.code, auto.stderr).toBe(0);
        expect(existsSync(join(outside, "auto.txt"))).toBe(false);
        const refused = JSON.parse(auto.cliLines.find((l) => JSON.parse(l).type === "tool_use") ?? "{}");
        expect(refused.part.state).toMatchObject({
          status: "error",
          error: "The user rejected permission to use this specific tool call.",
        });
        // It asks nobody: one model call, the run ends after the refused step.
        expect(autoModel.modelCalls()).toHaveLength(1);
        expect(types(auto).at(-1)).toBe("step_finish");
      },
      RUN_TIMEOUT_MS,
    );
  },
);
