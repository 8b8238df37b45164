#!/bin/bash
# The hugetext benchmark: builds what it needs, measures everything side by
# side on this machine, and writes docs/benchmarks.md and docs/plots/*.png.
#
#   bench/run.sh                 the full run (13-20 minutes on the 2-core VM,
#                                and about 4 more for measure)
#   bench/run.sh --quick         fewer rounds and smaller inputs (a few minutes)
#   bench/run.sh --only LIST     only some steps, merged into the last results:
#                                remap, startup, itlb, memory, real,
#                                small (programs with nothing to move),
#                                clang (clang 14 compiling LLVM's headers),
#                                measure (hugetext measure on node -e and on
#                                that compile),
#                                servers (PostgreSQL, MariaDB, a Node HTTP
#                                server under pgbench, sysbench and wrk; only
#                                with --only: about 35 minutes, 6 with --quick)
#                                containers (node under wrk and PostgreSQL
#                                under pgbench -S in Podman containers,
#                                plain against annotated for the OCI hook;
#                                four node containers' memory; /bin/true,
#                                ls, git in a container against an empty
#                                preload; Podman and runc from Debian, the
#                                engine set up by the bench, nothing
#                                pulled; only with --only: about 12
#                                minutes, 4 with --quick)
#   bench/run.sh --report-only   redo the report from the last results
#                                (BUILD's, else docs/benchmarks.json, which
#                                every full or --only run leaves)
#
# Run it from the repository root, as root (it sizes the hugetlb pool and
# mounts hugetlbfs; both are put back on exit).  Build directory:
# build-bench (BENCH_BUILD=DIR to change it).  Results: BUILD/bench/results.json.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BENCH_BUILD:-build-bench}
RESULTS=$BUILD/bench/results.json
MODE=()
ONLY=""
REPORT_ONLY=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) MODE=(--quick) ;;
	--only) ONLY=$2; shift ;;
	--report-only) REPORT_ONLY=1 ;;
	-h|--help) sed -n '2,33p' "$0"; exit 0 ;;
	*) echo "unknown argument: $1" >&2; exit 2 ;;
	esac
	shift
done

say() { printf '\n== %s\n' "$*"; }

if [ $REPORT_ONLY = 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "bench/run.sh must run as root (hugetlb pool, hugetlbfs mounts)" >&2
		exit 1
	fi

	say "packages"
	pkgs=(meson ninja-build pkg-config gcc g++ libelf-dev libjson-c-dev python3 python3-matplotlib
	      libhugetlbfs-bin libhugetlbfs-dev binutils git clang-14 llvm-14-dev)
	command -v node >/dev/null || pkgs+=(nodejs)
	command -v rustc >/dev/null || pkgs+=(rustc)
	command -v perf >/dev/null || pkgs+=(linux-perf)
	case ",$ONLY," in
	*,servers,*) pkgs+=(postgresql mariadb-server sysbench wrk) ;;
	esac
	case ",$ONLY," in
	*,containers,*) pkgs+=(podman runc postgresql wrk) ;;
	esac
	missing=()
	for p in "${pkgs[@]}"; do
		# dpkg-query, not dpkg -s: that fails when two architectures are installed.
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q ' installed$' || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "installing: ${missing[*]}"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
	else
		echo "all there"
	fi

	say "build ($BUILD)"
	bench/build.sh "$BUILD"

	say "explicit page pool and hugetlbfs mounts"
	POOL_FILE=/proc/sys/vm/nr_hugepages
	OLD_POOL=$(cat $POOL_FILE)
	SHARE_DIR=$(mktemp -d /tmp/hugetext-bench-share.XXXXXX)
	HTLB_DIR=$(mktemp -d /tmp/hugetext-bench-htlb.XXXXXX)
	TEXT_DIR=$(mktemp -d /tmp/hugetext-bench-text.XXXXXX)
	cleanup() {
		for d in "$SHARE_DIR" "$HTLB_DIR" "$TEXT_DIR"; do
			mountpoint -q "$d" && umount "$d"
			rmdir "$d" 2>/dev/null || true
		done
		echo "$OLD_POOL" >$POOL_FILE || true
		echo "restored vm.nr_hugepages=$(cat $POOL_FILE), unmounted hugetlbfs and tmpfs"
	}
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	echo 600 >$POOL_FILE || true
	echo "vm.nr_hugepages: $OLD_POOL -> $(cat $POOL_FILE) (restored on exit)"
	share_arg=() htlb_arg=()
	if mount -t hugetlbfs -o pagesize=2M none "$SHARE_DIR" 2>/dev/null; then
		share_arg=(--share-dir "$SHARE_DIR")
	fi
	if mount -t hugetlbfs -o pagesize=2M none "$HTLB_DIR" 2>/dev/null; then
		htlb_arg=(--htlb-dir "$HTLB_DIR")
	fi
	# The shared cache without a reserved pool, as hugetext setup mounts it.
	text_arg=()
	if mount -t tmpfs -o huge=within_size,size=2G,mode=0700 none "$TEXT_DIR" 2>/dev/null; then
		text_arg=(--text-cache-dir "$TEXT_DIR")
	fi

	say "measure"
	# --only merges into the last results, and a full run keeps their servers
	# section: on a fresh build dir, the committed ones.
	if [ ! -f "$RESULTS" ] && [ -f docs/benchmarks.json ]; then
		mkdir -p "$(dirname "$RESULTS")"
		cp docs/benchmarks.json "$RESULTS"
	fi
	# A mount namespace of its own: the zero-configuration rows run the text
	# service with /run/hugetext on a tmpfs of the bench's (sections/service.py).
	unshare -m --propagation private /usr/bin/python3 bench/measure.py --bin "$BUILD/bench" \
		--preload "$BUILD/lib/libhugetext-preload.so" --out "$RESULTS" \
		${MODE[@]+"${MODE[@]}"} ${ONLY:+--only "$ONLY"} \
		${share_arg[@]+"${share_arg[@]}"} ${htlb_arg[@]+"${htlb_arg[@]}"} \
		${text_arg[@]+"${text_arg[@]}"}

	# Full runs are kept, so that the report can show how figures move between runs.
	if [ ${#MODE[@]} = 0 ] && [ -z "$ONLY" ] && [ -f "$RESULTS" ]; then
		mkdir -p "$BUILD/bench/history"
		cp "$RESULTS" "$BUILD/bench/history/results-$(date -u +%Y%m%dT%H%M%S).json"
	fi
fi

# The results behind docs/benchmarks.md go beside it: a fresh machine (or a
# change to report.py) can redo the report without measuring again.
if [ $REPORT_ONLY = 0 ] && [ ${#MODE[@]} = 0 ] && [ -f "$RESULTS" ]; then
	cp "$RESULTS" docs/benchmarks.json
elif [ $REPORT_ONLY = 1 ] && [ ! -f "$RESULTS" ] && [ -f docs/benchmarks.json ]; then
	RESULTS=docs/benchmarks.json
fi

say "report"
# The paired columns go through the command's own statistics (hugetext measure --stats).
BENCH_HUGETEXT=$BUILD/tools/hugetext /usr/bin/python3 bench/report.py "$RESULTS" docs/benchmarks.md docs/plots
