import { describe, expect, it } from "vitest";
import { agent, definition } from "../../../test/support/core-builders.js";
import type { AgentDefinitionSpec, AgentSpec } from "../types.js";
import { batchUnsupportedFields, specCheckFailure } from "./spec-checks.js";

/** A claude session id as the CLI announces it. */
const SESSION = "4855a4a8-c43d-426f-99fc-150c8ea32853";

const key = { resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "k" }] } };
const batch = (extra: Partial<AgentDefinitionSpec> = {}): Partial<AgentDefinitionSpec> => ({
  execution: "batch",
  ...key,
  ...extra,
});
const rt = (extra: Partial<AgentDefinitionSpec> = {}): Partial<AgentDefinitionSpec> => ({
  execution: "realtime",
  ...extra,
});
const on = { batchEnabled: true, realtimeEnabled: true };

type Row = [string, Partial<AgentDefinitionSpec>, Partial<AgentSpec>, typeof on, string | undefined];

function deliveryRows(): Row[] {
  const pr = (extra: Record<string, unknown> = {}) => ({
    delivery: { pullRequest: { tokenSecret: "t", ...extra } },
    resources: { repos: [{ name: "app", url: "https://github.com/Acme/App.git" }] },
  });
  const outside = (branch: string, prefix: string, source: string) =>
    `spec.branch ${JSON.stringify(branch)} is outside the branch prefix ${JSON.stringify(prefix)} that ${source} allows`;
  const byDefinition = "the AgentDefinition's delivery.pullRequest.branchPrefix";
  const byInstallation = "the installation's DELIVERY_BRANCH_PREFIX";
  const undeclared = (repo: string) =>
    `spec.targetRepo ${JSON.stringify(repo)} is neither a repository the AgentDefinition declares in resources.repos nor one the installation allows (DELIVERY_TARGET_REPOS)`;
  const invalid = (branch: string, why: string) =>
    `spec.branch ${JSON.stringify(branch)} is not a valid git branch name: it ${why}`;
  const narrowed = (extra: Record<string, unknown>) => ({ ...on, ...extra }) as typeof on;
  return [
    ["delivery: a branch under agent/ ok", pr(), { branch: "agent/fix-1" }, on, undefined],
    // The Agent seed: any branch by default.
    ["delivery: feat/x ok", pr(), { branch: "feat/x" }, on, undefined],
    ["delivery: fix/issue-128 ok", pr(), { branch: "fix/issue-128" }, on, undefined],
    ["delivery: fix/#128 ok", pr(), { branch: "fix/#128" }, on, undefined],
    ["delivery: release ok (the courier will not rewrite it)", pr(), { branch: "release" }, on, undefined],
    ["delivery: a name git refuses", pr(), { branch: "a..b" }, on, invalid("a..b", "contains ..")],
    ["delivery: a leading dash", pr(), { branch: "-f" }, on, invalid("-f", "starts with -")],
    [
      "delivery: a .lock part",
      pr(),
      { branch: "x/y.lock" },
      on,
      invalid("x/y.lock", 'has a part ending in .lock ("y.lock")'),
    ],
    [
      "delivery: the definition's own prefix",
      pr({ branchPrefix: "bots/" }),
      { branch: "bots/x" },
      on,
      undefined,
    ],
    [
      "delivery: outside the definition's own prefix",
      pr({ branchPrefix: "bots/" }),
      { branch: "feat/x" },
      on,
      outside("feat/x", "bots/", byDefinition),
    ],
    [
      "delivery: the bare prefix is no branch",
      pr({ branchPrefix: "bots/" }),
      { branch: "bots/" },
      on,
      invalid("bots/", "has an empty part (a leading, trailing or doubled /)"),
    ],
    [
      "delivery: a look-alike prefix",
      pr({ branchPrefix: "bots/" }),
      { branch: "botsx/y" },
      on,
      outside("botsx/y", "bots/", byDefinition),
    ],
    [
      "delivery: the default branch agent/<name> is always allowed, whatever the prefix",
      pr({ branchPrefix: "bots/" }),
      { branch: "agent/run-1" },
      narrowed({ deliveryBranchPrefix: "team/" }),
      undefined,
    ],
    [
      "delivery: another agent/ branch is outside the definition's prefix",
      pr({ branchPrefix: "bots/" }),
      { branch: "agent/x" },
      on,
      outside("agent/x", "bots/", byDefinition),
    ],
    [
      "delivery: outside the installation's prefix",
      pr(),
      { branch: "feat/x" },
      narrowed({ deliveryBranchPrefix: "team/" }),
      outside("feat/x", "team/", byInstallation),
    ],
    [
      "delivery: inside the installation's prefix",
      pr(),
      { branch: "team/feat-x" },
      narrowed({ deliveryBranchPrefix: "team/" }),
      undefined,
    ],
    // The Agent seed: any owner/name by default; DELIVERY_TARGET_REPOS narrows, opt-in.
    [
      "delivery: any target repo by default (a fork's upstream)",
      pr(),
      { targetRepo: "upstream/app" },
      on,
      undefined,
    ],
    [
      "delivery: the declared repo as target (case-insensitive) with a narrowing list",
      pr(),
      { targetRepo: "acme/app" },
      narrowed({ deliveryTargetRepos: ["acme/docs"] }),
      undefined,
    ],
    [
      "delivery: a target outside the installation's list",
      pr(),
      { targetRepo: "acme/other" },
      narrowed({ deliveryTargetRepos: ["acme/docs"] }),
      undeclared("acme/other"),
    ],
    [
      "delivery: a target the installation's list names",
      pr(),
      { targetRepo: "acme/other" },
      narrowed({ deliveryTargetRepos: ["acme/other"] }),
      undefined,
    ],
    ["no delivery: branch and target unchecked", {}, { branch: "a..b", targetRepo: "x/y" }, on, undefined],
  ];
}

