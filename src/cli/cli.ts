/**
 * `kubectl agent`: parses the command line, runs the subcommand and turns every failure into
 * kubectl's shape: a message on stderr and exit code 1 (`run --wait` exits with the Agent's code).
 */

import { AgentValidationError, WaitTimeoutError } from "../client/errors.js";
import { KubeApiError } from "../kube/errors.js";
import { parseCommandLine, usageText } from "./args.js";
import {
  closeCommand,
  logsCommand,
  promptCommand,
  runCommand,
  statusCommand,
  validateCommand,
} from "./commands.js";
import { complete, completionScript, formatCompletion } from "./completion.js";
import { CliError, type CliIo } from "./io.js";

/** What the user reads for an error thrown by a command. */
export function describeFailure(err: unknown): string {
  if (err instanceof CliError) return err.message;
  if (err instanceof AgentValidationError) return `error: ${err.message}`;
  if (err instanceof WaitTimeoutError) return `error: timed out: ${err.message}`;
  if (err instanceof KubeApiError) {
    return err.reason ? `Error from server (${err.reason}): ${err.detail}` : `error: ${err.message}`;
  }
  if ((err as Error)?.name === "AbortError") return "error: interrupted";
  const cause = (err as { cause?: { message?: string } })?.cause?.message;
  return `error: ${(err as Error)?.message ?? String(err)}${cause ? ` (${cause})` : ""}`;
}

export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const parsed = parseCommandLine(argv);
  if (!parsed.ok) {
    io.stderr(
      `error: ${parsed.error}\nSee 'kubectl agent ${parsed.topic ? `${parsed.topic} ` : ""}--help' for usage.\n`,
    );
    return 1;
  }
  const { command, global } = parsed;
  try {
    switch (command.name) {
      case "help":
        io.stdout(usageText(command.topic));
        return 0;
      case "completion":
        io.stdout(completionScript(command.shell));
        return 0;
      case "__complete": {
        const result = await complete(command.words, async (kind) => {
          // Completion must never fail loudly: no cluster, no candidates.
          try {
            const agents = await io.connect(global);
            try {
              if (kind === "agents") return (await agents.list()).map((a) => a.metadata.name ?? "");
              const { items } = await agents.kube.list<{ metadata: { name?: string } }>(
                { group: "agents.re-cinq.com", version: "v1beta1", plural: "stations" },
                agents.namespace,
              );
              return items.map((s) => s.metadata.name ?? "");
            } finally {
              await agents.close();
            }
          } catch {
            return [];
          }
        });
        io.stdout(formatCompletion(result));
        return 0;
      }
      case "run":
        return await runCommand(command, global, io);
      case "logs":
        return await logsCommand(command, global, io);
      case "status":
        return await statusCommand(command, global, io);
      case "prompt":
        return await promptCommand(command, global, io);
      case "close":
        return await closeCommand(command, global, io);
      case "validate":
        return await validateCommand(command, io);
    }
  } catch (err) {
    const text = describeFailure(err);
    io.stderr(`${text.startsWith("error") || text.startsWith("Error") ? text : `error: ${text}`}\n`);
    return err instanceof CliError ? err.exitCode : 1;
  }
}
