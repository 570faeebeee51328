/**
 * Every "why" a comment points to must be readable inside this repository: code, tests, codegen,
 * scripts, the benchmark, the manifests and docs/ itself cite docs/ (docs/decisions.md D-NN for a decision, a section of
 * another page for a fact), never the requirement documents the project was built from (their
 * open-question numbers, section numbers or issue items, the provider notes, the seed files).
 * Offenders are reported by file:line.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const SCANNED = ["src", "test", "codegen", "scripts", "bench", "deploy", "docs", "README.md", "Dockerfile"];
/** Names each decision's origin (the open question it answers), by design. */
const DECISIONS = join("docs", "decisions.md");
const SKIP_DIRS = new Set(["node_modules", "dist", ".git"]);
const TEXT = /\.(ts|js|mjs|cjs|sh|json|ya?ml|md)$/;
const THIS_FILE = relative(ROOT, import.meta.filename);

/** Citations of documents that are not in the repository. */
const OUTSIDE: readonly { what: string; pattern: RegExp }[] = [
  { what: "open question", pattern: /\bOQ-\d+/ },
  {
    what: "section of a spec document",
    pattern: /\b(runtime|events|crds|templating-and-routing|rbac-network)\.md §/,
  },
  { what: "spec document", pattern: /\b(rbac-network|open-questions)\.md\b/ },
  { what: "issue item", pattern: /\bissues? #?\d+,? items? \d/i },
  { what: "issue", pattern: /\(issues? #?\d+[),]/i },
  { what: "bare item", pattern: /\/\/ Item \d+:/ },
  // docs/ pages are cited by path and #anchor, so a section sign always numbers a section elsewhere.
  { what: "section number", pattern: /§/ },
  { what: "provider notes", pattern: /\b(anthropic|openai|gemini|cli-output)\.md\b/ },
  { what: "seed file", pattern: /\b(agent-crd|batch-runs|controller-lifecycle|prompt-api)\.txt\b/ },
  // A folder of the requirement documents; test/fakes/providers/README.md (a path in the repo) is not one.
  { what: "spec folder", pattern: /(?<![\w./-])(seeds|spec|providers)\/[\w*-]+\.(md|txt)\b/ },
  // `../shared/seeds` is where the seed-manifest test reads the seeds when they are at hand, not a citation.
  {
    what: "shared documents",
    pattern: /\/work\/shared\b|(?<!\.\.\/)\bshared\/(providers|seeds|spec|reference)\b/,
  },
];

const isOutside = (text: string) => OUTSIDE.some((o) => o.pattern.test(text));

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  if (statSync(dir).isFile()) return [dir];
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (SKIP_DIRS.has(name)) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...filesUnder(path));
    else if (TEXT.test(name)) out.push(path);
  }
  return out;
}

interface Line {
  file: string;
  line: number;
  text: string;
}

