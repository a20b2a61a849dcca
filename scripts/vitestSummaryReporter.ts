/**
 * Prints one plain closing line, `Tests: N passed, N failed, N skipped`, after vitest's own report,
 * so that CI logs state the outcome in a form any log reader understands.
 */
import type { Reporter, TestModule } from "vitest/node"

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const count = { passed: 0, failed: 0, skipped: 0 }
    for (const testModule of testModules) {
      for (const test of testModule.children.allTests()) {
        const state = test.result().state
        if (state === "passed" || state === "failed" || state === "skipped") count[state]++
      }
      if (testModule.state() === "failed" && !testModule.children.size) count.failed++
    }
    process.stdout.write(`\nTests: ${count.passed} passed, ${count.failed} failed, ${count.skipped} skipped\n`)
  }
}
