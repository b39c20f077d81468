#!/usr/bin/env bash
# Installs the external programs the tests check our outputs with:
#   - pprof (google/pprof), built from Debian's golang packages into ./.tools/pprof
#   - chromium (Debian's package), the headless browser the HTML report tests drive
#   - Graphviz's `dot` (Debian package graphviz), which tfprof_lite.xla renders HLO dumps with
#   - speedscope 1.25.0 (npm package; npm from Debian's package if missing), the offline
#     trace viewer the merged cluster trace is opened in, into ./.tools/speedscope
#     (another folder: TFPROF_SPEEDSCOPE_DIR=DIR, which the tests read too)
# Usage: scripts/install-tools.sh       all four (`make tools`, `make test`)
#        scripts/install-tools.sh dot   Graphviz only (`make run`: the quickstart draws
#                                       an XLA graph with it, or writes DOT text without)
# Idempotent; needs apt-get, i.e. root on Debian.
# Outside CI a failure only warns (the tests that need a tool then skip);
# with CI=true it is an error.
set -uo pipefail
cd "$(dirname "$0")/.."

case "${1:-all}" in
  all | dot) ;;
  *)
    echo "usage: $0 [dot]" >&2
    exit 2
    ;;
esac

fail() {
  echo "install-tools: $*" >&2
  if [ "${CI:-}" = "true" ]; then exit 1; fi
  exit 0
}

apt_install() {
  command -v apt-get >/dev/null 2>&1 || fail "apt-get not found; install $* by hand"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || fail "apt-get update failed"
  apt-get install -y -qq "$@" >/dev/null 2>&1 || fail "apt-get install $* failed"
}

# Graphviz first and in a subshell, so that outside CI a failure here (which only
# warns) does not stop the pprof build below.
(
  if ! command -v dot >/dev/null 2>&1; then
    dpkg -s graphviz >/dev/null 2>&1 || apt_install graphviz
    command -v dot >/dev/null 2>&1 || fail "graphviz is installed but dot is not on PATH"
  fi
  echo "install-tools: dot ready ($(dot -V 2>&1))"
) || exit 1
if [ "${1:-all}" = "dot" ]; then
  exit 0
fi

mkdir -p .tools

# speedscope in a subshell as well: its failure outside CI must not stop the others.
SPEEDSCOPE_VERSION=1.25.0
SPEEDSCOPE_DIR="${TFPROF_SPEEDSCOPE_DIR:-.tools/speedscope}"
(
  installed() {
    local manifest="$SPEEDSCOPE_DIR/node_modules/speedscope/package.json"
    [ -f "$SPEEDSCOPE_DIR/node_modules/speedscope/dist/release/index.html" ] \
      && grep -q "\"version\": \"$SPEEDSCOPE_VERSION\"" "$manifest" 2>/dev/null
  }
  if ! installed; then
    command -v npm >/dev/null 2>&1 || apt_install npm
    mkdir -p "$SPEEDSCOPE_DIR" || fail "cannot create $SPEEDSCOPE_DIR"
    npm install --prefix "$SPEEDSCOPE_DIR" --no-save --no-audit --no-fund --ignore-scripts \
      --loglevel=error "speedscope@$SPEEDSCOPE_VERSION" >/dev/null \
      || fail "npm install speedscope@$SPEEDSCOPE_VERSION failed"
    installed || fail "speedscope $SPEEDSCOPE_VERSION is not in $SPEEDSCOPE_DIR after npm install"
  fi
  echo "install-tools: $SPEEDSCOPE_DIR (speedscope $SPEEDSCOPE_VERSION) ready"
) || exit 1

if [ ! -x .tools/pprof ]; then
  dpkg -s golang-go golang-github-google-pprof-dev >/dev/null 2>&1 \
    || apt_install golang-go golang-github-google-pprof-dev
  GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= GOCACHE="${TMPDIR:-/tmp}/pprof-gocache" \
    go build -o .tools/pprof github.com/google/pprof || fail "building pprof failed"
fi
echo "install-tools: .tools/pprof ready"

if ! command -v chromium >/dev/null 2>&1; then
  apt_install chromium
fi
echo "install-tools: chromium ready"
