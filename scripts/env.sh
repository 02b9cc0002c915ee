# Sourced by the scripts: puts the tools setup.sh installs on PATH.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# CI may start us with a bare environment: find HOME (for ~/.cargo) ourselves.
HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
export HOME
export PATH="$ROOT/.tools/binaryen/node_modules/.bin:$HOME/.cargo/bin:$PATH"
