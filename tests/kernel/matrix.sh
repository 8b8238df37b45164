#!/bin/bash
# The kernel matrix: runs the test suite (minus fuzz), the clang check and
# the probe of the library's path on the kernels Debian 12 users run,
# Debian's 6.1 (linux-image-amd64) and bookworm's newest 6.12, booted under
# qemu (TCG) against this machine's userland, and on the host's kernel,
# with the project on a real ext4 or XFS disk, in THP always or madvise.
#
#   tests/kernel/matrix.sh [--kernel 6.1,6.12,host] [--thp always,madvise]
#                          [--fs ext4,xfs] [--all] [--suite S]... [--test T]...
#                          [--build DIR] [--no-probe] [--no-suite] [--doc]
#                          [--run 'COMMAND']
#
# Each of --kernel, --thp and --fs takes a comma-separated list; the runs
# are every combination (default: 6.1, always, ext4).  --all is every
# kernel, mode and file system, then docs/kernels.md from the probes.
# --suite and --test pick meson suites or tests (default: all but fuzz);
# the clang check runs with the whole suite only.  --build DIR uses that
# configured and built build dir (default: one under the cache, built from
# this tree).  --doc writes docs/kernels.md from the runs in the cache
# (and, for configurations not there, the rows of its last version); alone,
# it runs nothing.
# --run runs COMMAND (bash, in the build dir) in each configuration before
# the suite: with --no-suite --no-probe, a way to look into one kernel.
# --kernel host runs on this machine: the disk image on a loop device in a
# private mount namespace, and this machine's THP mode set for the run and
# put back after it.  Needs root.  Downloads, unpacked kernels, images and each run's output
# (console.log, testlog.json, probe.json) go under HT_KERNEL_CACHE
# (default /var/cache/hugetext-kernels), with the commit it tested
# (commit).  Prints one line per run,
# "matrix: KERNEL FS THP: N passed, N failed, N skipped", and exits
# non-zero when any test failed or a run did not finish.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
src=$repo
cache=${HT_KERNEL_CACHE:-/var/cache/hugetext-kernels}
kernels=6.1 thps=always fss=ext4
build= probe=1 suite=1 doc=0 meson_sel=() cmd= runs=1
# --doc alone runs nothing: it only writes the doc.
[ "$*" = --doc ] && runs=0

die() {
	echo "matrix: $*" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernels=${2//,/ }; shift ;;
	--thp) thps=${2//,/ }; shift ;;
	--fs) fss=${2//,/ }; shift ;;
	--all) kernels="6.1 6.12 host" thps="always madvise" fss="ext4 xfs" doc=1 ;;
	--suite) meson_sel+=(--suite "$2"); shift ;;
	--test) meson_sel+=("$2"); shift ;;
	--build) build=$(realpath -m "$2"); shift ;;
	--no-probe) probe=0 ;;
	--no-suite) suite=0 ;;
	--doc) doc=1 ;;
	--run) cmd=$2; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
	shift
done
[ "$(id -u)" = 0 ] || die "needs root (qemu's 9p share of /, loop devices, THP settings)"
for k in $kernels; do case $k in 6.1 | 6.12 | host) ;; *) die "kernel $k: 6.1, 6.12 or host" ;; esac; done
for t in $thps; do case $t in always | madvise) ;; *) die "THP mode $t: always or madvise" ;; esac; done
for f in $fss; do case $f in ext4 | xfs) ;; *) die "file system $f: ext4 or xfs" ;; esac; done

# The tools, installed the Debian way when missing (CI starts bare).
need_packages() {
	local missing=() pair
	for pair in qemu-system-x86_64:qemu-system-x86 cpio:cpio mkfs.xfs:xfsprogs mkfs.ext4:e2fsprogs \
		xz:xz-utils losetup:mount unshare:util-linux; do
		command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
	done
	[ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' ||
		dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
	command -v file >/dev/null || missing+=(file)
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "matrix: installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >/dev/null ||
		{ apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >/dev/null; } ||
		die "cannot install ${missing[*]}"
}

# The package name of a kernel label.
kernel_package() {
	local meta
	case $1 in
	6.1)
		# The metapackage names the real one in its dependency.
		(cd "$cache/debs" && apt-get download linux-image-amd64 >/dev/null 2>&1) || return 1
		meta=$(ls -t "$cache"/debs/linux-image-amd64_*.deb | head -1)
		dpkg-deb -f "$meta" Depends | tr ',|' '\n\n' | sed 's/ *(.*//; s/^ *//' |
			grep -m1 '^linux-image-6\.1\.'
		;;
	6.12)
		apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64$' | awk '{ print $1 }' |
			sort -V | tail -1
		;;
	esac
}

