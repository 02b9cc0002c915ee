#!/usr/bin/env bash
# Idempotent set-up of everything runboard needs to build and test on a fresh
# Debian 12 machine with a Rust toolchain (no GitHub access: nothing here downloads
# a prebuilt binary from it). Each step is skipped when already satisfied.
#
#   scripts/setup.sh build    # what building and serving need (scripts/run.sh)
#   scripts/setup.sh          # that, and what the tests need (scripts/test.sh)
#
# Building needs only the wasm32 target, wasm-bindgen-cli at the lock's
# version and wasm-opt from npm's binaryen (scripts/build-site.sh says why no
# cargo-leptos). The tests add Chromium, the launcher backends' daemons,
# Python's jsonschema, a pinned Inspect AI and the end-to-end npm packages.
set -euo pipefail
PART=${1:-all}
case "$PART" in build|all) ;; *) echo "usage: scripts/setup.sh [build]" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TOOLS="$ROOT/.tools"
# Must equal the wasm-bindgen version in Cargo.lock (pinned with `=` in Cargo.toml).
WASM_BINDGEN_VERSION=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')
BINARYEN_VERSION=132.0.0
INSPECT_VERSION=0.3.285
OPENAI_VERSION=3.57.0
ANTHROPIC_VERSION=2.17.0

log() { printf '\033[1;34m[setup]\033[0m %s\n' "$*"; }
# CI may start us with a bare environment.
HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
export HOME
export PATH="$HOME/.cargo/bin:$PATH"

if ! command -v npm >/dev/null; then
  # Node runs the precompression and npm installs wasm-opt (binaryen).
  log "installing Debian nodejs and npm"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

if ! rustup target list --installed | grep -q '^wasm32-unknown-unknown$'; then
  log "adding rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

if ! wasm-bindgen --version 2>/dev/null | grep -q " $WASM_BINDGEN_VERSION\$"; then
  # Without --locked: its own lock pins a crate the registry no longer has.
  log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION"
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
fi

# wasm-opt from npm's binaryen: Debian's v108 produces a wasm that never hydrates.
if [ ! -x "$TOOLS/binaryen/node_modules/.bin/wasm-opt" ]; then
  log "installing binaryen@$BINARYEN_VERSION (wasm-opt) from npm into .tools/"
  mkdir -p "$TOOLS/binaryen"
  (cd "$TOOLS/binaryen" && { [ -f package.json ] || npm init -y >/dev/null; } \
     && npm install --silent --no-audit --no-fund "binaryen@$BINARYEN_VERSION" >/dev/null)
fi

if [ "$PART" = build ]; then
  log "ready to build"
  exit 0
fi

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  log "installing Debian chromium (for end-to-end tests)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
fi

# The launcher backends' tests run real daemons: a systemd user manager (with
# its D-Bus session bus) and single-node Slurm with accounting (slurmdbd on a
# private MariaDB). See scripts/fixtures/ and docs/backends.md.
BACKEND_PACKAGES=""
for pair in systemd:/usr/lib/systemd/systemd dbus-user-session:/usr/lib/systemd/user/dbus.socket \
            slurmctld:/usr/sbin/slurmctld slurmd:/usr/sbin/slurmd slurm-client:/usr/bin/sbatch \
            slurmdbd:/usr/sbin/slurmdbd mariadb-server:/usr/sbin/mariadbd; do
  [ -e "${pair#*:}" ] || BACKEND_PACKAGES="$BACKEND_PACKAGES ${pair%%:*}"
done
if [ -n "$BACKEND_PACKAGES" ]; then
  log "installing the launcher backends' test daemons:$BACKEND_PACKAGES"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  # The packages' own services are not wanted (there is no init to run them).
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $BACKEND_PACKAGES >/dev/null
fi

if ! python3 -c "import jsonschema" 2>/dev/null; then
  log "installing python jsonschema (checks records against docs/schemas)"
  if [ "$(command -v python3)" = /usr/bin/python3 ]; then
    # Debian's own python: its package, not pip (PEP 668).
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-jsonschema >/dev/null
  else
    python3 -m pip install --quiet --disable-pip-version-check jsonschema
  fi
fi

# Inspect AI, pinned, in a private virtual environment: the harness tests run
# real `inspect eval`s as cells (docs/formats.md, "Inspect AI as a cell").
# The anthropic SDK beside it: the gateway tests call through it too.
INSPECT_PINS="inspect-ai==$INSPECT_VERSION openai==$OPENAI_VERSION anthropic==$ANTHROPIC_VERSION"
if ! "$TOOLS/inspect/bin/python" -c "import inspect_ai, anthropic, sys; sys.exit(inspect_ai.__version__ != '$INSPECT_VERSION' or anthropic.__version__ != '$ANTHROPIC_VERSION')" 2>/dev/null; then
  log "installing $INSPECT_PINS into .tools/inspect/"
  if ! python3 -c "import ensurepip, venv" 2>/dev/null; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
  fi
  rm -rf "$TOOLS/inspect"
  python3 -m venv "$TOOLS/inspect"
  "$TOOLS/inspect/bin/pip" install --quiet --disable-pip-version-check $INSPECT_PINS
fi

if [ ! -d end2end/node_modules/playwright-core ]; then
  log "installing end2end npm packages"
  (cd end2end && npm ci --silent --no-audit --no-fund)
fi
log "ready"
