#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fuzz.sh - structure-aware fuzzers (fuzz_kafka.py against three brokers'
# sockets, fuzz_genl against a fourth broker's netlink), then the checks
# that they survived it. Run it with `make fuzz FUZZ_SECS=N` (one VM), or
# in the VM: selftests/vm/run.sh -- selftests/fuzz.sh; fuzz_short.sh runs
# it for 15 s in make check.
#
#   +- netns B1 --------+  +- netns B2 -------+  +- netns B3 -------+  +- netns X ------------+
#   | broker 1          |  | broker 2         |  | broker 3         |  | 10.205.0.9:          |
#   | 10.205.0.1:9092   |  | 10.205.0.2:9092  |  | 10.205.0.3:9092  |  | fuzz_kafka.py, one   |
#   | Kafka :9192       |  | Kafka :9192      |  | Kafka :9192      |  | process: a Kafka     |
#   | peers 2, 3 and 9  |  | peers 1, 3 and 9 |  | peers 1, 2       |  | client of brokers 1  |
#   |  (9@10.205.0.9)   |  |  (9@10.205.0.9)  |  |                  |  | and 2; peer 9 of     |
#   +--------|----------+  +--------|---------+  +--------|---------+  | broker 1 as a fake   |
#            |                      |                     |            | follower; on :9092   |
#            +------------ bridge krbr in netns BR -------+------------| the fake leader 9 of |
#                                                                      | brokers 1 and 2      |
#                                                                      +----------------------+
#   +- netns G (no link) ------------------------------------------------+
#   | broker 1 of cluster fuzzg: listen 127.0.0.1:9092, Kafka :9192,     |
#   | peer 2@127.0.0.2 (nobody); fuzz_genl, as root, sends it netlink    |
#   | requests of every command (BROKER_SET, TOPIC_DEL, LEADER_AND_ISR   |
#   | included: this broker is the genl target's alone)                  |
#   +--------------------------------------------------------------------+
# Topics: fz (3 partitions, RF 3, partition P led by broker P+1, retention
# of 2 MiB in 256 KiB segments, so that fuzzed produces also move the log
# start) and rt (the same, for the round trip afterwards) on every broker,
# created before brokers 1 and 2 get peer 9 (it would change their
# round-robin assignment); with an assignment (TOPIC_NEW, ctl_helper.py),
# fz9 on broker 1 only: partition 0 replicas 9, 1 (led by 9: broker 1
# follows the fake leader), partition 1 replicas 1, 9 (led by broker 1:
# the fake follower fetches it); fz8 on broker 2 only: replicas 9, 2
# (broker 2 follows the fake leader too).
#
# fuzz_kafka.py runs KREP_FUZZ_SECS seconds (default 120), seeded with
# KREP_FUZZ_SEED (default random; printed: the same seed draws the same
# inputs); the module has kafka_idle_ms=KREP_FUZZ_IDLE_MS (default 5000),
# and kafka_request_ms and kafka_wait_max_ms of 5000 (a request cut short,
# a Fetch's or Produce's wait: 30 s each by default, so that the last
# connections' deadlines kept the fuzzer 30 s past its run).
# Targets: kafka-leader (broker 1's Kafka listener), kafka-follower
# (broker 2's), peer-follower (broker 1's replication listener, as peer 9:
# HELLO, AUTH, FETCHes), peer-leader (peer 9's address, where brokers 1
# and 2 connect: HELLO and FETCH_RESP answers). Its oracle fails a connection
# that the broker neither answers nor closes in time (35 s past the
# broker's own deadlines), responses out of order or malformed, a valid
# request refused, offsets of a leader that move back, a listener that
# stops answering (fuzz_kafka.py's help says more).
#
# fuzz_genl runs the same KREP_FUZZ_SECS with the same seed, beside
# fuzz_kafka.py (both share the VM's CPUs): target genl (fuzz_genl's
# help says more). Its oracle fails a request that does not get exactly
# one well-formed answer within 30 s (the broker's longest wait) plus 35
# s, and valid requests (a topic created, produced to, fetched back byte
# for byte, deleted) that fail, between the fuzzed ones and at the end.
#
# Results: the set-up; one per target (inputs, inputs/s, no failure); the
# fuzzers' exit; broker G answers krepctl with its id, and no listener
# of a BROKER_SET that succeeded failed to bind (its kernel log line);
# then the brokers still serve: kcat -L, a kcat round trip
# of 200 records with acks=all, acks=all on every partition of fz; the
# replicas of fz and rt converge (every replica at its leader's LEO, HW at
# LEO, the ISR full); HW <= LEO everywhere; rmmod; no kernel warning, oops
# or leak. When anything fails, the last connections of every target are
# printed as FUZZ-REPRO blocks (make fuzz writes them to build/fuzz/).
# Prints KTAP; leaves the module unloaded and no namespace behind.

