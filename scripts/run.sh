#!/usr/bin/env bash
# Set up (idempotent), build the release console, and run it:
#   scripts/run.sh                      # the demo campaign at http://127.0.0.1:8850
#   scripts/run.sh --root ~/my-campaign # your campaign
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
# Only what building and serving need: the tests' browser and daemons are
# installed by scripts/test.sh.
scripts/setup.sh build
scripts/build-site.sh
exec target/release/runboard serve "$@"
