#!/bin/sh
# Installs hugetext's OCI hook on a Kubernetes node, from the DaemonSet's
# image (deploy/kubernetes/hugetext.yaml runs it in an init container with
# the node's directories mounted under $HOST).  The node needs nothing of
# ours beforehand, not even our libraries: the hook is the image's
# hugetext with its own loader and libraries, in $PREFIX/<version>/, run
# as "ld.so --library-path $PREFIX/current/lib hugetext oci-hook".
#
#   install.sh            install, or replace what an older image put there
#   install.sh remove     take the hook out (its hooks.d file first), then the files
#
# Environment (defaults for the DaemonSet):
#   HOST       where the node's root is mounted ("" on the node itself)
#   PREFIX     the node's directory for the hook (/opt/hugetext)
#   HOOKS_DIR  the node's hooks.d directory that CRI-O reads
#              (/usr/share/containers/oci/hooks.d)
#   HUGETEXT   the command to install (/usr/bin/hugetext)
#   PRELOAD    the preload to install (the libdir's libhugetext-preload.so)
#   CONFIG     the policy file the hook follows (/etc/hugetext/hugetext.conf,
#              the DaemonSet's ConfigMap); absent: the defaults
#
# Every step is atomic for the runtime: the files go to a new versioned
# directory, then the "current" link is renamed over, then the hooks.d
# file is: a container created meanwhile runs the old hook or the new one.
set -eu
HOST=${HOST-/host}
PREFIX=${PREFIX:-/opt/hugetext}
HOOKS_DIR=${HOOKS_DIR:-/usr/share/containers/oci/hooks.d}
HUGETEXT=${HUGETEXT:-/usr/bin/hugetext}
CONFIG=${CONFIG:-/etc/hugetext/hugetext.conf}
hook="$HOST$HOOKS_DIR/50-hugetext.json"
dest="$HOST$PREFIX"

if [ "${1:-install}" = remove ]; then
	rm -f "$hook"
	rm -rf "$dest"
	echo "hugetext: the OCI hook is removed from $HOOKS_DIR and $PREFIX"
	exit 0
fi

if [ -z "${PRELOAD:-}" ]; then
	for p in /usr/lib/*/libhugetext-preload.so /usr/lib/libhugetext-preload.so /usr/local/lib/*/libhugetext-preload.so; do
		[ -f "$p" ] && PRELOAD=$p && break
	done
fi
[ -f "${PRELOAD:-}" ] || { echo "hugetext: no libhugetext-preload.so in the image" >&2; exit 1; }
loader=
for l in /lib64/ld-linux-x86-64.so.2 /lib/ld-linux-aarch64.so.1; do
	[ -e "$l" ] && loader=$l && break
done
[ -n "$loader" ] || { echo "hugetext: no glibc loader in the image" >&2; exit 1; }

# The version: the contents' checksum, so that a new image makes a new directory.
version=$(cat "$HUGETEXT" "$PRELOAD" | sha256sum | cut -c1-16)
new="$dest/$version"
mkdir -p "$dest"
rm -rf "$new.tmp"
mkdir -p "$new.tmp/bin" "$new.tmp/lib"
cp "$HUGETEXT" "$new.tmp/bin/hugetext"
cp "$PRELOAD" "$new.tmp/lib/libhugetext-preload.so"
cp -L "$loader" "$new.tmp/lib/"
for lib in $(ldd "$HUGETEXT" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'); do
	cp -L "$lib" "$new.tmp/lib/"
done
if [ -f "$CONFIG" ]; then
	cp "$CONFIG" "$new.tmp/hugetext.conf"
else
	: > "$new.tmp/hugetext.conf"
fi
# The hook checks that only root may write the preload it mounts into containers.
chown -R 0:0 "$new.tmp"
chmod -R u=rwX,go=rX "$new.tmp"
rm -rf "$new"
mv "$new.tmp" "$new"
ln -sfn "$version" "$dest/current.tmp"
mv -T "$dest/current.tmp" "$dest/current"

cur="$PREFIX/current"
mkdir -p "$HOST$HOOKS_DIR"
cat > "$hook.tmp" <<JSON
{
  "version": "1.0.0",
  "hook": {
    "path": "$cur/lib/$(basename "$loader")",
    "args": ["hugetext", "--library-path", "$cur/lib", "$cur/bin/hugetext", "oci-hook",
             "--preload", "$cur/lib/libhugetext-preload.so", "--config", "$cur/hugetext.conf"],
    "timeout": 30
  },
  "when": {
    "always": true
  },
  "stages": ["createRuntime", "poststop"]
}
JSON
chmod 0644 "$hook.tmp"
mv "$hook.tmp" "$hook"
# Older versions no process runs any more.
for d in "$dest"/*; do
	[ -d "$d" ] && [ ! -L "$d" ] && [ "$(basename "$d")" != "$version" ] && rm -rf "$d"
done
mkdir -p "$HOST/run/hugetext"
echo "hugetext: the OCI hook $version is installed in $PREFIX and $HOOKS_DIR"