const rows: Row[] = [
  ["interactive default passes", {}, {}, on, undefined],
  [
    "batch off",
    batch(),
    {},
    { ...on, batchEnabled: false },
    "batch execution is disabled on this controller",
  ],
  [
    "batch allowed_tools",
    batch({ allowed_tools: ["Bash"] }),
    {},
    on,
    "batch execution does not support allowed_tools",
  ],
  [
    "batch disallowed_tools",
    batch({ disallowed_tools: ["Bash(rm *)"] }),
    {},
    on,
    "batch execution does not support disallowed_tools",
  ],
  ["batch max_turns", batch({ max_turns: 3 }), {}, on, "batch execution does not support max_turns"],
  [
    "batch repos",
    batch({ resources: { ...key.resources, repos: [{ name: "r", url: "o/r" }] } }),
    {},
    on,
    "batch execution does not support resources.repos",
  ],
  [
    "batch mcp_servers",
    batch({
      resources: { ...key.resources, mcp_servers: [{ name: "m", transport: "http", url: "https://m" }] },
    }),
    {},
    on,
    "batch execution does not support resources.mcp_servers",
  ],
  [
    "batch skills",
    batch({ resources: { ...key.resources, skills: ["s"] } }),
    {},
    on,
    "batch execution does not support resources.skills",
  ],
  [
    "batch conversation",
    batch({ resources: { ...key.resources, conversation: { source: "https://c" } } }),
    {},
    on,
    "batch execution does not support resources.conversation",
  ],
  [
    "batch output.watch",
    batch({ output: { watch: [{ event: "e", path: "p" }] } }),
    {},
    on,
    "batch execution does not support output.watch",
  ],
  ["batch exec model", batch({ model: "exec" }), {}, on, "batch execution does not support the exec model"],
  [
    "batch opencode model",
    batch({ model: "opencode/x" }),
    {},
    on,
    "batch execution does not support opencode models",
  ],
  [
    "batch Agent.spec.model override goes through the model check",
    batch({ model: "claude-sonnet-4-6" }),
    { model: "opencode" },
    on,
    "batch execution does not support opencode models",
  ],
  [
    "batch files",
    batch(),
    { files: [{ path: "a", url: "https://f/a" }] },
    on,
    "batch execution does not support files",
  ],
  [
    "batch delivery",
    batch({ delivery: { pullRequest: { tokenSecret: "t" } } }),
    {},
    on,
    "batch execution does not support delivery.pullRequest",
  ],
  [
    "batch without the vendor key entry",
    batch({ model: "gemini-3.1-flash-lite" }),
    {},
    on,
    "batch execution needs a resources.secrets entry named GEMINI_API_KEY",
  ],
  [
    "delivery without resources.repos",
    { delivery: { pullRequest: { tokenSecret: "t" } } },
    {},
    on,
    "delivery.pullRequest needs resources.repos",
  ],
  [
    "delivery with an empty resources.repos",
    { delivery: { pullRequest: { tokenSecret: "t" } }, resources: { repos: [] } },
    {},
    on,
    "delivery.pullRequest needs resources.repos",
  ],
  [
    "delivery with a declared repo ok",
    { delivery: { pullRequest: { tokenSecret: "t" } }, resources: { repos: [{ name: "a", url: "o/a" }] } },
    {},
    on,
    undefined,
  ],
  // Deliveries within bounds (docs/security.md#deliveries): branch prefix and declared targets.
  ...deliveryRows(),
  ["batch ok", batch(), {}, on, undefined],
  ["batch with empty tool list ok", batch({ allowed_tools: [] }), {}, on, undefined],
  [
    "realtime off",
    rt(),
    {},
    { ...on, realtimeEnabled: false },
    "realtime execution is disabled on this controller",
  ],
  [
    "realtime conversation.id",
    rt({ resources: { conversation: { source: "https://c", id: "x" } } }),
    {},
    on,
    "realtime execution does not support resources.conversation.id",
  ],
  [
    "realtime conversation.pin",
    rt({ resources: { conversation: { source: "https://c", pin: "x" } } }),
    {},
    on,
    "realtime execution does not support resources.conversation.pin",
  ],
  ["resume on interactive", {}, { resumeSession: "s" }, on, "resumeSession requires realtime execution"],
  ["resume on batch", batch(), { resumeSession: "s" }, on, "resumeSession requires realtime execution"],
  [
    "resume without source",
    rt(),
    { resumeSession: "s" },
    on,
    "resumeSession needs resources.conversation.source",
  ],
  [
    "resume opencode",
    rt({ model: "opencode", resources: { conversation: { source: "https://c" } } }),
    { resumeSession: "s" },
    on,
    "opencode cannot resume a session",
  ],
  [
    "resume exec",
    rt({ model: "exec", resources: { conversation: { source: "https://c" } } }),
    { resumeSession: "s" },
    on,
    "exec cannot resume a session",
  ],
  [
    "resume claude ok",
    rt({ resources: { conversation: { source: "https://c" } } }),
    { resumeSession: SESSION },
    on,
    undefined,
  ],
  [
    "resume gemini with an option for an id (--resume --yolo switched auto-approve on)",
    rt({ model: "gemini-2.5-pro", resources: { conversation: { source: "https://c" } } }),
    { resumeSession: "--yolo" },
    on,
    'resumeSession "--yolo" is not a gemini session id (a UUID)',
  ],
  [
    "resume claude with an option for an id",
    rt({ resources: { conversation: { source: "https://c" } } }),
    { resumeSession: "--dangerously-skip-permissions" },
    on,
    'resumeSession "--dangerously-skip-permissions" is not a claude session id (a UUID)',
  ],
  [
    "resume codex with something not a thread id",
    rt({ model: "gpt-5-codex", resources: { conversation: { source: "https://c" } } }),
    { resumeSession: "last\n-c x" },
    on,
    'resumeSession "last\\n-c x" is not a codex session id (a UUID)',
  ],
  [
    "resume codex ok (a UUIDv7 thread id)",
    rt({ model: "gpt-5-codex", resources: { conversation: { source: "https://c" } } }),
    { resumeSession: "0199a213-81c0-7800-8aa1-bbab2a035a53" },
    on,
    undefined,
  ],
  ["realtime opencode", rt({ model: "opencode" }), {}, on, "opencode cannot run a realtime session"],
  ["prompt too large", { prompt: "x".repeat(102401) }, {}, on, "rendered prompt exceeds 102400 bytes"],
  ["prompt at the limit", { prompt: "x".repeat(102400) }, {}, on, undefined],
  [
    "prompt grows past the limit through parameters",
    { prompt: "{p}" },
    { parameters: { p: "é".repeat(51201) } },
    on,
    "rendered prompt exceeds 102400 bytes",
  ],
  [
    "resumed realtime sends no prompt",
    rt({ prompt: "x".repeat(200000), resources: { conversation: { source: "https://c" } } }),
    { resumeSession: SESSION },
    on,
    undefined,
  ],
];

describe("spec checks at Pending (docs/validation-rules.md#in-the-controller-not-at-admission)", () => {
  it.each(rows)("%s", (_name, def, spec, settings, want) => {
    expect(specCheckFailure(agent().spec(spec).build(), definition().spec(def).build(), settings)).toBe(want);
  });

  it("reports the first unsupported batch field in the seed's order", () => {
    expect(
      batchUnsupportedFields({
        prompt: "p",
        output: { watch: [{ event: "e", path: "p" }] },
        max_turns: 2,
        allowed_tools: ["a"],
      }),
    ).toEqual(["allowed_tools", "max_turns", "output.watch"]);
  });
});
