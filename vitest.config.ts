import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    sequence: { concurrent: true },
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: "forks",
    env: {
      METADATA_SERVER_DETECTION: "none",
      GOOGLE_CLOUD_DISABLE_DIRECT_PATH: "true"
    }
  }
})
