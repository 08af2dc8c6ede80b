#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# hw_exact.sh - HW, the ISR and what consumers see, offset by offset, with
# scripted followers.
#
# One broker (1, at $NET.1) leads two topics whose replicas are 1, 2, 3;
# brokers 2 and 3 are no brokers but follower_helper.py at $NET.2 and
# $NET.3, which say HELLO as peers 2 and 3 and FETCH at offsets the test
# chooses: each one's LEO, as the leader sees it, is exactly what the
# test says. Topics (replica_lag_time_max_ms LAG):
#   h   min_insync_replicas 2
#   g   min_insync_replicas 3
# After every step: the leader's HW and ISR, the HW its FETCH answer
# gives the follower, and the records a consumer reads.
#
# A. three LEOs (10 on the leader, 4 and 7): HW 4
# B. one follower moves a record at a time: HW 5, 6, 7, then stays at 7
#    (the other one is there)
# C. the slowest member (at 7) leaves the ISR: h's HW moves to the next
#    one (10); g's ISR is then below its min ISR 3: HW stays at 7, even
#    through an append
# D. it comes back at HW and rejoins (expand); two records with the
#    followers at different LEOs move HW one record at a time; g's ISR is
#    whole again and its HW moves
# E. a scripted controller (ctl_helper.py) re-elects broker 1 at epoch 1
#    with HW below the epoch's start: ListOffsets latest is
#    OFFSET_NOT_AVAILABLE, earliest and fetches up to HW are answered;
#    the followers' LEOs are kept, so one fetch moves HW
# F. the controller takes follower 3 out of the ISR and names it fenced
#    (KREP_A_INELIGIBLE): caught up at 14 of 15, it no longer holds HW
#    (15), and at the log end it is not asked back into the ISR; once
#    the controller names no fenced replica, it is (Kafka's
#    isReplicaIsrEligible)
#
# Steps A and B must take less than LAG (the followers are not caught up
# meanwhile); the checks say so if a slow machine made an ISR shrink early.
# Prints KTAP; leaves the module unloaded and no namespace behind.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd jq ip /usr/bin/python3

NET=10.205.0
PORT=9092
CLUSTER=hwx
CLUSTER_BROKERS=1	# 2 and 3 are scripted followers
LAG=12000
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

mark=hw-exact-$$
krep_cleanup_push krep_mod_unload

ktap_plan 15

krep_mod_unload || ktap_bail "krep is loaded and rmmod fails"
krep_kmsg_mark "$mark"
krep_mod_load || ktap_bail "cannot load krep.ko"
cluster_up "$CLUSTER" || ktap_bail "cannot set up the namespaces"
for t in h:2 g:3; do
	kc "$B1" topic create "${t%:*}" partitions 1 replication-factor 3 \
		config "min_insync_replicas=${t#*:},replica_lag_time_max_ms=$LAG" \
		>/dev/null ||
		ktap_bail "topic ${t%:*}"
done
for n in 2 3; do
	krep_pyserve_start "f$n" "$(bns "$n")" follower_helper ||
		ktap_bail "cannot start follower_helper.py"
done

ff() { # N TOPIC OFFSET [EPOCH LAST]: follower N fetches TOPIC-0 at OFFSET
	# in leader epoch EPOCH (0), its last record's epoch LAST (0, -1 at
	# offset 0); prints the HW it gets
	local out w
	local -a a
	out=$(krep_pyserve "f$1" fetch f "$2" 0 "${4:-0}" "$3" \
		"${5:-$([ "$3" = 0 ] && echo -1 || echo 0)}") || return 1
	read -ra a <<<"$out"
	[ "${a[1]}" = 0 ] || { echo "error ${a[1]}"; return 1; }
	w=${a[3]}	# a real follower takes min(its LEO, the leader's HW)
	echo $((w < $3 ? w : $3))
}
lead() { # TOPIC: "hw H leo L isr I"
	describe "$B1" "$1" |
		jq -r '.[0] | "hw \(.hw) leo \(.leo) isr \(.isr | map(tostring) | join(","))"'
}
seen() { # TOPIC: the values a consumer reads, on one line
	kc "$B1" consume "$1" | paste -sd, -
}
want_seen() { # N: the values of the first N records, on one line
	[ "$1" -gt 0 ] && seq -f "v-%g" 0 $(($1 - 1)) | paste -sd, -
}
produce() { # TOPIC FROM COUNT: acks=1 records v-FROM ...
	seq -f "v-%g" "$2" $(($2 + $3 - 1)) |
		kc "$B1" produce "$1" acks 1 >/dev/null
}
check() { # DESC TOPIC WANT_LEAD GOT_FOLLOWER WANT_FOLLOWER HW
	local desc=$1 t=$2 got s
	got=$(lead "$t")
	s=$(seen "$t")
	if [ "$got" = "$3" ] && [ "$4" = "$5" ] && [ "$s" = "$(want_seen "$6")" ]; then
		ktap_ok "$desc"
	else
		ktap_diag "leader: $got (want $3); follower's HW: $4 (want $5)"
		ktap_diag "consumer: $s"
		ktap_fail "$desc"
	fi
}

