#!/bin/bash
# The arm64 suite: Debian 12's arm64 kernels (6.1 of linux-image-arm64 and
# bookworm's newest 6.12) booted under qemu-system-aarch64 (TCG, -cpu max)
# with an arm64 Debian 12 root made by debootstrap, the project
# cross-compiled here (meson-cross-arm64.txt) and run there: the test
# suite (minus fuzz and the package suite) and the probe of the library's
# path, as the x86-64 matrix does (it reuses tests/kernel/init, guest.sh
# and probe.sh as they are).
#
#   tests/arm64/run.sh [--kernel 6.1,6.12] [--thp always,madvise]
#                      [--fs ext4,xfs] [--all] [--suite S]... [--test T]...
#                      [--build DIR] [--no-build] [--no-probe] [--run 'COMMAND']
#
# Default: 6.1, always, ext4.  --all: both kernels, both THP modes, both
# file systems.  --build DIR: a build dir configured with the cross file
# (default: one under the cache, set up and built from this tree);
# --no-build runs it as it is (a test whose program is missing fails).
# Cached in HT_ARM64_CACHE (default /var/cache/hugetext-arm64): the
# arm64 root (root/), the kernel packages and their unpacked trees, the
# initramfs.  Each run's output goes to HT_ARM64_RUNS (default runs/ in
# the cache), KERNEL-FS-THP/: console.log, testlog.json, probe.json,
# env.txt.  Two invocations may run at once with different HT_ARM64_RUNS
# and build dirs (--build; the default one under the cache is shared):
# the guest only reads the root (9p read-only under a tmpfs
# overlay) and each run stages its disk in a directory of its own.
# Prints one line per run,
# "arm64: KERNEL FS THP: N passed, N failed, N skipped", then the sum,
# "N passed, N failed, N skipped", and exits non-zero when anything
# failed or a run did not finish.  Needs root.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
kharness=$repo/tests/kernel
cache=${HT_ARM64_CACHE:-/var/cache/hugetext-arm64}
root=$cache/root
runs=${HT_ARM64_RUNS:-$cache/runs}
kernels=6.1 thps=always fss=ext4
build= probe=1 meson_sel=() cmd= rebuild=1

die() {
	echo "arm64: $*" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernels=${2//,/ }; shift ;;
	--thp) thps=${2//,/ }; shift ;;
	--fs) fss=${2//,/ }; shift ;;
	--all) kernels="6.1 6.12" thps="always madvise" fss="ext4 xfs" ;;
	--suite) meson_sel+=(--suite "$2"); shift ;;
	--test) meson_sel+=("$2"); shift ;;
	--build) build=$(realpath -m "$2"); shift ;;
	--no-build) rebuild=0 ;;
	--no-probe) probe=0 ;;
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
	for pair in libelf-dev:arm64 catch2:arm64; do
		dpkg -s "$pair" >/dev/null 2>&1 || missing+=("$pair")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "arm64: installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >/dev/null ||
		{ apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >/dev/null; } ||
		die "cannot install ${missing[*]}"
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
ensure_root() {
	[ -x "$root/usr/bin/meson" ] && [ -x "$root/bin/busybox" ] && return 0
	need_binfmt
	echo "arm64: debootstrap of an arm64 Debian 12 root in $root (about 25 minutes)"
	rm -rf "$root.tmp"
	debootstrap --arch arm64 --variant=minbase \
		--include=python3,meson,ninja-build,libelf1,strace,file,binutils,procps,util-linux,kmod,busybox-static,xfsprogs,e2fsprogs,findutils,ca-certificates \
		bookworm "$root.tmp" http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 ||
		die "debootstrap failed (see $cache/debootstrap.log)"
	mv "$root.tmp" "$root"
}

