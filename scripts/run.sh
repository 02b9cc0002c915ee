#!/usr/bin/env bash
# Set up (idempotent), build the release console, and run it:
#   scripts/run.sh                      # the demo campaign at http://127.0.0.1:8850
#   scripts/run.sh --root ~/my-campaign # your campaign
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
scripts/setup.sh
cargo leptos build --release -P   # -P: precompressed .br/.gz copies of the bundle
exec target/release/runboard serve "$@"