# set-up: both followers at 0 on both topics, then 10 records each
ok=1
for n in 2 3; do
	krep_pyserve "f$n" open f "$NET.1:$PORT" "$CLUSTER" 1 "$n" >/dev/null &&
		ff "$n" h 0 >/dev/null && ff "$n" g 0 >/dev/null || ok=0
done
produce h 0 10 && produce g 0 10 || ok=0
[ "$ok" = 1 ] || ktap_bail "scripted followers or produces failed"

# --- A. three LEOs ---------------------------------------------------------
ff 2 h 4 >/dev/null
hw3=$(ff 3 h 7)
check "A. LEOs 10 (leader), 4 and 7: HW 4; the follower at 7 gets HW 4; a consumer reads 4 records" \
	h "hw 4 leo 10 isr 1,2,3" "$hw3" 4 4

# --- B. a record at a time ---------------------------------------------------
steps=''
for o in 5 6 7 8; do
	steps+="$(ff 2 h "$o") "
done
ff 2 g 10 >/dev/null
ff 3 g 7 >/dev/null
check "B. the follower at 4 moves to 5, 6, 7, 8: HW 5, 6, 7, then 7 (the other is at 7)" \
	h "hw 7 leo 10 isr 1,2,3" "$steps" "5 6 7 7 " 7

# --- C. the slowest member leaves the ISR ----------------------------------
hw2=$(ff 2 h 10)
shrunk() { [[ $(lead h) == *"isr 1,2" ]] && [[ $(lead g) == *"isr 1,2" ]]; }
krep_wait_for $((4 * LAG / 1000)) shrunk
hw2b=$(ff 2 h 10)
check "C. the slowest (at 7) leaves h's ISR: HW moves to the next one, 10" \
	h "hw 10 leo 10 isr 1,2" "$hw2 $hw2b" "7 10" 10
produce g 10 1
ff 2 g 11 >/dev/null
check "C. g's ISR {1,2} is below its min ISR 3: HW stays at 7 with the follower at 11" \
	g "hw 7 leo 11 isr 1,2" "$(ff 2 g 11)" 7 7

# --- D. back at HW, rejoin; two records move HW one at a time --------------
hw3=$(ff 3 h 10)
check "D. the follower comes back at HW (10) and rejoins h's ISR" \
	h "hw 10 leo 10 isr 1,2,3" "$hw3" 10 10
produce h 10 2
steps="$(ff 2 h 12) $(ff 3 h 11) $(ff 3 h 12)"
check "D. two records, followers at 12 and 11, then 12: HW 10, 11, 12" \
	h "hw 12 leo 12 isr 1,2,3" "$steps" "10 11 12" 12
hw3=$(ff 3 g 11)
check "D. g: the follower at 11 rejoins, the ISR is whole again, HW 11" \
	g "hw 11 leo 11 isr 1,2,3" "$hw3" 11 11

# the records a follower gets: a real one, at 0, gets h's 12 records
out=$(krep_pyserve f3 fetch f h 0 0 0 -1)
if [[ $out == "error 0 hw 12 log_start 0 pe "*" records 12" ]]; then
	ktap_ok "a follower fetching at 0 gets the 12 records and HW 12"
else
	ktap_diag "$out"
	ktap_fail "a follower fetching at 0 gets the 12 records and HW 12"
fi

