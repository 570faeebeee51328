import { ApiextensionsV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { createTestNamespace, installedCrds, kubeConfig } from "../../harness/context.js";
import { projectCrdFiles } from "../../harness/global-setup.js";

const GROUP = "agents.re-cinq.com";
const VERSION = "v1beta1";

// Active as soon as deploy/crds/*.yaml exist (another part of the project generates them).
describe.skipIf(projectCrdFiles().length === 0)("project CRDs on the real API server", () => {
  let ns: string;
  beforeAll(async () => {
    ns = await createTestNamespace("harness-crds");
  });

  it.each([
    [
      "agents",
      ["agt"],
      ["Phase", "Station", "Job", "Age", "Exit", "PR", "Cost", "Tokens", "Reason", "Message"],
    ],
    ["stations", ["stn"], ["Recipe", "Deadline", "Max", "Age"]],
    ["agentdefinitions", ["agentdef", "ad"], ["Model", "Execution", "Age"]],
  ])("%s is Established with short names %j and printer columns %j", async (plural, shortNames, columns) => {
    const name = `${plural}.${GROUP}`;
    expect(installedCrds()).toContain(name);
    const crd = await kubeConfig().makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name });
    expect(crd.status?.conditions?.find((c) => c.type === "Established")?.status).toBe("True");
    expect([...(crd.spec.names.shortNames ?? [])].sort()).toEqual([...shortNames].sort());
    const version = crd.spec.versions.find((v) => v.name === VERSION);
    expect(version?.served).toBe(true);
    expect(version?.additionalPrinterColumns?.map((c) => c.name)).toEqual(columns);
  });

  async function createAgent(spec: Record<string, unknown>): Promise<string> {
    try {
      await kubeConfig()
        .makeApiClient(CustomObjectsApi)
        .createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: "agents",
          body: {
            apiVersion: `${GROUP}/${VERSION}`,
            kind: "Agent",
            metadata: { generateName: "bad-" },
            spec,
          },
        });
      return "accepted";
    } catch (err) {
      return String((err as { body?: unknown }).body ?? (err as Error).message);
    }
  }

  it("rejects an Agent without spec.stationRef, naming the field", async () => {
    const answer = await createAgent({});
    expect(answer).toContain("Invalid");
    expect(answer).toContain("spec.stationRef");
  });

  it("rejects an Agent whose files[].url is not http(s), naming the field", async () => {
    const answer = await createAgent({
      stationRef: "default",
      files: [{ path: "a.txt", url: "ftp://example.invalid/a.txt" }],
    });
    expect(answer).toContain("Invalid");
    expect(answer).toMatch(/spec\.files\[0\]\.url/);
  });

  it.each([
    [
      "a trailing /",
      [{ path: "notes/", url: "https://f.example.invalid/n" }],
      "a file path must end in a file name",
    ],
    [
      "two entries with one path",
      [
        { path: "a.txt", url: "https://f.example.invalid/1" },
        { path: "a.txt", url: "https://f.example.invalid/2" },
      ],
      "Duplicate value",
    ],
  ])("rejects an Agent whose files have %s", async (_name, files, message) => {
    const answer = await createAgent({ stationRef: "default", files });
    expect(answer).toContain("Invalid");
    expect(answer).toContain(message);
  });

  it("accepts files inside a clone, next to its .git and inside it", async () => {
    const files = [
      { path: "app/.github/workflows/x.yml", url: "https://f.example.invalid/x" },
      { path: "app/.git/hooks/pre-push", url: "https://f.example.invalid/h" },
      { path: "app/.GIT/config", url: "https://f.example.invalid/c" },
    ];
    expect(await createAgent({ stationRef: "default", files })).toBe("accepted");
  });

  it.each(["fix/#128", "feat/a+b", "fix/issue-128"])(
    "accepts an Agent whose spec.branch is %s (any name git accepts)",
    async (branch) => {
      expect(await createAgent({ stationRef: "default", branch })).toBe("accepted");
    },
  );

  /** Creates a Station with these spec fields beside the required ones; "accepted" or the API server's answer. */
  async function createStation(fields: Record<string, unknown>): Promise<string> {
    try {
      await kubeConfig()
        .makeApiClient(CustomObjectsApi)
        .createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: "stations",
          body: {
            apiVersion: `${GROUP}/${VERSION}`,
            kind: "Station",
            metadata: { generateName: "station-" },
            spec: { agentDefRef: "def", template: { spec: { containers: [{ name: "agent" }] } }, ...fields },
          },
        });
      return "accepted";
    } catch (err) {
      return String((err as { body?: unknown }).body ?? (err as Error).message);
    }
  }

  it.each([
    ["a negative limit", { limitUSD: -1, window: "24h" }, "spec.budget.limitUSD"],
    ["a non-numeric limit", { limitUSD: "ten", window: "24h" }, "spec.budget.limitUSD"],
    ["an unknown window", { limitUSD: 10, window: "1w" }, "spec.budget.window"],
    ["a window without a unit", { limitUSD: 10, window: "24" }, "spec.budget.window"],
    ["a budget without its window", { limitUSD: 10 }, "spec.budget.window"],
  ])("rejects a Station budget with %s, naming the field", async (_what, budget, field) => {
    const answer = await createStation({ budget });
    expect(answer).toContain("Invalid");
    expect(answer).toContain(field);
  });

  it.each([
    { limitUSD: 25.5, window: "30d" },
    { limitUSD: 0, window: "90m" },
  ])("accepts the Station budget %j", async (budget) => {
    expect(await createStation({ budget })).toBe("accepted");
  });

  it.each([
    ["a URL", ["pypi.org", "https://pypi.org"], "spec.egress.allowHosts[1]"],
    ["port 0", ["pypi.org:0"], "spec.egress.allowHosts[0]"],
    ["a bare wildcard", ["*"], "spec.egress.allowHosts[0]"],
    ["65 entries", Array.from({ length: 65 }, (_, i) => `h${i}.example.com`), "spec.egress.allowHosts"],
  ])(
    "rejects a Station egress allowHosts with %s, naming the field (docs/gateway.md#egress)",
    async (_what, allowHosts, field) => {
      const answer = await createStation({ egress: { allowHosts } });
      expect(answer).toContain("Invalid");
      expect(answer).toContain(field);
    },
  );

  it("accepts Station egress allowHosts of every kind (docs/gateway.md#egress)", async () => {
    const allowHosts = [
      "pypi.org",
      "*.pythonhosted.org",
      "registry.example.com:8443",
      "10.0.0.5:5432",
      "[2001:db8::1]:22",
    ];
    expect(await createStation({ egress: { allowHosts } })).toBe("accepted");
  });

  it("accepts a valid Agent", async () => {
    expect(await createAgent({ stationRef: "default" })).toBe("accepted");
  });
});
