import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import {
  extractSeedManifests,
  SEED_FIXTURES_DIR,
  SEEDS_DIR,
  seedManifests,
} from "../../test/support/seed-manifests.js";
import { readManifestSources } from "./manifest-files.js";
import { formatProblem, validateManifests } from "./validate-manifests.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const EXAMPLES = path.join(ROOT, "deploy/examples");
const SEEDS = path.join(ROOT, "test/integration/client/fixtures/seeds");
const noStdin = async () => "";

/** YAML documents in deploy/examples (or one file of it), counted independently of the validator. */
function exampleObjects(only?: string): number {
  return readdirSync(EXAMPLES)
    .filter((f) => f.endsWith(".yaml") && (only === undefined || f === only))
    .flatMap((f) => parseAllDocuments(readFileSync(path.join(EXAMPLES, f), "utf8")))
    .filter((d) => d.toJS() !== null).length;
}

function lines(text: string, file = "m.yaml"): string[] {
  return validateManifests([{ file, text }]).problems.map(formatProblem);
}

describe("the shipped manifests are valid", () => {
  it.each(readdirSync(EXAMPLES).filter((f) => f.endsWith(".yaml")))("deploy/examples/%s", async (file) => {
    const { sources, problems } = await readManifestSources([path.join(EXAMPLES, file)], false, noStdin);
    expect(problems).toEqual([]);
    const report = validateManifests(sources);
    expect(report.problems.map(formatProblem)).toEqual([]);
    expect(report.checked).toBe(exampleObjects(file));
  });

  it("deploy/examples as one directory, so the Agent is judged against its Station and definition", async () => {
    const { sources } = await readManifestSources([EXAMPLES], false, noStdin);
    const report = validateManifests(sources);
    // Every example is an object of ours, whoever adds one.
    expect(report).toEqual({ checked: exampleObjects(), skipped: 0, problems: [] });
  });

  it.each(readdirSync(SEEDS).filter((f) => f.endsWith(".yaml")))("the seeds' %s", async (file) => {
    const { sources } = await readManifestSources([path.join(SEEDS, file)], false, noStdin);
    const report = validateManifests(sources);
    expect(report.problems.map(formatProblem)).toEqual([]);
    expect(report.checked).toBeGreaterThan(0);
  });

  it("skips the other kinds of a directory tree (CRDs, kustomizations, RBAC)", async () => {
    const { sources } = await readManifestSources([path.join(ROOT, "deploy")], true, noStdin);
    const report = validateManifests(sources);
    expect(report.problems.map(formatProblem)).toEqual([]);
    // Outside deploy/examples, deploy/ holds no Agent, Station or AgentDefinition.
    expect(report.checked).toBe(exampleObjects());
    expect(report.skipped).toBeGreaterThan(3);
  });
});

/** kind + spec of every object of our group, sorted: what a seed says, whatever the metadata. */
function objectsOf(texts: readonly string[]): string[] {
  return texts
    .flatMap((t) => parseAllDocuments(t).map((d) => d.toJS() as Record<string, unknown> | null))
    .filter((o) => typeof o?.apiVersion === "string" && o.apiVersion.startsWith("agents.re-cinq.com/"))
    .map((o) => JSON.stringify({ kind: o?.kind, spec: o?.spec }))
    .sort();
}