# --- E. re-elected: follower state kept; the OFFSET_NOT_AVAILABLE window ---
# a scripted controller (ctl_helper.py) claims broker 1 and elects it again
# at epoch 1, with LEO 13 and HW 12 (followers at 13 and 12): its epoch
# starts at 13, above HW
ff 3 h 12 >/dev/null	# caught up at 12 just now: stays in the ISR
produce h 12 1
ff 2 h 13 >/dev/null
krep_pyserve_start ctl "$B1" ctl_helper || ktap_bail "cannot start ctl_helper.py"
pe=$(describe "$B1" h | jq '.[0].partition_epoch')
out="$(krep_pyserve ctl claim 1 11 600000) $(krep_pyserve ctl lai 1 h 0 1 1 $((pe + 1)) 1,2,3)"
lat=$(kc "$B1" offsets h partition 0 latest 2>&1)
ear=$(kc "$B1" offsets h partition 0 earliest 2>&1)
s=$(seen h)
if [ "$out" = "ok ok" ] && [[ $lat == *OFFSET_NOT_AVAILABLE* ]] && [ "$ear" = 0 ] &&
   [ "$s" = "$(want_seen 12)" ]; then
	ktap_ok "E. re-elected at epoch 1 with HW 12 below its start 13: latest is OFFSET_NOT_AVAILABLE, earliest 0, a consumer reads up to HW"
else
	ktap_diag "controller: $out; latest: $lat; earliest: $ear; consumer: $s"
	ktap_fail "E. re-elected at epoch 1 with HW 12 below its start 13: latest is OFFSET_NOT_AVAILABLE, earliest 0, a consumer reads up to HW"
fi
# the follower at 13 was remembered: one fetch of the other moves HW
hw3=$(krep_pyserve f3 fetch f h 0 1 13 0 | awk '{ print $4 }')
lat=$(kc "$B1" offsets h partition 0 latest 2>&1)
if [ "$hw3" = 13 ] && [ "$lat" = 13 ]; then
	ktap_ok "E. the re-elected leader kept its followers' LEOs: one fetch at 13 moves HW to 13, latest answers 13"
else
	ktap_diag "HW in the answer: $hw3; latest: $lat; leader: $(lead h)"
	ktap_fail "E. the re-elected leader kept its followers' LEOs: one fetch at 13 moves HW to 13, latest answers 13"
fi

# --- F. a fenced follower is not counted, nor asked back in -----------------
pe=$(describe "$B1" h | jq '.[0].partition_epoch')
out=$(krep_pyserve ctl lai 1 h 0 1 1 $((pe + 1)) 1,2 3)
produce h 13 2
# in epoch 1, from offset 13 on; caught up: 14 is past the log end (13)
# at its last fetch
hw3=$(ff 3 h 14 1 1)
hw2=$(ff 2 h 15 1 1)
inel=$(describe "$B1" h | jq -c '.[0].ineligible')
if [ "$out" = ok ] && [ "$inel" = "[3]" ]; then
	check "F. follower 3 fenced, out of the ISR, caught up at 14; follower 2 at 15: HW 15, not held at 14" \
		h "hw 15 leo 15 isr 1,2" "$hw3 $hw2" "13 15" 15
else
	ktap_diag "controller: $out; ineligible: $inel"
	ktap_fail "F. follower 3 fenced, out of the ISR, caught up at 14; follower 2 at 15: HW 15, not held at 14"
fi
pending() { describe "$B1" h | jq -c '.[0].pending_isr'; }
hw3=$(ff 3 h 15 1 1)
p=$(pending)
if [ "$hw3" = 15 ] && [ "$p" = null ] && [[ $(lead h) == *"isr 1,2" ]]; then
	ktap_ok "F. the fenced follower at the log end (15) is not asked into the ISR"
else
	ktap_diag "its HW: $hw3; pending ISR: $p; leader: $(lead h)"
	ktap_fail "F. the fenced follower at the log end (15) is not asked into the ISR"
fi
out=$(krep_pyserve ctl lai 1 h 0 1 1 $((pe + 1)) 1,2)
ff 3 h 15 1 1 >/dev/null
p=$(pending)
inel=$(describe "$B1" h | jq -c '.[0].ineligible')
if [ "$out" = ok ] && [ "$p" = "[1,2,3]" ] && [ "$inel" = null ]; then
	ktap_ok "F. no longer fenced: its next fetch at 15 asks the controller for ISR 1,2,3"
else
	ktap_diag "controller: $out; pending ISR: $p; ineligible: $inel"
	ktap_fail "F. no longer fenced: its next fetch at 15 asks the controller for ISR 1,2,3"
fi

krep_teardown_checks "$mark"
ktap_finish
