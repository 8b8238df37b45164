#!/bin/sh
# The whole containers suite: the CI-sized part that `meson test` runs
# (the case list of tests/containers/test-containers.cpp without [full])
# and the rest (clang++ with its libraries, --read-only, a user namespace
# (injected; its files, chowned to its mapped root, refused by the service),
# a container started again; the text service's side: a container root
# that rewrites a library, the service killed mid-offer, the cache full).
# As root, on a machine where Podman with runc works.
#
#   tests/containers/run.sh [BUILD_DIR] [CATCH2 ARGS...]
#
# A Catch2 test spec after the build dir runs only those cases, e.g.
# tests/containers/run.sh build '[clang]'.  Exit status 77: skipped (the
# reason is printed).
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
[ $# -gt 0 ] && shift
build=$(cd "$build" && pwd)
ninja -C "$build" >/dev/null
export HT_BUILD_ROOT="$build" HT_SOURCE_ROOT="$src"
exec "$build/tests/containers/test-containers" "$@"