function scannedLines(): Line[] {
  const lines: Line[] = [];
  for (const top of SCANNED) {
    for (const path of filesUnder(join(ROOT, top))) {
      const file = relative(ROOT, path);
      if (file === THIS_FILE || file === DECISIONS) continue;
      readFileSync(path, "utf8")
        .split("\n")
        .forEach((text, i) => {
          lines.push({ file, line: i + 1, text });
        });
    }
  }
  return lines;
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

function anchorsOf(doc: string): Set<string> {
  const text = readFileSync(join(ROOT, doc), "utf8").replace(/```[\s\S]*?```/g, "");
  return new Set(
    text
      .split("\n")
      .filter((l) => /^#{1,6} /.test(l))
      .map((l) => slug(l.replace(/^#+ /, ""))),
  );
}

const lines = scannedLines();
const where = (l: Line) => `${l.file}:${l.line}: ${l.text.trim().slice(0, 140)}`;

describe("references in code lead to docs/", () => {
  it("each pattern catches its form of citation outside the repository, and none a docs/ citation", () => {
    const samples: [what: string, text: string][] = [
      ["open question", "// Retry after 30 s (OQ-12)."],
      ["section of a spec document", "// The hold-off of runtime.md §4.2."],
      ["section of a spec document", " * As events.md §3 lists them."],
      ["spec document", "// See rbac-network.md for the roles."],
      ["issue item", "// issue 13 item 4: no retry."],
      ["issue", "// Reasons (issue #7)."],
      ["bare item", "// Item 3: keep the label."],
      ["section number", '  describe("prerequisites (§7.1 step 3)", () => {'],
      ["section number", " * §6). Pure and forgiving."],
      ["provider notes", "/** List prices (providers/anthropic.md). */"],
      ["provider notes", "// The documented error type (anthropic.md, errors)."],
      ["provider notes", "/** The lines recorded in cli-output.md. */"],
      ["seed file", "/** The bearer token's Secret (prompt-api.txt). */"],
      ["seed file", "// A cause never carries a header (seed agent-crd.txt)."],
      ["seed file", "/** The controller's /metrics (controller-lifecycle.txt). */"],
      ["seed file", "// Gemini's batch lines carry no timestamp (batch-runs.txt)."],
      ["spec folder", "| run checks | at Pending (`spec/crds.md`) |"],
      ["spec folder", "// the requests the seeds quote (seeds/*.txt)"],
      ["spec folder", "real API does (providers/*.md)"],
      ["shared documents", "wire facts are in `/work/shared/reference/`."],
      ["shared documents", " * the documented events (shared/providers specs)."],
    ];
    const missed = samples.filter(
      ([what, text]) => !OUTSIDE.find((o) => o.what === what)?.pattern.test(text),
    );
    expect(missed).toEqual([]);
    const inside = [
      "/** List prices (docs/batch-providers.md#cost). */",
      "// Read back as docs/run-pod.md#what-the-controller-reads-back says (docs/decisions.md D-53).",
      "A fake for each batch API (test/fakes/providers/README.md).",
      'const SEEDS = path.join(ROOT, "test/integration/client/fixtures/seeds");',
      'export const SEEDS_DIR = process.env.SEEDS_DIR || path.resolve(REPO, "../shared/seeds");',
      '    expect(extractSeedManifests("x.txt", seed)).toEqual([',
    ];
    expect(inside.filter(isOutside)).toEqual([]);
  });

  it("no file cites a document outside the repository", () => {
    const offenders = lines
      .filter((l) => isOutside(l.text))
      .map((l) => `${where(l)}  [${OUTSIDE.find((o) => o.pattern.test(l.text))?.what}]`);
    expect(
      offenders,
      `cite docs/ instead (docs/decisions.md for a decision):\n${offenders.join("\n")}`,
    ).toEqual([]);
  });

  it("every decision cited (D-NN) is an entry of docs/decisions.md", () => {
    const decisions = readFileSync(join(ROOT, "docs", "decisions.md"), "utf8");
    const entries = new Set([...decisions.matchAll(/^### D-(\d+):/gm)].map((m) => m[1]));
    expect(entries.size).toBeGreaterThan(0);
    const missing = lines.flatMap((l) =>
      [...l.text.matchAll(/\bD-(\d+)\b/g)]
        .filter((m) => !entries.has(m[1]))
        .map((m) => `${where(l)}  [D-${m[1]}]`),
    );
    expect(missing, `no such entry in docs/decisions.md:\n${missing.join("\n")}`).toEqual([]);
  });

  it("every docs/ page and section cited exists", () => {
    const anchors = new Map<string, Set<string>>();
    const broken = lines.flatMap((l) =>
      [...l.text.matchAll(/(?<![\w./-])(docs\/[\w./-]+\.md)(?:#([\w-]+))?/g)]
        .filter(([, doc = "", anchor]) => {
          // A bare path in a string is data (a fixture's file name); in a comment or a test name it is a citation.
          if (anchor === undefined && !/(^|\s)\/\/ |^\s*\/?\*|describe\(|it\(/.test(l.text)) return false;
          if (!existsSync(join(ROOT, doc))) return true;
          if (anchor === undefined) return false;
          let known = anchors.get(doc);
          if (known === undefined) {
            known = anchorsOf(doc);
            anchors.set(doc, known);
          }
          return !known.has(anchor);
        })
        .map(([cited]) => `${where(l)}  [${cited}]`),
    );
    expect(broken, `no such docs/ page or section:\n${broken.join("\n")}`).toEqual([]);
  });

  it("every section link between docs/ pages resolves", () => {
    const broken = lines
      .filter((l) => l.file.startsWith("docs/") || l.file === "README.md")
      .flatMap((l) =>
        [...l.text.matchAll(/\]\(([\w./-]+\.md)#([\w-]+)\)/g)]
          .filter(([, target = "", anchor = ""]) => {
            const doc = relative(ROOT, join(ROOT, dirname(l.file), target));
            return !existsSync(join(ROOT, doc)) || !anchorsOf(doc).has(anchor);
          })
          .map(([link]) => `${where(l)}  [${link}]`),
      );
    expect(broken, `no such page or section:\n${broken.join("\n")}`).toEqual([]);
  });
});