# shellcheck disable=SC2317 # functions called through krep_wait_for
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd kcat jq ip cmp timeout /usr/bin/python3

CLUSTER=fuzz
NET=10.205.0
PORT=9092
KAFKA_PORT=9192
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

SECS=${KREP_FUZZ_SECS:-120}
SEED=${KREP_FUZZ_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
HELLO_MS=2000
FETCH_MS=1000
# kafka_idle_ms: connections left idle are checked to be closed after it;
# KREP_FUZZ_IDLE_MS=600000 (the default of the module) leaves that out
IDLE_MS=${KREP_FUZZ_IDLE_MS:-5000}
REQUEST_MS=5000
WAIT_MAX_MS=5000
PARAMS="hello_timeout_ms=$HELLO_MS fetch_timeout_ms=$FETCH_MS reconnect_backoff_max_ms=100 kafka_idle_ms=$IDLE_MS kafka_request_ms=$REQUEST_MS kafka_wait_max_ms=$WAIT_MAX_MS"
TARGETS="kafka-leader kafka-follower peer-follower peer-leader"
GENL_WORKERS=${KREP_FUZZ_GENL_WORKERS:-2}

case $SECS:$IDLE_MS:$GENL_WORKERS in
*[!0-9:]* | :* | 0:* | *::* | *:0:* | *: | *:0) echo "fuzz.sh: KREP_FUZZ_SECS, KREP_FUZZ_IDLE_MS and KREP_FUZZ_GENL_WORKERS must be positive numbers" >&2; exit 2 ;;
esac
case $SEED in
'' | *[!0-9]*) echo "fuzz.sh: KREP_FUZZ_SEED must be a number" >&2; exit 2 ;;
esac

tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
mark=fuzz-$$

ktap_plan 15
ktap_diag "fuzz seed $SEED, $SECS s (KREP_FUZZ_SEED=$SEED make fuzz FUZZ_SECS=$SECS draws the same inputs)"

# x_up: netns X (its name in X) on the bridge, with $NET.9/24
x_up() {
	krep_netns_add X x || return 1
	ip link add kr0 netns "$X" type veth peer name px netns "$BR" &&
		ip -n "$BR" link set px master krbr up &&
		printf '%s\n' "link set lo up" "addr add $NET.9/24 dev kr0" \
			"link set kr0 up" | ip -n "$X" -b -
}

# converged: every partition of fz and rt on the three brokers has one
# leader whose HW is its LEO and whose ISR is all three, and every replica
# is at that LEO
converged() {
	local i
	: >"$tmp/conv"
	for i in 1 2 3; do
		describe "$(bns "$i")" >>"$tmp/conv" 2>/dev/null || return 1
	done
	jq -e -s '[.[][] | select(.topic == "fz" or .topic == "rt")] as $a |
		($a | length) == 18 and
		all($a | group_by([.topic, .partition])[];
		    length == 3 and
		    ([.[] | select(.role == "leader")] | length) == 1 and
		    ([.[] | select(.role == "leader")][0] as $l |
			$l.hw == $l.leo and ($l.isr | length) == 3 and
			all(.[]; .leo == $l.leo)))' "$tmp/conv" >/dev/null 2>&1
}

