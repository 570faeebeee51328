/**
 * `logs -f` and `run --follow`: until the Agent is terminal, re-read it and its run pod's agent
 * container log every interval and print the new complete lines; phase changes go to stderr.
 * The controller fills status.output only when the run ends, so while it runs the pod log is the
 * only live source. When the run ends, what the pod log did not show (it is gone, or the last
 * lines came after the last read) is taken from status.output, which is that log's tail.
 */
import type { Agent } from "../../generated/crds/agent.js";
import type { AgentsClient } from "../client/agents.js";
import { WaitTimeoutError } from "../client/errors.js";
import { isTerminal, phaseOf, queuePlaceOf, reasonOf } from "../client/terminal.js";
import { CliError, type CliIo } from "./io.js";
import { OutputRenderer, vendorFor } from "./render-output.js";

/** kubectl's line for an Agent that does not exist. */
export function agentNotFound(name: string, namespace: string): CliError {
  return new CliError(
    `Error from server (NotFound): agents.agents.re-cinq.com "${name}" not found in namespace ${namespace}`,
  );
}

/** Prints raw or rendered lines; the renderer is chosen from the first lines seen. */
export class LinePrinter {
  private renderer: OutputRenderer | undefined;
  constructor(
    private readonly io: Pick<CliIo, "stdout">,
    private readonly raw: boolean,
    private readonly model: string | undefined,
  ) {}

  print(lines: readonly string[]): void {
    if (lines.length === 0) return;
    if (this.raw) {
      this.io.stdout(lines.map((l) => `${l}\n`).join(""));
      return;
    }
    this.renderer ??= new OutputRenderer(vendorFor(lines, this.model));
    const out = lines.flatMap((l) => (this.renderer as OutputRenderer).line(l));
    if (out.length > 0) this.io.stdout(out.map((l) => `${l}\n`).join(""));
  }

  end(): void {
    const out = this.renderer?.end() ?? [];
    if (out.length > 0) this.io.stdout(out.map((l) => `${l}\n`).join(""));
  }
}

/** Complete lines of a log (a last line without its newline is still being written). */
function completeLines(text: string): string[] {
  const lines = text.split("\n");
  lines.pop();
  return lines;
}

function phaseNote(agent: Agent): string {
  const phase = phaseOf(agent);
  const place = queuePlaceOf(agent);
  const why = phase === "Pending" || phase === "Failed" ? reasonOf(agent) : "";
  const detail = place ? place.message : why;
  return `Agent ${agent.metadata.name}: ${phase}${detail ? ` (${detail})` : ""}\n`;
}

async function podLogText(agents: AgentsClient, jobName: string): Promise<string | undefined> {
  const [pod] = await agents.runPods(jobName);
  const name = pod?.metadata?.name;
  return name ? agents.podLog(name, "agent") : undefined;
}

export async function followAgent(
  agents: AgentsClient,
  name: string,
  io: CliIo,
  o: { raw: boolean; timeoutMs?: number },
): Promise<Agent> {
  const deadline = o.timeoutMs === undefined ? undefined : io.now() + o.timeoutMs;
  const interval = io.followIntervalMs ?? 2000;
  let printer: LinePrinter | undefined;
  let printed: string[] = [];
  let lastNote = "";
  while (true) {
    const agent = await agents.get(name, io.signal);
    if (!agent && printer === undefined) throw agentNotFound(name, agents.namespace);
    if (!agent) throw new CliError(`Agent ${name} was deleted${lastNote ? ` while ${lastNote.trim()}` : ""}`);
    printer ??= new LinePrinter(io, o.raw, agent.spec?.model);
    const note = phaseNote(agent);
    if (note !== lastNote) io.stderr(note);
    lastNote = note;
    const jobName = agent.status?.jobName;
    if (jobName && phaseOf(agent) === "Running") {
      const text = await podLogText(agents, jobName).catch(() => undefined);
      if (text !== undefined) {
        const lines = completeLines(text);
        printer.print(lines.slice(printed.length));
        if (lines.length > printed.length) printed = lines;
      }
    }
    if (isTerminal(agent)) {
      const output = (agent.status?.output ?? "")
        .split("\n")
        .filter((l, i, all) => l !== "" || i < all.length - 1);
      const last = printed.at(-1);
      const at = last === undefined ? -1 : output.lastIndexOf(last);
      printer.print(last === undefined ? output : output.slice(at + 1));
      printer.end();
      return agent;
    }
    if (deadline !== undefined && io.now() >= deadline) {
      throw new WaitTimeoutError(name, phaseOf(agent), o.timeoutMs);
    }
    await io.sleep(interval, io.signal);
  }
}
