import { describe, expect, it } from "vitest";
import {
  buildInitPlan,
  conversationUrl,
  expandRepoUrl,
  type InitPlan,
  type RepoPlan,
  requiredExecutables,
  type ToolPlan,
} from "./plan.js";

const base = { HOME: "/agent", WORKSPACE_DIR: "/workspace", AGENT_MODEL: "exec" };
const plan = (env: Record<string, string>): InitPlan =>
  buildInitPlan({ ...base, ...env }, { execDir: "/opt/bin" });
const names = (p: InitPlan) => p.tools.map((t) => t.tool);
const toolOf = <T extends ToolPlan["tool"]>(p: InitPlan, tool: T) =>
  p.tools.find((t) => t.tool === tool) as Extract<ToolPlan, { tool: T }>;

describe("buildInitPlan: active tools and their order (docs/run-pod.md#the-init)", () => {
  it.each<[string, Record<string, string>, string[]]>([
    ["exec", {}, ["supervisor", "skills"]],
    // The CLI is the supervisor's to find or install, on the Station's image (docs/agent-clis.md).
    ["a CLI run installs no CLI", { AGENT_MODEL: "claude-sonnet-4-6" }, ["supervisor", "skills"]],
    ["nor does an opencode run", { AGENT_MODEL: "opencode/google/gemini-2.5-pro" }, ["supervisor", "skills"]],
    [
      "every tool, in order",
      {
        AGENT_MODEL: "gemini-2.5-pro",
        AGENT_REPOS: JSON.stringify([{ name: "app", url: "acme/app" }]),
        AGENT_FILES: JSON.stringify([{ path: "a.md", url: "https://x.test/a" }]),
        AGENT_CONVERSATION_SOURCE: "https://store.test/c",
        AGENT_CONVERSATION_ID: "s1",
      },
      ["supervisor", "git", "files", "skills", "conversation"],
    ],
    ["AGENT_REPOS [] has no git", { AGENT_REPOS: "[]" }, ["supervisor", "skills"]],
    ["AGENT_FILES [] has no files", { AGENT_FILES: "[]" }, ["supervisor", "skills"]],
    [
      "a malformed AGENT_FILES still runs files (to fail it)",
      { AGENT_FILES: "{" },
      ["supervisor", "files", "skills"],
    ],
    [
      "conversation needs a source",
      { AGENT_MODEL: "claude-x", AGENT_CONVERSATION_ID: "s1", AGENT_CONVERSATION_SOURCE: "" },
      ["supervisor", "skills"],
    ],
    [
      "conversation needs a vendor with a state dir",
      { AGENT_MODEL: "opencode", AGENT_CONVERSATION_ID: "s1", AGENT_CONVERSATION_SOURCE: "https://s.test" },
      ["supervisor", "skills"],
    ],
    [
      "a resume session alone activates conversation",
      { AGENT_MODEL: "claude-x", AGENT_RESUME_SESSION: "r1", AGENT_CONVERSATION_SOURCE: "https://s.test" },
      ["supervisor", "skills", "conversation"],
    ],
  ])("%s", (_name, env, want) => {
    expect(names(plan(env))).toEqual(want);
  });
});

describe("buildInitPlan: paths", () => {
  it("takes HOME and WORKSPACE_DIR from env, with /agent and /workspace as defaults", () => {
    const p = buildInitPlan({ AGENT_MODEL: "exec" }, { execDir: "/x" });
    expect([p.home, p.homeSet, p.workspace]).toEqual(["/agent", false, "/workspace"]);
    const q = plan({ HOME: "/tmp/h/", WORKSPACE_DIR: "/tmp/w/./" });
    expect([q.home, q.homeSet, q.workspace]).toEqual(["/tmp/h", true, "/tmp/w"]);
  });

  it("copies the supervisor from next to the executable into $HOME/bin, unless overridden", () => {
    expect(toolOf(plan({ HOME: "/h" }), "supervisor")).toEqual({
      tool: "supervisor",
      source: "/opt/bin/ai-agent-supervisor",
      target: "/h/bin/ai-agent-supervisor",
    });
    expect(toolOf(plan({ AGENT_SUPERVISOR_SOURCE: "/s/sup" }), "supervisor").source).toBe("/s/sup");
  });
});