describe("the manifests the seeds quote", () => {
  it("are extracted from prose: whole objects, multi-document blocks, snippets completed, other kinds kept", () => {
    const seed = [
      "Agent CRD",
      "Group/Version: agents.re-cinq.com/v1beta1 · Kind: Agent · Scope: Namespaced",
      "",
      "spec:",
      "  stationRef: writer",
      "",
      "Some prose about it.",
      "",
      "apiVersion: agents.re-cinq.com/v1beta1",
      "kind: Station",
      "metadata:",
      "  name: s",
      "spec:",
      "  agentDefRef: d",
      "",
      "  template: {spec: {containers: [{name: agent, image: x}]}}",
      "---",
      "apiVersion: v1",
      "kind: ConfigMap",
      "metadata: {name: c}",
      "",
      "kubectl create -f agent.yaml",
      "  --dry-run=client",
    ].join("\n");
    expect(extractSeedManifests("x.txt", seed)).toEqual([
      {
        source: "x.txt:4",
        text: "apiVersion: agents.re-cinq.com/v1beta1\nkind: Agent\nmetadata:\n  name: x-4\nspec:\n  stationRef: writer\n",
      },
      {
        source: "x.txt:9",
        text: "apiVersion: agents.re-cinq.com/v1beta1\nkind: Station\nmetadata:\n  name: s\nspec:\n  agentDefRef: d\n\n  template: {spec: {containers: [{name: agent, image: x}]}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
      },
    ]);
  });

  // The seeds sit next to the checkout in this workspace; a clean clone (CI) has only the committed
  // copies, which the tests above validate and the next test keeps equal to the seeds.
  const haveSeeds = existsSync(SEEDS_DIR);

  it.skipIf(!haveSeeds)(`every one in ${SEEDS_DIR} is valid, with no problem at all`, () => {
    const manifests = seedManifests();
    const report = validateManifests(manifests.map((m) => ({ file: m.source, text: m.text })));
    expect(report.problems.map(formatProblem)).toEqual([]);
    // The batch-run seed alone quotes 3 + 1 + 1 objects of the group, the Agent CRD's seed one snippet.
    expect(report.checked).toBeGreaterThanOrEqual(6);
  });

  it.skipIf(!haveSeeds)(
    "the committed copies in fixtures/seeds hold the objects the seeds quote",
    async () => {
      const { sources } = await readManifestSources([SEED_FIXTURES_DIR], false, noStdin);
      expect(objectsOf(sources.map((s) => s.text))).toEqual(objectsOf(seedManifests().map((m) => m.text)));
    },
  );
});

const station = `apiVersion: agents.re-cinq.com/v1beta1
kind: Station
metadata: {name: writer}
spec:
  agentDefRef: writer
  template:
    spec:
      containers: [{name: agent, image: x}]
`;
const definition = (extra: string) => `apiVersion: agents.re-cinq.com/v1beta1
kind: AgentDefinition
metadata: {name: writer}
spec:
  prompt: "Write {topic}"
${extra}`;

