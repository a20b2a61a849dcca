#!/usr/bin/env bash
# Makes PostgreSQL's server binaries (initdb, postgres, pg_isready) available for the cluster tests, which start a
# private server per run (test/support/postgres.ts). Nothing is configured system-wide: no service is started and
# no cluster is created; the harness runs `initdb` into the git-ignored folder .tmp/postgres/.
#
#   found     /usr/lib/postgresql/<highest version>/bin, else `initdb` on PATH: nothing to do (a few milliseconds)
#   missing   apt-get install -y postgresql (Debian's package; needs root and the Debian mirror), then found
#
# Prints the bin folder on stdout. The tests run the server as the `postgres` user when they run as root
# (PostgreSQL refuses to run as root); the Debian package creates that user.
#
# Usage: scripts/postgres/install.sh [--check]
#   --check   change nothing; exit 0 when the binaries are found, 1 otherwise
set -euo pipefail

MODE=install
for arg in "$@"; do
  case "$arg" in
    --check) MODE=check ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

log() { printf '[postgres] %s\n' "$*" >&2; }
die() { printf '[postgres] ERROR: %s\n' "$*" >&2; exit 1; }

find_bin() { # prints the folder holding initdb, postgres and pg_isready
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -n1 || true)
  if [ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ] && [ -x "$dir/pg_isready" ]; then
    echo "$dir"
    return 0
  fi
  if command -v initdb > /dev/null && command -v postgres > /dev/null && command -v pg_isready > /dev/null; then
    dirname "$(readlink -f "$(command -v initdb)")"
    return 0
  fi
  return 1
}

if dir=$(find_bin); then
  log "found $("$dir/postgres" --version) in $dir"
  echo "$dir"
  exit 0
fi
[ "$MODE" = check ] && { log "not found (run: bash scripts/postgres/install.sh)"; exit 1; }

command -v apt-get > /dev/null || die "PostgreSQL is missing and this is not a Debian-like system: install its server (initdb, postgres) and put it on PATH"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo > /dev/null || die "PostgreSQL is missing; run as root (or with sudo): apt-get install -y postgresql"
  SUDO="sudo -n"
fi
log "installing Debian's postgresql package (apt-get)"
export DEBIAN_FRONTEND=noninteractive
# the package lists may be empty in a fresh container: update once, only when the package is unknown
if ! apt-cache show postgresql > /dev/null 2>&1; then $SUDO apt-get update -qq; fi
$SUDO apt-get install -y -qq --no-install-recommends postgresql > /dev/null || die "apt-get install postgresql failed"
dir=$(find_bin) || die "postgresql installed but initdb/postgres/pg_isready not found"
id postgres > /dev/null 2>&1 || die "the postgresql package did not create the 'postgres' user"
log "installed $("$dir/postgres" --version) in $dir"
echo "$dir"