# The arm64 package name of a kernel label.
kernel_package() {
	local meta
	case $1 in
	6.1)
		(cd "$cache/debs" && apt-get download linux-image-arm64:arm64 >/dev/null 2>&1) || return 1
		meta=$(ls -t "$cache"/debs/linux-image-arm64_*.deb | head -1)
		dpkg-deb -f "$meta" Depends | tr ',|' '\n\n' | sed 's/ *(.*//; s/^ *//; s/:arm64$//' |
			grep -m1 '^linux-image-6\.1\.'
		;;
	6.12)
		apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-arm64$' | awk '{ print $1 }' |
			sort -V | tail -1
		;;
	esac
}

# Downloads and unpacks a kernel once; prints its directory.
kernel_dir() {
	local pkg deb dir
	mkdir -p "$cache/debs" "$cache/unpacked"
	pkg=$(kernel_package "$1")
	[ -n "$pkg" ] || { echo "arm64: no package for kernel $1 (apt-get update?)" >&2; return 1; }
	dir=$cache/unpacked/$pkg
	if [ ! -d "$dir/boot" ]; then
		deb=$(ls "$cache/debs/${pkg}"_*.deb 2>/dev/null | head -1)
		if [ -z "$deb" ]; then
			(cd "$cache/debs" && apt-get download "$pkg:arm64" >/dev/null 2>&1) ||
				{ echo "arm64: cannot download $pkg" >&2; return 1; }
			deb=$(ls "$cache/debs/${pkg}"_*.deb | head -1)
		fi
		rm -rf "$dir.tmp"
		dpkg-deb -x "$deb" "$dir.tmp" && mv "$dir.tmp" "$dir" || return 1
	fi
	echo "$dir"
}

# The modules the guest needs, dependencies first, into $2/modules, their
# load order in $2/modules.load (tests/kernel/init loads them).
declare -A mod_path mod_seen
add_module() {
	local name=${1//-/_} file dep
	[ -n "${mod_seen[$name]:-}" ] && return 0
	mod_seen[$name]=1
	file=${mod_path[$name]:-}
	[ -n "$file" ] || return 0 # built in, or not on this architecture
	case $file in
	*.xz) xz -dc "$file" >"$2/modules/$name.ko" ;;
	*.zst) zstd -dqc "$file" >"$2/modules/$name.ko" ;;
	*) cp "$file" "$2/modules/$name.ko" ;;
	esac
	for dep in $(tr '\0' '\n' <"$2/modules/$name.ko" | sed -n 's/^depends=//p' | tr ',' ' '); do
		add_module "$dep" "$2"
	done
	echo "$name.ko" >>"$2/modules.load"
}