# Downloads and unpacks a kernel once; prints its directory.
kernel_dir() {
	local pkg deb dir
	mkdir -p "$cache/debs" "$cache/unpacked"
	pkg=$(kernel_package "$1")
	[ -n "$pkg" ] || { echo "matrix: no package for kernel $1 (apt-get update?)" >&2; return 1; }
	dir=$cache/unpacked/$pkg
	if [ ! -d "$dir/boot" ]; then
		deb=$(ls "$cache/debs/${pkg}"_*.deb 2>/dev/null | head -1)
		if [ -z "$deb" ]; then
			(cd "$cache/debs" && apt-get download "$pkg" >/dev/null 2>&1) || { echo "matrix: cannot download $pkg" >&2; return 1; }
			deb=$(ls "$cache/debs/${pkg}"_*.deb | head -1)
		fi
		rm -rf "$dir.tmp"
		dpkg-deb -x "$deb" "$dir.tmp" && mv "$dir.tmp" "$dir" || return 1
	fi
	echo "$dir"
}

# The modules the guest needs, dependencies first, decompressed into
# $2/modules with their load order in $2/modules.load.
declare -A mod_path mod_seen
add_module() {
	local name=${1//-/_} file dep
	[ -n "${mod_seen[$name]:-}" ] && return 0
	mod_seen[$name]=1
	file=${mod_path[$name]:-}
	if [ -z "$file" ]; then
		grep -q "/${name}.ko" "$kdir_mods/modules.builtin" 2>/dev/null ||
			grep -q "/${1}.ko" "$kdir_mods/modules.builtin" 2>/dev/null ||
			echo "matrix: module $1 neither built in nor in the package" >&2
		return 0
	fi
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

# The initramfs for a kernel directory: busybox, init, modules.
initramfs() {
	local kdir=$1 out=$cache/initrd/$(basename "$1").cpio.gz tree f n
	kdir_mods=$(ls -d "$kdir"/lib/modules/* | head -1)
	if [ -f "$out" ] && [ "$out" -nt "$here/init" ] && [ "$out" -nt "$0" ]; then
		echo "$out"
		return 0
	fi
	mkdir -p "$cache/initrd"
	tree=$(mktemp -d) || return 1
	mkdir -p "$tree/bin" "$tree/modules" "$tree/proc" "$tree/sys" "$tree/dev"
	cp /bin/busybox "$tree/bin/busybox"
	cp "$here/init" "$tree/init"
	chmod 755 "$tree/init"
	: >"$tree/modules.load"
	mod_path=() mod_seen=()
	while read -r f; do
		n=$(basename "$f")
		n=${n%%.ko*}
		mod_path[${n//-/_}]=$f
	done < <(find "$kdir_mods/kernel" -name '*.ko*')
	# crc32c first: ext4 and XFS ask the crypto API for it, which would
	# need modprobe to load it.
	for n in crc32c_intel crc32c_generic virtio_pci virtio_blk 9pnet_virtio 9p overlay ext4 xfs; do
		add_module "$n" "$tree"
	done
	(cd "$tree" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp" && mv "$out.tmp" "$out"
	rm -rf "$tree"
	echo "$out"
}

# The project's build: the given one, or one under the cache from this tree.
ensure_build() {
	if [ -z "$build" ]; then
		build=$cache/build
		[ -f "$build/build.ninja" ] || meson setup "$build" "$src" >/dev/null || die "meson setup failed"
	fi
	ninja -C "$build" >/dev/null || die "the build in $build fails"
	# The guest needs the source this build was set up from, at its path.
	src=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["directories"]["source"])' \
		"$build/meson-info/meson-info.json") || die "$build is not a meson build dir"
}

# A disk image of file system $2 at $1 holding src/ and build/ of the
# project (the source without .git and build dirs); ext4 is filled here,
# XFS by the guest from $cache/stage (mkfs.xfs cannot fill an image).
make_disk() {
	local img=$1 fs=$2 stage=$(dirname "$1")/stage size
	rm -rf "$stage" "$img"
	mkdir -p "$stage/src" "$stage/build"
	tar -C "$src" --exclude=./.git --exclude='./build*' -cf - . | tar -C "$stage/src" -xf - || return 1
	# Hard links when the cache is on the build's file system: a build
	# dir holds more than a GiB of generated programs.
	cp -al "$build/." "$stage/build/" 2>/dev/null || cp -a "$build/." "$stage/build/" || return 1
	# Room for the tests' own copies of programs and libraries.
	size=$(($(du -sm "$stage" | cut -f1) * 2 + 3072))
	truncate -s "${size}M" "$img"
	case $fs in
	ext4) mkfs.ext4 -q -F -d "$stage" "$img" ;;
	xfs) mkfs.xfs -q -f "$img" ;;
	esac
}

# Counts a meson test log and the clang check: "passed failed skipped".
count() {
	python3 - "$1/testlog.json" "$1/clang.result" <<'PY'
import json, os, sys
p = f = s = 0
if os.path.exists(sys.argv[1]):
    for line in open(sys.argv[1]):
        r = json.loads(line).get("result", "")
        if r in ("OK", "EXPECTEDFAIL"): p += 1
        elif r == "SKIP": s += 1
        else: f += 1
if os.path.exists(sys.argv[2]):
    first = open(sys.argv[2]).read().strip().splitlines()[-1:] or [""]
    if first[0] == "ok": p += 1
    elif first[0].startswith("skipped"): s += 1
    else: f += 1
print(p, f, s)
PY
}

job_env() {
	local out=$1 kernel=$2 thp=$3 fs=$4 sel=none guest_path
	# pyenv's shims run a shell script per python3 start: slow over 9p.
	guest_path=$(tr ':' '\n' <<<"$PATH" | grep -v pyenv | paste -sd:)
	if [ "$suite" = 1 ]; then
		sel="${meson_sel[*]:---no-suite fuzz}"
	fi
	cat >"$out/job.env" <<EOF
HT_SRC='$src'
HT_BUILD='$build'
HT_THP='$thp'
HT_FS='$fs'
HT_STAGE='$out/stage'
HT_HARNESS='$here'
HT_KERNEL_LABEL='$kernel'
HT_MESON_ARGS='$sel'
HT_CLANG='$([ ${#meson_sel[@]} -eq 0 ] && echo 1 || echo 0)'
HT_PROBE='$probe'
HT_PATH='$guest_path'
EOF
	printf 'HT_CMD=%q\n' "$cmd" >>"$out/job.env"
}

run_guest() {
	local kernel=$1 thp=$2 fs=$3 out=$4 kdir vmlinuz initrd
	kdir=$(kernel_dir "$kernel") || return 1
	vmlinuz=$(ls "$kdir"/boot/vmlinuz-* | head -1)
	initrd=$(initramfs "$kdir") || return 1
	make_disk "$out/disk.img" "$fs" || return 1
	job_env "$out" "$kernel" "$thp" "$fs"
	# /dev/kvm here is paravirtual and boots no stock kernel: TCG.
	timeout 5400 qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 4G \
		-nographic -monitor none -no-reboot \
		-kernel "$vmlinuz" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 loglevel=4 transparent_hugepage=$thp" \
		-virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap \
		-virtfs "local,path=$out,mount_tag=out,security_model=none,multidevs=remap" \
		-drive "file=$out/disk.img,format=raw,if=virtio,cache=unsafe" </dev/null 2>&1 |
		tee "$out/console.log"
	rm -rf "$out/disk.img" "$out/stage"
}

# The host's kernel: the disk image on a loop device, mounted over the
# project's paths in a private mount namespace; THP set and put back.
run_host() {
	local thp=$1 fs=$2 out=$3 thp_file=/sys/kernel/mm/transparent_hugepage/enabled old loop mnt
	make_disk "$out/disk.img" "$fs" || return 1
	job_env "$out" host "$thp" "$fs"
	loop=$(losetup -f --show "$out/disk.img") || return 1
	mnt=$(mktemp -d)
	old=$(sed 's/.*\[\(.*\)\].*/\1/' "$thp_file")
	HT_LOOP=$loop HT_MNT=$mnt HT_OUT=$out HT_CMD=$cmd unshare --mount --propagation private bash -c '
		. "$HT_OUT/job.env"
		mount "$HT_LOOP" "$HT_MNT" || exit 1
		# The shared cache wants a hugetlbfs mount, as systemd makes on Debian:
		# one in this namespace only.
		grep -q " hugetlbfs " /proc/self/mounts ||
			{ mkdir -p "$HT_MNT/hugepages" && mount -t hugetlbfs hugetlbfs "$HT_MNT/hugepages"; }
		if [ "$HT_FS" = xfs ]; then cp -a "$HT_STAGE/." "$HT_MNT/"; fi
		mkdir -p "$HT_MNT/tmp" && chmod 1777 "$HT_MNT/tmp" && sync
		python3 -c "import os,sys
for r, d, f in os.walk(sys.argv[1]):
    for n in f:
        p = os.path.join(r, n)
        if os.path.isfile(p) and not os.path.islink(p):
            fd = os.open(p, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)" "$HT_MNT"
		mount --bind "$HT_MNT/src" "$HT_SRC" && mkdir -p "$HT_BUILD" &&
			mount --bind "$HT_MNT/build" "$HT_BUILD" || exit 1
		HT_OUT=$HT_OUT TMPDIR=$HT_MNT/tmp HT_SRC=$HT_SRC HT_BUILD=$HT_BUILD HT_THP=$HT_THP HT_FS=$HT_FS \
			HT_KERNEL_LABEL=host HT_MESON_ARGS="$HT_MESON_ARGS" HT_PROBE=$HT_PROBE HT_CLANG=$HT_CLANG HT_CMD="$HT_CMD" \
			bash "$HT_HARNESS/guest.sh"
		echo $? >"$HT_OUT/rc"' 2>&1 | tee "$out/console.log"
	echo "$old" >"$thp_file"
	losetup -d "$loop"
	rmdir "$mnt"
	rm -rf "$out/disk.img" "$out/stage"
}

# The source's commit, and whether it had uncommitted changes.
commit_of() {
	local c
	c=$(git -C "$1" rev-parse --short=7 HEAD 2>/dev/null) || { echo unknown; return 0; }
	git -C "$1" diff --quiet HEAD -- 2>/dev/null || c="$c with uncommitted changes"
	echo "$c"
}

failed=0
summary=()
[ "$runs" = 1 ] || kernels=
[ -z "$kernels" ] || { need_packages && ensure_build; }
for kernel in $kernels; do
	for fs in $fss; do
		for thp in $thps; do
			out=$cache/runs/$kernel-$fs-$thp
			rm -rf "$out"
			mkdir -p "$out"
			echo "matrix: kernel $kernel, $fs, THP $thp (output in $out)"
			# The commit the run tested, for the doc's rows.
			commit_of "$src" >"$out/commit"
			if [ "$kernel" = host ]; then
				run_host "$thp" "$fs" "$out"
			else
				run_guest "$kernel" "$thp" "$fs" "$out"
			fi
			read -r p f s < <(count "$out")
			rc=$(cat "$out/rc" 2>/dev/null || echo "none")
			line="matrix: $kernel $fs $thp: $p passed, $f failed, $s skipped"
			[ "$suite" = 1 ] || line="$line (no suite: probe only)"
			if [ "$rc" = none ]; then
				line="$line (the run did not finish)"
				failed=1
			fi
			[ "$f" -eq 0 ] && [ "$rc" = 0 ] || failed=1
			summary+=("$line")
			echo "$line"
		done
	done
done
# The doc keeps the rows of configurations not in the cache from its last
# version, marked as such.
if [ "$doc" = 1 ]; then
	label="earlier run, as of $(git -C "$repo" log -1 --format=%h -- docs/kernels.md 2>/dev/null || echo '?')"
	python3 "$here/kernels-doc.py" --keep "$repo/docs/kernels.md" "$label" "$cache/runs" >"$repo/docs/kernels.md.tmp" &&
		mv "$repo/docs/kernels.md.tmp" "$repo/docs/kernels.md" && echo "matrix: wrote docs/kernels.md"
fi
printf '%s\n' "${summary[@]}"
exit "$failed"
