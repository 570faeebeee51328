/** Installable CRD YAML for deploy/crds/, normalised from schemas/crds/. */
import { stringify } from "yaml";
import type { CrdSource } from "./crd-source.js";
import { hashHeader, normaliseText } from "./header.js";

export function emitDeployCrd(crd: CrdSource, sourcePath: string): string {
  const yaml = stringify(crd.manifest, { lineWidth: 0, indent: 2, indentSeq: true, sortMapEntries: false });
  return normaliseText(`${hashHeader(sourcePath)}${yaml}`);
}

export function emitKustomization(fileNames: string[], sourceDir: string): string {
  const resources = [...fileNames].sort();
  const yaml = stringify(
    { apiVersion: "kustomize.config.k8s.io/v1beta1", kind: "Kustomization", resources },
    { indentSeq: true },
  );
  return normaliseText(`${hashHeader(sourceDir)}${yaml}`);
}
