#!/usr/bin/env bash
# Set up (idempotent) and run every test: formatting and lints, the core on
# wasm32, unit + integration tests, and the end-to-end tests in Chromium.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
scripts/setup.sh
# Each step says how long the run has taken so far (the CI time is watched).
START=$SECONDS
step() { printf '\n\033[1;34m== %s\033[0m (at %d s)\n' "$*" "$((SECONDS - START))"; }
# The servers tests start keep their own data (the demo, the list cache) in a
# folder of this run, not in the user's.
RUNBOARD_DATA_DIR="$(mktemp -d)"
export RUNBOARD_DATA_DIR
trap 'rm -rf "$RUNBOARD_DATA_DIR"' EXIT

step "format"
cargo fmt --all --check
step "no import cycles between files (core, server, app)"
for crate_src in src server/src app/src; do python3 scripts/import-cycles.py "$crate_src"; done
step "lints (native crates; app with ssr)"
cargo clippy -p runboard -p server --all-targets --features server/daemon-tests,server/harness-tests -- -D warnings
step "the core and the front end build for wasm32"
# The front end depends on the core: this also proves the core builds for wasm32.
cargo clippy -p frontend --target wasm32-unknown-unknown -- -D warnings
step "unit and integration tests"
# Never build `app` with both ssr and hydrate: test the native crates only.
# daemon-tests: the backends' suite against real systemd and Slurm, always here;
# harness-tests: real Inspect AI evals as cells (the pinned inspect-ai setup installs).
# harness-tests also runs an Inspect eval against a real model engine
# (llama.cpp's server, which setup.sh builds once per machine).
cargo test -p runboard -p app -p server --features server/daemon-tests,server/harness-tests
step "release build of the site"
# The very build scripts/run.sh serves (one build definition).
scripts/build-site.sh
step "records match docs/schemas"
python3 scripts/check-schemas.py target/release/runboard
step "end-to-end (Chromium)"
(cd end2end && node --test tests/)
step "all tests passed"
