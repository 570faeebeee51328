// @module-tag slow
/**
 * The realtime session end to end inside one process: the supervisor's prompt server on a real
 * loopback socket, and fake claude / codex CLIs (small Node scripts) that print their NDJSON and
 * journal their argv and whether they saw the token's hash.
 */
import { createHash } from "node:crypto";
import { chmod, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Env } from "../common/run-env.js";
import type { SupervisorIo } from "./io.js";
import { runSupervisorWith } from "./main.js";
import { MAX_PROMPT_BYTES } from "./session/queue.js";

const TOKEN = "run-token-3f9a";
/** The codex fake's thread id, and a claude session saved by an earlier run. */
const THREAD = "0199a213-81c0-7800-8aa1-bbab2a035a53";
const EARLIER = "4855a4a8-c43d-426f-99fc-150c8ea32853";
const TOKEN_SHA256 = createHash("sha256").update(TOKEN).digest("hex");

/** One fake for both vendors, told apart by the name it is invoked as. */
const FAKE_CLI = `#!/usr/bin/env node
const THREAD = "${THREAD}";
const fs = require("node:fs");
const path = require("node:path");
const args = process.argv.slice(2);
const cli = path.basename(process.argv[1]);
const prompt = args[args.length - 1];
// "stubborn": ignores SIGTERM (from before it journals) and runs until the test drops a release file.
if (prompt.startsWith("stubborn")) process.on("SIGTERM", () => {});
fs.appendFileSync(process.env.JOURNAL, JSON.stringify({ cli, args, sawToken: "AGENT_REALTIME_TOKEN_SHA256" in process.env }) + "\\n");
const out = (o) => process.stdout.write(JSON.stringify(o) + "\\n");
const wait = prompt.startsWith("hold") ? 5000 : prompt.startsWith("slow") ? 1500 : 0;
if (prompt.startsWith("stubborn")) {
  const release = path.join(path.dirname(process.env.JOURNAL), "release");
  setInterval(() => { if (fs.existsSync(release)) process.exit(0); }, 20);
  return;
}
setTimeout(() => {
  if (prompt === "crash") process.exit(3);
  // "overloaded-once": the provider answers 529 past the CLI's own retries, once (a marker file).
  const marker = path.join(path.dirname(process.env.JOURNAL), "overloaded");
  if (cli === "claude" && prompt === "overloaded-once" && !fs.existsSync(marker)) {
    fs.writeFileSync(marker, "");
    const i = args.indexOf("--session-id");
    out({ type: "system", subtype: "init", session_id: i >= 0 ? args[i + 1] : "none" });
    out({ type: "result", is_error: true, terminal_reason: "api_error", api_error_status: 529, result: "API Error: 529 Overloaded" });
    process.exit(1);
  }
  if (cli === "claude") {
    const i = Math.max(args.indexOf("--session-id"), args.indexOf("--resume"));
    const id = i >= 0 ? args[i + 1] : "none";
    out({ type: "system", subtype: "init", session_id: id });
    out({ type: "result", is_error: prompt === "fail", result: "answer to " + prompt, session_id: id });
    process.exit(prompt === "fail" ? 1 : 0);
  }
  const id = args[1] === "resume" ? args[2] : prompt.startsWith("announce ") ? prompt.slice(9) : THREAD;
  out({ type: "thread.started", thread_id: id });
  out({ type: "turn.completed", usage: { input_tokens: 1, output_tokens: 1 } });
}, wait);
`;

let dir: string;
let port: number;
let stdout: string[];
let stderr: string[];
let signalListeners: Map<string, () => void>;

const io = (): SupervisorIo => ({
  stdout: (l) => stdout.push(l),
  stderr: (l) => stderr.push(l),
  signals: {
    on: (s, l) => signalListeners.set(s, l),
    off: (s) => signalListeners.delete(s),
  },
});

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const { port: p } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return p;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "realtime-"));
  for (const cli of ["claude", "codex"]) {
    await writeFile(join(dir, cli), FAKE_CLI);
    await chmod(join(dir, cli), 0o755);
  }
  port = await freePort();
  stdout = [];
  stderr = [];
  signalListeners = new Map();
});

