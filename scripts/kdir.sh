#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Print the kernel build directory krep.ko is built against.
#
#   scripts/kdir.sh          the running kernel's build dir when it has one,
#                            else the VM kernel's headers (below)
#   scripts/kdir.sh --vm     headers of the newest Debian kernel under /usr/src
#                            that has a matching /boot/vmlinuz (the VM kernel)
#   scripts/kdir.sh --vm-version   that kernel's version string
set -eu

vm_version() {
	for k in $(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -rV); do
		v=${k#/boot/vmlinuz-}
		if [ -f "/usr/src/linux-headers-$v/Makefile" ]; then
			echo "$v"
			return 0
		fi
	done
	echo "kdir.sh: no /boot/vmlinuz-* with headers in /usr/src;" \
	     "run scripts/deps.sh" >&2
	return 1
}

case "${1:-}" in
--vm-version)
	vm_version ;;
--vm)
	echo "/usr/src/linux-headers-$(vm_version)" ;;
"")
	b="/lib/modules/$(uname -r)/build"
	if [ -f "$b/Makefile" ]; then
		echo "$b"
	else
		echo "/usr/src/linux-headers-$(vm_version)"
	fi ;;
*)
	echo "usage: kdir.sh [--vm|--vm-version]" >&2
	exit 2 ;;
esac
