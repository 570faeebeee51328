import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["src/**/*.test.ts", "codegen/**/*.test.ts", "test/harness/**/*.test.ts"],
          testTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          // One real control plane per run (etcd, kube-apiserver, KCM, scheduler, kwok); see docs/control-plane.md.
          globalSetup: ["test/harness/global-setup.ts"],
          // The plane and the tests share 2 cores: few files at a time.
          maxWorkers: 2,
          testTimeout: 120_000,
          // The first run on a fresh machine compiles the binaries (tens of minutes).
          hookTimeout: 600_000,
        },
      },
    ],
  },
});
