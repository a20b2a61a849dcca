import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

// Two projects: unit tests need nothing; integration tests share one set of emulators that the
// integration project's globalSetup starts once per run on free loopback ports.
export default defineConfig({
  // the examples import the package by name: resolve it to the sources (package.json's `source` condition)
  resolve: {
    alias: [
      {
        find: /^effect-gcp-sinks\/(BigQuery|Bigtable)$/,
        replacement: fileURLToPath(new URL("./src/$1/index.ts", import.meta.url))
      },
      { find: /^effect-gcp-sinks\/Sink$/, replacement: fileURLToPath(new URL("./src/Sink.ts", import.meta.url)) }
    ]
  },
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