# peers_up: every broker sees its peers among brokers 1-3 up (not broker
# 1's peer 9, the fuzzer's, never up outside the run)
peers_up() {
	local i
	for i in 1 2 3; do
		kc "$(bns "$i")" --json broker show |
			jq -e 'all(.peers[] | select(.id != 9); .state == "up")' \
			>/dev/null || return 1
	done
}

isr_full() {
	describe "$B1" | jq -e '[.[] | select(.topic == "fz" or .topic == "rt")] |
		length == 6 and all(.[]; (.isr | length) == 3)' >/dev/null
}

# --- set-up --------------------------------------------------------------------------

krep_mod_unload || ktap_bail "krep is loaded and rmmod fails"
krep_kmsg_mark "$mark"
# shellcheck disable=SC2086 # the parameters are words
krep_mod_load $PARAMS || ktap_bail "insmod krep.ko $PARAMS failed"
setup_ok=0
cluster_up "$CLUSTER" || { ktap_diag "cluster_up failed"; setup_ok=1; }
x_up || { ktap_diag "cannot connect netns X to the bridge"; setup_ok=1; }
for t in fz rt; do
	cluster_topic "$t" partitions 3 replication-factor 3 \
		config retention_bytes=2097152,segment_bytes=262144 ||
		{ ktap_diag "topic create $t failed"; setup_ok=1; }
done
krep_wait_for 60 cluster_peers_up || { ktap_diag "peers do not connect"; setup_ok=1; }
krep_wait_for 60 isr_full || { ktap_diag "the ISR of fz and rt does not fill"; setup_ok=1; }
# brokers 1 and 2 with peer 9 too, then fz9 on broker 1 and fz8 on
# broker 2 with their assignments
kc "$B1" broker set id 1 cluster "$CLUSTER" listen "$NET.1:$PORT" \
	peers "2@$NET.2:$PORT,3@$NET.3:$PORT,9@$NET.9:$PORT" \
	kafka-listen "$NET.1:$KAFKA_PORT" >/dev/null ||
	{ ktap_diag "BROKER_SET of broker 1 with peer 9 failed"; setup_ok=1; }
kc "$B2" broker set id 2 cluster "$CLUSTER" listen "$NET.2:$PORT" \
	peers "1@$NET.1:$PORT,3@$NET.3:$PORT,9@$NET.9:$PORT" \
	kafka-listen "$NET.2:$KAFKA_PORT" >/dev/null ||
	{ ktap_diag "BROKER_SET of broker 2 with peer 9 failed"; setup_ok=1; }
out=$(ip netns exec "$B1" /usr/bin/python3 "$here/ctl_helper.py" topic-new - \
	fz9 2 2 9,1/1,9 2>&1)
[ "$out" = ok ] || { ktap_diag "fz9 on broker 1: $out"; setup_ok=1; }
out=$(ip netns exec "$B2" /usr/bin/python3 "$here/ctl_helper.py" topic-new - \
	fz8 1 2 9,2 2>&1)
[ "$out" = ok ] || { ktap_diag "fz8 on broker 2: $out"; setup_ok=1; }
E9=$(describe "$B1" fz9 2>/dev/null |
	jq '.[] | select(.partition == 1) | .leader_epoch' 2>/dev/null)
[[ $E9 =~ ^[0-9]+$ ]] || { ktap_diag "fz9-1's leader epoch: '$E9'"; setup_ok=1; E9=0; }
krep_wait_for 60 peers_up || { ktap_diag "peers do not come back"; setup_ok=1; }
# the genl target's broker, alone in its namespace
if krep_netns_add G g && ip -n "$G" link set lo up &&
   kc "$G" broker set id 1 cluster fuzzg listen "127.0.0.1:$PORT" \
	peers "2@127.0.0.2:$PORT" kafka-listen "127.0.0.1:$KAFKA_PORT" >/dev/null &&
   mkdir "$tmp/glog"; then
	:
