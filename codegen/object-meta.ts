/**
 * A loose ObjectMeta for the whole-object types. The API server owns metadata validation, so
 * this lists the fields our code reads and lets everything else through.
 */
import type { JsonSchema } from "./crd-source.js";

const stringMap: JsonSchema = { type: "object", additionalProperties: { type: "string" } };

export const objectMetaSchema: JsonSchema = {
  title: "ObjectMeta",
  description: "Standard Kubernetes object metadata (the fields this project reads; others are kept).",
  type: "object",
  additionalProperties: true,
  properties: {
    name: { type: "string", description: "Object name, unique in the namespace." },
    generateName: { type: "string", description: "Prefix the server uses to generate a name." },
    namespace: { type: "string", description: "Namespace the object lives in." },
    uid: { type: "string", description: "Server-assigned unique id." },
    resourceVersion: { type: "string", description: "Opaque version for optimistic concurrency." },
    generation: { type: "integer", description: "Sequence number of spec changes." },
    creationTimestamp: { type: "string", description: "RFC 3339 creation time." },
    deletionTimestamp: { type: "string", description: "RFC 3339 time a delete was requested." },
    finalizers: { type: "array", items: { type: "string" }, description: "Finalizers blocking deletion." },
    labels: { ...stringMap, description: "Labels." },
    annotations: { ...stringMap, description: "Annotations." },
    ownerReferences: {
      type: "array",
      description: "Objects this one depends on.",
      items: {
        title: "OwnerReference",
        type: "object",
        additionalProperties: true,
        required: ["apiVersion", "kind", "name", "uid"],
        properties: {
          apiVersion: { type: "string" },
          kind: { type: "string" },
          name: { type: "string" },
          uid: { type: "string" },
          controller: { type: "boolean" },
          blockOwnerDeletion: { type: "boolean" },
        },
      },
    },
  },
};
