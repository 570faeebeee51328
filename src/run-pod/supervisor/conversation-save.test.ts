import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { extract } from "tar";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type CapturedIo,
  capturedIo,
  parsedLines,
  RecordingListener,
  type RunPodDirs,
  runPodDirs,
  writeScript,
} from "../../../test/support/run-pod.js";
import type { Env } from "../common/run-env.js";
import { conversationTarget } from "./conversation-save.js";
import { runSupervisorWith } from "./main.js";

describe("conversationTarget", () => {
  it.each<[string, Env, string, string | { skip: string }]>([
    [
      "claude",
      { AGENT_CONVERSATION_SOURCE: "https://conv.example/store/", AGENT_CONVERSATION_PIN: "p-1" },
      "claude",
      "https://conv.example/store/p-1",
    ],
    [
      "codex",
      { AGENT_CONVERSATION_SOURCE: "https://conv.example/s", AGENT_CONVERSATION_PIN: "a b/c" },
      "codex",
      "https://conv.example/s/a%20b%2Fc",
    ],
    [
      "no source",
      { AGENT_CONVERSATION_PIN: "p" },
      "claude",
      { skip: "AGENT_CONVERSATION_SOURCE is not set" },
    ],
    [
      "no pin",
      { AGENT_CONVERSATION_SOURCE: "https://c", AGENT_CONVERSATION_PIN: "" },
      "claude",
      { skip: "AGENT_CONVERSATION_PIN is not set" },
    ],
    [
      "opencode",
      { AGENT_CONVERSATION_SOURCE: "https://c", AGENT_CONVERSATION_PIN: "p" },
      "opencode",
      { skip: "opencode keeps no conversation state" },
    ],
  ] as const)("%s", (_name, env, vendor, want) => {
    const target = conversationTarget(env, vendor as "claude");
    if (typeof want === "string") expect(target).toMatchObject({ url: want });
    else expect(target).toEqual(want);
  });
});

