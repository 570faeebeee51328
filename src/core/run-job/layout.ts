/**
 * The names and places every run pod shares (docs/run-pod.md#the-job-and-its-pod-template): its
 * directories, the Secret its keys come from, its labels, the env names the controller owns. Read
 * by the Job builder's parts and by the adapters that find a run's pods or Secret.
 */

export const WORKSPACE_DIR = "/workspace";
export const AGENT_HOME = "/agent";
export const RUN_PATH = "/agent/.local/bin:/agent/.opencode/bin:/usr/local/bin:/usr/bin:/bin";
export const SECRET_NAME = "agent-secrets";
export const REALTIME_PORT = 8090;
export const COURIER_COMMAND = ["/usr/local/bin/ai-agent-courier"];
/** The agent container's first process: runs the supervisor as uid 1000 and records its result. */
export const WITNESS_PATH = "/agent/bin/ai-agent-witness";
/** Where the witness records the result (the `agent-result` volume), writable by root alone. */
export const AGENT_RESULT_DIR = "/run/ai-agent-result";
export const RESULT_VOLUME = "agent-result";
/** Where the courier talks to GitHub unless the controller says otherwise (GITHUB_API_URL / _SERVER_URL). */
export const DEFAULT_GITHUB_API_URL = "https://api.github.com";
export const DEFAULT_GITHUB_SERVER_URL = "https://github.com";

export const LABEL_COMPONENT = "agents.re-cinq.com/component";
export const LABEL_AGENT = "agents.re-cinq.com/agent";
/**
 * On a Job whose run calls its model through the model gateway: the vendor its credential allows.
 * The controller prices such a run from the gateway's meter, not its log (docs/gateway.md#metering).
 */
export const ANNOTATION_MODEL_GATEWAY = "agents.re-cinq.com/model-gateway";
/** On every ModelUsage: the uid of the Agent whose calls it meters (the controller lists by it). */
export const LABEL_AGENT_UID = "agents.re-cinq.com/agent-uid";
export const LABEL_STATION = "agents.re-cinq.com/station";
export const LABEL_EXECUTION = "agents.re-cinq.com/execution";

/** Names the controller owns; a recipe entry with one of these names is dropped. */
export const RESERVED_ENV = new Set([
  "AGENT_SINKS",
  "AGENT_REPOS",
  "AGENT_SKILLS",
  "AGENT_SKILLS_SOURCE",
  "AGENT_CONVERSATION_SOURCE",
  "AGENT_CONVERSATION_ID",
  "AGENT_CONVERSATION_PIN",
  "AGENT_CONVERSATION_AUTH",
  "AGENT_SELECT",
  "AGENT_WATCH",
  "WORKSPACE_DIR",
  "AGENT_PARAMETERS",
  "TARGET_REPO",
  "BRANCH_NAME",
  "AGENT_MODEL",
  "AGENT_NAME",
  "STATION_NAME",
  "TASK_ID",
  "POD_NAME",
  "POD_NAMESPACE",
  "AGENT_DEADLINE_MS",
  "AGENT_DEADLINE_AT",
  "AGENT_TAIL_MS",
  "HOME",
  "PATH",
  "AGENT_FILES",
  "AGENT_EXECUTION",
  "AGENT_RESUME_SESSION",
  "AGENT_RECIPE",
  "AGENT_DISALLOWED_TOOLS",
  "AGENT_REALTIME_TOKEN_SHA256",
  "AGENT_DELIVERY",
  "DELIVERY_TOKEN",
  "AGENT_CLI_VERSION",
  "AGENT_RESULT_DIR",
]);
