#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Extract the few kernel-source files the build uses (kselftest_harness.h,
# checkpatch.pl and its data files) from Debian's linux-source-6.1 into
# build/linux-tools/, once. They are never committed.
set -eu
out=${1:-build/linux-tools}
tarball=$(ls -1 /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n1 || true)
stamp="$out/.extracted"

[ -f "$stamp" ] && exit 0
if [ -z "$tarball" ]; then
	echo "kernel-tools.sh: /usr/src/linux-source-6.1.tar.* missing;" \
	     "run scripts/deps.sh" >&2
	exit 1
fi
top=$(basename "$tarball" | sed 's/\.tar\..*//')
tmp="$out.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
tar -xf "$tarball" -C "$tmp" \
	"$top/tools/testing/selftests/kselftest_harness.h" \
	"$top/tools/testing/selftests/kselftest.h" \
	"$top/scripts/checkpatch.pl" \
	"$top/scripts/spelling.txt" \
	"$top/scripts/const_structs.checkpatch"
mkdir -p "$out"
mv "$tmp/$top/tools/testing/selftests/kselftest_harness.h" \
   "$tmp/$top/tools/testing/selftests/kselftest.h" "$out/"
mv "$tmp/$top/scripts/checkpatch.pl" "$tmp/$top/scripts/spelling.txt" \
   "$tmp/$top/scripts/const_structs.checkpatch" "$out/"
rm -rf "$tmp"
touch "$stamp"
