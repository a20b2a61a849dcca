#!/usr/bin/env bash
# Checks oxlint cannot express (STYLE.md sections 10 and 12), on code lines of src/ (comments and
# JSDoc examples are skipped): no Promise-style code, no type-checker escapes, no ambient time or env;
# and that emulator suites run on the live clock.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
code_lines() { grep -rnE "$1" src | grep -vE '^[^:]+:[0-9]+:\s*(\*|//|/\*)' || true; }
check() {
  local found
  found=$(code_lines "$1")
  if [ -n "$found" ]; then
    printf '%s\n' "$found" >&2
    echo "check-src: $2" >&2
    status=1
  fi
}
check '\basync\b|(^|[^.])\bawait\b|\.then\(|new Promise\b|Effect\.run(Promise|Sync|Fork)\b' \
  "src/ must not use async/await/.then/new Promise/Effect.run*: wrap driver promises in Effect.tryPromise"
check 'as any\b|: any\b|<any>|@ts-ignore|@ts-expect-error|as never\b' "src/ must not escape the type checker"
check '\bprocess\.env\b|\bsetTimeout\(|\bsetInterval\(' \
  "src/ must not read process.env or use timers: use Config, Clock and Schedule"
# Date.now neither, but for one reading: a grpc-js deadline is an instant on the clock grpc-js measures it
# against (src/internal/wire/deadline.ts grpcDeadline); any other clock parts from it when the wall clock is
# stepped (a virtual machine restored, a host resumed), and every call then fails at once
found=$(code_lines '\bDate\.now\(' | grep -v '^src/internal/wire/deadline.ts:' || true)
if [ -n "$found" ]; then
  printf '%s\n' "$found" >&2
  echo "check-src: src/ must not use Date.now: use Clock (grpcDeadline is the one reading of grpc-js's clock)" >&2
  status=1
fi
# Emulator suites run on the live clock: under the TestClock of @effect/vitest's layer() the
# library's deadlines and retry backoffs never fire, so a transient emulator error retried hangs
# the test until vitest's timeout, and a deadline under test cannot fail it.
frozen=$(grep -rnE '^\s*layer\(' test/integration | grep -v 'excludeTestServices: true' || true)
if [ -n "$frozen" ]; then
  printf '%s\n' "$frozen" >&2
  echo "check-src: emulator suites (test/integration) must pass layer(..., { excludeTestServices: true })" >&2
  status=1
fi
# @effect/platform-node's index also loads its Redis client (0.6 s of CPU a process start; ADR 0054): the
# examples, the README's quick starts, the scripts and the tests' children import its modules by path
barrel=$(grep -rnE 'from "@effect/platform-node"' README.md examples scripts test bench --include='*.ts' --include='*.md' || true)
if [ -n "$barrel" ]; then
  printf '%s\n' "$barrel" >&2
  echo 'check-src: import @effect/platform-node modules by path ("@effect/platform-node/NodeRuntime"), not its index' >&2
  status=1
fi
exit $status
