/**
 * Bounds of the strings a run's own lines put into the Agent's status (docs/run-pod.md#what-the-controller-reads-back):
 * the agent writes its log, so a session id or a pull request URL read from it is checked where it
 * is read. An id outside the bounds is dropped, never shortened: a shortened id cannot be resumed;
 * the read-back says why in failureReason, which the Complete or Failed condition carries. Pure.
 */

/** Longer than any CLI's session id (UUIDs, codex thread ids, opencode's `ses_…`). */
export const MAX_SESSION_ID_CHARS = 128;
/** Letters, digits and `.`, `_`, `:`, `-`, starting with a letter or digit. */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;
/** A pull request URL: http(s), no whitespace or control characters, at most this long. */
export const MAX_PR_URL_CHARS = 2048;
// Visible ASCII after the scheme: no whitespace, no control characters (a URL is percent-encoded).
const PR_URL = /^https?:\/\/[!-~]+$/;

/** Why `id` cannot be the status.sessionId; undefined when it can. */
export function sessionIdProblem(id: string): string | undefined {
  if (id.length > MAX_SESSION_ID_CHARS)
    return `the run's last session event names an id of ${id.length} characters (at most ${MAX_SESSION_ID_CHARS})`;
  if (!SESSION_ID.test(id))
    return "the run's last session event names an id with characters outside letters, digits and . _ : -";
  return undefined;
}

/** Why `url` cannot be the status.prUrl; undefined when it can. */
export function prUrlProblem(url: string): string | undefined {
  if (url.length > MAX_PR_URL_CHARS)
    return `the courier's last delivery event names a URL of ${url.length} characters (at most ${MAX_PR_URL_CHARS})`;
  if (!PR_URL.test(url))
    return "the courier's last delivery event names a URL that is not http(s) or holds characters outside visible ASCII";
  return undefined;
}

/** The failureReason part for a dropped field: `status.sessionId not recorded: <why>`. */
export const droppedFieldNote = (field: "sessionId" | "prUrl", why: string) =>
  `status.${field} not recorded: ${why}`;
