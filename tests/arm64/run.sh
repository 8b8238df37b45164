#!/bin/bash
# The arm64 suite: Debian 12's arm64 kernels (6.1 of linux-image-arm64 and
# bookworm's newest 6.12) booted under qemu-system-aarch64 (TCG, -cpu max)
# with an arm64 Debian 12 root made by debootstrap, the project
# cross-compiled here (meson-cross-arm64.txt) and run there: the test
# suite (minus fuzz and the package suite), the probe of the library's
# path, as the x86-64 matrix does (through tests/kernel/init, guest.sh,
# probe.sh and the matrix's functions, lib.sh), and the real-program
# check (tests/arm64/real.sh: node, g++, clang++, rustc and java, Debian's
# arm64 builds installed into the root once).
#
#   tests/arm64/run.sh [--kernel 6.1,6.12] [--thp always,madvise]
#                      [--fs ext4,xfs] [--all] [--suite S]... [--test T]...
#                      [--build DIR] [--no-build] [--no-probe] [--no-real]
#                      [--no-suite] [--prepare] [--doc] [--package]
#                      [--run 'COMMAND']
#
# Default: 6.1, always, ext4, the suite and the real-program check.
# --all: both kernels, both THP modes, both file systems, then the arm64
# packages (--package: tests/package/cross-arm64.sh builds them with
# dpkg-buildpackage -a arm64, runs lintian and installs them in the root;
# its checks count in the sum) and docs/kernels.md's arm64 rows (--doc:
# from the runs in HT_ARM64_RUNS; alone, it runs nothing; configurations
# not run keep their rows from the doc's last version).  --no-real leaves
# the real-program check out (and its packages uninstalled), --no-suite
# the test suite; a real program counts as a test.  --prepare only makes
# the root and installs the real programs in it.  --build DIR: a build
# dir configured with the cross file (default: one under the cache, set
# up and built from this tree); --no-build runs it as it is (a test whose
# program is missing fails).
# Cached in HT_ARM64_CACHE (default /var/cache/hugetext-arm64): the
# arm64 root (root/), the kernel packages and their unpacked trees, the
# initramfs, the packages (packages/).  Each run's output goes to
# HT_ARM64_RUNS (default runs/ in the cache), KERNEL-FS-THP/: console.log,
# testlog.json, probe.json, real.result, env.txt.  Two invocations may run
# at once with their own HT_ARM64_RUNS and --build dirs: the guest only
# reads the root (9p read-only under a tmpfs overlay) and each run stages
# its disk in a directory of its own.
# Prints one line per run, "arm64: KERNEL FS THP: N passed, N failed, N
# skipped", then the sum, "N passed, N failed, N skipped", and exits
# non-zero when anything failed or a run did not finish.  Needs root.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
kharness=$repo/tests/kernel
cache=${HT_ARM64_CACHE:-/var/cache/hugetext-arm64}
root=$cache/root
runs=${HT_ARM64_RUNS:-$cache/runs}
kernels=6.1 thps=always fss=ext4
build= probe=1 meson_sel=() cmd= rebuild=1 real=1 suite=1 prepare=0 doc=0 doc_only=0 package=0
# --doc alone runs nothing: it only writes the doc.
[ "$*" = --doc ] && doc_only=1
ht_name=arm64 ht_arch=arm64
# shellcheck source=tests/kernel/lib.sh
. "$kharness/lib.sh"

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernels=${2//,/ }; shift ;;
	--thp) thps=${2//,/ }; shift ;;
	--fs) fss=${2//,/ }; shift ;;
	--all) kernels="6.1 6.12" thps="always madvise" fss="ext4 xfs" doc=1 package=1 ;;
	--package) package=1 ;;
	--doc) doc=1 ;;
	--suite) meson_sel+=(--suite "$2"); shift ;;
	--test) meson_sel+=("$2"); shift ;;
	--build) build=$(realpath -m "$2"); shift ;;
	--no-build) rebuild=0 ;;
	--no-probe) probe=0 ;;
	--no-real) real=0 ;;
	--no-suite) suite=0 ;;
	--prepare) prepare=1 ;;
	--run) cmd=$2; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
	shift
done
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, qemu's 9p share, apt-get)"
for k in $kernels; do case $k in 6.1 | 6.12) ;; *) die "kernel $k: 6.1 or 6.12" ;; esac; done
for t in $thps; do case $t in always | madvise) ;; *) die "THP mode $t: always or madvise" ;; esac; done
for f in $fss; do case $f in ext4 | xfs) ;; *) die "file system $f: ext4 or xfs" ;; esac; done