function env(extra: Env = {}): Env {
  return {
    AGENT_EXECUTION: "realtime",
    AGENT_MODEL: "claude-sonnet-4-5",
    AGENT_RECIPE: JSON.stringify({ model: "claude-sonnet-4-5", permission_mode: "bypass" }),
    AGENT_REALTIME_TOKEN_SHA256: TOKEN_SHA256,
    AGENT_REALTIME_LISTEN: `127.0.0.1:${port}`,
    AGENT_EXIT_GRACE_MS: "200",
    PATH: `${dir}:/usr/bin:/bin`,
    HOME: dir,
    WORKSPACE_DIR: dir,
    JOURNAL: join(dir, "journal"),
    ...extra,
  };
}

async function call(path: string, body?: unknown, token = TOKEN, method = "POST") {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function serving(): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`the session never served on ${port}; stderr: ${stderr.join("\n")}`);
}

async function healthz(): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`http://127.0.0.1:${port}/healthz`);
  return { status: res.status, body: await res.json() };
}

/** Lets a "stubborn" fake CLI turn end. */
const release = () => writeFile(join(dir, "release"), "");

/** The lifecycle events with their reason, for the turns a session never ran. */
const reasons = () =>
  stdout
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.kind === "lifecycle" && e.reason !== undefined)
    .map((e) => `${e.phase}/${e.status}${e.turn !== undefined ? ` ${e.turn}` : ""} ${e.reason}`);

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!check()) throw new Error(`condition not reached; events: ${events().join(", ")}`);
}

