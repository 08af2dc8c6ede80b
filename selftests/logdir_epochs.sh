#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# logdir_epochs.sh - KIP-101 and KIP-279 with restarts: brokers that come
# back from their log directories truncate by leader epoch, never to the
# HW they checkpointed, so no acknowledged record is lost and the logs
# end identical. A scripted controller (ctl_helper.py) chooses every
# leader, epoch and ISR; each broker has a log directory on one ext4
# image (loop device).
#
#        B1 (10.208.0.1)     B2 (10.208.0.2)     B3 (10.208.0.3)
#         log dir c1          log dir c2          log dir c3
#              \                   |                   /
#               +------------- bridge krbr -----------+      (BR)
#
# "Restart" is cluster_broker_recreate: the namespace goes (a clean
# shutdown of its log directory) and comes back with the same log
# directory, then the controller creates the topic again (TOPIC_NEW with
# its epoch: no leader until its LEADER_AND_ISR) and the partition is
# recovered from the segment files and checkpoints.
#
# 1. KIP-101 scenario 1, message loss (topic a, replicas 1,2,3): broker 3
#    is cut off; broker 2 fetches record 10 and reports it, then is cut
#    off before it learns the new HW; the controller commits ISR {1,2}
#    and record 10 is acknowledged (acks=all). Broker 2 restarts with LEO
#    11 and HW 10, follows broker 1 (out of reach) in epoch 1; broker 1
#    goes away and broker 2 is elected in epoch 2: record 10 is there,
#    and brokers 3 and 1 follow without truncating. Truncating to HW on
#    the restart would have lost it on every replica.
# 2. KIP-101 scenario 2, divergence (topic b, replicas 1,2): offsets
#    0..3 acks=all, offset 4 (m-4) acks=1 reaches both, HW 5. Both
#    brokers crash; broker 2 loses the tail its page cache held (its
#    segment file cut back to offset 4, no clean marker), comes back
#    first and leads epoch 2 with n-4..6 (acks=all). Broker 1 comes back
#    with m-4 below its checkpointed HW 5, follows, truncates to the end
#    of epoch 1 on the leader (4): both segment files end byte for byte
#    the same. Truncating to HW would have kept m-4 beside n-5. b has no
#    producer state: broker 2's load reads the log for it
#    (krep_producer_rebuild, through tracefs), broker 1's (a clean
#    shutdown) comes from its snapshot, and its truncation leaves it be.
# 3. KIP-279, two rounds (topic k, replicas 1,2,3): broker 3, cut off,
#    leads an epoch 3 alone (lost-3, lost-4, its HW 5) that brokers 1,2
#    (epoch 2, e2-3, e2-4) never see. Brokers 1 and 3 restart; broker 1
#    leads epoch 4; broker 3 asks for epoch 3, is told epoch 2 ends at 5,
#    has no epoch 2, truncates to the end of its epoch 1 (3), asks again
#    and ends identical to brokers 1 and 2.
# Prints KTAP; leaves the module unloaded, the image unmounted.

# shellcheck disable=SC2317 # the conditions krep_wait_for polls
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"
NET=10.208.0
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

krep_require_vm
krep_require_cmd jq ip mkfs.ext4 mount umount sha256sum /usr/bin/python3

CL=krepe		# the cluster id
CE=1			# the scripted controller's epoch
tmp=$(mktemp -d)
mnt=$tmp/mnt
krep_cleanup_push rm -rf "$tmp"
mark=logdir-epochs-$$

ktap_plan 18
krep_pyserve_start logdump "" kafka_log_dump ||
	ktap_bail "cannot start kafka_log_dump.py"

ctl() { # N ARGS...: the scripted controller on broker N
	local n=$1
	shift
	krep_pyserve "ctl$n" "$@"
}

# field of partition 0 of TOPIC on broker N (describe's JSON, jq's -r)
pf() { # N TOPIC JQ
	part "$(bns "$1")" "$2" 0 | jq -r "$3"
}

lai() { # TOPIC LEADER LEPOCH PEPOCH ISR BROKER...: LEADER_AND_ISR to each
	local t=$1 l=$2 le=$3 pe=$4 isr=$5 n out rc=0
	shift 5
	for n in "$@"; do
		out=$(ctl "$n" lai $CE "$t" 0 "$l" "$le" "$pe" "$isr")
		[ "$out" = ok ] || { ktap_diag "broker $n: lai $t $l $le $pe $isr: $out"; rc=1; }
	done
	return $rc
}

