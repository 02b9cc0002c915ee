#!/usr/bin/env bash
# Builds the release site: the one build definition. scripts/run.sh serves
# what this builds, and scripts/test.sh builds it the same way for the
# end-to-end suite, so what is tested is what is served.
#
#   scripts/build-site.sh     # -> target/release/runboard and target/site/
#
# These are the steps cargo-leptos 0.3.10 takes for `cargo leptos build
# --release -P` with the settings in Cargo.toml's [[workspace.metadata.leptos]]
# (kept, so `cargo leptos watch` still works for whoever has it), done here
# directly so a fresh machine needs no cargo-leptos (an 11-minute build of its
# own): the front end to wasm32 in its own target folder, wasm-bindgen
# (--target=web), the module renamed to what Leptos's hydration script asks
# for (runboard.wasm), wasm-opt -Oz, the style and the public assets copied,
# and .br/.gz copies of each file beside it (served by Accept-Encoding). What
# it leaves out: cargo-leptos's JS and CSS minification (26 KB of JS glue and
# 16 KB of CSS, 10 KB brotli together) — compression does most of that.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$ROOT"
SITE=target/site
PKG=$SITE/pkg
NAME=runboard

# The server's release build starts beside the front end's: the front's tail
# (LTO in one codegen unit, wasm-bindgen, wasm-opt) keeps one core busy.
cargo build --package=server --bin=runboard --no-default-features --features=ssr --release &
SERVER_BUILD=$!
trap 'kill "$SERVER_BUILD" 2>/dev/null || true' EXIT

cargo build --package=frontend --lib --target-dir=target/front --target=wasm32-unknown-unknown \
  --no-default-features --features=hydrate --profile=wasm-release
mkdir -p "$PKG"
rm -f "$PKG"/*
wasm-bindgen --target=web --no-typescript --out-name="$NAME" --out-dir="$PKG" \
  target/front/wasm32-unknown-unknown/wasm-release/frontend.wasm
mv "$PKG/${NAME}_bg.wasm" "$PKG/$NAME.wasm"
wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int "$PKG/$NAME.wasm" -o "$PKG/$NAME.wasm"
cp style/main.css "$PKG/$NAME.css"
cp -R public/. "$SITE/"
node scripts/precompress.mjs "$SITE"

wait "$SERVER_BUILD"
trap - EXIT
echo "site built: $SITE ($(du -sh "$PKG/$NAME.wasm" | cut -f1) wasm, $(du -sh "$PKG/$NAME.wasm.br" | cut -f1) brotli); server: target/release/runboard"
