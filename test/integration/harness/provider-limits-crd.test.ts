/**
 * Station spec.providerLimits on the real API server: a figure that cannot be met (0, negative, not
 * a whole number) is refused by the schema, naming the field (docs/provider-limits.md).
 */
import { CustomObjectsApi } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { createTestNamespace, kubeConfig } from "../../harness/context.js";
import { projectCrdFiles } from "../../harness/global-setup.js";

const GROUP = "agents.re-cinq.com";
const VERSION = "v1beta1";

describe.skipIf(projectCrdFiles().length === 0)("Station providerLimits on the real API server", () => {
  let ns: string;
  beforeAll(async () => {
    ns = await createTestNamespace("crd-provider-limits");
  });

  async function createStation(providerLimits: unknown): Promise<string> {
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
            metadata: { generateName: "limits-" },
            spec: {
              agentDefRef: "def",
              template: { spec: { containers: [{ name: "agent" }] } },
              providerLimits,
            },
          },
        });
      return "accepted";
    } catch (err) {
      return String((err as { body?: unknown }).body ?? (err as Error).message);
    }
  }

  const fields = ["concurrentRuns", "requestsPerMinute", "tokensPerMinute"];
  const bad: [string, unknown, RegExp][] = [
    ["0", 0, /should be greater than or equal to 1/],
    ["a negative figure", -5, /should be greater than or equal to 1/],
    ["text", "ten", /must be of type integer/],
    ["a fraction", 1.5, /must be of type integer/],
  ];
  it.each(fields.flatMap((f) => bad.map(([what, v, why]) => [f, what, v, why] as const)))(
    "refuses providerLimits.%s of %s, naming the field",
    async (field, _what, value, why) => {
      const answer = await createStation({ [field]: value });
      expect(answer).toContain("Invalid");
      expect(answer).toContain(`spec.providerLimits.${field}`);
      expect(answer).toMatch(why);
    },
  );

  it("accepts limits that can be met", async () => {
    expect(
      await createStation({ concurrentRuns: 10, requestsPerMinute: 4000, tokensPerMinute: 10_000_000_000 }),
    ).toBe("accepted");
    expect(await createStation({ concurrentRuns: 1 })).toBe("accepted");
  });
});
