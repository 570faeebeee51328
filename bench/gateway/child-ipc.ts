/**
 * The child side of the bench's IPC (children.ts is the parent's): say ready with the port the
 * child serves, answer the parent's questions by name (and `cpuSeconds`, its own CPU time), and
 * stop on SIGTERM or when the parent goes.
 */
export function serveParent(
  ready: Record<string, unknown>,
  answers: Record<string, () => unknown | Promise<unknown>>,
  stop: () => Promise<void>,
): void {
  const send = process.send?.bind(process);
  if (!send) throw new Error("a bench child runs under the bench (an IPC channel), not on its own");
  const builtIn: Record<string, () => unknown> = {
    // The child's own CPU time (µs resolution), for the parent's requests-per-core figure.
    cpuSeconds: () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1e6;
    },
  };
  process.on("message", async (m: { id: number; ask: string }) => {
    const answer = answers[m.ask] ?? builtIn[m.ask];
    try {
      if (!answer) throw new Error(`no answer for ${m.ask}`);
      send({ id: m.id, value: await answer() });
    } catch (err) {
      send({ id: m.id, error: String((err as Error)?.stack ?? err) });
    }
  });
  const end = () =>
    void stop()
      .catch(() => undefined)
      .finally(() => process.exit(0));
  process.once("SIGTERM", end);
  process.once("disconnect", end);
  send({ ready });
}