describe("broken manifests: every problem with file, document and path", () => {
  it.each([
    [
      "a missing required field and a misspelt one",
      `apiVersion: agents.re-cinq.com/v1beta1
kind: Agent
metadata: {generateName: fix-}
spec:
  stationref: writer
`,
      [
        "m.yaml#1 Agent/fix-: spec.stationRef is required.",
        "m.yaml#1 Agent/fix-: spec.stationref is not a known field of Agent.",
      ],
    ],
    [
      "the second document of a file; a file URL with another scheme",
      `${station}---
apiVersion: agents.re-cinq.com/v1beta1
kind: Agent
metadata: {name: run-1}
spec:
  stationRef: writer
  files:
    - {path: a.md, url: "ftp://files.example.com/a.md"}
`,
      [
        'm.yaml#2 Agent/run-1: spec.files[0].url must be an http:// or https:// URL; no other scheme is fetched; got "ftp://files.example.com/a.md".',
      ],
    ],
    [
      "a CEL rule's equivalent: an http sink without url",
      definition(`  output:
    sinks:
      - type: http
`),
      ["m.yaml#1 AgentDefinition/writer: spec.output.sinks[0].url: an http sink needs url."],
    ],
    [
      "an enum and a bound on a Station",
      `apiVersion: agents.re-cinq.com/v1beta1
kind: Station
metadata: {name: s}
spec:
  agentDefRef: d
  concurrencyPolicy: Sometimes
  maxConcurrentRuns: -1
  template: {spec: {containers: [{name: agent, image: x}]}}
`,
      [
        "m.yaml#1 Station/s: spec.maxConcurrentRuns must be at least 0, got -1.",
        'm.yaml#1 Station/s: spec.concurrencyPolicy must be one of Allow, Forbid, Replace; got "Sometimes".',
      ],
    ],
    [
      "an unknown kind of this group",
      "apiVersion: agents.re-cinq.com/v1beta1\nkind: Agents\nmetadata: {name: x}\n",
      ['m.yaml#1 Agents/x: kind must be one of Agent, Station, AgentDefinition; got "Agents".'],
    ],
    [
      "a Station template the controller cannot run",
      station.replace("name: agent", "name: main"),
      [
        "m.yaml#1 Station/writer: spec.template: the controller fails every run of this Station: invalid Station template: no container named agent.",
      ],
    ],
    [
      "a run the controller would fail (batch with files), judged with its Station and definition",
      `${station}---
${definition("  model: claude-sonnet-4-6\n  execution: batch\n  resources:\n    secrets: [{name: ANTHROPIC_API_KEY, ref: k}]\n")}---
apiVersion: agents.re-cinq.com/v1beta1
kind: Agent
metadata: {name: run-2}
spec:
  stationRef: writer
  files: [{path: a.md, url: "https://x.example.com/a"}]
`,
      ["m.yaml#3 Agent/run-2: the controller would fail this run: batch execution does not support files."],
    ],
    [
      "YAML that does not parse",
      "kind: Agent\nspec: [unclosed\n",
      [
        "m.yaml#1: not valid YAML: Flow sequence in block collection must be sufficiently indented and end with a ] at line 3, column 1.",
      ],
    ],
  ])("%s", (_name, text, expected) => {
    expect(lines(text)).toEqual(expected);
  });

  it("reports the allowlist's refusals in the controller's words", () => {
    const hostile = station.replace(
      "containers: [{name: agent, image: x}]",
      "containers: [{name: agent, image: x, envFrom: [{secretRef: {name: agent-realtime}}]}]",
    );
    expect(lines(hostile)).toEqual([
      'm.yaml#1 Station/writer: spec.template: the controller fails every run of this Station: invalid Station template: spec.template.spec.containers[0].envFrom[0].secretRef: Secret "agent-realtime" is not allowed: Station containers read only Secret agent-secrets unless the installation lists another in RUN_POD_SECRETS.',
    ]);
  });

  it("judges the template where it is used: a batch definition's only with onTimeout fallback", () => {
    const pinned = station
      .replace("template:", "template:\n    metadata: {}")
      .replace(
        "containers: [{name: agent, image: x}]",
        "containers: [{name: agent, image: x}]\n      nodeName: node-1",
      );
    const batch = (onTimeout: string) =>
      definition(
        `  model: claude-sonnet-4-6\n  execution: batch\n  batch: {onTimeout: ${onTimeout}}\n  resources:\n    secrets: [{name: ANTHROPIC_API_KEY, ref: k}]\n`,
      );
    const agent =
      "apiVersion: agents.re-cinq.com/v1beta1\nkind: Agent\nmetadata: {name: run-3}\nspec: {stationRef: writer}\n";
    expect(lines(`${pinned}---\n${batch("fail")}---\n${agent}`)).toEqual([]);
    const refused =
      "invalid Station template: spec.template.spec.nodeName is not allowed: it is outside the Station template allowlist (docs/security.md#the-station-template-policy); an installation allows it with RUN_POD_FIELDS=nodeName.";
    expect(lines(`${pinned}---\n${batch("fallback")}---\n${agent}`)).toEqual([
      `m.yaml#1 Station/writer: spec.template: the controller fails every run of this Station: ${refused}`,
      `m.yaml#3 Agent/run-3: the controller would fail this run: ${refused}`,
    ]);
  });

  it("--schema-only leaves the run checks out", () => {
    const text = station.replace("name: agent", "name: main");
    expect(validateManifests([{ file: "m.yaml", text }], { schemaOnly: true }).problems).toEqual([]);
  });

  it("a batch definition with allowed_tools is a valid object (the seeds make it a run failure)", () => {
    expect(lines(definition("  execution: batch\n  allowed_tools: [Edit]\n"))).toEqual([]);
  });

  it("names a path that does not exist and a directory without manifests", async () => {
    const { problems } = await readManifestSources(
      [path.join(ROOT, "no-such-dir"), path.join(ROOT, "src/cli")],
      false,
      noStdin,
    );
    expect(problems.map(formatProblem)).toEqual([
      `${path.join(ROOT, "no-such-dir")}: does not exist.`,
      `${path.join(ROOT, "src/cli")}: the directory holds no .yaml, .yml or .json file.`,
    ]);
  });
});