describe("conversation save at the end of a run (docs/supervisor.md#order-of-one-interactive-run)", () => {
  let dirs: RunPodDirs;
  let captured: CapturedIo;
  let store: RecordingListener;
  beforeEach(async () => {
    dirs = await runPodDirs();
    captured = capturedIo();
    store = await RecordingListener.start();
  });
  afterEach(async () => {
    await store.close();
    await dirs.remove();
  });

  /** An agent that writes its session transcript into its state dir, as the CLIs do. */
  async function agentWritingState(stateDir: string): Promise<void> {
    await writeScript(
      dirs.bin,
      "agent",
      [
        `mkdir -p "$HOME/${stateDir}/projects/ws"`,
        `printf '{"turn":1}\\n' > "$HOME/${stateDir}/projects/ws/session.jsonl"`,
        `printf '{"type":"result","is_error":false}\\n'`,
      ].join("\n"),
    );
  }

  function env(extra: Env): Env {
    return {
      PATH: `${dirs.bin}:/usr/bin:/bin`,
      HOME: dirs.home,
      WORKSPACE_DIR: dirs.workspace,
      AGENT_MODEL: "claude-sonnet-4-6",
      AGENT_EXIT_GRACE_MS: "200",
      AGENT_SINK_RETRY_ATTEMPTS: "1",
      AGENT_SINKS: JSON.stringify([{ type: "http", url: store.url("/sink") }]),
      AGENT_CONVERSATION_SOURCE: store.url("/conversations/"),
      AGENT_CONVERSATION_PIN: "6f1c0a52-pin",
      AGENT_CONVERSATION_AUTH: "conv-auth",
      ...extra,
    };
  }

  async function unpack(body: Buffer): Promise<Record<string, string>> {
    const out = await mkdtemp(join(tmpdir(), "conv-unpack-"));
    try {
      const archive = join(out, "archive.tar.gz");
      await writeFile(archive, body);
      await mkdir(join(out, "home"));
      const entries: string[] = [];
      await extract({ file: archive, cwd: join(out, "home"), onReadEntry: (e) => void entries.push(e.path) });
      const files: Record<string, string> = {};
      for (const path of entries.filter((p) => !p.endsWith("/"))) {
        files[path] = await readFile(join(out, "home", path), "utf8");
      }
      return files;
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }

  it.each<[string, string, string, Record<string, string>]>([
    [
      "claude, bare auth value ⇒ Authorization",
      "claude-sonnet-4-6",
      ".claude",
      { authorization: "Bearer conv-t0k" },
    ],
    ["codex, header block", "gpt-5-codex", ".codex", { "x-api-key": "k-1", "x-tenant": "acme" }],
    ["gemini", "gemini-3-pro", ".gemini", { authorization: "Bearer conv-t0k" }],
  ])(
    "%s: POSTs a tar.gz of the state dir, paths relative to $HOME, before the terminal event",
    async (_name, model, stateDir, headers) => {
      await agentWritingState(stateDir);
      const auth = headers.authorization ? "Bearer conv-t0k" : "X-Api-Key: k-1\nX-Tenant: acme";
      const code = await runSupervisorWith(
        ["--", "agent"],
        env({ AGENT_MODEL: model, "conv-auth": auth }),
        captured.io,
      );
      expect(code).toBe(0);

      const saves = store.requests.filter((r) => r.path.startsWith("/conversations"));
      expect(saves.map((r) => [r.method, r.path])).toEqual([["POST", "/conversations/6f1c0a52-pin"]]);
      const save = saves[0];
      if (save === undefined) throw new Error("no save request");
      expect(save.headers["content-type"]).toBe("application/gzip");
      // Streamed as it is built, never buffered whole: chunked, so no length is known up front.
      expect(save.headers["transfer-encoding"]).toBe("chunked");
      expect(save.headers["content-length"]).toBeUndefined();
      expect(save.headers).toMatchObject(headers);
      // The vendor's CLI setup may have written its own config into the state dir too.
      expect(await unpack(save.body)).toMatchObject({
        [`${stateDir}/projects/ws/session.jsonl`]: '{"turn":1}\n',
      });

      // The save finished before the terminal event was emitted.
      const order = store.requests.map((r) =>
        r.path === "/sink"
          ? (JSON.parse(r.body.toString()) as { event: { status?: string } }).event.status
          : "save",
      );
      expect(order.indexOf("save")).toBeLessThan(order.indexOf("succeeded"));
    },
  );

  it.each<[string, Env, boolean]>([
    ["no pin", { AGENT_CONVERSATION_PIN: "" }, true],
    ["no source", { AGENT_CONVERSATION_SOURCE: "" }, true],
    ["a vendor without state (opencode)", { AGENT_MODEL: "opencode/big-pickle" }, true],
    ["no state dir under $HOME", {}, false],
  ])("skips the save with %s", async (_name, extra, writesState) => {
    if (writesState) await agentWritingState(".claude");
    // The CLI setup may have made the state dir for its config; this agent leaves none.
    else await writeScript(dirs.bin, "agent", 'rm -rf "$HOME/.claude"\nexit 0\n');
    expect(await runSupervisorWith(["--", "agent"], env(extra), captured.io)).toBe(0);
    expect(store.requests.filter((r) => r.path.startsWith("/conversations"))).toEqual([]);
  });

  it.each<[string, (store: RecordingListener) => Env, string]>([
    [
      "an error status",
      (s) => {
        s.status = 500;
        return {};
      },
      "conversation save failed: HTTP 500",
    ],
    [
      "an unreachable store",
      () => ({ AGENT_CONVERSATION_SOURCE: "http://127.0.0.1:1/conv" }),
      "conversation save failed: http://127.0.0.1:1/conv/",
    ],
  ])("a failed save (%s) is logged and does not change the run's result", async (_name, setup, message) => {
    await agentWritingState(".claude");
    const code = await runSupervisorWith(["--", "agent"], env(setup(store)), captured.io);
    expect(code).toBe(0);
    expect(parsedLines(captured.stdout).at(-1)).toEqual({
      kind: "lifecycle",
      phase: "agent",
      status: "succeeded",
      exitCode: 0,
    });
    expect(captured.stderr.join("\n")).toContain(message);
    expect(await readFile(join(dirs.home, "run", "exit-code"), "utf8")).toBe("0\n");
  });
});
