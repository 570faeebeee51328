export type { AnyResource, ResourceKind, ValidationIssue, ValidationResult } from "./validate.js";
export {
  firstSchemaIssue,
  formatIssues,
  parseAgent,
  parseAgentDefinition,
  parseStation,
  ResourceValidationError,
  validateAgent,
  validateAgentDefinition,
  validateResource,
  validateStation,
} from "./validate.js";
