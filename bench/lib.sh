# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# bench/lib.sh - what the bench's ratio scripts (tls_ratio.sh,
# logdir_ratio.sh) share. Source it after selftests/lib.sh and cluster.sh,
# with LOAD set to bench/krep_load:
#
#   bench_committing TOPIC   one acks=all record to TOPIC on $B1 $B2 $B3
#                            commits with all three in the ISR (krep_load's
#                            isr_min=3): the cluster is ready to measure

bench_committing() {
	"$LOAD" --topic "$1" --acks all --timeout-ms 3000 \
		--brokers "$B1,$B2,$B3" -t 1 -n 1 -d 5 2>/dev/null |
		grep -q " isr_min=3 "
}