# The host's tools and the arm64 libraries the cross build links against.
need_packages() {
	local missing=() pair
	dpkg --print-foreign-architectures | grep -qx arm64 || {
		dpkg --add-architecture arm64 && apt-get update >/dev/null
	} || die "cannot add the arm64 architecture"
	for pair in qemu-system-aarch64:qemu-system-arm aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu \
		aarch64-linux-gnu-g++:g++-aarch64-linux-gnu debootstrap:debootstrap cpio:cpio \
		mkfs.xfs:xfsprogs mkfs.ext4:e2fsprogs meson:meson ninja:ninja-build pkg-config:pkg-config \
		update-binfmts:binfmt-support; do
		command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
	done
	[ -e /usr/libexec/qemu-binfmt/aarch64-binfmt-P ] || [ -e /usr/bin/qemu-aarch64-static ] ||
		missing+=(qemu-user-static)
	for pair in libelf-dev:arm64 libjson-c-dev:arm64 catch2:arm64; do
		dpkg -s "$pair" >/dev/null 2>&1 || missing+=("$pair")
	done
	install_packages "${missing[@]}"
}

# qemu-user runs debootstrap's second stage: binfmt_misc must be mounted
# (no systemd here to do it) and qemu-aarch64 registered.
need_binfmt() {
	[ -e /proc/sys/fs/binfmt_misc/status ] || mount -t binfmt_misc none /proc/sys/fs/binfmt_misc ||
		die "cannot mount binfmt_misc"
	[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64 >/dev/null ||
		die "cannot register qemu-aarch64 with binfmt_misc"
}

# The arm64 Debian 12 root, made once: what the suite and the probe run
# (python3 and meson for meson test; strace, file, binutils for tests).
# Under a lock: two invocations at once make it once.
ensure_root() {
	[ -x "$root/usr/bin/meson" ] && [ -x "$root/bin/busybox" ] && return 0
	exec 9>"$cache/root.lock" && flock 9 || die "cannot lock $cache/root.lock"
	[ -x "$root/usr/bin/meson" ] && [ -x "$root/bin/busybox" ] && { flock -u 9; return 0; }
	need_binfmt
	echo "arm64: debootstrap of an arm64 Debian 12 root in $root (about 25 minutes)"
	rm -rf "$root.tmp"
	debootstrap --arch arm64 --variant=minbase \
		--include=python3,meson,ninja-build,libelf1,libjson-c5,strace,file,binutils,procps,util-linux,kmod,busybox-static,xfsprogs,e2fsprogs,findutils,ca-certificates \
		bookworm "$root.tmp" http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 ||
		die "debootstrap failed (see $cache/debootstrap.log)"
	mv "$root.tmp" "$root"
	flock -u 9
}

# The shared libraries the cross-built tool links besides libc and libelf:
# a root made before the tool needed libjson-c gets Debian's arm64 package
# unpacked into it (dpkg-deb on the host, no emulation; a few seconds).
ensure_libs() {
	local tmp
	ls "$root"/usr/lib/aarch64-linux-gnu/libjson-c.so.5* >/dev/null 2>&1 && return 0
	tmp=$(mktemp -d) || die "cannot make a temporary directory"
	(cd "$tmp" && apt-get download libjson-c5:arm64 >/dev/null 2>&1) &&
		dpkg-deb -x "$tmp"/libjson-c5_*_arm64.deb "$root" ||
		{ rm -rf "$tmp"; die "cannot add libjson-c5:arm64 to $root"; }
	rm -rf "$tmp"
}

# The real programs of the real-program check (tests/arm64/real.sh):
# Debian's arm64 builds, installed into the root once (apt-get in a chroot
# under qemu-user, with /proc for the JDK's postinst, in a mount namespace
# of its own; policy-rc.d keeps postinsts from starting services); the
# .debs stay in the root's apt cache.  PostgreSQL (test-
# postgres: a prefork server under the defaults) and pkg-config (test-
# install's consumer) come with them: without them those tests skip.
real_packages=(nodejs g++ clang rustc openjdk-17-jdk-headless postgresql pkg-config)
ensure_real() {
	local missing=() p
	for p in "${real_packages[@]}"; do
		dpkg --admindir="$root/var/lib/dpkg" -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	exec 9>"$cache/root.lock" && flock 9 || die "cannot lock $cache/root.lock"
	need_binfmt
	echo "arm64: installing ${missing[*]} into $root (under qemu-user, once; see $cache/real-install.log)"
	unshare --mount --propagation private env ROOT="$root" PKGS="${missing[*]}" bash -c '
		mount -t proc proc "$ROOT/proc" || exit 1
		chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
			sh -c "printf \"#!/bin/sh\\nexit 101\\n\" >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d &&
				apt-get update && apt-get install -y --no-install-recommends $PKGS; st=\$?; rm -f /usr/sbin/policy-rc.d; exit \$st"' \
		>"$cache/real-install.log" 2>&1 || die "cannot install ${missing[*]} into the root (see $cache/real-install.log)"
	flock -u 9
}

# The cross build: the given one, or one under the cache from this tree.
ensure_build() {
	if [ -z "$build" ]; then
		build=$cache/build
		[ -f "$build/build.ninja" ] ||
			meson setup --cross-file "$repo/meson-cross-arm64.txt" "$build" "$repo" >/dev/null ||
			die "meson setup with meson-cross-arm64.txt failed"
	fi
	# A target that fails to build fails its test in the guest: counted, not hidden.
	[ "$rebuild" = 0 ] || ninja -C "$build" -k 0 >"$runs/build.log" 2>&1 ||
		echo "arm64: some targets of $build fail to build (see $runs/build.log)"
	file -L "$build/lib/libhugetext-preload.so" | grep -q aarch64 || die "$build is not an arm64 build"
	src=$(source_of "$build") || die "$build is not a meson build dir"
}

# One configuration (run_configs, tests/kernel/lib.sh, runs every one).
run_config() {
	local kernel=$1 thp=$2 fs=$3 out=$4 kdir image initrd sel stage
	kdir=$(kernel_dir "$kernel") || return 1
	image=$(ls "$kdir"/boot/vmlinuz-* | head -1)
	# The root's arm64 busybox; crc32c before ext4 and XFS, which ask the
	# crypto API for it.
	initrd=$(initramfs "$kdir" "$root/bin/busybox" crc32c_generic libcrc32c virtio_pci virtio_blk \
		9pnet_virtio 9p overlay ext4 xfs) || return 1
	# The stage inside the root, where the guest (XFS) reads it as /host/...:
	# one per run, so that runs at once do not share it.
	stage=$(mktemp -d "$root/var/tmp/hugetext-stage.XXXXXX") || return 1
	make_disk "$out/disk.img" "$fs" "$stage" "$src" "$build" || { rm -rf "$stage"; return 1; }
	sel="${meson_sel[*]:---no-suite fuzz --no-suite package}"
	[ "$suite" = 1 ] || sel=none
	job_env "$out" HT_SRC="$src" HT_BUILD="$build" HT_THP="$thp" HT_FS="$fs" HT_STAGE="${stage#"$root"}" \
		HT_HARNESS="$src/tests/kernel" HT_KERNEL_LABEL="arm64-$kernel" HT_MESON_ARGS="$sel" HT_CLANG=0 \
		HT_REAL="$([ "$real" = 1 ] && echo "$src/tests/arm64/real.sh")" HT_PROBE="$probe" \
		HT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HT_CMD="$cmd"
	# pauth-impdef: pointer authentication stays on (the dlopen() entry signs
	# through it) with qemu's cheap algorithm instead of QARMA.
	timeout 7200 qemu-system-aarch64 -M virt -accel tcg,thread=multi -cpu max,pauth-impdef=on \
		-smp 2 -m 4G -nographic -monitor none -no-reboot \
		-kernel "$image" -initrd "$initrd" \
		-append "console=ttyAMA0 panic=-1 loglevel=4 transparent_hugepage=$thp" \
		-virtfs "local,path=$root,mount_tag=host,security_model=none,readonly=on,multidevs=remap" \
		-virtfs "local,path=$out,mount_tag=out,security_model=none,multidevs=remap" \
		-drive "file=$out/disk.img,format=raw,if=virtio,cache=unsafe" </dev/null 2>&1 |
		tee "$out/console.log"
	rm -rf "$out/disk.img" "$stage"
}

# The doc's arm64 section from the runs' probes and logs; the x86-64 rows,
# and arm64 configurations not in $runs, kept from the doc's last version.
write_doc() {
	local label
	label="earlier run, as of $(git -C "$repo" log -1 --format=%h -- docs/kernels.md 2>/dev/null || echo '?')"
	python3 "$kharness/kernels-doc.py" --keep "$repo/docs/kernels.md" "$label" --arm64 "$runs" \
		>"$repo/docs/kernels.md.tmp.$$" && mv "$repo/docs/kernels.md.tmp.$$" "$repo/docs/kernels.md" &&
		echo "arm64: wrote docs/kernels.md"
}
[ "$doc_only" = 0 ] || { write_doc; exit; }

mkdir -p "$runs" || die "cannot make $runs"
need_packages
ensure_root
ensure_libs
[ "$real" = 0 ] || ensure_real
[ "$prepare" = 0 ] || { echo "arm64: the root is ready in $root"; exit 0; }
ensure_build
run_configs "$runs"
[ "$doc" = 0 ] || write_doc
if [ "$package" = 1 ]; then
	"$repo/tests/package/cross-arm64.sh" "$cache/packages" | tee "$runs/package.log"
	[ "${PIPESTATUS[0]}" = 0 ] || failed=1
	if [[ $(tail -1 "$runs/package.log") =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped ]]; then
		tp=$((tp + BASH_REMATCH[1])) tf=$((tf + BASH_REMATCH[2])) ts=$((ts + BASH_REMATCH[3]))
		echo "arm64: packages: ${BASH_REMATCH[0]}"
	else
		echo "arm64: packages: no count (the check did not finish)"
		tf=$((tf + 1)) failed=1
	fi
fi
echo "$tp passed, $tf failed, $ts skipped"
exit "$failed"
