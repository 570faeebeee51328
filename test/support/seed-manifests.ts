/**
 * The YAML manifests the seeds quote (the specification's example files, beside the checkout), extracted so `kubectl agent
 * validate` is tested on every one of them, including those a seed adds later.
 *
 * The seeds are prose with manifests pasted in, unfenced. A manifest starts at a line that begins
 * with a top-level key of a Kubernetes object (`apiVersion:`, `kind:`, `metadata:`, `spec:`) and
 * runs until a blank line that is not followed by an indented line or a `---` (the seeds' manifests
 * hold no blank line of their own today; an indented continuation keeps one that does). A snippet
 * that quotes only part of an object (the Agent CRD seed's `spec:` for spec.files) is completed with the
 * apiVersion and kind the seed documents (its `Kind: X` line) and a name, as a user would.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Where the seeds live in this workspace (next to the checkout); SEEDS_DIR overrides it. */
export const SEEDS_DIR = process.env.SEEDS_DIR || path.resolve(REPO, "../shared/seeds");

/** The committed copies of the seeds' manifests, for a checkout without the seeds (CI). */
export const SEED_FIXTURES_DIR = path.join(REPO, "test/integration/client/fixtures/seeds");

export interface SeedManifest {
  /** `<seed file>:<first line>`, the seed file named as it is on disk. */
  source: string;
  /** The manifest as a user would save it (a completed snippet included). */
  text: string;
}

const START = /^(apiVersion|kind|metadata|spec):/;
const GROUP_VERSION = "agents.re-cinq.com/v1beta1";

/** The kind a seed documents (`Kind: Agent` in its header), for completing snippets. */
function documentedKind(text: string): string | undefined {
  return /\bKind: (Agent|Station|AgentDefinition)\b/.exec(text)?.[1];
}

function completed(block: string, kind: string | undefined, source: string): string {
  const docs = parseAllDocuments(block);
  const first = docs[0]?.toJS() as Record<string, unknown> | null | undefined;
  const whole = first && typeof first === "object" && ("apiVersion" in first || "kind" in first);
  if (whole || kind === undefined) return block;
  const name = source.replace(/\.txt:/, "-").replace(/[^a-z0-9-]/g, "-");
  return `apiVersion: ${GROUP_VERSION}\nkind: ${kind}\nmetadata:\n  name: ${name}\n${block}`;
}

/** Every manifest quoted in one seed's text, in order. */
export function extractSeedManifests(file: string, text: string): SeedManifest[] {
  const lines = text.split("\n");
  const kind = documentedKind(text);
  const out: SeedManifest[] = [];
  let i = 0;
  while (i < lines.length) {
    if (!START.test(lines[i] ?? "")) {
      i++;
      continue;
    }
    const start = i;
    let end = i + 1;
    while (end < lines.length) {
      const line = lines[end] ?? "";
      if (line.trim() !== "") {
        end++;
        continue;
      }
      let next = end + 1;
      while (next < lines.length && (lines[next] ?? "").trim() === "") next++;
      const after = lines[next] ?? "";
      if (next < lines.length && (/^\s/.test(after) || after.startsWith("---"))) {
        end = next;
        continue;
      }
      break;
    }
    const source = `${file}:${start + 1}`;
    const block = `${lines.slice(start, end).join("\n")}\n`;
    out.push({ source, text: completed(block, kind, source) });
    i = end;
  }
  return out;
}

/** Every manifest of every seed in `dir` (sorted by file name); [] when the directory is absent. */
export function seedManifests(dir = SEEDS_DIR): SeedManifest[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".txt"))
    .sort()
    .flatMap((f) => extractSeedManifests(f, readFileSync(path.join(dir, f), "utf8")));
}

/** The file name a manifest is saved under: `<name>.txt:46` → `<name>-46.yaml`. */
export function seedManifestFileName(m: SeedManifest): string {
  return `${m.source.replace(/\.txt:/, "-")}.yaml`;
}
