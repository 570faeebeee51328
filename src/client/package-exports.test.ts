// @module-tag slow
/**
 * `ai-agent-subsystem/client` as a TypeScript caller meets it: the package built by
 * tsconfig.build.json (what `npm run build` runs) into a scratch copy of the package, a consumer
 * project that depends on it by name, typechecked by tsc with NodeNext resolution (so the
 * package.json `exports` map and its `types` condition are what resolve the import) and then run
 * by Node (so the `default` condition points at working JavaScript). `@ts-expect-error` lines
 * prove the types are real: were the export untyped (`any`), tsc would report them unused.
 */
import { execFile } from "node:child_process";
import { access, copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TSC = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Asynchronous, and never throws for a non-zero exit: the outcome is what the test checks. */
function run(file: string, args: string[], cwd: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (err as { code?: unknown }).code : 0;
      if (typeof code !== "number") reject(err);
      else resolve({ code, stdout, stderr });
    });
  });
}

const CONSUMER = `import {
  type Agent,
  type AgentInput,
  AgentsClient,
  AgentValidationError,
  exitCodeOf,
  isTerminal,
  PromptApiClient,
  PromptConflictError,
  type PromptReply,
  validateAgent,
} from "ai-agent-subsystem/client";

// Compiled, never called: the client's methods and what they return, as a caller uses them.
export async function useClient(): Promise<number> {
  const agents = await AgentsClient.connect({ namespace: "ai-agents" });
  const run = await agents.create({ metadata: { generateName: "fix-" }, spec: { stationRef: "default" } });
  const name: string | undefined = run.metadata.name;
  const done: Agent = await agents.waitForTerminal(name ?? "", { timeoutMs: 600_000 });
  for await (const event of agents.watch({ name })) {
    const phase: "Pending" | "Running" | "Succeeded" | "Failed" | undefined = event.object.status?.phase;
    if (phase === "Failed") break;
  }
  const api = new PromptApiClient({ baseUrl: "http://localhost:8082", token: "t" });
  try {
    const reply: PromptReply = await api.prompt("ai-agents", name ?? "", "Add a test.");
    return reply.turn;
  } catch (err) {
    if (err instanceof PromptConflictError) return err.status;
  }
  // @ts-expect-error stationRef is a string
  await agents.create({ spec: { stationRef: 42 } });
  // @ts-expect-error parameters is misspelt
  await agents.create({ spec: { stationRef: "default", parametrs: {} } });
  // @ts-expect-error a phase the CRD does not have
  const wrong: NonNullable<Agent["status"]>["phase"] = "Done";
  return exitCodeOf(done) + String(wrong).length;
}

// Run: the JavaScript behind the export works offline.
const good: AgentInput = { metadata: { name: "run-1" }, spec: { stationRef: "writer" } };
const agent: Agent = { apiVersion: "agents.re-cinq.com/v1beta1", kind: "Agent", metadata: good.metadata ?? {}, spec: good.spec };
const bad = validateAgent({ ...agent, spec: { stationRef: "writer", files: [{ path: "a.md" }] } });
console.log(
  JSON.stringify({
    valid: validateAgent(agent).ok,
    badPaths: bad.ok ? [] : bad.issues.map((i) => i.path),
    terminal: isTerminal(agent),
    errorClass: new AgentValidationError("Agent", []).name,
  }),
);
`;

let dir = "";
let consumer = "";

/** tsc's diagnostics as `file(line,col): error …` lines, continuation lines joined on. */
function diagnostics(output: string): string[] {
  const out: string[] = [];
  for (const line of output.split("\n")) {
    if (line.trim() === "") continue;
    if (/^\s/.test(line) && out.length > 0) out[out.length - 1] += `\n${line}`;
    else out.push(line);
  }
  return out;
}

/**
 * What tsc reports about the consumer and the package's own declarations. Left out: problems inside
 * the package's third-party dependencies, which `skipLibCheck: false` also reaches (today
 * @kubernetes/client-node's isomorphic-ws wants @types/ws); they are not ours to fix.
 */
