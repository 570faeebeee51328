/**
 * The REAL codex CLI (the pinned @openai/codex, from the CLI cache) under the BUILT supervisor
 * (dist/agent/ai-agent-supervisor), as an interactive run pod runs it: HOME and the workspace are
 * fresh directories (the workspace is no git repository), stdin is /dev/null, the argv is
 * core/argv.ts's, the environment is what the Job builder gives the agent container
 * (OPENAI_API_KEY only, OPENAI_BASE_URL = the local Responses API fake). No control plane: this
 * pins what the CLI does with the supervisor's CLI setup (cli-setup/codex.ts) and what it prints;
 * the Kubernetes end-to-end test (codex.test.ts) covers the rest.
 *
 * The supervisor runs as the current user (the cache lives under /root, which uid 1000 cannot
 * enter); the real node's e2e runs it as uid 1000.
 *
 * The scenarios every CLI runs are supervisor-scenarios.ts's (this file is codex's row); codex's own
 * (no sandbox under auto and bypass, an unreachable endpoint, a missing key) follow them.
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, expect, it } from "vitest";
import { cliArgv } from "../../../src/core/cli/argv.js";
import { announcedSessionId } from "../../../src/core/cli/vendors.js";
import { lastCliError } from "../../../src/core/readback/output.js";
import { CODEX_STREAM_MAX_RETRIES } from "../../../src/run-pod/supervisor/cli-setup/codex.js";
import {
  messageTexts,
  type OpenAiResponsesServer,
  offeredTools,
  startOpenAiResponsesServer,
} from "../../fakes/models/openai-responses.js";
import {
  BRIEF_PROVIDER_RIDE,
  providerLimitEvents,
  type RunDir,
  supervisorHarness,
} from "./supervisor-harness.js";
import { supervisedCliTests } from "./supervisor-scenarios.js";

/** A model codex has metadata for: it offers exec_command and the freeform apply_patch. */
const MODEL = "gpt-5.5";

const harness = supervisorHarness({
  vendor: "codex",
  model: MODEL,
  startModel: startOpenAiResponsesServer,
  modelEnv: (model: OpenAiResponsesServer) => ({
    OPENAI_API_KEY: "sk-proj-supervisor-test-key",
    OPENAI_BASE_URL: model.url,
  }),
  isCliLine: (l) => /^(thread|turn|item)\.|^error$/.test(l.type as string),
});
const { runDir } = harness;

let model: OpenAiResponsesServer;
beforeAll(async () => {
  if (harness.skip) return;
  model = await harness.modelServer();
});

const superviseCodex = (dir: RunDir, argv: string[], env: Record<string, string> = {}) =>
  harness.supervise(model, dir, argv, env);

const argvFor = (prompt: string, extra: Record<string, unknown> = {}) =>
  cliArgv({ model: MODEL, prompt, ...extra } as never, MODEL, prompt);

const PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hello from codex\n*** End Patch\n";