describe("buildInitPlan: repos (resources.repos, docs/decisions.md D-31)", () => {
  const repo = (entry: Record<string, string>): RepoPlan | undefined =>
    toolOf(plan({ AGENT_REPOS: JSON.stringify([entry]) }), "git").repos[0];

  it.each<[string, Record<string, string>, Partial<RepoPlan>]>([
    [
      "default destination <ws>/<name>",
      { name: "app", url: "https://h.test/a.git" },
      { dest: "/workspace/app" },
    ],
    ["relative path", { name: "app", url: "u", path: "src/app" }, { dest: "/workspace/src/app" }],
    ["absolute path inside", { name: "app", url: "u", path: "/workspace/x/../y" }, { dest: "/workspace/y" }],
    [
      "owner/name expands to GitHub",
      { name: "app", url: "acme/app" },
      { cloneUrl: "https://github.com/acme/app.git" },
    ],
    [
      "http(s) userinfo is stripped",
      { name: "app", url: "https://bob:hunter2@h.test/a.git" },
      { cloneUrl: "https://h.test/a.git" },
    ],
    [
      "ssh keeps its login",
      { name: "app", url: "git@github.com:acme/app.git" },
      { cloneUrl: "git@github.com:acme/app.git" },
    ],
    ["a valid token_secret", { name: "app", url: "u", token_secret: "GH_PAT" }, { tokenEnv: "GH_PAT" }],
    ["a ref", { name: "app", url: "u", ref: "v1.2" }, { ref: "v1.2" }],
  ])("%s", (_name, entry, want) => {
    expect(repo(entry)).toMatchObject(want);
  });

  it("an invalid token_secret is not used (the controller injects no such env)", () => {
    expect(repo({ name: "app", url: "u", token_secret: "gh-pat" })).not.toHaveProperty("tokenEnv");
  });

  it.each<[string, string, string]>([
    ["..", "../etc", "resolves to /etc, outside the workspace /workspace"],
    ["an absolute path elsewhere", "/etc/app", "resolves to /etc/app, outside the workspace /workspace"],
    ["the workspace itself", ".", "resolves to the workspace /workspace itself, not a path inside it"],
  ])("a destination through %s is refused, naming where it leads", (_name, path, cause) => {
    expect(repo({ name: "evil", url: "u", path })).toMatchObject({ destProblem: cause });
  });

  it("skips entries without name or url, saying so", () => {
    const git = toolOf(
      plan({ AGENT_REPOS: JSON.stringify([{ url: "u" }, { name: "ok", url: "u" }]) }),
      "git",
    );
    expect(git.repos.map((r) => r.name)).toEqual(["ok"]);
    expect(git.skipped).toEqual(["repo #1 has no name or url; skipped"]);
  });
});

describe("buildInitPlan: files (spec.files, docs/decisions.md D-30)", () => {
  it("resolves each declared path and keeps entries in order", () => {
    const files = toolOf(
      plan({
        AGENT_FILES: JSON.stringify([
          { path: "notes/brief.md", url: "https://f.test/1", headers_secret: "files-auth" },
          { path: "/workspace/data.csv", url: "http://f.test/2" },
          { path: "../escape", url: "http://f.test/3" },
        ]),
      }),
      "files",
    );
    expect(files.entries).toEqual([
      {
        path: "notes/brief.md",
        url: "https://f.test/1",
        headersEnv: "files-auth",
        dest: "/workspace/notes/brief.md",
      },
      { path: "/workspace/data.csv", url: "http://f.test/2", dest: "/workspace/data.csv" },
      {
        path: "../escape",
        url: "http://f.test/3",
        pathProblem: "resolves to /escape, outside the workspace /workspace",
      },
    ]);
  });
});

describe("buildInitPlan: skills and conversation", () => {
  it("keeps valid skill names and sets invalid ones aside", () => {
    const skills = toolOf(
      plan({
        AGENT_MODEL: "claude-x",
        AGENT_SKILLS: JSON.stringify(["review", ".hidden", "a/b", "x_y-1.2"]),
      }),
      "skills",
    );
    expect(skills).toMatchObject({
      stage: true,
      names: ["review", "x_y-1.2"],
      invalidNames: [".hidden", "a/b"],
    });
  });

  it("docs/decisions.md D-57: skills for a non-Claude vendor are logged as ignored", () => {
    const p = plan({
      AGENT_MODEL: "gpt-5",
      AGENT_SKILLS: '["review"]',
      AGENT_SKILLS_SOURCE: "https://s.test",
    });
    expect(toolOf(p, "skills").stage).toBe(false);
    expect(p.notices).toEqual([
      "resources.skills is not supported by codex; ignored",
      "resources.skills_source is not supported by codex; ignored",
    ]);
  });

  it.each<[string, Record<string, string>, Partial<Extract<ToolPlan, { tool: "conversation" }>>]>([
    [
      "conversation.id is best-effort",
      { AGENT_CONVERSATION_ID: "abc", AGENT_CONVERSATION_SOURCE: "https://s.test/c/" },
      { id: "abc", url: "https://s.test/c/abc", required: false },
    ],
    [
      "a resume session is required and wins over the id",
      {
        AGENT_CONVERSATION_ID: "abc",
        AGENT_RESUME_SESSION: "r/1",
        AGENT_CONVERSATION_SOURCE: "https://s.test",
      },
      { id: "r/1", url: "https://s.test/r%2F1", required: true },
    ],
  ])("%s", (_name, env, want) => {
    expect(toolOf(plan({ AGENT_MODEL: "claude-x", ...env }), "conversation")).toMatchObject(want);
  });

  it("conversationUrl puts the id in one path segment", () => {
    expect(conversationUrl("https://s.test/base//", "a b")).toBe("https://s.test/base/a%20b");
  });
});

describe("requiredExecutables (docs/run-pod.md#the-init step 3)", () => {
  const repos = JSON.stringify([{ name: "a", url: "u" }]);
  it.each<[string, Record<string, string>, string[]]>([
    [
      "exec alone needs nothing (files, skills, sinks work in-process)",
      { AGENT_FILES: '[{"path":"a","url":"u"}]' },
      [],
    ],
    ["git for repos", { AGENT_REPOS: repos }, ["git"]],
    ["a CLI run needs no installer tools", { AGENT_MODEL: "claude-x" }, []],
    ["nor with repos", { AGENT_MODEL: "opencode", AGENT_REPOS: repos }, ["git"]],
  ])("%s", (_name, env, want) => {
    expect(requiredExecutables(plan(env))).toEqual(want);
  });
});

describe("helpers", () => {
  it("expandRepoUrl leaves full URLs and local paths alone", () => {
    expect(expandRepoUrl("acme/app")).toBe("https://github.com/acme/app.git");
    expect(expandRepoUrl("./rel/path")).toBe("./rel/path");
    expect(expandRepoUrl("https://h.test/a/b")).toBe("https://h.test/a/b");
  });
});