else
	ktap_diag "broker G does not come up"
	setup_ok=1
fi
ktap_diag "set-up: $SECONDS s"
if [ "$setup_ok" = 0 ]; then
	ktap_ok "set-up: 3 brokers with Kafka listeners, fz and rt with a full ISR, brokers 1 and 2 with peer 9, fz9 on broker 1 (replicas 9,1 and 1,9; epoch $E9), fz8 on broker 2 (replicas 9,2); broker G for the genl target"
else
	describe "$B1" 2>&1 | ktap_diag_stdin
	ktap_fail "set-up: 3 brokers with Kafka listeners, fz and rt with a full ISR, brokers 1 and 2 with peer 9, fz9 on broker 1, fz8 on broker 2; broker G for the genl target"
fi

# --- the fuzzer --------------------------------------------------------------------------

krep_kmsg_mark "$mark-fuzz"
start=$SECONDS
# the genl target beside the others, from the start (its status in
# genl.rc); its output as it comes too
(
	timeout -k 10 $((SECS + 600)) ip netns exec "$G" "$here/fuzz_genl" run \
		--seed "$SEED" --secs "$SECS" --workers "$GENL_WORKERS" \
		--logdir "$tmp/glog" --ring "$tmp/gring" </dev/null 2>&1
	echo $? >"$tmp/genl.rc"
) | tee "$tmp/genl.out" | sed -u 's/^/# /' &
gpid=$!
# the output as it comes (a kernel crash ends the VM mid-run: what the
# console had is what is left), and in a file for the results
timeout -k 10 $((SECS + 600)) ip netns exec "$X" /usr/bin/python3 -u \
	"$here/fuzz_kafka.py" run --seed "$SEED" --secs "$SECS" \
	--kafka-leader "$NET.1:$KAFKA_PORT" --kafka-follower "$NET.2:$KAFKA_PORT" \
	--peer "$NET.1:$PORT" --listen "$NET.9:$PORT" --broker-id 1 \
	--followers "1@$NET.1,2@$NET.2" \
	--peer-id 9 --peer-topic fz9 --peer-epoch "$E9" --cluster "$CLUSTER" \
	--topics fz:3,fz9:2,fz8:1 --kafka-idle-ms "$IDLE_MS" \
	--kafka-request-ms "$REQUEST_MS" --kafka-wait-max-ms "$WAIT_MAX_MS" \
	--hello-timeout-ms "$HELLO_MS" --fetch-timeout-ms "$FETCH_MS" \
	--ring "$tmp/ring" </dev/null 2>&1 | tee "$tmp/fuzz.out" | sed -u 's/^/# /'
frc=${PIPESTATUS[0]}
wait "$gpid"
grc=$(cat "$tmp/genl.rc" 2>/dev/null)
ktap_diag "the fuzzers ran $((SECS)) s and ended after $((SECONDS - start)) s, status $frc (fuzz_genl: ${grc:-none})"

for t in $TARGETS; do
	line=$(grep -E "^fuzz: result $t " "$tmp/fuzz.out" | tail -n 1)
	re="inputs ([0-9]+) sessions ([0-9]+) secs ([0-9.]+) rate ([0-9.]+)/s answered ([0-9]+) closed ([0-9]+) valid ([0-9]+) failures ([0-9]+)"
	if [[ $line =~ $re ]]; then
		desc="$t: ${BASH_REMATCH[1]} inputs, ${BASH_REMATCH[4]}/s, in ${BASH_REMATCH[2]} connections (${BASH_REMATCH[5]} answered to the end, ${BASH_REMATCH[6]} closed by the broker"
		[ "${BASH_REMATCH[7]}" = 0 ] || desc+=", ${BASH_REMATCH[7]} with only valid requests, all answered"
		late=$(sed -n 's/.* late \([0-9]*\)$/\1/p' <<<"$line")
		[ "${late:-0}" = 0 ] || desc+=", $late closed when the fuzzer's own send of a valid request outlasted kafka_request_ms"
		desc+=")"
		if [ "${BASH_REMATCH[8]}" = 0 ] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
			ktap_ok "$desc, no hang or bad answer"
		else
			grep -E "^fuzz: FAIL $t " "$tmp/fuzz.out" | head -n 5 | ktap_diag_stdin
			ktap_fail "$desc, ${BASH_REMATCH[8]} failures"
		fi
	else
		ktap_fail "$t: no result from the fuzzer"
	fi
