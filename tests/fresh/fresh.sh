#!/bin/bash
# The fresh-machine check: the README's two commands, verbatim, as a new
# user runs them on a fresh Debian 12 machine as root, with the clone in
# root's home directory.
#
#   tests/fresh/fresh.sh [--tmp disk,tmpfs] [--only demo|test] [--keep]
#
# A Debian 12 root made by debootstrap (bookworm, default variant, as
# pristine as debootstrap leaves it; cached as a tarball) is unpacked anew
# for each run; this repository's HEAD is cloned into its /root/hugetext
# (root's home is mode 700 there, as on Debian); then, in a mount
# namespace of its own with / a mount point, proc, sys, devtmpfs, devpts,
# tmpfs on /run (mode 755, as systemd mounts it) and /dev/shm, and /tmp
# on the root's disk or on a tmpfs, the README's commands run in a chroot,
# each verbatim, from the clone, with a login's bare environment: on the
# first root the demo command and then the test command; on the next, the
# test command alone (a user who skips the demo).
#
# Only what reaches Debian's archive comes from this machine: its package
# sources, its apt Acquire settings for the archive (dates) and its
# resolv.conf.  The .deb files that apt downloads are kept between runs
# (HT_FRESH_CACHE/archives, bind-mounted on the root's
# /var/cache/apt/archives): the README's own apt-get command still installs
# every package, it only downloads less.  Nothing else is cached.
#
# Then, once (with /tmp on the first of --tmp's kinds), every other command
# the README shows, in the order a new user takes them: one program under
# the preload, doctor, status, measure, the Debian package, the machine's
# /etc/ld.so.preload, and a container that asks (in an image made there
# from the root's own cat and its libraries, with this VM kind's Podman
# settings, Podman installed first where the test command has not; its
# maps must show the preload).  A ```sh block of the README
# that names none of these steps fails the check: every command it shows
# runs here.  --only readme runs only these (after the demo command's
# build).
#
# Prints, for each /tmp, one line per command with its exit status (and
# the suite's counts), and last "fresh: N passed, N failed, N skipped":
# each command that exited 0 is one pass, each that did not one failure,
# plus the suite's own counts.  Exits non-zero when anything failed.
# Needs root; takes 8-15 minutes a run (the first one downloads).
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${HT_FRESH_CACHE:-/var/cache/hugetext-fresh}
tmps="disk tmpfs" only= keep=0

die() {
	echo "fresh: $*" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--tmp) tmps=${2//,/ }; shift ;;
	--only) only=$2; shift ;;
	--keep) keep=1 ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
	shift
done
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mounts)"
for t in $tmps; do
	case $t in disk | tmpfs) ;; *) die "--tmp takes disk and tmpfs, not $t" ;; esac
done
case $only in '' | demo | test | readme) ;; *) die "--only takes demo, test or readme" ;; esac

# The README's command after the line "<!-- NAME -->", as .ci/run reads it.
readme_command() {
	awk -v tag="<!-- $1 -->" '$0 == tag {grab=1; next} grab && /^```sh/ {inside=1; next}
		inside && /^```/ {exit} inside {print}' "$repo/README.md"
}
demo_cmd=$(readme_command demo-command)
test_cmd=$(readme_command test-command)
[ -n "$demo_cmd" ] && [ -n "$test_cmd" ] || die "README.md has no demo-command or test-command"

# The README's other commands, in the order they run here (a user's order:
# the package before the line that names its preload, the container last).
readme_steps="program doctor status measure deb machine container"
# Every ```sh block of the README must be one of the steps run here.
untagged=$(awk 'prev !~ /^<!-- [a-z]+-command -->$/ && /^```sh/ {print NR} {prev = $0}' "$repo/README.md")
[ -z "$untagged" ] && tags=$(grep -o '^<!-- [a-z]*-command -->$' "$repo/README.md" | sed 's/<!-- \(.*\)-command -->/\1/')
for t in ${tags:-}; do
	case " demo test $readme_steps " in *" $t "*) ;; *) untagged="${untagged} $t" ;; esac