produce() { # N TOPIC ACKS VALUE...: one batch a value
	local n=$1 t=$2 acks=$3
	shift 3
	printf '%s\n' "$@" | kc "$(bns "$n")" produce "$t" acks "$acks" batch 1 >/dev/null
}

topic_new() { # TOPIC RF ASSIGNMENT BROKER...: as the controller creates it
	local t=$1 rf=$2 as=$3 n out
	shift 3
	for n in "$@"; do
		out=$(ctl "$n" topic-new $CE "$t" 1 "$rf" "$as")
		[ "$out" = ok ] || { ktap_diag "broker $n: topic-new $t: $out"; return 1; }
	done
}

# broker N restarts: its namespace goes, its log directory shut down
# cleanly, and comes back with ARGS given to `broker set` (log-dir DIR to
# recover from), claimed by the scripted controller again
restart() { # N [ARGS...]
	local n=$1
	shift
	krep_pyserve_stop "ctl$n"
	cluster_broker_recreate "$n" $CL "$@" &&
		krep_pyserve_start "ctl$n" "$(bns "$n")" ctl_helper &&
		[ "$(ctl "$n" claim $CE 77 600000)" = ok ]
}

dump() { krep_log_dump "$@"; }	# DIR [ARGS...]: kafka_log_dump.py's JSON

vals() { # N TOPIC: the values in broker N's segment files of TOPIC-0
	dump "$mnt/c$1" --partition "$2-0" --values |
		jq -c --arg p "$2-0" '.partitions[$p].values'
}

logsum() { # N TOPIC: sha256 of broker N's segment files of TOPIC-0, in order
	cat "$mnt/c$1/$2-0/"*.log | sha256sum | cut -d ' ' -f 1
}

jlist() { # VALUE...: a JSON array of strings
	printf '%s\n' "$@" | jq -Rsc 'split("\n")[:-1]'
}

# TOPIC NEXT N...: each broker's segment files of TOPIC-0 reach NEXT, read
# clean (kafka_log_dump.py's status), and are the same bytes
same_files() {
	local t=$1 next=$2 n j first=
	shift 2
	for n in "$@"; do
		j=$(dump "$mnt/c$n" --partition "$t-0") &&
			jq -e --arg p "$t-0" --argjson n "$next" \
				'.partitions[$p].next_offset == $n' <<<"$j" >/dev/null ||
			return 1
		[ -n "$first" ] || first=$(logsum "$n" "$t")
		[ "$(logsum "$n" "$t")" = "$first" ] || return 1
	done
}

diag_parts() { # TOPIC N...: describe and the files, for a failure
	local t=$1 n
	shift
	for n in "$@"; do
		ktap_diag "broker $n: $(part "$(bns "$n")" "$t" 0 | jq -c '{role, leader, leader_epoch, isr, leo, hw, epochs}')"
		ktap_diag "broker $n files: $(vals "$n" "$t")"
	done
}

# --- set-up ------------------------------------------------------------------

krep_kmsg_mark "$mark"
krep_mod_unload
# a cut link is noticed within 2.5 s, a restored one used again within 0.5 s
krep_mod_load fetch_timeout_ms=2000 reconnect_backoff_max_ms=500 ||
	ktap_bail "insmod krep.ko failed"
krep_ext4_mount "$tmp/disk.img" 64M "$mnt" ||
	ktap_bail "cannot make and mount an ext4 image"
cluster_up $CL || ktap_bail "cannot set up three brokers"
cluster_log_dirs "$mnt" || ktap_bail "cannot give the brokers log directories"
for n in 1 2 3; do
	krep_pyserve_start "ctl$n" "$(bns "$n")" ctl_helper &&
		[ "$(ctl "$n" claim $CE 77 600000)" = ok ] ||
		ktap_bail "broker $n: no scripted controller"
done
krep_wait_for 60 cluster_peers_up || ktap_bail "peers did not connect"

# --- 1. KIP-101 scenario 1: a record above the follower's HW survives its restart

