#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# logdir_krepd.sh - log directories under krepd: three brokers (cluster.sh)
# with a log directory each, krepd --controller over their namespaces.
# Brokers 1 and 2 keep their logs on an ext4 image, broker 3 on a 2 MiB
# one. krepd creates topic o (3 partitions, RF 3: each broker prefers one).
#
# 1. broker 2 restarts with its log (its namespace goes and comes back):
#    krepd drops it from the ISRs and gives it the topic again; it
#    recovers its records from its directory, catches up and is back in
#    every ISR.
# 2. records to the partition broker 1 leads fill broker 3's disk. Its
#    log directory fails as a whole (Kafka's offline log directory): all
#    three of its replicas report Offline, and krepd moves broker 3's
#    leadership away and drops it from every ISR; the new leader takes
#    acks=all produces.
# Prints KTAP; leaves the module unloaded, the images unmounted.

# shellcheck disable=SC2317 # the conditions krep_wait_for polls
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"
NET=10.210.0
PORT=9092
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

krep_require_vm
krep_require_cmd jq ip mkfs.ext4 mount umount

tmp=$(mktemp -d)
mnt=$tmp/mnt
krep_cleanup_push rm -rf "$tmp"
krep_cleanup_push krep_mod_unload
mark=logdir-krepd-$$

ktap_plan 6

values() { # PREFIX COUNT
	seq -f "$1-%05g-abcdefghijklmnopqrstuvwxyz0123456789" 0 $(($2 - 1))
}
big() { # PREFIX FROM TO
	seq -f "$1-%04g-$(printf '%0100d' 0)" "$2" $(($3 - 1))
}

krep_kmsg_mark "$mark"
krep_mod_unload
krep_ext4_mount "$tmp/disk.img" 64M "$mnt" ||
	ktap_bail "cannot make and mount an ext4 image"
krep_mod_load || ktap_bail "insmod failed"
cluster_up krepld || ktap_bail "cannot set up three brokers"
off=$tmp/off
krep_ext4_mount "$tmp/off.img" 2M "$off" -O ^has_journal ||
	ktap_bail "cannot mount a small image"
for i in 1 2 3; do
	peers=
	for j in 1 2 3; do
		[ "$j" = "$i" ] || peers+="${peers:+,}$j@$NET.$j:$PORT"
	done
	dir=$mnt/o$i
	[ "$i" = 3 ] && dir=$off
	mkdir -p "$dir"
	kc "$(bns "$i")" broker set id "$i" cluster krepld listen "$NET.$i:$PORT" \
		peers "$peers" log-dir "$dir" >/dev/null || ktap_bail "broker $i"
done
cluster_krepd "$tmp"
o_create() {
	"$KREPCTL" topic create o partitions 3 rf 3 config segment_bytes=262144 \
		--socket "$SOCK" >"$tmp/o.create" 2>&1
}
o_view() { # krepd's view of o, one compact JSON line per partition
	"$KREPCTL" elect --status --socket "$SOCK" 2>/dev/null |
		jq -c -s '[.[] | select(.topic == "o")] | sort_by(.partition) | .[]'
}
o_full() { # every partition of o led, with the full ISR
	[ "$(o_view | jq -s 'map(select(.leader != null and
		(.isr | length) == 3)) | length')" = 3 ]
}
krep_wait_for 60 o_create || ktap_diag_stdin <"$tmp/o.create"
krep_wait_for 60 o_full || ktap_diag "o's ISR did not fill"
p1=$(o_view | jq -s 'map(select(.leader == 1))[0].partition')
p3=$(o_view | jq -s 'map(select(.leader == 3))[0].partition')
ktap_diag "o-$p1 led by broker 1, o-$p3 by broker 3 (at ${SECONDS}s)"
# broker 2 restarts with its log: krepd drops it from the ISRs, gives it
# the topic again, and it recovers from its directory and catches up
values o 100 | kc "$B1" produce o partition "$p1" acks all batch 10 >/dev/null ||
	ktap_diag "produce to o-$p1 failed"
krep_kmsg_mark "$mark-o2"
cluster_broker_recreate 2 krepld log-dir "$mnt/o2" ||
	ktap_bail "broker 2 did not come back"
values p 50 | kc "$B1" produce o partition "$p1" acks 1 batch 10 >/dev/null
o2_back() { # broker 2 holds o-P1's 150 records, and every ISR is full
	[ "$(part "$B2" o "$p1" | jq .leo)" = 150 ] && o_full
}
if krep_wait_for 90 o2_back &&
   krep_kmsg_since "$mark-o2" | grep -q "o-$p1: recovered offsets 0..99, HW"; then
	ktap_ok "under krepd, broker 2 restarts with its log: it recovers o-$p1's 0..99, catches up to 150 and is back in every ISR"
else
	ktap_fail "under krepd, broker 2 restarts with its log: it recovers o-$p1's 0..99, catches up to 150 and is back in every ISR"
	o_view | ktap_diag_stdin
	krep_kmsg_since "$mark-o2" | grep "o-" | tail -n 5 | ktap_diag_stdin
fi
krep_kmsg_mark "$mark-off"
big o 0 30000 | kc "$B1" produce o partition "$p1" acks 1 batch 100 >/dev/null 2>&1
off3() { # broker 3 reports its three replicas of o Offline
	[ "$(describe "$B3" o | jq '[.[] | select(.role == "offline")] | length')" = 3 ]
}
moved() { # krepd: broker 3 leads none of o and is in none of its ISRs
	o_view | jq -s -e 'length == 3 and all(.[]; .leader != null and
		.leader != 3 and (.isr | index(3)) == null)' >/dev/null
}
if krep_wait_for 60 off3 &&
   [ "$(krep_kmsg_since "$mark-off" | grep -c "the log directory failed: every replica in it is offline")" = 1 ]; then
	ktap_ok "broker 3's disk fills: its log directory fails once, and its three replicas of o report Offline"
else
	ktap_fail "broker 3's disk fills: its log directory fails once, and its three replicas of o report Offline"
	describe "$B3" o | jq -c '.[] | {partition, role, leo}' | ktap_diag_stdin
fi
if krep_wait_for 60 moved &&
   grep -q "o-$p3: leader 3 -> .*leader 3's replica is offline: its log directory failed" "$tmp/krepd.log"; then
	ktap_ok "krepd moves o-$p3's leadership off broker 3 and drops broker 3 from o's ISRs"
else
	ktap_fail "krepd moves o-$p3's leadership off broker 3 and drops broker 3 from o's ISRs"
	o_view | ktap_diag_stdin
	grep "o-" "$tmp/krepd.log" | tail -n 8 | ktap_diag_stdin
fi
newl=$(o_view | jq -s --argjson p "$p3" '.[$p].leader')
ktap_check "o-$p3's new leader $newl takes 10 records with acks=all" \
	eval 'values n 10 | kc "$(bns "$newl")" produce o partition "$p3" acks all batch 10 >/dev/null'
kill "$KREPD_PID" 2>/dev/null
wait "$KREPD_PID" 2>/dev/null
krep_mod_unload	# closes the brokers' files, so that the images unmount
umount "$off"
umount "$mnt"


krep_teardown_checks "$mark"
ktap_finish
