import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 600_000,
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
    ],
  },
});
