/**
 * The REAL gemini CLI (the pinned @google/gemini-cli, from the CLI cache) under the BUILT supervisor
 * (dist/agent/ai-agent-supervisor), as an interactive run pod runs it: HOME and the workspace are
 * fresh directories, stdin is /dev/null, the argv is core/argv.ts's, the environment is what the
 * Job builder gives the agent container (GEMINI_API_KEY, GOOGLE_GEMINI_BASE_URL = the local Gemini
 * API fake). No control plane: this pins what the CLI does with the supervisor's CLI setup
 * (cli-setup/gemini.ts) and what it prints, fast enough to run on every change; the Kubernetes
 * end-to-end test (gemini.test.ts) covers the rest.
 *
 * The supervisor runs as the current user (the cache lives under /root, which uid 1000 cannot
 * enter); the real node's e2e runs it as uid 1000.
 *
 * The scenarios every CLI runs are supervisor-scenarios.ts's (this file is gemini's row); gemini's
 * own (a resume id that looks like an option, the disallowed-tools policy) follow them.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, expect, it } from "vitest";
import { cliArgv } from "../../../src/core/cli/argv.js";
import { announcedSessionId } from "../../../src/core/cli/vendors.js";
import { GEMINI_MAX_ATTEMPTS } from "../../../src/run-pod/supervisor/cli-setup/gemini.js";
import {
  type GeminiServer,
  geminiHistory,
  offeredTools,
  startGeminiServer,
} from "../../fakes/models/gemini-generate.js";
import { type RunDir, supervisorHarness } from "./supervisor-harness.js";
import { supervisedCliTests } from "./supervisor-scenarios.js";

const MODEL = "gemini-2.5-pro";

const harness = supervisorHarness({
  vendor: "gemini",
  model: MODEL,
  startModel: startGeminiServer,
  modelEnv: (model: GeminiServer) => ({
    GEMINI_API_KEY: "AIza-supervisor-test-key",
    GOOGLE_GEMINI_BASE_URL: model.origin,
  }),
});
const { runDir } = harness;

let model: GeminiServer;
beforeAll(async () => {
  if (harness.skip) return;
  model = await harness.modelServer();
});

const superviseGemini = (dir: RunDir, argv: string[], env: Record<string, string> = {}) =>
  harness.supervise(model, dir, argv, env);

const argvFor = (prompt: string, extra: Record<string, unknown> = {}) =>
  cliArgv({ model: MODEL, prompt, permission_mode: "bypass", ...extra } as never, MODEL, prompt);

const editDir = () => runDir("edit");

supervisedCliTests(
  {
    vendor: "gemini",
    harness,
    model: () => model,
    timeoutMs: harness.testTimeoutMs,
    argv: argvFor,
    // With the model named, no routing classifier call: every request is a chat call.
    modelCall: `POST /v1beta/models/${MODEL}:streamGenerateContent`,
    sessionId: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,

    edit: {
      title: "edits a file through its own write_file tool and ends with a successful result line",
      script: () => [
        { toolCall: { name: "write_file", input: { file_path: "hello.txt", content: "hi from gemini\n" } } },
        { text: "Wrote hello.txt." },
      ],
      file: { path: "hello.txt", content: "hi from gemini\n" },
      kind: (l) => String(l.type),
      kinds: ["init", "message", "tool_use", "tool_result", "message", "message", "result"],
      session: (run) => announcedSessionId("gemini", run.cliLines[0] ?? {}) ?? "",
      expectMore(_run, { dir, requests }) {
        expect(offeredTools(requests[0] as never)).toEqual(expect.arrayContaining(["write_file", "replace"]));
        expect(requests[0]?.headers["x-goog-api-key"]).toBe("<present>");
        // The supervisor's setup: settings and trust, no --skip-trust needed.
        const settings = JSON.parse(readFileSync(join(dir.home, ".gemini/settings.json"), "utf8"));
        expect(settings.security.auth.selectedType).toBe("gemini-api-key");
      },
    },

    resume: {
      title: "resumes the session by the id its init line announced, sending the earlier history",
      prompt: "And now?",
      answer: { text: "Still here." },
      expectResumed(run, call, session) {
        expect(run.cliLines[0]?.session_id).toBe(session);
        const history = geminiHistory(call as never);
        expect(history.at(-1)).toMatchObject({ role: "user", text: "And now?" });
        expect(history.some((t) => t.functionCalls.includes("write_file"))).toBe(true);
        expect(history.some((t) => t.role === "model" && t.text === "Wrote hello.txt.")).toBe(true);
      },
    },

    unauthorized: {
      title: "a 401 ends the run at once: exit 401 mod 256, the provider's answer on the result line",
      prompt: "hi",
      code: 401 % 256,
      calls: 1,
      error:
        "API error 401 UNAUTHENTICATED: Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
    },

    limitPastCli: {
      title:
        "a 429 past the CLI's bounded attempts (exit 429 mod 256): the supervisor waits and runs it again, and the run succeeds",
      // The first process makes its bounded attempts; the second gets the model's answer.
      answer: { error: { status: 429 } },
      answers: GEMINI_MAX_ATTEMPTS,
      event: { provider: "gemini", status: 429, retry: 1, reason: "rate_limited" },
      message: /Resource has been exhausted \(e\.g\. check quota\)\./,
    },
  },
  () => {
    it("a resume id that looks like an option is refused as an unknown session (exit 42), no model call", async () => {
      const callsBefore = model.journal().length;
      const run = await superviseGemini(
        editDir(),
        argvFor("hi", { resources: { conversation: { id: "--yolo" } } }),
      );
      expect(run.code).toBe(42);
      expect(run.stderr).toContain('Invalid session identifier "--yolo"');
      expect(model.journal().length).toBe(callsBefore);
    });

    it("disallowed tools are denied by the policy the setup writes: not offered, and refused when called", async () => {
      const callsBefore = model.modelCalls().length;
      model.script([
        { toolCall: { name: "run_shell_command", input: { command: "rm -f keep.txt" } } },
        { toolCall: { name: "run_shell_command", input: { command: "echo ok > allowed.txt" } } },
        { text: "Done." },
      ]);
      const dir = runDir("denied");
      const run = await superviseGemini(dir, argvFor("try"), {
        AGENT_DISALLOWED_TOOLS: JSON.stringify(["write_file", "run_shell_command(rm)"]),
      });
      expect(run.code, run.stderr).toBe(0);
      const [first] = model.modelCalls().slice(callsBefore);
      expect(offeredTools(first as never)).not.toContain("write_file");
      expect(offeredTools(first as never)).toContain("run_shell_command");
      const results = run.cliLines.filter((l) => l.type === "tool_result");
      expect(results.map((r) => r.status)).toEqual(["error", "success"]);
      expect(results[0]?.error).toMatchObject({ type: "policy_violation" });
      expect(existsSync(join(dir.workspace, "allowed.txt"))).toBe(true);
    });
  },
);
