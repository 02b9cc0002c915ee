#!/usr/bin/env bash
# Set up (idempotent) and run every test: formatting and lints, the core on
# wasm32, unit + integration tests, and the end-to-end tests in Chromium.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
scripts/setup.sh tests
# Each step says how long the run has taken so far (the CI time is watched).
START=$SECONDS
step() { printf '\n\033[1;34m== %s\033[0m (at %d s)\n' "$*" "$((SECONDS - START))"; }
# The servers tests start keep their own data (the demo, the list cache) in a
# folder of this run, not in the user's.
RUNBOARD_DATA_DIR="$(mktemp -d)"
export RUNBOARD_DATA_DIR
# The real model engine (llama.cpp's server, built from source once per
# machine: about 4 minutes) is set up beside the steps below at the lowest
# priority — it takes the cores they leave idle — and its test runs last.
# In a session of its own (one process group, ended with it on any exit),
# whose scheduling group is niced too: with autogroups (Linux's default)
# a new session would otherwise get half the CPU whatever its nice value.
ENGINE_LOG="$RUNBOARD_DATA_DIR/engine-setup.log"
setsid -w bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true; exec nice -n 19 scripts/setup.sh engine' \
  >"$ENGINE_LOG" 2>&1 &
ENGINE_SETUP=$!
trap 'kill -- "-$ENGINE_SETUP" 2>/dev/null || true; rm -rf "$RUNBOARD_DATA_DIR"' EXIT

step "format"
cargo fmt --all --check
step "lints (native crates; app with ssr)"
cargo clippy -p runboard -p server --all-targets --features server/daemon-tests,server/harness-tests -- -D warnings
step "the core and the front end build for wasm32"
# The front end depends on the core: this also proves the core builds for wasm32.
cargo clippy -p frontend --target wasm32-unknown-unknown -- -D warnings
step "unit and integration tests"
# Never build `app` with both ssr and hydrate: test the native crates only.
# daemon-tests: the backends' suite against real systemd and Slurm, always here;
# harness-tests: real Inspect AI evals as cells (the pinned inspect-ai setup installs).
# The real engine's test waits for its set-up: it runs in the last step.
cargo test -p runboard -p app -p server --features server/daemon-tests,server/harness-tests -- --skip a_real_engine
step "release build of the site"
# The very build scripts/run.sh serves (one build definition).
scripts/build-site.sh
step "records match docs/schemas"
python3 scripts/check-schemas.py target/release/runboard
step "end-to-end (Chromium)"
(cd end2end && node --test tests/)
step "a real model engine through the gateway (llama.cpp's server)"
wait "$ENGINE_SETUP" || { cat "$ENGINE_LOG"; echo "setting up the engine failed" >&2; exit 1; }
cat "$ENGINE_LOG"
cargo test -p runboard -p app -p server --features server/daemon-tests,server/harness-tests --test inspect a_real_engine
step "all tests passed"