ktap_diag "1. KIP-101 scenario 1 (at ${SECONDS}s)"
topic_new a 3 1,2,3 1 2 3 && lai a 1 1 1 1,2,3 1 2 3 ||
	ktap_bail "topic a"
produce 1 a all $(seq -f 'a-%g' 0 9) || ktap_bail "produce a-0..9"
hw10() { [ "$(pf 2 a .hw)" = 10 ] && [ "$(pf 3 a .hw)" = 10 ]; }
krep_wait_for 30 hw10 || ktap_bail "HW 10 did not reach brokers 2 and 3"
link_down 3
# HW cannot pass 10 while broker 3, in the ISR, lacks record 10
produce 1 a all a-10 2>"$tmp/x.err" &
xpid=$!
b2_reported() { # broker 2 holds record 10 and broker 1 knows it
	[ "$(pf 2 a .leo)" = 11 ] &&
		[ "$(pf 1 a '.remotes[] | select(.id == 2) | .leo')" = 11 ]
}
krep_wait_for 30 b2_reported || ktap_bail "broker 2 did not fetch record 10"
link_down 2
# the controller drops broker 3 from the ISR and fences it (as when its
# session lapses), so that it no longer counts towards HW as a caught-up
# follower: HW passes 10 on broker 1, not on broker 2
[ "$(ctl 1 lai $CE a 0 1 1 2 1,2 3)" = ok ] || ktap_bail "ISR {1,2}"
if wait "$xpid" && [ "$(pf 1 a .hw)" = 11 ] &&
   [ "$(pf 2 a .leo)" = 11 ] && [ "$(pf 2 a .hw)" = 10 ]; then
	ktap_ok "record 10 acknowledged with acks=all (broker 1 HW 11); broker 2 holds it above its HW (LEO 11, HW 10)"
else
	ktap_diag_stdin <"$tmp/x.err"
	diag_parts a 1 2
	ktap_fail "record 10 acknowledged with acks=all; broker 2 holds it above its HW"
fi

krep_kmsg_mark "$mark-1"
restart 2 log-dir "$mnt/c2" || ktap_bail "broker 2 did not come back"
link_down 2		# broker 1 stays out of its reach
topic_new a 3 1,2,3 2 || ktap_bail "broker 2: topic a"
ktap_check "broker 2 restarts from its log directory with offsets 0..10 and HW 10" \
	eval 'krep_kmsg_since "$mark-1" | grep -q "a-0: recovered offsets 0\.\.10, HW 10"'
lai a 1 1 2 1,2 2 || ktap_bail "broker 2: follow broker 1"
if [ "$(pf 2 a .role)" = follower ] && [ "$(pf 2 a .leo)" = 11 ]; then
	ktap_ok "restarted, broker 2 follows broker 1 in epoch 1 and keeps LEO 11 (no truncation to its HW 10)"
else
	diag_parts a 2
	ktap_fail "restarted, broker 2 follows broker 1 in epoch 1 and keeps LEO 11"
fi
# broker 1 goes away before broker 2 could fetch from it; broker 2 leads
link_down 1
link_up 2
lai a 2 2 3 2 2 || ktap_bail "electing broker 2"
if [ "$(pf 2 a .role)" = leader ] && [ "$(pf 2 a .leo)" = 11 ] &&
   produce 2 a all a-11; then
	ktap_ok "broker 2 leads epoch 2 from offset 11: record 10 is there, and acks=all goes on"
else
	diag_parts a 2
	ktap_fail "broker 2 leads epoch 2 from offset 11 with record 10"
fi
link_up 3
link_up 1
lai a 2 2 3 2 1 3 || ktap_bail "brokers 1 and 3: follow broker 2"
want=$(jlist $(seq -f 'a-%g' 0 11))
if krep_wait_for 60 same_files a 12 1 2 3 && [ "$(vals 2 a)" = "$want" ]; then
	ktap_ok "brokers 1, 2 and 3 end with the same segment files: a-0..a-11, the acknowledged record 10 among them"
else
	diag_parts a 1 2 3
	ktap_fail "brokers 1, 2 and 3 end with the same segment files, a-0..a-11"
fi
ktap_check "no replica of a-0 truncated anything" \
	eval '! krep_kmsg_since "$mark-1" | grep "a-0: truncated"'