done
line=$(grep -E "^fuzz: genl result genl " "$tmp/genl.out" | tail -n 1)
re="inputs ([0-9]+) secs ([0-9.]+) rate ([0-9.]+)/s acks ([0-9]+) replies ([0-9]+) dumps ([0-9]+) errors ([0-9]+) valid ([0-9]+) slowest ([0-9]+) ms failures ([0-9]+)"
if [[ $line =~ $re ]]; then
	desc="genl: ${BASH_REMATCH[1]} inputs, ${BASH_REMATCH[3]}/s ($((BASH_REMATCH[4] + BASH_REMATCH[5])) done, ${BASH_REMATCH[6]} dumps, ${BASH_REMATCH[7]} refused; ${BASH_REMATCH[8]} rounds of valid requests; the slowest answer ${BASH_REMATCH[9]} ms)"
	if [ "${BASH_REMATCH[10]}" = 0 ] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
		ktap_ok "$desc, every request answered once and well, valid ones done"
	else
		grep -E "^fuzz: genl FAIL " "$tmp/genl.out" | head -n 5 | ktap_diag_stdin
		ktap_fail "$desc, ${BASH_REMATCH[10]} failures"
	fi
else
	grep -E "^fuzz: genl (FAIL|fuzzer error)" "$tmp/genl.out" | head -n 5 | ktap_diag_stdin
	ktap_fail "genl: no result from fuzz_genl"
