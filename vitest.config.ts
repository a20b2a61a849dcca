import { defineConfig } from "vitest/config"

// Two projects: unit tests need nothing; integration tests share one set of emulators that the
// integration project's globalSetup starts once per run on free loopback ports.
export default defineConfig({
  test: {
    sequence: { concurrent: true },
    reporters: ["default", "./scripts/vitestSummaryReporter.ts"],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    env: {
      METADATA_SERVER_DETECTION: "none",
      GOOGLE_CLOUD_DISABLE_DIRECT_PATH: "true"
    },
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/**/*.test.ts"],
          exclude: ["test/integration/**"]
        }
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          globalSetup: ["test/support/globalSetup.ts"]
        }
      }
    ]
  }
})
