/**
 * This release's version (package.json "version") and the two images tagged with it: the
 * controller (the Dockerfile's default target) and AGENT_IMAGE (`docker build --target agent`).
 * Kept in one place so the controller's default AGENT_IMAGE is always the agent image of its own
 * release; src/version.test.ts checks it against package.json and the manifests in deploy/.
 *
 * A literal rather than a read of package.json: the run-pod executable and the compiled controller
 * carry no package.json to read.
 */
export const VERSION = "0.1.0";

const REGISTRY = "ghcr.io/re-cinq";
export const CONTROLLER_IMAGE_NAME = `${REGISTRY}/ai-agent-controller`;
/** Not upstream's ai-agent-init: this project's init/supervisor/courier executable (docs/decisions.md D-25). */
export const AGENT_IMAGE_NAME = `${REGISTRY}/ai-agent-run-pod`;

export const CONTROLLER_IMAGE = `${CONTROLLER_IMAGE_NAME}:v${VERSION}`;
export const AGENT_IMAGE = `${AGENT_IMAGE_NAME}:v${VERSION}`;
