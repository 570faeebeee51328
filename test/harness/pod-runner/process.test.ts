import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type ContainerLaunch, containerUser, startContainerProcess } from "./process.js";
import type { PodJson } from "./types.js";

// Mount namespaces need root (as in CI and the dev machines); elsewhere these cases are skipped.
const root = process.getuid?.() === 0;
const dir = mkdtempSync(join(tmpdir(), "pod-runner-process-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function run(launch: ContainerLaunch): Promise<{ code: number | null; out: string }> {
  const child = startContainerProcess(launch);
  let out = "";
  child.stdout?.on("data", (c: Buffer) => {
    out += c.toString();
  });
  child.stderr?.on("data", (c: Buffer) => {
    out += c.toString();
  });
  const code = await new Promise<number | null>((r) => child.on("close", (c) => r(c)));
  return { code, out };
}

describe.skipIf(!root)("a container process", () => {
  it("sees its volumes at the mount paths, read-only where asked, and only its own env", async () => {
    const vol = join(dir, "vol");
    const ro = join(dir, "ro");
    mkdirSync(vol);
    mkdirSync(ro);
    writeFileSync(join(ro, "f"), "from ro\n");
    const target = join(dir, "mnt");
    const targetRo = join(dir, "mnt-ro");
    mkdirSync(target);
    mkdirSync(targetRo);
    const { code, out } = await run({
      argv: [
        "/bin/sh",
        "-c",
        'echo hi > "$1/written"; cat "$2/f"; (echo x > "$2/g") 2>/dev/null || echo ro-refused; pwd',
        "sh",
        target,
        targetRo,
      ],
      env: { ONLY: "this", PATH: "/usr/bin:/bin" },
      workingDir: join(dir, "work/created"),
      mounts: [
        { source: vol, target, readOnly: false },
        { source: ro, target: targetRo, readOnly: true },
      ],
    });
    expect(code).toBe(0);
    expect(readFileSync(join(vol, "written"), "utf8")).toBe("hi\n");
    expect(out).toContain("from ro\nro-refused\n");
    expect(out).toContain(`${join(dir, "work/created")}\n`);
    const env = await run({
      argv: ["/usr/bin/env"],
      // Names that are not shell identifiers pass too (the controller injects e.g. `sink-headers`).
      env: { ONLY: "this", PATH: "/usr/bin:/bin", "sink-headers": "Authorization: x" },
      workingDir: "/",
      mounts: [],
    });
    expect(env.out.split("\n").sort()).toEqual([
      "",
      "ONLY=this",
      "PATH=/usr/bin:/bin",
      "sink-headers=Authorization: x",
    ]);
    // The mounts lived in the container's own namespace only.
    expect(execFileSync("ls", ["-A", target]).toString()).toBe("");
  });

  it("runs as the securityContext's user and group with fsGroup as supplementary group", async () => {
    const pod: PodJson = {
      metadata: { name: "p", namespace: "n", uid: "u" },
      spec: { securityContext: { fsGroup: 1000 }, containers: [] },
    };
    const { user } = containerUser(pod, {
      name: "c",
      securityContext: { runAsUser: 1000, runAsGroup: 1000 },
    });
    const { code, out } = await run({
      argv: ["/usr/bin/id"],
      env: {},
      workingDir: "/",
      mounts: [],
      ...(user ? { user } : {}),
    });
    expect(code).toBe(0);
    expect(out).toMatch(/^uid=1000\(\S*\) gid=1000\(\S*\) groups=1000/);
  });

  it("passes argv through untouched (no shell splicing)", async () => {
    const tricky = `a b; echo injected $(id) "q" '`;
    const { out } = await run({
      argv: ["/usr/bin/printf", "%s|", tricky, "$HOME"],
      env: {},
      workingDir: "/",
      mounts: [],
    });
    expect(out).toBe(`${tricky}|$HOME|`);
  });

  it("exits with the command's code", async () => {
    const script = join(dir, "exit7.sh");
    writeFileSync(script, "#!/bin/sh\nexit 7\n");
    chmodSync(script, 0o755);
    expect((await run({ argv: [script], env: {}, workingDir: "/", mounts: [] })).code).toBe(7);
  });
});

describe("containerUser", () => {
  const pod: PodJson = { metadata: { name: "p", namespace: "n", uid: "u" }, spec: { containers: [] } };
  it("refuses runAsNonRoot without a non-root user, naming the container", () => {
    expect(
      containerUser(pod, { name: "agent", securityContext: { runAsNonRoot: true } }).nonRootViolation,
    ).toMatch(/^container has runAsNonRoot and image will run as root .*container: agent/);
  });
});
