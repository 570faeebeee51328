/** Deterministic Kubernetes names for a run's objects (docs/run-pod.md#the-job-and-its-pod-template). */

const MAX_NAME = 63;
const KEEP = 54;

/** Low 32 bits of 64-bit FNV-1a over the UTF-8 bytes, as 8 lowercase hex digits. */
export function fnv1a64Low32Hex(text: string): string {
  let hash = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n;
  for (const byte of Buffer.from(text, "utf8")) {
    hash ^= BigInt(byte);
    hash = (hash * prime) & 0xffffffffffffffffn;
  }
  return (hash & 0xffffffffn).toString(16).padStart(8, "0");
}

/**
 * A name of at most 63 characters: unchanged when short enough, else the first 54 characters
 * without trailing `.`/`-`, then `-` and the hash of the full name.
 */
export function shortenName(full: string): string {
  if (full.length <= MAX_NAME) return full;
  const head = full.slice(0, KEEP).replace(/[.-]+$/, "");
  return `${head}-${fnv1a64Low32Hex(full)}`;
}

/** The label selector of a Job's pods: the Job controller labels each pod `job-name=<Job name>`. */
export function jobPodSelector(jobName: string): string {
  return `job-name=${jobName}`;
}

/** `agent-job-<Agent name>`, shortened. The controller re-derives it when status.jobName is empty. */
export function jobNameFor(agentName: string): string {
  return shortenName(`agent-job-${agentName}`);
}
