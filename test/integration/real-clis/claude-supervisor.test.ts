/**
 * The REAL claude CLI (the pinned @anthropic-ai/claude-code, from the CLI cache) under the BUILT
 * supervisor (dist/agent/ai-agent-supervisor), as an interactive run pod runs it: HOME and the
 * workspace are fresh directories, stdin is /dev/null, the argv is core/argv.ts's, the environment
 * is what the Job builder gives the agent container (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL = the
 * local Messages API fake). No control plane: this pins what the CLI does with the supervisor's CLI
 * setup (cli-setup/claude.ts) and what it prints, fast enough to run on every change; the
 * Kubernetes end-to-end test (claude.test.ts) covers the rest.
 *
 * The supervisor runs as the current user (the cache lives under /root, which uid 1000 cannot
 * enter). Claude refuses --dangerously-skip-permissions as root, so these runs allow their tools by
 * name (`allowed_tools`); the real node's e2e runs the CLI as uid 1000 with `permission_mode: bypass`.
 *
 * The scenarios every CLI runs are supervisor-scenarios.ts's (this file is claude's row); claude's
 * own (a pinned fork, --settings, a cut stream) follow them.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, expect, it } from "vitest";
import { cliArgv } from "../../../src/core/cli/argv.js";
import { announcedSessionId } from "../../../src/core/cli/vendors.js";
import { CLAUDE_MAX_RETRIES } from "../../../src/run-pod/supervisor/cli-setup/claude.js";
import {
  type AnthropicMessagesServer,
  startAnthropicMessages,
  textsOf,
} from "../../fakes/models/anthropic-messages.js";
import { cachedCli } from "../../harness/agent-clis.js";
import { providerLimitEvents, type RunDir, supervisorHarness } from "./supervisor-harness.js";
import { supervisedCliTests } from "./supervisor-scenarios.js";

const CLAUDE = cachedCli("claude");
const MODEL = "claude-sonnet-4-6";
const KEY = "sk-ant-api03-supervisor-test-key";

const harness = supervisorHarness({
  vendor: "claude",
  model: MODEL,
  startModel: startAnthropicMessages,
  modelEnv: (model: AnthropicMessagesServer) => ({
    ANTHROPIC_API_KEY: KEY,
    ANTHROPIC_BASE_URL: model.origin,
  }),
});
const { runDir } = harness;

let model: AnthropicMessagesServer;
beforeAll(async () => {
  if (harness.skip) return;
  model = await harness.modelServer();
});

const superviseClaude = (dir: RunDir, argv: string[], env: Record<string, string> = {}) =>
  harness.supervise(model, dir, argv, env);

const argvFor = (prompt: string, extra: Record<string, unknown> = {}) =>
  cliArgv(
    { model: MODEL, prompt, allowed_tools: ["Write", "Edit", "Bash"], ...extra } as never,
    MODEL,
    prompt,
  );

const editDir = () => runDir("edit");

supervisedCliTests(
  {
    vendor: "claude",
    harness,
    model: () => model,
    timeoutMs: harness.testTimeoutMs,
    argv: argvFor,
    modelCall: "POST /v1/messages",
    sessionId: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,

    edit: {
      title: "edits a file through its own Write and Edit tools and ends with a successful result line",
      script: (dir) => {
        const file = join(dir.workspace, "hello.txt");
        return [
          { toolCall: { name: "Write", input: { file_path: file, content: "hello\n" } }, text: "Writing." },
          {
            toolCall: {
              name: "Edit",
              input: { file_path: file, old_string: "hello", new_string: "hello, claude" },
            },
          },
          { text: "Wrote hello.txt.", usage: { input: 1000, output: 20 } },
        ];
      },
      file: { path: "hello.txt", content: "hello, claude\n" },
      kind: (l) => `${l.type}${l.subtype ? `/${l.subtype}` : ""}`,
      kinds: [
        "system/init",
        "assistant",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "result/success",
      ],
      session: (run) => announcedSessionId("claude", run.cliLines[0] ?? {}) ?? "",
      expectMore(run, { dir, requests }) {
        expect(run.cliLines[0]).toMatchObject({
          model: MODEL,
          apiKeySource: "ANTHROPIC_API_KEY",
          claude_code_version: CLAUDE.version,
        });
        const result = run.cliLines.at(-1) ?? {};
        expect(result).toMatchObject({
          subtype: "success",
          is_error: false,
          result: "Wrote hello.txt.",
          session_id: announcedSessionId("claude", run.cliLines[0] ?? {}),
        });
        expect(result.total_cost_usd).toBeGreaterThan(0);
        // The model calls went out with the key, which no request shows.
        expect(requests[0]?.headers["x-api-key"]).toBe("<present>");
        expect(JSON.stringify(requests)).not.toContain(KEY);
        expect([...model.lastTools().keys()]).toEqual(
          expect.arrayContaining(["Write", "Edit", "Bash", "Read"]),
        );
        // The setup's empty settings file, for --settings.
        expect(readFileSync(join(dir.home, ".claude", "settings.json"), "utf8")).toBe("{}\n");
      },
    },

    resume: {
      title: "resumes the session by the id its init line announced, sending the earlier history",
      prompt: "And now?",
      answer: { text: "Still here." },
      expectResumed(run, call, session) {
        expect(run.cliLines[0]?.session_id).toBe(session);
        const texts = textsOf(call?.body);
        expect(texts).toEqual(
          expect.arrayContaining(["Write hello.txt", "Writing.", "Wrote hello.txt.", "And now?"]),
        );
        expect(texts.indexOf("Write hello.txt")).toBeLessThan(texts.indexOf("And now?"));
      },
    },

    unauthorized: {
      title: "a 401 ends the run after the bounded retries with the CLI's message and the provider's status",
      prompt: "hi",
      code: 1,
      calls: 1 + Number(CLAUDE_MAX_RETRIES),
      error: "Invalid API key · Fix external API key (API 401 authentication_error)",
      expectMore(run) {
        expect(run.cliLines.filter((l) => l.subtype === "api_retry")).toHaveLength(
          Number(CLAUDE_MAX_RETRIES),
        );
      },
    },

    limitPastCli: {
      title:
        "a 429 past the CLI's own retries (honouring retry-after): the supervisor waits and runs it again, and the run succeeds",
      answer: {
        error: { status: 429, message: "Number of requests has exceeded your rate limit" },
        retryAfterSeconds: 1,
      },
      answers: 1 + Number(CLAUDE_MAX_RETRIES),
      event: { provider: "anthropic", status: 429, retry: 1, reason: "rate_limited" },
      message: "API Error: Request rejected (429) · Number of requests has exceeded your rate limit",
      expectMore(run) {
        // One wait: the second process got the model's answer.
        expect(providerLimitEvents(run.stdout)).toHaveLength(1);
        const retries = run.cliLines.filter((l) => l.subtype === "api_retry");
        expect(retries.map((r) => r.error_status)).toEqual(Array(Number(CLAUDE_MAX_RETRIES)).fill(429));
        for (const r of retries) expect(r.retry_delay_ms).toBeGreaterThanOrEqual(1000);
      },
    },
  },
  ({ editSession }) => {
    it("a pinned fork (--resume A --fork-session --session-id B) continues A's history as session B", async () => {
      expect(editSession()).not.toBe("");
      const pin = "0b6f3c2e-9a4d-4e1f-8c7b-5d2a1e0f9c3b";
      const before = model.modelCalls().length;
      model.script([{ text: "Forked." }]);
      const argv = argvFor("Fork it", { resources: { conversation: { id: editSession(), pin } } });
      expect(argv).toEqual(
        expect.arrayContaining(["--resume", editSession(), "--fork-session", "--session-id", pin]),
      );
      const run = await superviseClaude(editDir(), argv);
      expect(run.code, run.stderr).toBe(0);
      expect(run.cliLines[0]?.session_id).toBe(pin);
      expect(run.cliLines.at(-1)).toMatchObject({ type: "result", session_id: pin, result: "Forked." });
      const [call] = model.modelCalls().slice(before);
      expect(textsOf(call?.body)).toEqual(
        expect.arrayContaining(["Write hello.txt", "Still here.", "Fork it"]),
      );
    });

    it("--settings reads a settings file the init fetched for skills_source (the setup keeps it)", async () => {
      const dir = runDir("skills");
      const settings = join(dir.home, ".claude", "settings.json");
      mkdirSync(join(dir.home, ".claude"), { recursive: true });
      writeFileSync(settings, '{"permissions":{"deny":["Bash"]}}\n');
      // The pod's HOME is /agent; here the argv's path is pointed at this run's HOME.
      const argv = argvFor("hi", { resources: { skills_source: "http://127.0.0.1:9/skills" } }).map((a) =>
        a === "/agent/.claude/settings.json" ? settings : a,
      );
      expect(argv).toContain(settings);
      model.script([{ text: "hi" }]);
      const run = await superviseClaude(dir, argv);
      expect(run.code, run.stderr).toBe(0);
      expect(readFileSync(settings, "utf8")).toContain("deny");
      expect(model.lastTools().has("Bash")).toBe(false);
      expect(model.lastTools().has("Write")).toBe(true);
    });

    it("a stream cut mid-answer is retried and the run succeeds", async () => {
      model.script([{ cut: true, text: "partial" }, { text: "complete answer" }]);
      const run = await superviseClaude(runDir("cut"), argvFor("hi"));
      expect(run.code, run.stderr).toBe(0);
      expect(run.cliLines.find((l) => l.subtype === "api_retry")).toMatchObject({ error_status: null });
      expect(run.cliLines.at(-1)).toMatchObject({
        type: "result",
        is_error: false,
        result: "complete answer",
      });
    });
  },
);
