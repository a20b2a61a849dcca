#!/usr/bin/env bash
# The package as npm would publish it, checked as a user meets it: packed (npm pack builds dist/),
# linted by publint and @arethetypeswrong/cli, installed into empty projects (BigQuery only,
# Bigtable only, both, CommonJS, TypeScript) whose sizes are measured, and the quick starts run
# from them against the emulators (scripts/package/consumers.ts).
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d "${TMPDIR:-/tmp}/effect-gcp-sinks-package-XXXXXX")
trap 'rm -rf "$work"' EXIT
npm pack --pack-destination "$work" > "$work/pack.log"
tarball=$(ls "$work"/effect-gcp-sinks-*.tgz)
echo "packed $(basename "$tarball") ($(du -k "$tarball" | cut -f1) kB)"
npx publint run "$tarball" --strict
# ESM only by design: a CommonJS caller uses require(esm) (Node 22.12+), which the esm-only profile allows
npx attw "$tarball" --profile esm-only --format table-flipped
node scripts/package/consumers.ts "$tarball" "$work"