supervisedCliTests(
  {
    vendor: "codex",
    harness,
    model: () => model,
    timeoutMs: harness.testTimeoutMs,
    argv: argvFor,
    modelCall: "POST /v1/responses",
    sessionId: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,

    edit: {
      title:
        "permission_mode auto: edits the workspace through its own apply_patch tool and ends with turn.completed",
      script: () => [
        { toolCall: { name: "apply_patch", input: { input: PATCH } } },
        { text: "Wrote hello.txt.", usage: { input: 1200, output: 30, cacheRead: 1000 } },
      ],
      file: { path: "hello.txt", content: "hello from codex\n" },
      kind: (l) => `${l.type}${l.item ? ` ${(l.item as { type: string }).type}` : ""}`,
      kinds: [
        "thread.started",
        "turn.started",
        "item.started file_change",
        "item.completed file_change",
        "item.completed agent_message",
        "turn.completed",
      ],
      session: (run) => announcedSessionId("codex", run.cliLines[0] ?? {}) ?? "",
      expectMore(run, { dir, requests }) {
        // Usage is the sum over the turn's two model calls (the fake's default usage is 10/5).
        expect(run.cliLines.at(-1)?.usage).toMatchObject({
          input_tokens: 1210,
          cached_input_tokens: 1000,
          output_tokens: 35,
        });
        // The key reached codex (as CODEX_API_KEY, mapped from OPENAI_API_KEY) and went out as a bearer token.
        expect(requests[0]?.headers.authorization).toBe("<present>");
        expect(offeredTools(requests[0] ?? { body: undefined })).toEqual(
          expect.arrayContaining([
            { name: "exec_command", type: "function" },
            { name: "apply_patch", type: "custom" },
          ]),
        );
        const config = readFileSync(join(dir.home, ".codex/config.toml"), "utf8");
        expect(config).toContain(`base_url = "${model.url}"`);
        expect(config).not.toContain("sk-proj-supervisor-test-key");
      },
    },

    resume: {
      title:
        "resumes the thread with a prompt starting with '-', sending the earlier history; usage is the thread's total",
      prompt: "-x and now?",
      answer: { text: "Still here.", usage: { input: 2000, output: 9 } },
      expectResumed(run, call, thread) {
        expect(run.cliLines[0]).toEqual({ type: "thread.started", thread_id: thread });
        const user = messageTexts(call ?? { body: undefined }, "user");
        expect(user.at(-1)).toBe("-x and now?");
        expect(user).toContain("Write hello.txt");
        expect(messageTexts(call ?? { body: undefined }, "assistant")).toContain("Wrote hello.txt.");
        // 1210/35 from the first run plus this turn's 2000/9.
        expect(run.cliLines.at(-1)?.usage).toMatchObject({ input_tokens: 3210, output_tokens: 44 });
      },
    },

    unauthorized: {
      title: "a 401 ends the run after bounded retries with the provider's answer",
      prompt: "hi",
      code: 1,
      calls: CODEX_STREAM_MAX_RETRIES + 1,
      error:
        /^unexpected status 401 Unauthorized: Incorrect API key provided: sk-test\. .* request id: req_\w+$/,
    },

    limitToDeadline: {
      title:
        "a persistent 429: the supervisor waits and continues past the CLI's own retries until the deadline (124), each wait naming the status",
      prompt: "hi",
      answer: { error: { status: 429 } },
      env: BRIEF_PROVIDER_RIDE,
      error: /^exceeded retry limit, last status: 429 Too Many Requests/,
      event: { provider: "openai", status: 429, retry: 1 },
    },
  },
  () => {
    // docs/agent-clis.md (codex): under auto codex runs without bwrap (the run pod's seccomp profile
    // forbids the user namespaces it needs); the pod confines the run.
    it("permission_mode auto: shell commands run without codex's sandbox, in the workspace", async () => {
      const outside = `/var/tmp/codex-no-sandbox-probe-${process.pid}`;
      const callsBefore = model.modelCalls().length;
      model.script([
        { toolCall: { name: "exec_command", input: { cmd: "echo made > made.txt && cat made.txt" } } },
        { toolCall: { name: "exec_command", input: { cmd: `echo x > ${outside}` } } },
        { text: "Tried both." },
      ]);
      const dir = runDir("shell");
      try {
        const argv = argvFor("Make files");
        expect(argv).toContain('sandbox_mode="danger-full-access"');
        const run = await superviseCodex(dir, argv);
        expect(run.code, run.stderr).toBe(0);
        expect(readFileSync(join(dir.workspace, "made.txt"), "utf8")).toBe("made\n");
        // No bwrap: what confines the command is the pod (here: the uid the supervisor gives the CLI).
        expect(readFileSync(outside, "utf8")).toBe("x\n");
        const calls = model.modelCalls().slice(callsBefore);
        expect(calls, JSON.stringify(run.cliLines)).toHaveLength(3);
      } finally {
        rmSync(outside, { force: true });
      }
    });

    it("permission_mode bypass runs without the sandbox", async () => {
      model.script([
        { toolCall: { name: "exec_command", input: { cmd: "echo free > free.txt" } } },
        { text: "Done." },
      ]);
      const dir = runDir("bypass");
      const run = await superviseCodex(dir, argvFor("go", { permission_mode: "bypass" }));
      expect(run.code, run.stderr).toBe(0);
      expect(readFileSync(join(dir.workspace, "free.txt"), "utf8")).toBe("free\n");
    });

    it("an unreachable endpoint: the CLI's bounded retries, then the supervisor's waits (no answer: status 0) until the deadline", async () => {
      const run = await superviseCodex(runDir("unreachable"), argvFor("hi"), {
        OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
        ...BRIEF_PROVIDER_RIDE,
      });
      expect(run.code).toBe(124);
      expect(providerLimitEvents(run.stdout)[0]).toMatchObject({ status: 0, reason: "connection" });
      // The first process's lines: its own retries, then the failure it gave up on.
      const errors = run.cliLines.filter((l) => l.type === "error").map((l) => l.message);
      expect(errors.slice(0, CODEX_STREAM_MAX_RETRIES + 1)).toEqual([
        ...Array.from(
          { length: CODEX_STREAM_MAX_RETRIES },
          (_, i) =>
            `Reconnecting... ${i + 1}/${CODEX_STREAM_MAX_RETRIES} (Connection failed: error sending request)`,
        ),
        "Connection failed: error sending request",
      ]);
    });

    it("a missing key fails the run at once, naming the variables to set", async () => {
      const callsBefore = model.journal().length;
      const run = await superviseCodex(runDir("no-key"), argvFor("hi"), { OPENAI_API_KEY: "" });
      expect(run.code).toBe(1);
      expect(lastCliError("codex", run.stdout)).toBe(
        "Missing environment variable: `CODEX_API_KEY`. Give the run OPENAI_API_KEY or CODEX_API_KEY (resources.secrets).",
      );
      expect(model.journal().length).toBe(callsBefore);
    });
  },
);