# --- 2. KIP-101 scenario 2: both crash, the new leader lost its tail ----------

ktap_diag "2. KIP-101 scenario 2 (at ${SECONDS}s)"
topic_new b 2 1,2 1 2 && lai b 1 1 1 1,2 1 2 || ktap_bail "topic b"
produce 1 b all c-0 c-1 c-2 c-3 || ktap_bail "produce c-0..3"
at4() { dump "$mnt/c2" --partition b-0 | jq -e '.partitions["b-0"].next_offset == 4' >/dev/null; }
krep_wait_for 30 at4 || ktap_bail "broker 2's files did not reach offset 4"
seg=$(find "$mnt/c2/b-0" -name '*.log')
[ "$(echo "$seg" | wc -l)" = 1 ] || ktap_bail "b-0: one segment expected: $seg"
size4=$(stat -c %s "$seg")
produce 1 b 1 m-4 || ktap_bail "produce m-4"
hw5() { [ "$(pf 1 b .hw)" = 5 ] && [ "$(pf 2 b .leo)" = 5 ]; }
krep_wait_for 30 hw5 || ktap_bail "HW 5 on broker 1"
# both crash; broker 2's m-4 was in its page cache only (the default flush
# policy) and is lost: its segment file as it was at offset 4, no marker
restart 1 && restart 2 || ktap_bail "brokers 1 and 2 did not come back"
truncate -s "$size4" "$seg" && rm -f "$mnt/c2/.kafka_cleanshutdown" ||
	ktap_bail "cannot cut broker 2's segment file"
# the producer state's rebuilds from the log, through tracefs
tr=/sys/kernel/tracing
[ -d "$tr/events/krep" ] || tr=/sys/kernel/debug/tracing
echo >"$tr/trace"
echo 1 >"$tr/events/krep/krep_producer_rebuild/enable"
krep_kmsg_mark "$mark-2"
kc "$B2" broker set log-dir "$mnt/c2" >/dev/null && topic_new b 2 1,2 2 ||
	ktap_bail "broker 2: topic b"
ktap_check "broker 2 comes back first with offsets 0..3 (HW 4): it lost m-4" \
	eval 'krep_kmsg_since "$mark-2" | grep -q "b-0: recovered offsets 0\.\.3, HW 4: "'
lai b 2 2 2 2 2 || ktap_bail "electing broker 2"
produce 2 b all n-4 n-5 n-6 || ktap_diag "produce n-4..6 on broker 2 failed"
krep_kmsg_mark "$mark-2b"
kc "$B1" broker set log-dir "$mnt/c1" >/dev/null && topic_new b 2 1,2 1 ||
	ktap_bail "broker 1: topic b"
if krep_kmsg_since "$mark-2b" | grep -q "b-0: recovered offsets 0\.\.4, HW 5" &&
   [ "$(pf 1 b '[.leo, .hw] | @text')" = "[5,5]" ] &&
   [ "$(pf 2 b '[.leo, .hw, (.epochs | map("\(.epoch)@\(.start_offset)"))] | @text')" = '[7,7,["1@0","2@4"]]' ]; then
	ktap_ok "broker 1 comes back with m-4 below its HW 5, where leader 2 holds n-4 of epoch 2 (LEO 7)"
else
	diag_parts b 1 2
	ktap_fail "broker 1 comes back with m-4 below its HW 5, leader 2 with n-4..6 in epoch 2"
fi
lai b 2 2 2 2 1 || ktap_bail "broker 1: follow broker 2"
want=$(jlist c-0 c-1 c-2 c-3 n-4 n-5 n-6)
if krep_wait_for 60 same_files b 7 1 2 && [ "$(vals 1 b)" = "$want" ]; then
	ktap_ok "brokers 1 and 2 end with the same segment files: c-0..3, n-4..6 (every acks=all record), no m-4"
else
	diag_parts b 1 2
	ktap_fail "brokers 1 and 2 end with the same segment files: c-0..3, n-4..6"
fi
ktap_check "broker 1 truncated b-0 from 5 to 4 (the leader's end of epoch 1), not to its HW" \
	eval '[ "$(krep_kmsg_since "$mark-2b" | grep -o "b-0: truncated from .*")" = "b-0: truncated from 5 to 4: diverged from the leader" ]'
