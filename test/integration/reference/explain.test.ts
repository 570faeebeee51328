/**
 * `kubectl explain` on the installed CRDs prints the schema descriptions the reference page
 * (docs/reference/crds.md) is generated from.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { readCrds } from "../../../codegen/crd-source.js";
import { fieldRows } from "../../../codegen/emit-reference.js";
import { REPO_ROOT } from "../../harness/cluster.js";
import { kubeconfigPath } from "../../harness/context.js";
import { eventuallyPasses } from "../../harness/eventually.js";

const run = promisify(execFile);

describe("kubectl explain", () => {
  it.each([
    ["Agent", "spec.files"],
    ["Agent", "spec.files.headers_secret"],
    ["Station", "spec.maxConcurrentRuns"],
    ["AgentDefinition", "spec.resources.repos.token_secret"],
  ])("%s %s shows the schema description", async (kind, field) => {
    const crds = await readCrds(path.join(REPO_ROOT, "schemas/crds"));
    const crd = crds.find((c) => c.kind === kind);
    const row = fieldRows(crd?.schema ?? {}).find((r) => r.path.replace(/\[\]/g, "") === field);
    expect(row?.description).toBeTruthy();
    // kubectl explain reads the API server's OpenAPI, which publishes a CRD's schema some time
    // after the CRD is Established.
    await eventuallyPasses(`kubectl explain ${kind.toLowerCase()}.${field}`, async () => {
      const { stdout } = await run("kubectl", [
        "--kubeconfig",
        kubeconfigPath(),
        "explain",
        `${kind.toLowerCase()}.${field}`,
      ]);
      // kubectl re-wraps the text; compare word by word.
      const words = (s: string) => s.split(/\s+/).filter(Boolean).join(" ");
      expect(words(stdout)).toContain(words(row?.description ?? ""));
    });
  });
});
