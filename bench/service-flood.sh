#!/bin/bash
# The text service under a flood (docs/service.md, "Floods"): an honest
# root client's offers, made as the library makes them, while PROCS
# processes of nobody flood the socket, and the service's CPU and memory.
#
#   bench/service-flood.sh [--hugetext PATH] [--build DIR] [--seconds S] [--procs N]
#                          [--root [--own-socket]] [KIND...]
#
# --root floods as root (a rootful container's root is the host's root,
# which passes the socket's ACL); with --own-socket the flood comes on a
# container's own socket (tools/serve-socks.c: the directory the OCI hook
# makes, /run/hugetext/sockets/bench-ctr/) while the honest client stays on
# the host's.
#
# KIND: none (the service alone), silent, garbage, offers, files (offers of
# root's files of 4 MiB or more in /usr/lib/x86_64-linux-gnu or the arch's
# directory); all by default.  --hugetext runs another build's service (for
# the figures of an older one).  Runs as root, in a private mount
# namespace with a tmpfs over /run (never the machine's socket or cache).
# Prints one JSON line per kind (tests/service-flood.c says what each
# number is) and a table.  Takes about (S + 2) seconds per kind.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build HT= SECONDS_=10 PROCS=2 KINDS=() FLOOD_UID=65534 OWN=0
while [ $# -gt 0 ]; do
	case $1 in
	--hugetext) HT=$2; shift ;;
	--build) BUILD=$2; shift ;;
	--seconds) SECONDS_=$2; shift ;;
	--procs) PROCS=$2; shift ;;
	--root) FLOOD_UID=0 ;;
	--own-socket) OWN=1 ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) KINDS+=("$1") ;;
	esac
	shift
done
[ ${#KINDS[@]} -gt 0 ] || KINDS=(none silent garbage offers files)
HT=${HT:-$BUILD/tools/hugetext}
FLOOD=$BUILD/tests/service-flood
FIXTURE=$BUILD/tests/bigtext-nopie
[ "$(id -u)" = 0 ] || { echo "service-flood: run it as root" >&2; exit 1; }
for f in "$HT" "$FLOOD" "$FIXTURE"; do
	[ -x "$f" ] || { echo "service-flood: $f is missing (ninja -C $BUILD)" >&2; exit 1; }
done
LIBDIR=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
HT=$(realpath "$HT") FLOOD=$(realpath "$FLOOD") FIXTURE=$(realpath "$FIXTURE")
# The fixture's code span, as the library offers it: the whole 2 MiB pages of its first executable segment.
read -r OFF LEN < <(python3 -c '
import struct, sys
b = open(sys.argv[1], "rb").read(); h = 2 << 20
phoff, = struct.unpack_from("<Q", b, 32); phentsize, phnum = struct.unpack_from("<HH", b, 54)
for i in range(phnum):
    t, fl, off, va, pa, fsz, msz, al = struct.unpack_from("<IIQQQQQQ", b, phoff + i * phentsize)
    if t == 1 and fl & 1:
        lo = (va + h - 1) // h * h; hi = (va + fsz) // h * h
        print(lo - va + off, hi - lo); break
' "$FIXTURE")
[ "$OWN" = 0 ] || [ "$FLOOD_UID" = 0 ] || { echo "service-flood: --own-socket goes with --root" >&2; exit 2; }
export HT FLOOD FIXTURE OFF LEN SECONDS_ PROCS LIBDIR FLOOD_UID OWN
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT

# shellcheck disable=SC2016
unshare -m --propagation private bash -c '
set -eu
mount -t tmpfs -o mode=0755 bench-run /run
mkdir -p /run/hugetext/text
mount -t tmpfs -o size=512m,mode=1777,huge=within_size bench-text /run/hugetext/text
work=$(mktemp -d /var/tmp/service-flood.XXXXXX)
svc=
trap "[ -z \"\$svc\" ] || kill \$svc 2>/dev/null; rm -rf $work" EXIT
chmod 755 "$work"
for kind in "$@"; do
	cp "$FIXTURE" "$work/probe"; cp "$FIXTURE" "$work/fresh"; chmod 755 "$work/probe" "$work/fresh"
	rm -rf /run/hugetext/text/shared /run/hugetext/service.sock /run/hugetext/sockets
	"$HT" serve --no-warm --state "$work/state.json" --config "$work/none.conf" >"$work/serve.log" 2>&1 &
	svc=$!
	for _ in $(seq 100); do [ -S /run/hugetext/service.sock ] && break; sleep 0.05; done
	sleep 0.3
	target=()
	if [ "$OWN" = 1 ]; then
		mkdir -m 0755 /run/hugetext/sockets/bench-ctr
		for _ in $(seq 100); do [ -S /run/hugetext/sockets/bench-ctr/service.sock ] && break; sleep 0.05; done
		target=(/run/hugetext/sockets/bench-ctr/service.sock)
	fi
	k=$kind
	[ "$kind" = files ] && k=files:$LIBDIR
	printf "{\"kind\":\"%s\",\"result\":" "$kind"
	"$FLOOD" bench /run/hugetext/service.sock "$svc" /run/hugetext/text/shared "$k" "$FLOOD_UID" "$PROCS" "$SECONDS_" \
		50 100 "$work/probe" "$OFF" "$LEN" "$LEN" "$work/fresh" "${target[@]}" | tr -d "\n"
	printf "}\n"
	kill "$svc"; wait "$svc" 2>/dev/null || true
	svc=
	# What the fills took (from the state file), to stderr.
	python3 -c "import json,sys; [print(\"  filled:\", l, file=sys.stderr) for l in json.load(open(sys.argv[1]))[\"filled\"]]" "$work/state.json" || true
done
' service-flood "${KINDS[@]}" >"$OUT"
cat "$OUT"
python3 -c '
import json, sys
print("\n%-8s %9s %9s %9s %11s %11s %10s %10s %12s %9s" % ("flood", "connect", "sent", "taken", "taken med", "taken max",
      "served", "svc CPU", "flood tries", "svc RSS"))
for line in open(sys.argv[1]):
    r = json.loads(line); x = r["result"]; p = x["probe"]; f = x["flood"]
    print("%-8s %6d/%-2d %6d/%-2d %6d/%-2d %8.2f ms %8.2f ms %7.0f ms %7.2f s %12d %6d MiB" % (
        r["kind"], p["connected"], p["tries"], p["sent"], p["tries"], p["taken"], p["tries"], p["taken_ms_median"],
        p["taken_ms_max"], x["served_ms"], x["service_cpu_s"], f["attempts"], x["service_rss_kib"] // 1024))
' "$OUT"
