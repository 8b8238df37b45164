#!/bin/sh
# tests/sweep/sandbox.sh SHARE PRELOAD_FILE SECONDS PROGRAM [ARGS...]
#
# Runs PROGRAM once in a throw-away sandbox; sweep.py starts it as
#   unshare --mount --pid --fork --net --uts --ipc --kill-child sandbox.sh ...
# so this script is process 1 of a new pid namespace, and every process the
# program leaves behind dies with it.
#
# The program sees: the root file system read-only; a private tmpfs /tmp
# with HOME=/tmp/home; a /dev of a few harmless character devices; its own
# /proc (with /proc/sys read-only) and a read-only /sys; SHARE (a host
# directory: the preload and the report files) at /srv.  /etc is an overlay
# whose upper layer is private, so /etc/ld.so.preload can be written for
# this run alone: PRELOAD_FILE is its content, or "-" for no file.  Every
# run gets the same sandbox, whether the preload is in it or not.
#
# The environment is the caller's (sweep.py passes a fixed one); the
# program runs with dangerous capabilities removed from its bounding set,
# stdin as given (/dev/null), and is killed after SECONDS (status 137).
set -eu

share=$1 ldso=$2 secs=$3
shift 3

# Scratch space, in this mount namespace only (nothing left on the host).
top=/media
mount -t tmpfs -o mode=755 sweep "$top"
mkdir "$top/root" "$top/upper" "$top/work"
r=$top/root

# The root file system alone (not its sub-mounts), read-only.
mount --bind / "$r"
mount -o remount,ro,bind "$r"

# /etc read-only too, with a private upper layer for ld.so.preload.
if [ "$ldso" != - ]; then
	printf '%s\n' "$ldso" > "$top/upper/ld.so.preload"
fi
mount -t overlay sweep-etc -o "ro,lowerdir=/etc,upperdir=$top/upper,workdir=$top/work" "$r/etc"

mount -t tmpfs -o mode=1777 sweep-tmp "$r/tmp"
mkdir -m 700 "$r/tmp/home"

# A /dev without disks, memory or the console.
mount -t tmpfs -o mode=755 sweep-dev "$r/dev"
for n in null zero full random urandom tty; do
	touch "$r/dev/$n"
	mount --bind "/dev/$n" "$r/dev/$n"
done
mkdir "$r/dev/shm" "$r/dev/pts"
mount -t tmpfs -o mode=1777 sweep-shm "$r/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$r/dev/pts"
ln -s pts/ptmx "$r/dev/ptmx"
ln -s /proc/self/fd "$r/dev/fd"
ln -s /proc/self/fd/0 "$r/dev/stdin"
ln -s /proc/self/fd/1 "$r/dev/stdout"
ln -s /proc/self/fd/2 "$r/dev/stderr"

mount -t proc proc "$r/proc"
for p in sys sysrq-trigger; do
	[ -e "$r/proc/$p" ] || continue
	mount --bind "$r/proc/$p" "$r/proc/$p"
	mount -o remount,ro,bind "$r/proc/$p"
done
mount -t sysfs -o ro sysfs "$r/sys" 2>/dev/null || true

mount --bind "$share" "$r/srv"

hostname sandbox

# Capabilities that reach past the namespaces (modules, reboot, clock,
# raw devices, mounts, kernel log) are gone for the program.
drop=-sys_module,-sys_boot,-sys_time,-sys_rawio,-sys_admin,-syslog,-wake_alarm,-mac_admin,-mac_override
exec chroot "$r" setpriv --bounding-set "$drop" -- \
	timeout -s KILL "$secs" "$@"
