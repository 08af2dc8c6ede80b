#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mkinitrd.sh - build (or reuse) the initramfs of the krep test VM.
#
# Usage: selftests/vm/mkinitrd.sh [--force] [--outdir DIR] KVER
#
# The image holds busybox-static, selftests/vm/init as /init and the modules
# needed to reach the host root over 9p (virtio, 9p, overlay), resolved with
# `modprobe -S KVER --show-depends` and stored uncompressed because busybox
# insmod only takes plain .ko files. It is cached as DIR/initrd-KVER.cpio.gz
# (DIR defaults to build/vm in the repo) and rebuilt when the kernel version,
# this script, the init script, busybox or the module tree changes. Prints
# the path of the image on stdout.

set -eu -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
root=$(cd "$here/../.." && pwd -P)
outdir=$root/build/vm
force=0

# Modules the guest needs before it can mount the host root, in load order
# once their dependencies are resolved.
modules="virtio_pci 9pnet_virtio 9p overlay"

usage() {
	echo "usage: $0 [--force] [--outdir DIR] KVER" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--force) force=1; shift ;;
	--outdir) [ $# -ge 2 ] || usage; outdir=$2; shift 2 ;;
	-h|--help) usage ;;
	--) shift; break ;;
	-*) usage ;;
	*) break ;;
	esac
done
[ $# -eq 1 ] || usage
kver=$1

die() {
	echo "mkinitrd.sh: $*" >&2
	exit 1
}

[ -d "/lib/modules/$kver" ] || die "no /lib/modules/$kver"
busybox=$(command -v busybox) || die "busybox not found (apt-get install busybox-static)"
busybox=$(readlink -f "$busybox")
# A dynamically linked busybox would need its libraries in the image.
if command -v file >/dev/null 2>&1 && ! file -L "$busybox" | grep -q 'statically linked'; then
	die "$busybox is not static (apt-get install busybox-static)"
fi

# Everything the image depends on goes into the cache key.
key=$({
	echo "kver=$kver"
	sha256sum "$here/mkinitrd.sh" "$here/init" | cut -d' ' -f1
	stat -L -c '%s %Y' "$busybox" "/lib/modules/$kver/modules.dep"
} | sha256sum | cut -d' ' -f1)

image=$outdir/initrd-$kver.cpio.gz
stamp=$image.key

if [ "$force" = 0 ] && [ -f "$image" ] && [ -f "$stamp" ] &&
   [ "$(cat "$stamp")" = "$key" ]; then
	echo "$image"
	exit 0
fi

mkdir -p "$outdir"
staging=$(mktemp -d "$outdir/.initrd.XXXXXX")
trap 'rm -rf "$staging"' EXIT

tree=$staging/root
mkdir -p "$tree"/bin "$tree"/sbin "$tree"/usr/bin "$tree"/usr/sbin \
	"$tree"/dev "$tree"/proc "$tree"/sys "$tree"/mnt "$tree"/modules \
	"$tree"/etc "$tree"/root "$tree"/tmp

cp "$busybox" "$tree/bin/busybox"
# One symlink per applet, except modprobe: /sbin/modprobe is the kernel's
# usermode helper for request_module() and must run the host's modprobe
# inside the new root (init writes that wrapper).
"$busybox" --list-full | while read -r applet; do
	case $applet in
	*/modprobe|bin/busybox) continue ;;
	esac
	[ -e "$tree/$applet" ] || ln -s /bin/busybox "$tree/$applet"
done

cp "$here/init" "$tree/init"
chmod 755 "$tree/init"

# Resolve dependencies; keep the first occurrence of every module.
: >"$tree/modules/load.list"
for m in $modules; do
	modprobe -S "$kver" --show-depends "$m" ||
		die "modprobe -S $kver --show-depends $m failed"
done | while read -r verb path _; do
	[ "$verb" = insmod ] || continue # "builtin foo": nothing to load
	name=$(basename "$path")
	name=${name%.xz}
	name=${name%.zst}
	name=${name%.gz}
	[ -e "$tree/modules/$name" ] && continue
	case $path in
	*.ko.xz) xz -dc "$path" >"$tree/modules/$name" ;;
	*.ko.zst) zstd -q -dc "$path" >"$tree/modules/$name" ;;
	*.ko.gz) gzip -dc "$path" >"$tree/modules/$name" ;;
	*.ko) cp "$path" "$tree/modules/$name" ;;
	*) die "unexpected module file $path" ;;
	esac
	echo "$name" >>"$tree/modules/load.list"
done
[ -s "$tree/modules/load.list" ] || die "no modules resolved for $kver"
echo "$kver" >"$tree/etc/krep-vm-kver"

(cd "$tree" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --owner=0:0 --quiet) | gzip -6 >"$staging/image"

mv -f "$staging/image" "$image"
echo "$key" >"$stamp.tmp" && mv -f "$stamp.tmp" "$stamp"
echo "$image"