done
[ -z "$untagged" ] || die "README.md shows commands this check does not run (lines or tags: $untagged)"

# The container step: an image of the root's own cat, made there, with the
# Podman settings this VM kind needs (issue 37: cgroupfs, no default
# ulimits, runc), then the README's command with IMAGE CMD standing for it;
# the container's maps must show the preload.
container_step() {
	local readme=$1
	cat <<EOS
set -e
command -v podman > /dev/null || apt-get install -y -q podman runc > /dev/null
mkdir -p /etc/containers
printf '[containers]\\ndefault_ulimits = []\\n[engine]\\ncgroup_manager = "cgroupfs"\\nruntime = "runc"\\nevents_logger = "file"\\n' > /etc/containers/containers.conf
d=\$(mktemp -d)
for f in /bin/cat \$(ldd /bin/cat | grep -o '/[^ ]*'); do mkdir -p \$d\$(dirname \$f); cp -L \$f \$d\$f; done
mkdir -p \$d/etc \$d/proc \$d/run
tar -C \$d -cf \$d.tar . && podman import -q \$d.tar localhost/hugetext-fresh:1 > /dev/null
out=\$(${readme//IMAGE CMD/--rm localhost/hugetext-fresh:1 /bin/cat /proc/self/maps})
echo "\$out" | grep -F /run/hugetext/libhugetext-preload.so
EOS
}

# The pristine root, made once.  debootstrap needs only Debian's archive.
pristine=$cache/bookworm-debootstrap.tar
make_pristine() {
	local dir=$cache/debootstrap.tmp
	export DEBIAN_FRONTEND=noninteractive
	command -v debootstrap > /dev/null || apt-get install -y -q debootstrap > /dev/null ||
		die "cannot install debootstrap"
	rm -rf "$dir"
	echo "fresh: debootstrap bookworm (once; cached in $pristine)"
	debootstrap bookworm "$dir" http://deb.debian.org/debian > "$cache/debootstrap.log" 2>&1 ||
		die "debootstrap failed; see $cache/debootstrap.log"
	tar -C "$dir" -cf "$pristine.tmp" . && mv "$pristine.tmp" "$pristine" || die "cannot write $pristine"
	rm -rf "$dir"
}

# What lets the root reach Debian's archive as this machine does.
configure_apt() {
	local root=$1
	cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
	if ls /etc/apt/sources.list.d/*.sources > /dev/null 2>&1 || [ -s /etc/apt/sources.list ]; then
		rm -f "$root/etc/apt/sources.list"
		cp /etc/apt/sources.list "$root/etc/apt/" 2>/dev/null
		cp /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list "$root/etc/apt/sources.list.d/" 2>/dev/null
	fi
	apt-config dump Acquire::Check-Valid-Until Acquire::Check-Date |
		grep -E '^Acquire::Check-(Valid-Until|Date) ' > "$root/etc/apt/apt.conf.d/00fresh-archive"
}

# Runs one README command in the root; its output goes to LOG.
in_root() {
	local root=$1 tmp=$2 cmd=$3 log=$4
	unshare --mount --propagation private bash -s "$root" "$tmp" "$cmd" "$cache/archives" "${CGROUPS:-0}" > "$log" 2>&1 <<'EOF'
set -e
root=$1 tmp=$2 cmd=$3 archives=$4 cgroups=$5
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
# Podman's containers need the cgroups (the README's container step only).
[ "$cgroups" = 1 ] && mount --rbind /sys/fs/cgroup "$root/sys/fs/cgroup"
mount -t devtmpfs devtmpfs "$root/dev"
mkdir -p "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"
mount -t tmpfs -o mode=755 tmpfs "$root/run"
mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
[ "$tmp" = tmpfs ] && mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
mount --bind "$archives" "$root/var/cache/apt/archives"
set +e
cd "$root"
exec chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM=dumb \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
	/bin/bash -c 'cd /root/hugetext && bash -c "$1"' bash "$cmd"
EOF
}

# Ends what a command left running in the root (a package's postinst may
# start its server there, as on a real machine): before the next command,
# and before the root is removed.
stop_in_root() {
	local root=$1 pid
	for pid in $(ls /proc | grep -E '^[0-9]+$'); do
		[ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$root" ] && kill -9 "$pid" 2>/dev/null
	done
	sleep 1
}

# The suite's counts from meson's log, "passed failed skipped", then one
# line per skipped or failed test with its name (and a skip's own reason).
suite_counts() {
	python3 "$here/../testlog-counts.py" "$1" --notes
}

mkdir -p "$cache/archives/partial" || die "cannot make $cache"
[ -f "$pristine" ] || make_pristine
[ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ] &&
	echo "fresh: note: the work tree has uncommitted changes; the check clones HEAD"

pass=0 fail=0 skip=0
for tmp in $tmps; do
	root=$cache/root-$tmp
	rm -rf "$root" && mkdir -p "$root" && tar -C "$root" -xf "$pristine" || die "cannot unpack $pristine"
	configure_apt "$root"
	git clone -q "$repo" "$root/root/hugetext" || die "cannot clone $repo"
	for which in demo test; do
		[ -n "$only" ] && [ "$only" != "$which" ] && continue
		# The first root runs the demo, then the tests, as the README has
		# them; the next runs the test command alone on a new root, as a
		# user who skips the demo does (and saves CI the demo's 4 minutes).
		[ -z "$only" ] && [ $which = demo ] && [ "$tmp" != "${tmps%% *}" ] && continue
		[ $which = demo ] && cmd=$demo_cmd || cmd=$test_cmd
		log=$cache/$tmp-$which.log
		start=$(date +%s)
		in_root "$root" "$tmp" "$cmd" "$log"
		rc=$?
		stop_in_root "$root"
		took=$(($(date +%s) - start))
		counts=
		if [ $which = test ]; then
			mkdir -p "$cache/logs-$tmp"
			cp "$root/root/hugetext/build/meson-logs/testlog."* "$cache/logs-$tmp/" 2>/dev/null
			suite_counts "$root/root/hugetext/build/meson-logs/testlog.json" > "$cache/$tmp-counts.txt"
			read -r p f s < "$cache/$tmp-counts.txt"
			counts="; the suite: $p passed, $f failed, $s skipped"
			pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
			# Each skip with its reason, so that the log says which limits they are.
			sed '1d' "$cache/$tmp-counts.txt" | sed "s/^/fresh: $tmp: /"
		else
			# The demo's summary, as the user sees it.
			sed -n '/^median/,$p' "$log" | sed "s/^/fresh: $tmp: demo: /"
		fi
		if [ $rc -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
		echo "fresh: /tmp on $tmp: the $which command exited $rc in ${took}s$counts (log: $log)"
		[ $rc -ne 0 ] && tail -20 "$log" | sed "s/^/fresh: $tmp: | /"
	done
	if [ "$tmp" = "${tmps%% *}" ] && { [ -z "$only" ] || [ "$only" = readme ]; }; then
		if [ "$only" = readme ]; then
			in_root "$root" "$tmp" "$demo_cmd" "$cache/$tmp-demo.log" || die "the demo command failed (see $cache/$tmp-demo.log)"
			stop_in_root "$root"
		fi
		for step in $readme_steps; do
			cmd=$(readme_command "$step-command")
			[ "$step" = container ] && cmd=$(container_step "$cmd")
			log=$cache/$tmp-$step.log
			start=$(date +%s)
			CGROUPS=$([ "$step" = container ] && echo 1 || echo 0) in_root "$root" "$tmp" "$cmd" "$log"
			rc=$?
			stop_in_root "$root"
			if [ $rc -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
			echo "fresh: /tmp on $tmp: the README's $step command exited $rc in $(($(date +%s) - start))s (log: $log)"
			[ $rc -ne 0 ] && tail -20 "$log" | sed "s/^/fresh: $tmp: | /"
		done
	fi
	[ $keep = 1 ] || rm -rf "$root"
done
echo "fresh: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