function ourDiagnostics(o: Outcome): string[] {
  return diagnostics(o.stdout + o.stderr).filter((d) => !d.split("(")[0]?.includes("node_modules/"));
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "client-export-"));
  const pkg = path.join(dir, "pkg");
  consumer = path.join(dir, "consumer");
  await mkdir(pkg);
  await copyFile(path.join(ROOT, "package.json"), path.join(pkg, "package.json"));
  // The package's own dependencies (@kubernetes/client-node, undici, ajv …) as an install has them.
  await symlink(path.join(ROOT, "node_modules"), path.join(pkg, "node_modules"));
  const build = await run(
    process.execPath,
    [TSC, "-p", path.join(ROOT, "tsconfig.build.json"), "--outDir", path.join(pkg, "dist")],
    ROOT,
  );
  expect(build, "tsc -p tsconfig.build.json").toMatchObject({ code: 0 });

  await mkdir(path.join(consumer, "node_modules", "@types"), { recursive: true });
  await symlink(pkg, path.join(consumer, "node_modules", "ai-agent-subsystem"));
  await symlink(
    path.join(ROOT, "node_modules", "@types", "node"),
    path.join(consumer, "node_modules", "@types", "node"),
  );
  await writeFile(
    path.join(consumer, "package.json"),
    JSON.stringify({ name: "consumer", private: true, type: "module" }),
  );
  await writeFile(
    path.join(consumer, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        lib: ["ES2023"],
        types: ["node"],
        strict: true,
        // Check the package's .d.ts files too, not only their use.
        skipLibCheck: false,
        outDir: "out",
      },
      files: ["consumer.ts"],
    }),
  );
  await writeFile(path.join(consumer, "consumer.ts"), CONSUMER);
}, 600_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("ai-agent-subsystem/client for a TypeScript consumer", () => {
  it("the build emits the declarations the exports map's types condition names", async () => {
    const pkg = JSON.parse(await readFile(path.join(ROOT, "package.json"), "utf8")) as {
      exports: Record<string, { types: string; default: string }>;
    };
    const entry = pkg.exports["./client"];
    expect(entry).toEqual({ types: "./dist/src/client/index.d.ts", default: "./dist/src/client/index.js" });
    await access(path.join(dir, "pkg", entry?.types ?? ""));
    await access(path.join(dir, "pkg", entry?.default ?? ""));
  });

  it("typechecks against the export with NodeNext resolution, then runs under Node", async () => {
    const tsc = await run(process.execPath, [TSC, "-p", consumer], consumer);
    expect(ourDiagnostics(tsc)).toEqual([]);
    const node = await run(process.execPath, [path.join(consumer, "out", "consumer.js")], consumer);
    expect(node.stderr).toBe("");
    expect(JSON.parse(node.stdout)).toEqual({
      valid: true,
      badPaths: ["spec.files[0].url"],
      terminal: false,
      errorClass: "AgentValidationError",
    });
  });

  it("typechecks with Bundler resolution (bundlers read the same types condition)", async () => {
    const tsc = await run(
      process.execPath,
      [TSC, "-p", consumer, "--noEmit", "--module", "ESNext", "--moduleResolution", "Bundler"],
      consumer,
    );
    expect(ourDiagnostics(tsc)).toEqual([]);
  });

  it("a consumer that misuses a type does not compile, and tsc says what is wrong where", async () => {
    await writeFile(
      path.join(consumer, "misuse.ts"),
      `import type { AgentInput } from "ai-agent-subsystem/client";\nexport const input: AgentInput = { spec: { stationRef: 42 } };\n`,
    );
    const tsc = await run(
      process.execPath,
      [
        TSC,
        "--noEmit",
        "--strict",
        "--module",
        "NodeNext",
        "--moduleResolution",
        "NodeNext",
        "--types",
        "node",
        "--skipLibCheck",
        "misuse.ts",
      ],
      consumer,
    );
    expect(tsc.code).not.toBe(0);
    expect(ourDiagnostics(tsc)).toEqual([
      "misuse.ts(2,44): error TS2322: Type 'number' is not assignable to type 'string'.",
    ]);
  });
});