# The initramfs: the root's arm64 busybox, the x86-64 matrix's init, modules.
initramfs() {
	local kdir=$1 out=$cache/initrd/$(basename "$1").cpio.gz tree f n mods
	if [ -f "$out" ] && [ "$out" -nt "$kharness/init" ] && [ "$out" -nt "$0" ]; then
		echo "$out"
		return 0
	fi
	mods=$(ls -d "$kdir"/lib/modules/* | head -1)
	mkdir -p "$cache/initrd"
	tree=$(mktemp -d) || return 1
	mkdir -p "$tree/bin" "$tree/modules" "$tree/proc" "$tree/sys" "$tree/dev"
	cp "$root/bin/busybox" "$tree/bin/busybox"
	cp "$kharness/init" "$tree/init"
	chmod 755 "$tree/init"
	: >"$tree/modules.load"
	mod_path=() mod_seen=()
	while read -r f; do
		n=$(basename "$f")
		n=${n%%.ko*}
		mod_path[${n//-/_}]=$f
	done < <(find "$mods/kernel" -name '*.ko*')
	for n in crc32c_generic libcrc32c virtio_pci virtio_blk 9pnet_virtio 9p overlay ext4 xfs; do
		add_module "$n" "$tree"
	done
	(cd "$tree" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp.$$" && mv "$out.tmp.$$" "$out"
	rm -rf "$tree"
	echo "$out"
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
	src=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["directories"]["source"])' \
		"$build/meson-info/meson-info.json") || die "$build is not a meson build dir"
}

# The disk image of file system $2: src/ and build/ of the project.  ext4
# is filled here; XFS by the guest from the stage $3 inside the root (the
# guest's /host is the arm64 root), one per run so that runs at once do
# not share it.
make_disk() {
	local img=$1 fs=$2 stage=$3 size
	rm -rf "$stage" "$img"
	mkdir -p "$stage/src" "$stage/build"
	tar -C "$src" --exclude=./.git --exclude='./build*' -cf - . | tar -C "$stage/src" -xf - || return 1
	# Hard links where the cache shares the build's file system: a build
	# dir holds more than a GiB of generated programs.
	cp -al "$build/." "$stage/build/" 2>/dev/null || cp -a "$build/." "$stage/build/" || return 1
	size=$(($(du -sm "$stage" | cut -f1) * 2 + 3072))
	truncate -s "${size}M" "$img"
	case $fs in
	ext4) mkfs.ext4 -q -F -d "$stage" "$img" ;;
	xfs) mkfs.xfs -q -f "$img" ;;
	esac
}

count() {
	python3 - "$1/testlog.json" <<'PY'
import json, os, sys
p = f = s = 0
if os.path.exists(sys.argv[1]):
    for line in open(sys.argv[1]):
        r = json.loads(line).get("result", "")
        if r in ("OK", "EXPECTEDFAIL"): p += 1
        elif r == "SKIP": s += 1
        else: f += 1
print(p, f, s)
PY
}

run_guest() {
	local kernel=$1 thp=$2 fs=$3 out=$4 kdir image initrd sel stage
	kdir=$(kernel_dir "$kernel") || return 1
	image=$(ls "$kdir"/boot/vmlinuz-* | head -1)
	initrd=$(initramfs "$kdir") || return 1
	# 755 as a plain mkdir makes it: the disk's root takes its mode.
	stage=$(mktemp -d "$root/var/tmp/hugetext-stage.XXXXXX") && chmod 755 "$stage" || return 1
	make_disk "$out/disk.img" "$fs" "$stage" || { rm -rf "$stage"; return 1; }
	sel="${meson_sel[*]:---no-suite fuzz --no-suite package}"
	cat >"$out/job.env" <<EOF
HT_SRC='$src'
HT_BUILD='$build'
HT_THP='$thp'
HT_FS='$fs'
HT_STAGE='${stage#"$root"}'
HT_HARNESS='$src/tests/kernel'
HT_KERNEL_LABEL='arm64-$kernel'
HT_MESON_ARGS='$sel'
HT_CLANG='0'
HT_PROBE='$probe'
HT_PATH='/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
EOF
	printf 'HT_CMD=%q\n' "$cmd" >>"$out/job.env"
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

mkdir -p "$runs" || die "cannot make $runs"
need_packages
ensure_root
ensure_build
failed=0 tp=0 tf=0 ts=0
summary=()
for kernel in $kernels; do
	for fs in $fss; do
		for thp in $thps; do
			out=$runs/$kernel-$fs-$thp
			rm -rf "$out"
			mkdir -p "$out"
			echo "arm64: kernel $kernel, $fs, THP $thp (output in $out)"
			git -C "$src" rev-parse --short=7 HEAD >"$out/commit" 2>/dev/null
			run_guest "$kernel" "$thp" "$fs" "$out"
			read -r p f s < <(count "$out")
			rc=$(cat "$out/rc" 2>/dev/null || echo none)
			line="arm64: $kernel $fs $thp: $p passed, $f failed, $s skipped"
			if [ "$rc" = none ]; then
				line="$line (the run did not finish)"
				f=$((f + 1))
			fi
			[ "$f" -eq 0 ] && [ "$rc" = 0 ] || failed=1
			tp=$((tp + p)) tf=$((tf + f)) ts=$((ts + s))
			summary+=("$line")
			echo "$line"
		done
	done
done
printf '%s\n' "${summary[@]}"
echo "$tp passed, $tf failed, $ts skipped"
exit "$failed"
