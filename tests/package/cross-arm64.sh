#!/bin/bash
# The arm64 packages (issue 22, item 5): dpkg-buildpackage -a arm64 on a
# copy of the tree, with Debian's cross toolchain (crossbuild-essential-
# arm64) and the :arm64 build dependencies (apt-get build-dep -a arm64),
# then lintian on the .changes and, in an arm64 Debian 12 root under
# qemu-user (tests/arm64/run.sh makes it), the packages installed on a
# throw-away overlay of that root: `hugetext --version` runs and the
# preload loads into a program that then runs as without it.
#
#   tests/package/cross-arm64.sh [OUT_DIR]
#
# The .debs, the .changes and the logs (build.log, lintian.log) go to
# OUT_DIR (default /var/cache/hugetext-arm64/packages).  Prints one line
# per check, "package-arm64: ok NAME" or "package-arm64: failed NAME: why",
# then "N passed, N failed, N skipped", and exits non-zero when a check
# failed.  Needs root.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${HT_ARM64_CACHE:-/var/cache/hugetext-arm64}
out=$(realpath -m "${1:-$cache/packages}")
root=$cache/root
pass=0 fail=0 skip=0

result() {
	local name=$1 st=$2 why=${3:-}
	case $st in
	ok) echo "package-arm64: ok $name"; pass=$((pass + 1)) ;;
	skipped) echo "package-arm64: skipped $name: $why"; skip=$((skip + 1)) ;;
	*) echo "package-arm64: failed $name: $why"; fail=$((fail + 1)) ;;
	esac
}

finish() {
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" -eq 0 ]
	exit
}

[ "$(id -u)" = 0 ] || { echo "package-arm64: needs root (apt-get)" >&2; exit 2; }

# The cross toolchain and the arm64 build dependencies of debian/control.
dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
install() {
	DEBIAN_FRONTEND=noninteractive apt-get "$@" >/dev/null 2>&1 ||
		{ apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get "$@" >/dev/null 2>&1; }
}
# As sbuild's cross builds have it: the host architecture's libc and
# libstdc++ development packages beside the cross compilers (dpkg-shlibdeps
# looks for libstdc++.so.6, which the tool links, among arm64 packages).
tools=(crossbuild-essential-arm64 libc6-dev:arm64 libstdc++-12-dev:arm64 lintian)
dpkg -s "${tools[@]}" >/dev/null 2>&1 || install install -y --no-install-recommends "${tools[@]}" ||
	{ result toolchain failed "cannot install ${tools[*]}"; finish; }
# (Always: dpkg-checkbuilddeps takes the host's pkg-config for the arm64
# one that meson's cross file names, aarch64-linux-gnu-pkg-config.)
(cd "$repo" && install build-dep -y --no-install-recommends -a arm64 ./) ||
	{ result build-deps failed "apt-get build-dep -a arm64 fails: $(cd "$repo" && dpkg-checkbuilddeps -a arm64 2>&1)"; finish; }

