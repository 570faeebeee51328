import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 600_000,
    tags: [
      {
        name: "slow",
        description:
          "A unit test file that drives real processes for seconds (git, tsc, the supervisor, CLIs with real waits): " +
          "npm test runs it, npm run verify leaves it out (a file says so with a `// @module-tag slow` first line)",
      },
      {
        name: "isolated",
        description:
          "A unit test file that replaces a module (vi.mock), so it needs a module graph of its own: " +
          "npm run verify runs it apart from the files that share one (`// @module-tag isolated`)",
      },
    ],
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          // Unit tests first; projects with different maxWorkers need distinct groups.
          sequence: { groupOrder: 0 },
          include: [
            "src/**/*.test.ts",
            "codegen/**/*.test.ts",
            "test/harness/**/*.test.ts",
            "test/fakes/**/*.test.ts",
            "test/deploy/**/*.test.ts",
            "test/repo/**/*.test.ts",
            "bench/**/*.test.ts",
          ],
        },
      },
      {
        extends: true,
        test: {
          name: "integration",
          sequence: { groupOrder: 1 },
          include: ["test/integration/**/*.test.ts"],
          // One real control plane per run (etcd, kube-apiserver, KCM, scheduler, kwok); see docs/control-plane.md.
          globalSetup: ["test/harness/global-setup.ts"],
          // The plane, the controller under test and the test files share 2 cores: few files at a time.
          maxWorkers: 2,
          testTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: "own-node",
          // Files that start a plane with a real node of their own (its teardown, the install from
          // deploy/). One real node per machine (docs/real-node.md) and the shared plane above holds
          // it for its whole run, so scripts/test.sh runs this project in a second vitest run, after
          // the first, and one file at a time.
          sequence: { groupOrder: 2 },
          include: ["test/own-node/**/*.test.ts"],
          maxWorkers: 1,
          testTimeout: 600_000,
        },
      },
    ],
  },
});
