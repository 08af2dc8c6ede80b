#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# genl.sh - the "krep" generic netlink family: runs genl_test (kselftest
# harness, KTAP) with krep.ko loaded, then unloads the module.
#
#   initial netns                       one netns per genl_test test
#   +---------------------------+       +---------------------------+
#   | krep.ko, no parameters    |       | broker with nothing set   |
#   | genl_test: permissions    |       | genl_test: GET/SET, every |
#   | (CAP_NET_ADMIN, userns)   |       | policy and extack message |
#   +---------------------------+       +---------------------------+
#
# genl_test's output is this suite's KTAP. Afterwards the module must unload
# and the kernel log must show no leak, WARNING, BUG or oops; a failure there
# is reported as "# " lines and fails the suite. Leaves the module unloaded.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm

if [ ! -x "$here/genl_test" ]; then
	ktap_plan 1
	ktap_fail "genl_test is built (run make at the top level)"
	ktap_finish
fi

krep_cleanup_push krep_mod_unload
krep_kmsg_mark genl-$$
krep_mod_unload
# shellcheck disable=SC2119 # no module parameters
if ! krep_mod_load; then
	ktap_plan 1
	ktap_fail "insmod krep.ko"
	ktap_finish
fi

rc=0
"$here/genl_test" || rc=$?

if ! out=$(rmmod krep 2>&1); then
	ktap_diag "rmmod krep failed: $out"
	rc=1
fi
if krep_kmsg_since genl-$$ |
	krep_kernel_bad |
	ktap_diag_stdin; then
	ktap_diag "kernel log problems after genl_test (above)"
	rc=1
fi
exit "$rc"