async function journal(): Promise<{ cli: string; args: string[]; sawToken: boolean }[]> {
  const text = await readFile(join(dir, "journal"), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

const events = () =>
  stdout
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.kind === "lifecycle")
    .map(
      (e) =>
        `${e.phase}/${e.status}${e.turn !== undefined ? ` ${e.turn}` : ""}${e.exitCode !== undefined ? ` =${e.exitCode}` : ""}`,
    );

afterEach(() => {
  signalListeners.get("SIGTERM")?.();
});

describe("realtime session (docs/supervisor.md#realtime-sessions)", () => {
  it("answers every documented status with its literal message, and closes after the queued turns", async () => {
    const session = runSupervisorWith(["--", "slow start"], env(), io());
    await serving();
    expect(await call("/v1/prompt", { prompt: "x" }, "wrong")).toEqual({
      status: 401,
      body: { error: "the bearer token is missing or wrong" },
    });
    expect(await call("/v1/other", {})).toEqual({ status: 404, body: { error: "not found" } });
    expect(await call("/v1/prompt", "not json")).toEqual({
      status: 400,
      body: { error: "the body is not JSON with a non-empty prompt string" },
    });
    expect(await call("/v1/prompt", { prompt: "" })).toMatchObject({ status: 400 });
    expect(await call("/v1/prompt", { prompt: "a\u0000b" })).toMatchObject({ status: 400 });
    expect(await call("/v1/prompt", { prompt: "x".repeat(MAX_PROMPT_BYTES + 1) })).toEqual({
      status: 413,
      body: { error: "prompt exceeds 102400 bytes" },
    });
    // A fresh Claude session knows its id from the start: the one pinned on turn 1.
    const second = await call("/v1/prompt", { prompt: "second" });
    expect(second.status).toBe(202);
    expect(second.body).toMatchObject({ turn: 2, queued: 1 });
    const sessionId = second.body.sessionId as string;
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await call("/v1/close")).toEqual({ status: 202, body: { queued: 1 } });
    expect(await call("/v1/close")).toEqual({ status: 409, body: { error: "the session is ending" } });
    expect(await call("/v1/prompt", { prompt: "late" })).toEqual({
      status: 409,
      body: { error: "the session is ending" },
    });
    expect(await session).toBe(0);

    const runs = await journal();
    expect(runs.map((r) => r.args.at(-1))).toEqual(["slow start", "second"]);
    expect(runs[0]?.args).toEqual(expect.arrayContaining(["--session-id", sessionId]));
    expect(runs[1]?.args).toEqual(expect.arrayContaining(["--resume", sessionId]));
    expect(runs.every((r) => !r.sawToken)).toBe(true);
    expect(events()).toEqual([
      "agent/started",
      "turn/started 1",
      "turn/succeeded 1 =0",
      "turn/started 2",
      "turn/succeeded 2 =0",
      "agent/succeeded =0",
    ]);
    expect(await readFile(join(dir, "run/exit-code"), "utf8")).toBe("0\n");
  });

  it("holds 16 waiting prompts behind the running turn and refuses the 17th with 429", async () => {
    // The first turn holds long enough for 16 requests even on a loaded machine.
    const session = runSupervisorWith(["--", "hold first"], env(), io());
    await serving();
    // Ready means the CLI is set up and turn 1 left the queue: the first prompt waits alone.
    const replies = [];
    for (let i = 1; i <= 16; i++) replies.push(await call("/v1/prompt", { prompt: `p${i}` }));
    expect(replies.map((r) => [r.status, r.body.queued])).toEqual(
      Array.from({ length: 16 }, (_, i) => [202, i + 1]),
    );
    expect(await call("/v1/prompt", { prompt: "p17" })).toEqual({
      status: 429,
      body: { error: "too many queued prompts" },
    });
    await call("/v1/close");
    expect(await session).toBe(0);
    expect((await journal()).length).toBe(17);
  }, 30_000);

  it("a turn the provider limits past the CLI's retries waits and runs again inside the turn: one reply, the queue unchanged", async () => {
    const session = runSupervisorWith(["--", "overloaded-once"], env(), io());
    await serving();
    const reply = await call("/v1/prompt", { prompt: "after" });
    expect(reply.body).toMatchObject({ turn: 2 });
    await call("/v1/close");
    expect(await session).toBe(0);
    // Turn 1 took two processes (the wait between them), turn 2 one; no turn was added or lost.
    expect((await journal()).map((r) => r.args.at(-1))).toEqual([
      "overloaded-once",
      "overloaded-once",
      "after",
    ]);
    expect(events()).toEqual([
      "agent/started",
      "turn/started 1",
      "turn/succeeded 1 =0",
      "turn/started 2",
      "turn/succeeded 2 =0",
      "agent/succeeded =0",
    ]);
    const waits = stdout
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((e) => e.kind === "provider-limit");
    expect(waits).toMatchObject([{ provider: "anthropic", status: 529, retry: 1, turn: 1 }]);
  });

  it("a failed turn does not end the session", async () => {
    const session = runSupervisorWith(["--", "fail"], env(), io());
    await serving();
    await call("/v1/prompt", { prompt: "after" });
    await call("/v1/close");
    expect(await session).toBe(0);
    expect(events()).toEqual([
      "agent/started",
      "turn/started 1",
      "turn/failed 1 =1",
      "turn/started 2",
      "turn/succeeded 2 =0",
      "agent/succeeded =0",
    ]);
  });

  it("claude: a turn that died before announcing its session pins the same id again, not --resume", async () => {
    const session = runSupervisorWith(["--", "crash"], env(), io());
    await serving();
    const reply = await call("/v1/prompt", { prompt: "after" });
    const sessionId = reply.body.sessionId as string;
    await call("/v1/prompt", { prompt: "third" });
    await call("/v1/close");
    expect(await session).toBe(0);
    const runs = await journal();
    expect(runs.map((r) => r.args.at(-1))).toEqual(["crash", "after", "third"]);
    expect(runs[0]?.args).toEqual(expect.arrayContaining(["--session-id", sessionId]));
    expect(runs[1]?.args).toEqual(expect.arrayContaining(["--session-id", sessionId]));
    expect(runs[1]?.args).not.toContain("--resume");
    expect(runs[2]?.args).toEqual(expect.arrayContaining(["--resume", sessionId]));
    expect(events()).toEqual([
      "agent/started",
      "turn/started 1",
      "turn/failed 1 =3",
      "turn/started 2",
      "turn/succeeded 2 =0",
      "turn/started 3",
      "turn/succeeded 3 =0",
      "agent/succeeded =0",
    ]);
  });

  it("codex: the first reply carries no session id, a later one the thread id; later turns resume it", async () => {
    const codex = env({
      AGENT_MODEL: "gpt-5-codex",
      AGENT_RECIPE: JSON.stringify({ model: "gpt-5-codex", permission_mode: "bypass" }),
    });
    const session = runSupervisorWith(["--"], codex, io());
    await serving();
    const first = await call("/v1/prompt", { prompt: "slow one" });
    expect(first.body).toMatchObject({ turn: 1, sessionId: "" });
    await until(() => events().includes("turn/succeeded 1 =0"));
    // A prompt that looks like an option is still the prompt: it follows `--`.
    const second = await call("/v1/prompt", { prompt: "-two" });
    expect(second.body).toMatchObject({ turn: 2, sessionId: THREAD });
    await call("/v1/close");
    expect(await session).toBe(0);
    const runs = await journal();
    expect(runs[0]?.args).toEqual([
      "exec",
      "--json",
      "--skip-git-repo-check",
      "--model",
      "gpt-5-codex",
      "--dangerously-bypass-approvals-and-sandbox",
      "--",
      "slow one",
    ]);
    expect(runs[1]?.args).toEqual([
      "exec",
      "resume",
      THREAD,
      "--json",
      "--skip-git-repo-check",
      "--model",
      "gpt-5-codex",
      "--dangerously-bypass-approvals-and-sandbox",
      "--",
      "-two",
    ]);
  });

  it("a resumed session sends no initial prompt and continues the saved id", async () => {
    const session = runSupervisorWith(["--"], env({ AGENT_RESUME_SESSION: EARLIER }), io());
    await serving();
    expect((await call("/v1/prompt", { prompt: "go on" })).body).toMatchObject({
      turn: 1,
      sessionId: EARLIER,
    });
    await call("/v1/close");
    expect(await session).toBe(0);
    const runs = await journal();
    expect(runs.length).toBe(1);
    expect(runs[0]?.args).toEqual(expect.arrayContaining(["--resume", EARLIER]));
  });

  it("the deadline while idle ends the session like a close (0); during a turn it stops it (124)", async () => {
    const idle = runSupervisorWith(["--", "quick"], env({ AGENT_DEADLINE_MS: "3000" }), io());
    expect(await idle).toBe(0);
    expect(events().at(-1)).toBe("agent/succeeded =0");

    stdout = [];
    port = await freePort();
    const busy = runSupervisorWith(["--", "slow turn"], env({ AGENT_DEADLINE_MS: "500" }), io());
    expect(await busy).toBe(124);
    expect(events().slice(-2)).toEqual(["turn/failed 1 =124", "agent/failed =124"]);
  });

  it("SIGTERM stops the running turn and ends the session", async () => {
    const session = runSupervisorWith(["--", "slow and stopped"], env(), io());
    await serving();
    await new Promise((r) => setTimeout(r, 300));
    signalListeners.get("SIGTERM")?.();
    expect(await session).toBe(143);
    expect(events().at(-1)).toBe("agent/failed =143");
  });

  it("after SIGTERM no prompt is acknowledged: 409 and /healthz 503; turns queued before it are reported failed", async () => {
    const session = runSupervisorWith(["--", "stubborn first"], env(), io());
    await serving();
    expect((await call("/v1/prompt", { prompt: "queued before" })).status).toBe(202);
    for (let i = 0; i < 400 && (await journal()).length === 0; i++)
      await new Promise((r) => setTimeout(r, 25));
    signalListeners.get("SIGTERM")?.();
    // The running turn ignores SIGTERM, so the session is still up, but takes no more turns.
    expect(await call("/v1/prompt", { prompt: "after the signal" })).toEqual({
      status: 409,
      body: { error: "the session is ending" },
    });
    expect(await call("/v1/close")).toEqual({ status: 409, body: { error: "the session is ending" } });
    expect(await healthz()).toEqual({ status: 503, body: { error: "the session is ending" } });
    await release();
    expect(await session).toBe(0);
    expect((await journal()).map((r) => r.args.at(-1))).toEqual(["stubborn first"]);
    expect(events()).toEqual([
      "agent/started",
      "turn/started 1",
      "turn/succeeded 1 =0",
      "turn/failed 2",
      "agent/succeeded =0",
    ]);
    expect(reasons()).toEqual(["turn/failed 2 stopped"]);
  });

  it("from the deadline on, during the turn's stop, no prompt is acknowledged and readiness is down", async () => {
    // A long grace keeps the deadline's stop of a SIGTERM-ignoring turn open while the test looks.
    const session = runSupervisorWith(
      ["--", "stubborn first"],
      env({ AGENT_DEADLINE_MS: "3000", AGENT_EXIT_GRACE_MS: "60000" }),
      io(),
    );
    await serving();
    expect((await call("/v1/prompt", { prompt: "queued before" })).status).toBe(202);
    for (let i = 0; i < 400 && (await healthz()).status === 200; i++)
      await new Promise((r) => setTimeout(r, 25));
    expect(await healthz()).toEqual({ status: 503, body: { error: "the session is ending" } });
    expect(await call("/v1/prompt", { prompt: "into the gap" })).toEqual({
      status: 409,
      body: { error: "the session is ending" },
    });
    await release();
    expect(await session).toBe(124);
    expect((await journal()).map((r) => r.args.at(-1))).toEqual(["stubborn first"]);
    expect(events()).toEqual([
      "agent/started",
      "turn/started 1",
      "turn/failed 1 =124",
      "turn/failed 2",
      "agent/failed =124",
    ]);
    expect(reasons()).toEqual(["turn/failed 1 deadline", "turn/failed 2 deadline", "agent/failed deadline"]);
  });

  it("a deadline past setTimeout's range (deadlineMinutes ≥ 35,792) does not end the idle session at once", async () => {
    const session = runSupervisorWith(
      ["--", "quick"],
      env({ AGENT_DEADLINE_MS: String(35_792 * 60_000) }),
      io(),
    );
    await serving();
    await until(() => events().includes("turn/succeeded 1 =0"));
    expect((await call("/v1/prompt", { prompt: "still serving" })).status).toBe(202);
    await call("/v1/close");
    expect(await session).toBe(0);
    expect((await journal()).map((r) => r.args.at(-1))).toEqual(["quick", "still serving"]);
  });

  it("AGENT_RESUME_SESSION that is not the vendor's session id shape (an option) is refused before anything runs", async () => {
    const gemini = env({
      AGENT_MODEL: "gemini-2.5-pro",
      AGENT_RECIPE: JSON.stringify({ model: "gemini-2.5-pro" }),
      AGENT_RESUME_SESSION: "--yolo",
    });
    expect(await runSupervisorWith(["--"], gemini, io())).toBe(2);
    expect(stderr.join("\n")).toContain('AGENT_RESUME_SESSION "--yolo" is not a gemini session id (a UUID)');
    expect(await journal()).toEqual([]);
  });

  it("codex: an announced thread id that is not a UUID is never resumed", async () => {
    const codex = env({
      AGENT_MODEL: "gpt-5-codex",
      AGENT_RECIPE: JSON.stringify({ model: "gpt-5-codex", permission_mode: "bypass" }),
    });
    const session = runSupervisorWith(["--", "announce --full-auto"], codex, io());
    await serving();
    await until(() => events().includes("turn/succeeded 1 =0"));
    expect((await call("/v1/prompt", { prompt: "two" })).body).toMatchObject({ turn: 2, sessionId: "" });
    await call("/v1/close");
    expect(await session).toBe(0);
    const runs = await journal();
    expect(runs[1]?.args.slice(0, 2)).toEqual(["exec", "--json"]);
    expect(runs[1]?.args).not.toContain("--full-auto");
    const warning = stderr
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as { msg?: string })
      .find((l) => l.msg?.includes("announced"));
    expect(warning?.msg).toBe(
      'turn 1: the CLI announced the session id "--full-auto", which is not a codex session id (a UUID); not kept',
    );
  });
});
