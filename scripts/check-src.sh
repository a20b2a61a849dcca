#!/usr/bin/env bash
# Checks oxlint cannot express: no Promise-style code and no type-checker escapes in src/
# (STYLE.md sections 10 and 12). Promises belong only at the driver edge, inside Effect.tryPromise.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
if grep -rnE "\basync\b|\bawait\b|\.then\(|new Promise\b|Effect\.run(Promise|Sync|Fork)\b" src; then
  echo "src/ must not use async/await/.then/new Promise/Effect.run*: wrap driver promises in Effect.tryPromise" >&2
  status=1
fi
if grep -rnE "as any\b|: any\b|<any>|@ts-ignore|@ts-expect-error|as never\b" src; then
  echo "src/ must not escape the type checker" >&2
  status=1
fi
if grep -rnE "\bprocess\.env\b|\bsetTimeout\(|\bDate\.now\(" src; then
  echo "src/ must not read process.env or use timers/Date directly: use Config, Clock and Schedule" >&2
  status=1
fi
exit $status
