/**
 * The release version is written once in src/version.ts; package.json and the manifests in deploy/
 * must agree with it, so the controller image and its default AGENT_IMAGE move together.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { REPO_ROOT } from "../test/deploy/render.js";
import { DEFAULT_AGENT_IMAGE } from "./controller/config.js";
import {
  AGENT_IMAGE,
  AGENT_IMAGE_NAME,
  CONTROLLER_IMAGE,
  CONTROLLER_IMAGE_NAME,
  VERSION,
} from "./version.js";

function readYaml(rel: string): unknown {
  return parse(readFileSync(join(REPO_ROOT, rel), "utf8"));
}

interface Container {
  name: string;
  image: string;
  env?: Array<{ name: string; value?: string }>;
}

function deploymentContainer(rel: string, name: string): Container {
  const docs = parseAllDocuments(readFileSync(join(REPO_ROOT, rel), "utf8")).map((d) => d.toJS());
  const deployment = docs.find((d) => d?.kind === "Deployment");
  const container = (deployment?.spec?.template?.spec?.containers as Container[] | undefined)?.find(
    (c) => c.name === name,
  );
  if (container === undefined) throw new Error(`${rel}: no Deployment container ${name}`);
  return container;
}

describe("release version", () => {
  it("is package.json's version", () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { version: string };
    expect(VERSION).toBe(pkg.version);
  });

  it("tags both images, and the controller's default AGENT_IMAGE is the agent image", () => {
    expect(CONTROLLER_IMAGE).toBe(`ghcr.io/re-cinq/ai-agent-controller:v${VERSION}`);
    expect(AGENT_IMAGE).toBe(`ghcr.io/re-cinq/ai-agent-run-pod:v${VERSION}`);
    expect(DEFAULT_AGENT_IMAGE).toBe(AGENT_IMAGE);
  });

  it("is what the kustomize base deploys: controller image, its tag override and AGENT_IMAGE", () => {
    const controller = deploymentContainer("deploy/base/controller-deployment.yaml", "controller");
    expect(controller.image).toBe(CONTROLLER_IMAGE);
    expect(controller.env?.find((e) => e.name === "AGENT_IMAGE")?.value).toBe(AGENT_IMAGE);
    const kustomization = readYaml("deploy/kustomization.yaml") as {
      images?: Array<{ name: string; newTag?: string; newName?: string }>;
    };
    for (const image of kustomization.images ?? []) {
      expect(
        [CONTROLLER_IMAGE_NAME, AGENT_IMAGE_NAME],
        `deploy/kustomization.yaml images: ${image.name}`,
      ).toContain(image.name);
      expect(image.newName, `${image.name} is not renamed`).toBeUndefined();
      expect(image.newTag, `${image.name} newTag`).toBe(`v${VERSION}`);
    }
  });
});
