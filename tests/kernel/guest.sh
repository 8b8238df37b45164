#!/bin/bash
# Runs in the guest (or, for --kernel host, in a private mount namespace on
# the host) with the project's source and build dir on the disk under
# test: sets the THP mode, runs the probe (which path the library takes),
# the test suite and the clang check, and leaves in $HT_OUT:
#   probe.json    the probe's report lines, each tagged with its case
#   testlog.json  meson's test log
#   clang.result  "ok" or why the clang check failed
#   zeroconf.result  the zero-configuration check (zeroconf.sh): a line per
#                 program, "ok NAME: ...", "skipped NAME: why" or "failed"
#   real.result   the output of HT_REAL, a real-program check run after
#                 the suite (tests/arm64/real.sh: "ok NAME: ..." or
#                 "failed NAME: why", a line per program)
#   env.txt       the kernel, file system and THP mode seen here
# Settings: HT_SRC HT_BUILD HT_THP HT_FS HT_OUT HT_MESON_ARGS HT_PROBE HT_CLANG (1/0),
# HT_REAL (a script, given the build dir), HT_CMD (a command to run in the
# build dir first, for --run).
# Under qemu it sets HT_EMULATED=tcg for the tests: the few whose work or
# waits are sized for hardware (perfmap, tools-hostile, tools-edit) size
# them for emulation instead.
set -u
here=$(cd "$(dirname "$0")" && pwd)
thp=/sys/kernel/mm/transparent_hugepage/enabled
[ "${HT_KERNEL_LABEL:-}" = host ] || export HT_EMULATED=tcg

echo "$HT_THP" >"$thp" || echo "guest: cannot set THP to $HT_THP"
{
	echo "kernel $(uname -r)"
	echo "label ${HT_KERNEL_LABEL:-}"
	echo "fs $(findmnt -n -o FSTYPE -T "$HT_BUILD")"
	echo "thp $(cat "$thp")"
	echo "shmem_thp $(cat /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null)"
	# The disk's read-ahead: the windows the page cache's read path uses.
	dev=$(findmnt -n -o SOURCE -T "$HT_BUILD")
	dev=${dev%%[*}
	echo "read_ahead_kb $(cat "/sys/class/block/$(basename "$dev")/queue/read_ahead_kb" 2>/dev/null)"
} >"$HT_OUT/env.txt"
cat "$HT_OUT/env.txt"

rc=0
if [ "${HT_PROBE:-1}" = 1 ]; then
	bash "$here/probe.sh" "$HT_BUILD" "$HT_OUT/probe.json"
	# Zero configuration: the service, two starts each; clang++ with HT_CLANG.
	bash "$here/zeroconf.sh" "$HT_BUILD" "$HT_OUT/probe.json" "$HT_OUT/zeroconf.result" || rc=1
fi

if [ -n "${HT_CMD:-}" ]; then
	(cd "$HT_BUILD" && bash -c "$HT_CMD") 2>&1 | cat
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
fi
if [ "${HT_MESON_ARGS:-}" != none ]; then
	# TCG runs code several times slower than the host, and more so on a
	# shared machine: ten times the timeouts.
	# Through a pipe: on the serial console meson would draw progress bars.
	# shellcheck disable=SC2086
	meson test -C "$HT_BUILD" --no-rebuild --print-errorlogs -t 10 ${HT_MESON_ARGS:---no-suite fuzz} 2>&1 | cat
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
	cp "$HT_BUILD/meson-logs/testlog.json" "$HT_OUT/testlog.json" 2>/dev/null
	if [ "${HT_CLANG:-0}" = 1 ]; then
		bash "$here/real-clang.sh" "$HT_BUILD" >"$HT_OUT/clang.result" 2>&1 || rc=1
		echo "clang check: $(head -c 300 "$HT_OUT/clang.result")"
	fi
fi
if [ -n "${HT_REAL:-}" ]; then
	bash "$HT_REAL" "$HT_BUILD" >"$HT_OUT/real.result" 2>&1 || rc=1
	cat "$HT_OUT/real.result"
fi
exit "$rc"
