import { describe, expect, it } from "vitest";
import { agentObject, DELETE_CHANCE, drawMix, MIX_PARTS, mixObjects } from "./mix.js";

describe("the soak's mix (docs/soak.md#the-mix)", () => {
  it("the same seed creates the same Agents in the same order; another seed others", () => {
    expect(drawMix(3, 200, MIX_PARTS)).toEqual(drawMix(3, 200, MIX_PARTS));
    expect(drawMix(4, 200, MIX_PARTS)).not.toEqual(drawMix(3, 200, MIX_PARTS));
  });

  it("draws every part offered and only those, some Agents deleted mid-run", () => {
    const mix = drawMix(1, 2000, MIX_PARTS);
    expect(new Set(mix.map((e) => e.part))).toEqual(new Set(MIX_PARTS));
    const deleted = mix.filter((e) => e.deleteAfterMs !== undefined).length;
    expect(deleted).toBeGreaterThan(2000 * DELETE_CHANCE * 0.5);
    expect(deleted).toBeLessThan(2000 * DELETE_CHANCE * 1.5);
    expect(new Set(drawMix(1, 500, ["exec"]).map((e) => e.part))).toEqual(new Set(["exec"]));
    expect(new Set(mix.map((e) => e.name)).size).toBe(2000);
  });

  it("refuses an empty mix, naming the field", () => {
    expect(() => drawMix(1, 10, [])).toThrow("mix: parts must name at least one");
  });

  it("has an AgentDefinition and a Station per part, each Agent names its part's Station", () => {
    const objects = mixObjects("ns", MIX_PARTS, {
      agentImage: "a",
      fakeCliImage: "f",
      execImage: "e",
      realNode: true,
    }) as {
      kind: string;
      metadata: { name: string };
      spec: Record<string, unknown>;
    }[];
    for (const part of MIX_PARTS) {
      expect(objects.filter((o) => o.metadata.name === part).map((o) => o.kind)).toEqual([
        "AgentDefinition",
        "Station",
      ]);
    }
    const forbid = objects.find((o) => o.kind === "Station" && o.metadata.name === "cli-forbid");
    expect(forbid?.spec.concurrencyPolicy).toBe("Forbid");
    const exec = objects.find((o) => o.kind === "Station" && o.metadata.name === "exec");
    expect(exec?.spec.template).toMatchObject({
      spec: { nodeSelector: { "harness.test.example/real-node": "true" } },
    });
    const elsewhere = mixObjects("ns", ["exec"], {
      agentImage: "a",
      fakeCliImage: "f",
      execImage: "e",
      realNode: false,
    });
    expect(JSON.stringify(elsewhere)).not.toContain("real-node");
    const e = drawMix(1, 1, ["kwok-ok"])[0];
    if (!e) throw new Error("no entry");
    expect(agentObject("ns", e)).toMatchObject({ spec: { stationRef: "kwok-ok" } });
  });
});
