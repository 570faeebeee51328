/**
 * What a test's model tells a real CLI to run to probe the network as a prompt-injected agent
 * would (docs/gateway.md#egress): a `CONNECT` to each target through the proxy its container's
 * HTTPS_PROXY names, with the credential in it, printing `PROBE <target> => <status line>`. Written
 * for node (every CLI image has it, curl is not sure to be there) with no single quote, so the
 * shell passes the script whole.
 */
export function egressProbeCommand(targets: readonly string[]): string {
  const script = [
    'const net = require("net");',
    "const u = new URL(process.env.HTTPS_PROXY);",
    'const auth = Buffer.from(decodeURIComponent(u.username) + ":" + decodeURIComponent(u.password)).toString("base64");',
    'const CRLF = "\\r\\n";',
    "const probe = (t) => new Promise((done) => {",
    '  const s = net.connect(Number(u.port), u.hostname, () => s.write("CONNECT " + t + " HTTP/1.1" + CRLF + "Host: " + t + CRLF + "Proxy-Authorization: Basic " + auth + CRLF + CRLF));',
    '  let got = "";',
    '  s.on("data", (c) => { got += c; if (got.includes(CRLF + CRLF)) { done("PROBE " + t + " => " + got.split(CRLF)[0]); s.destroy(); } });',
    '  s.on("error", (e) => done("PROBE " + t + " => " + e.message));',
    "});",
    `(async () => { for (const t of ${JSON.stringify(targets)}) console.log(await probe(t)); })();`,
  ].join(" ");
  return `node -e '${script}'`;
}

/** The marker the probe command ends with: what the model saw holds it once the command ran. */
export const PROBE_DONE = "PROBE-DONE";

/** The probe, then the test's own shell steps, then PROBE_DONE: one Bash tool call's command. */
export function probeThen(targets: readonly string[], ...steps: string[]): string {
  return [egressProbeCommand(targets), ...steps, `echo ${PROBE_DONE}`].join("; ");
}

/** The request body of the model call that carried the command's output back ("" when none did). */
export function probeOutputSeen(journal: readonly { body?: unknown }[]): string {
  return journal.map((c) => JSON.stringify(c.body)).find((b) => b.includes(PROBE_DONE)) ?? "";
}
