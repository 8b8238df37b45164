#!/bin/bash
# The kernel matrix: runs the test suite (minus fuzz), the clang check, the
# probe of the library's path and the zero-configuration check (zeroconf.sh:
# the shipped configuration, the preload and `hugetext serve`; clang++ in it
# with the clang check only) on the kernels Debian 12 users run,
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
# (commit), and zeroconf.result.  Prints one line per run,
# "matrix: KERNEL FS THP: N passed, N failed, N skipped", and exits
# non-zero when any test failed or a run did not finish.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
src=$repo
cache=${HT_KERNEL_CACHE:-/var/cache/hugetext-kernels}
ht_name=matrix ht_arch=amd64
# shellcheck source=tests/kernel/lib.sh
. "$here/lib.sh"
kernels=6.1 thps=always fss=ext4
build= probe=1 suite=1 doc=0 meson_sel=() cmd= runs=1
# --doc alone runs nothing: it only writes the doc.
[ "$*" = --doc ] && runs=0

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
	install_packages "${missing[@]}"
}

# The project's build: the given one, or one under the cache from this tree.
ensure_build() {
	if [ -z "$build" ]; then
		build=$cache/build
		[ -f "$build/build.ninja" ] || meson setup "$build" "$src" >/dev/null || die "meson setup failed"
	fi
	ninja -C "$build" >/dev/null || die "the build in $build fails"
	# The guest needs the source this build was set up from, at its path.
	src=$(source_of "$build") || die "$build is not a meson build dir"
}

# The guest's settings (tests/kernel/init and guest.sh read them).
matrix_job_env() {
	local out=$1 kernel=$2 thp=$3 fs=$4 sel=none guest_path
	# pyenv's shims run a shell script per python3 start: slow over 9p.
	guest_path=$(tr ':' '\n' <<<"$PATH" | grep -v pyenv | paste -sd:)
	if [ "$suite" = 1 ]; then
		sel="${meson_sel[*]:---no-suite fuzz}"
	fi
	job_env "$out" HT_SRC="$src" HT_BUILD="$build" HT_THP="$thp" HT_FS="$fs" HT_STAGE="$out/stage" \
		HT_HARNESS="$here" HT_KERNEL_LABEL="$kernel" HT_MESON_ARGS="$sel" \
		HT_CLANG="$([ ${#meson_sel[@]} -eq 0 ] && echo 1 || echo 0)" HT_REAL= HT_PROBE="$probe" \
		HT_PATH="$guest_path" HT_CMD="$cmd"
}

run_guest() {
	local kernel=$1 thp=$2 fs=$3 out=$4 kdir vmlinuz initrd
	kdir=$(kernel_dir "$kernel") || return 1
	vmlinuz=$(ls "$kdir"/boot/vmlinuz-* | head -1)
	# crc32c first: ext4 and XFS ask the crypto API for it, which would
	# need modprobe to load it.
	initrd=$(initramfs "$kdir" /bin/busybox crc32c_intel crc32c_generic virtio_pci virtio_blk \
		9pnet_virtio 9p overlay ext4 xfs) || return 1
	make_disk "$out/disk.img" "$fs" "$out/stage" "$src" "$build" || return 1
	matrix_job_env "$out" "$kernel" "$thp" "$fs"
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
	make_disk "$out/disk.img" "$fs" "$out/stage" "$src" "$build" || return 1
	matrix_job_env "$out" host "$thp" "$fs"
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

# One configuration (run_configs, lib.sh, runs every one).
run_config() {
	if [ "$1" = host ]; then
		run_host "$2" "$3" "$4"
	else
		run_guest "$@"
	fi
}

failed=0
[ "$runs" = 1 ] || kernels=
[ -z "$kernels" ] || { need_packages && ensure_build; }
[ "$suite" = 1 ] || ht_line_note=" (no suite: probe only)"
run_configs "$cache/runs"
# The doc keeps the rows of configurations not in the cache from its last
# version, marked as such.
if [ "$doc" = 1 ]; then
	label="earlier run, as of $(git -C "$repo" log -1 --format=%h -- docs/kernels.md 2>/dev/null || echo '?')"
	python3 "$here/kernels-doc.py" --keep "$repo/docs/kernels.md" "$label" "$cache/runs" >"$repo/docs/kernels.md.tmp" &&
		mv "$repo/docs/kernels.md.tmp" "$repo/docs/kernels.md" && echo "matrix: wrote docs/kernels.md"
fi
exit "$failed"
