/**
 * Installable CRD YAML for deploy/crds/, normalised from schemas/crds/. The directory holds
 * only CRD manifests so `kubectl apply -f deploy/crds/` works; deploy/kustomization.yaml lists
 * the files by name.
 */
import { stringify } from "yaml";
import type { CrdSource } from "./crd-source.js";
import { hashHeader, normaliseText } from "./header.js";

export function emitDeployCrd(crd: CrdSource, sourcePath: string): string {
  const yaml = stringify(crd.manifest, { lineWidth: 0, indent: 2, indentSeq: true, sortMapEntries: false });
  return normaliseText(`${hashHeader(sourcePath)}${yaml}`);
}
