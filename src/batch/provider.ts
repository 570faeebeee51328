/**
 * The batch provider port lives in the core (src/core/batch-port.ts): the core names the batch
 * providers and their results, and the core sits below this adapter layer
 * (docs/architecture.md#import-directions). Re-exported here for the vendor adapters beside it.
 */
export * from "../core/batch-port.js";