fi
total=$(sed -n 's/^fuzz: total inputs \([0-9]*\) .*/\1/p' "$tmp/fuzz.out" | tail -n 1)
gtotal=${line#*inputs }
gtotal=${gtotal%% *}
if [ "$frc" = 0 ] && [ "$grc" = 0 ]; then
	ktap_ok "the fuzzers end without a failure (${total:-?} + ${gtotal:-?} inputs in all, seed $SEED)"
else
	grep -hE "^fuzz: (genl )?(FAIL|fuzzer error)" "$tmp/fuzz.out" "$tmp/genl.out" | head -n 10 | ktap_diag_stdin
	ktap_fail "the fuzzers end without a failure (status $frc and ${grc:-none}, ${total:-?} + ${gtotal:-?} inputs, seed $SEED)"
fi

# --- the brokers still serve --------------------------------------------------------------

# a BROKER_SET that succeeded has listeners that bind (broker G's are the
# only ones that move)
nolisten=$(krep_kmsg_since "$mark-fuzz" | grep -a 'krep: cannot listen')
if out=$(kc "$G" --json broker show 2>&1) &&
   echo "$out" | jq -e '.broker_id | type == "number"' >/dev/null 2>&1 &&
   [ -z "$nolisten" ]; then
	ktap_ok "broker G still answers BROKER_GET, with an id ($(echo "$out" | jq -c '{broker_id, generation}')); no listener of a successful BROKER_SET failed to bind"
else
	ktap_diag "$out"
	[ -z "$nolisten" ] || echo "$nolisten" | head -n 5 | ktap_diag_stdin
	ktap_fail "broker G still answers BROKER_GET, with an id; no listener of a successful BROKER_SET failed to bind"
fi

t_checks=$SECONDS
boot() { echo "$NET.$1:$KAFKA_PORT"; }
bx() { timeout 60 ip netns exec "$(bns "$1")" "${@:2}"; }

if bx 2 kcat -b "$(boot 2)" -L -J -m 15 >"$tmp/meta.json" 2>"$tmp/meta.err" &&
   jq -e '[.brokers[].id] | sort | .[:3] == [1, 2, 3]' "$tmp/meta.json" >/dev/null; then
	ktap_ok "kcat -L through broker 2: Metadata lists brokers 1, 2, 3"
else
	cat "$tmp/meta.err" "$tmp/meta.json" 2>/dev/null | head -n 20 | ktap_diag_stdin
	ktap_fail "kcat -L through broker 2: Metadata lists brokers 1, 2, 3"
fi

awk -v s="$SEED" 'BEGIN { for (i = 1; i <= 200; i++) printf "rt-%s-%04d\n", s, i }' >"$tmp/rt.in"
if bx 2 kcat -b "$(boot 2)" -P -t rt -p 0 -X acks=all <"$tmp/rt.in" 2>"$tmp/rt.err" &&
   bx 3 kcat -b "$(boot 3)" -C -t rt -p 0 -o beginning -e -q >"$tmp/rt.out" 2>>"$tmp/rt.err" &&
   cmp -s "$tmp/rt.in" "$tmp/rt.out"; then
	ktap_ok "kcat round trip: 200 records to rt-0 (acks=all) through broker 2, read back from broker 3 byte for byte"
else
	head -n 10 "$tmp/rt.err" | ktap_diag_stdin
	ktap_diag "read back $(wc -l <"$tmp/rt.out" 2>/dev/null) lines"
	ktap_fail "kcat round trip: 200 records to rt-0 (acks=all) through broker 2, read back from broker 3 byte for byte"
fi

acks_ok=0
for p in 0 1 2; do
	out=$(echo "after-fuzz-$p" | timeout 30 "$KREPCTL" --netns "$(bns $((p + 1)))" \
		--json produce fz partition "$p" acks all timeout 10000 2>&1) || {
		ktap_diag "acks=all to fz-$p: $out"
		acks_ok=1
	}
done
if [ "$acks_ok" = 0 ]; then
	ktap_ok "acks=all on the leader of every partition of fz"
else
	ktap_fail "acks=all on the leader of every partition of fz"
fi

if krep_wait_for 60 converged; then
	ktap_ok "fz and rt converge: every replica at its leader's LEO, HW at LEO, the ISR full"
else
	jq -c '.[] | {topic, partition, role, leader, leo, hw, isr}' "$tmp/conv" 2>&1 | ktap_diag_stdin
	for i in 1 2 3; do
		kc "$(bns "$i")" --json broker show 2>&1 | ktap_diag_stdin
	done
	ktap_fail "fz and rt converge: every replica at its leader's LEO, HW at LEO, the ISR full"
fi

: >"$tmp/all"
for i in 1 2 3; do
	describe "$(bns "$i")" | jq -c --argjson b "$i" '.[] | . + {broker: $b}' >>"$tmp/all" 2>&1
done
if [ -s "$tmp/all" ] && jq -e -s 'length > 0 and all(.[]; .hw <= .leo)' "$tmp/all" >/dev/null 2>&1; then
	ktap_ok "HW <= LEO on every replica of every broker ($(wc -l <"$tmp/all") replicas, fz9's included)"
else
	jq -c 'select(.hw > .leo) | {broker, topic, partition, role, leo, hw}' "$tmp/all" 2>&1 | head -n 20 | ktap_diag_stdin
	ktap_fail "HW <= LEO on every replica of every broker"
fi
{ describe "$B1" fz9; describe "$B2" fz8; } 2>/dev/null |
	jq -c '.[] | {topic, partition, role, leader, leader_epoch, leo, hw, isr}' 2>&1 | ktap_diag_stdin

ktap_diag "the checks after the fuzzers: $((SECONDS - t_checks)) s"
# the clean-up removes $tmp
ring=$(cat "$tmp/ring" "$tmp/gring" 2>/dev/null)
krep_teardown_checks "$mark"
if [ "$_ktap_fail" != 0 ] && [ -n "$ring" ]; then
	ktap_diag "the last connections of every target (make fuzz writes them to build/fuzz/):"
	ktap_diag "$ring"
fi
ktap_finish