# A copy of the tree: dpkg-buildpackage writes beside the source dir.
work=$(mktemp -d /tmp/hugetext-cross-arm64.XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" "$out"
(cd "$repo" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$work/src" ||
	{ result copy failed "cannot copy the tree"; finish; }
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
(cd "$work/src" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" dpkg-buildpackage -a arm64 -us -uc -b) \
	>"$out/build.log" 2>&1
st=$?
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out/" 2>/dev/null
changes=$(ls "$out"/hugetext_*_arm64.changes 2>/dev/null | head -1)
if [ "$st" -ne 0 ] || [ -z "$changes" ]; then
	result build failed "dpkg-buildpackage -a arm64 exited $st: $(tail -5 "$out/build.log" | tr '\n' ' ')"
	finish
fi
result build ok

# The packages are arm64 ones, with arm64 code in them.
bad=
for deb in "$out"/*_arm64.deb; do
	[ "$(dpkg-deb -f "$deb" Architecture)" = arm64 ] || bad="$bad $(basename "$deb")"
done
dpkg-deb -c "$out"/libhugetext0_*_arm64.deb 2>/dev/null | grep -q 'usr/lib/aarch64-linux-gnu/libhugetext-preload.so' ||
	bad="$bad (no preload under usr/lib/aarch64-linux-gnu)"
x=$(mktemp -d "$work/x.XXXXXX") && dpkg-deb -x "$out"/hugetext_*_arm64.deb "$x" &&
	file -L "$x/usr/bin/hugetext" | grep -q 'ARM aarch64' || bad="$bad (usr/bin/hugetext is not an arm64 program)"
[ -z "$bad" ] && result contents ok || result contents failed "$bad"

# lintian: no error and no warning (the overrides in debian/ say why each is fine).
lintian --fail-on error,warning --info "$changes" >"$out/lintian.log" 2>&1 &&
	result lintian ok || result lintian failed "$(head -c 800 "$out/lintian.log")"

# Installed on an overlay of the arm64 root (the root stays as it is):
# the tool runs and the preload loads.  qemu-user runs the programs: this
# checks the packaging (paths, dependencies, the loader finding the
# library), not the move, which the guest's suite checks.
if [ ! -x "$root/usr/bin/apt-get" ]; then
	result install skipped "no arm64 root in $root (tests/arm64/run.sh --prepare makes it)"
	finish
fi
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] ||
	{ mount -t binfmt_misc none /proc/sys/fs/binfmt_misc 2>/dev/null; update-binfmts --enable qemu-aarch64 >/dev/null 2>&1; }
mkdir -p "$work/upper" "$work/wk" "$work/merged" "$work/debs"
cp "$out"/hugetext_*_arm64.deb "$out"/libhugetext0_*_arm64.deb "$work/debs/"
cat >"$work/check.sh" <<'EOF'
dpkg -i /tmp/debs/*.deb || exit 10
hugetext --version || exit 11
# The preload by its bare name, as users give it: the loader finds it in
# the multiarch directory.  qemu-user shows the program's own maps.
n=$(LD_PRELOAD=libhugetext-preload.so cat /proc/self/maps 2>/tmp/err | grep -c 'aarch64-linux-gnu/libhugetext-preload\.so')
[ -s /tmp/err ] && { cat /tmp/err; exit 12; }
[ "$n" -gt 0 ] || exit 13
# A program's output, as without the preload.
[ "$(LD_PRELOAD=libhugetext-preload.so ls -l /usr/bin/hugetext)" = "$(ls -l /usr/bin/hugetext)" ] || exit 12
EOF
unshare --mount --propagation private env ROOT="$root" W="$work" bash -c '
	mount -t overlay -o lowerdir="$ROOT",upperdir="$W/upper",workdir="$W/wk" overlay "$W/merged" || exit 1
	mount -t proc proc "$W/merged/proc" || exit 1
	mkdir -p "$W/merged/tmp/debs" && cp "$W"/debs/*.deb "$W/merged/tmp/debs/" && cp "$W/check.sh" "$W/merged/tmp/" &&
		chroot "$W/merged" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin sh /tmp/check.sh' \
	>"$out/install.log" 2>&1
st=$?
case $st in
0) result install ok ;;
10) result install failed "dpkg -i fails in the arm64 root: $(tail -3 "$out/install.log" | tr '\n' ' ')" ;;
11) result install failed "hugetext --version fails: $(tail -3 "$out/install.log" | tr '\n' ' ')" ;;
12) result install failed "a program with the preload fails, says something or differs: $(tail -3 "$out/install.log" | tr '\n' ' ')" ;;
13) result install failed "the preload is not in the program's maps" ;;
*) result install failed "exit $st: $(tail -3 "$out/install.log" | tr '\n' ' ')" ;;
esac
finish