echo 0 >"$tr/events/krep/krep_producer_rebuild/enable"
rebuilt=$(grep -o "broker=[0-9]* b-0 replica=[0-9]* .*" "$tr/trace")
ktap_check "b-0's producer state was read from the log once, by broker 2's load (unclean), not at broker 1's clean load or its truncation: $(echo $rebuilt)" \
	test "$rebuilt" = "broker=2 b-0 replica=2 0 -> 4"

# --- 3. KIP-279: an epoch the leader never saw, two rounds ---------------------

ktap_diag "3. KIP-279 (at ${SECONDS}s)"
topic_new k 3 1,2,3 1 2 3 && lai k 1 1 1 1,2,3 1 2 3 || ktap_bail "topic k"
produce 1 k all base-0 base-1 base-2 || ktap_bail "produce base-0..2"
hw3() { [ "$(pf 3 k .hw)" = 3 ]; }
krep_wait_for 30 hw3 || ktap_bail "HW 3 did not reach broker 3"
link_down 3
lai k 1 2 2 1,2 1 2 && produce 1 k all e2-3 e2-4 ||
	ktap_bail "epoch 2 on brokers 1, 2"
lai k 3 3 2 3 3 && produce 3 k 1 lost-3 lost-4 ||
	ktap_bail "epoch 3 on broker 3"
if [ "$(pf 3 k '[.leo, .hw] | @text')" = "[5,5]" ]; then
	ktap_ok "broker 3 alone holds epoch 3 at offsets 3, 4, its HW 5; brokers 1, 2 hold epoch 2 there"
else
	diag_parts k 1 3
	ktap_fail "broker 3 alone holds epoch 3 at offsets 3, 4, its HW 5"
fi
restart 1 log-dir "$mnt/c1" && restart 3 log-dir "$mnt/c3" ||
	ktap_bail "brokers 1 and 3 did not come back"
link_down 3
krep_kmsg_mark "$mark-3"
topic_new k 3 1,2,3 1 && lai k 1 4 3 1,2 1 2 && produce 1 k all e4-5 ||
	ktap_bail "broker 1: epoch 4"
topic_new k 3 1,2,3 3 || ktap_bail "broker 3: topic k"
if [ "$(krep_kmsg_since "$mark-3" | grep -c "k-0: recovered offsets 0\.\.4, HW 5")" = 2 ] &&
   [ "$(pf 1 k '.epochs | map("\(.epoch)@\(.start_offset)") | @text')" = '["1@0","2@3","4@5"]' ] &&
   [ "$(pf 3 k '.epochs | map("\(.epoch)@\(.start_offset)") | @text')" = '["1@0","3@3"]' ]; then
	ktap_ok "brokers 1 and 3 restart with offsets 0..4, HW 5: epochs 1,2,4 on the leader, 1,3 on broker 3"
else
	diag_parts k 1 3
	ktap_fail "brokers 1 and 3 restart with offsets 0..4, HW 5 and their epochs"
fi
link_up 3
lai k 1 4 3 1,2 3 || ktap_bail "broker 3: follow broker 1"
want=$(jlist base-0 base-1 base-2 e2-3 e2-4 e4-5)
if krep_wait_for 60 same_files k 6 1 2 3 && [ "$(vals 3 k)" = "$want" ]; then
	ktap_ok "brokers 1, 2 and 3 end with the same segment files: base-0..2, e2-3, e2-4, e4-5, no lost-*"
else
	diag_parts k 1 2 3
	ktap_fail "brokers 1, 2 and 3 end with the same segment files"
fi
ktap_check "broker 3 truncated k-0 once, from 5 to 3 (the end of its epoch 1), not to its HW 5" \
	eval '[ "$(krep_kmsg_since "$mark-3" | grep -o "k-0: truncated from .*")" = "k-0: truncated from 5 to 3: diverged from the leader" ]'
ktap_check "broker 3's epochs are the leader's: 1@0, 2@3, 4@5" \
	eval '[ "$(pf 3 k ".epochs | map(\"\(.epoch)@\(.start_offset)\") | @text")" = "[\"1@0\",\"2@3\",\"4@5\"]" ]'

krep_teardown_checks "$mark"
ktap_finish
