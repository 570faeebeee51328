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
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cliArgv } from "../../../src/core/cli/argv.js";
import { announcedSessionId, terminalVerdict } from "../../../src/core/cli/vendors.js";
import { lastCliError } from "../../../src/core/readback/output.js";
import { GEMINI_MAX_ATTEMPTS } from "../../../src/run-pod/supervisor/cli-setup/gemini.js";
import {
  type GeminiServer,
  geminiHistory,
  offeredTools,
  startGeminiServer,
} from "../../fakes/models/gemini-generate.js";
import {
  PROVIDER_RIDE_TO_SUCCESS,
  providerLimitEvents,
  type RunDir,
  supervisorHarness,
} from "./supervisor-harness.js";

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
const SKIP = harness.skip;
const PAST_DEADLINE = { timeout: harness.testTimeoutMs };
const { runDir } = harness;

let model: GeminiServer;
beforeAll(async () => {
  if (SKIP) return;
  model = await harness.modelServer();
});

const superviseGemini = (dir: RunDir, argv: string[], env: Record<string, string> = {}) =>
  harness.supervise(model, dir, argv, env);

const argvFor = (prompt: string, extra: Record<string, unknown> = {}) =>
  cliArgv({ model: MODEL, prompt, permission_mode: "bypass", ...extra } as never, MODEL, prompt);

describe.skipIf(SKIP)("the real gemini CLI under the built supervisor", PAST_DEADLINE, () => {
  let editSession = "";
  const editDir = () => runDir("edit");

  it("edits a file through its own write_file tool and ends with a successful result line", async () => {
    const callsBefore = model.modelCalls().length;
    model.script([
      { toolCall: { name: "write_file", input: { file_path: "hello.txt", content: "hi from gemini\n" } } },
      { text: "Wrote hello.txt." },
    ]);
    const dir = editDir();
    const run = await superviseGemini(dir, argvFor("Write hello.txt"));
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(join(dir.workspace, "hello.txt"), "utf8")).toBe("hi from gemini\n");
    const types = run.cliLines.map((l) => l.type);
    expect(types).toEqual(["init", "message", "tool_use", "tool_result", "message", "message", "result"]);
    const init = run.cliLines[0] ?? {};
    editSession = announcedSessionId("gemini", init) ?? "";
    expect(editSession).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(terminalVerdict("gemini", JSON.stringify(run.cliLines.at(-1)))).toEqual({ success: true });
    // With the model named, no routing classifier call: every request is a chat call.
    const calls = model.journal().slice(callsBefore);
    expect(calls.map((c) => c.path)).toEqual([
      `/v1beta/models/${MODEL}:streamGenerateContent`,
      `/v1beta/models/${MODEL}:streamGenerateContent`,
    ]);
    expect(offeredTools(calls[0] as never)).toEqual(expect.arrayContaining(["write_file", "replace"]));
    expect(calls[0]?.headers["x-goog-api-key"]).toBe("<present>");
    // The supervisor's setup: settings and trust, no --skip-trust needed.
    const settings = JSON.parse(readFileSync(join(dir.home, ".gemini/settings.json"), "utf8"));
    expect(settings.security.auth.selectedType).toBe("gemini-api-key");
  });

  it("resumes the session by the id its init line announced, sending the earlier history", async () => {
    expect(editSession).not.toBe("");
    const callsBefore = model.modelCalls().length;
    model.script([{ text: "Still here." }]);
    const run = await superviseGemini(
      editDir(),
      argvFor("And now?", { resources: { conversation: { id: editSession } } }),
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.cliLines[0]?.session_id).toBe(editSession);
    const [call] = model.modelCalls().slice(callsBefore);
    const history = geminiHistory(call as never);
    expect(history.at(-1)).toMatchObject({ role: "user", text: "And now?" });
    expect(history.some((t) => t.functionCalls.includes("write_file"))).toBe(true);
    expect(history.some((t) => t.role === "model" && t.text === "Wrote hello.txt.")).toBe(true);
  });

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

  it("a 401 ends the run at once: exit 401 mod 256, the provider's answer on the result line", async () => {
    const callsBefore = model.modelCalls().length;
    model.script([{ error: { status: 401 } }]);
    const run = await superviseGemini(runDir("unauthorized"), argvFor("hi"));
    expect(run.code).toBe(401 % 256);
    expect(model.modelCalls().length - callsBefore).toBe(1);
    expect(lastCliError("gemini", run.stdout)).toBe(
      "API error 401 UNAUTHENTICATED: Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
    );
  });

  it("a 429 past the CLI's bounded attempts (exit 429 mod 256): the supervisor waits and runs it again, and the run succeeds", async () => {
    const callsBefore = model.modelCalls().length;
    model.script(Array.from({ length: GEMINI_MAX_ATTEMPTS }, () => ({ error: { status: 429 } })));
    const run = await superviseGemini(runDir("rate-limited"), argvFor("hi"), PROVIDER_RIDE_TO_SUCCESS);
    expect(run.code, run.stderr).toBe(0);
    // The first process made its bounded attempts; the second got the model's answer.
    expect(model.modelCalls().length - callsBefore).toBe(GEMINI_MAX_ATTEMPTS + 1);
    const [wait] = providerLimitEvents(run.stdout);
    expect(wait).toMatchObject({ provider: "gemini", status: 429, retry: 1, reason: "rate_limited" });
    expect(String(wait?.message)).toMatch(/Resource has been exhausted \(e\.g\. check quota\)\./);
    model.script([]);
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
});
