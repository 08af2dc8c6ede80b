#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# log_genl.sh - one broker's partition logs and watermarks over raw generic
# netlink: runs log_test (kselftest harness, KTAP) with krep.ko loaded with
# a 1 MiB log memory cap, then unloads the module.
#
#   initial netns                     one netns per log_test test
#   +-----------------------------+   +----------------------------------+
#   | krep.ko                     |   | broker 1 (RF=3 tests: peers 2    |
#   |   log_memory_max=1048576    |   | and 3 at 192.0.2.x, never there) |
#   | (the cap is per broker)     |   | topics, PRODUCE/FETCH/TXN/...    |
#   +-----------------------------+   | parked requests in child procs   |
#                                     +----------------------------------+
#
# log_test's output is this suite's KTAP. Afterwards the module must unload
# and the kernel log must show no leak, WARNING, BUG or oops; a failure
# there is reported as "# " lines and fails the suite. Leaves the module
# unloaded.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm

if [ ! -x "$here/log_test" ]; then
	ktap_plan 1
	ktap_fail "log_test is built (run make at the top level)"
	ktap_finish
fi

krep_cleanup_push krep_mod_unload
krep_kmsg_mark log_genl-$$
krep_mod_unload
if ! krep_mod_load log_memory_max=1048576; then
	ktap_plan 1
	ktap_fail "insmod krep.ko log_memory_max=1048576"
	ktap_finish
fi

rc=0
"$here/log_test" || rc=$?

if ! out=$(rmmod krep 2>&1); then
	ktap_diag "rmmod krep failed: $out"
	rc=1
fi
if krep_kmsg_since log_genl-$$ |
	krep_kernel_bad |
	ktap_diag_stdin; then
	ktap_diag "kernel log problems after log_test (above)"
	rc=1
fi
exit "$rc"
