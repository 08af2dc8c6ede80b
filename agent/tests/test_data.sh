#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# test_data.sh - krepctl's data path end to end on one broker: topic
# create/list/describe/delete, produce and consume (byte-exact), offsets,
# delete-records, transactions and isolation, follow mode, and the errors
# with Kafka's codes. Runs in the test VM (it loads the module):
#
#	selftests/vm/run.sh -- agent/tests/test_data.sh
#
#   initial netns, broker 1, no peers
#   +-----------------------------------------------------------+
#   |  krepctl topic / produce / consume / offsets / txn /      |
#   |  delete-records  --genl-->  krep.ko (one broker, RF 1)    |
#   +-----------------------------------------------------------+
#
# Prints KTAP; leaves the module unloaded. Uses selftests/lib.sh.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/../../selftests/lib.sh"

krep_require_vm
krep_require_cmd jq cmp seq

K=$KREPCTL
TMP=$(mktemp -d)
krep_cleanup_push rm -rf "$TMP"

# same DESC GOT WANT
same() {
	if [ "$2" = "$3" ]; then
		ktap_ok "$1"
	else
		ktap_diag "want: $3"
		ktap_diag "got:  $2"
		ktap_fail "$1"
	fi
}

# fails DESC STATUS KAFKA_NAME CMD...: CMD exits STATUS and its stderr
# ends with [KAFKA_NAME]
fails() {
	local desc=$1 want=$2 name=$3 err rc
	shift 3

	err=$("$@" 2>&1 >/dev/null </dev/null) && rc=0 || rc=$?
	if [ "$rc" = "$want" ] && [[ $err == *"[$name]" ]]; then
		ktap_ok "$desc"
	else
		ktap_diag "exit $rc: $*"
		ktap_diag "$err"
		ktap_fail "$desc"
	fi
}

ktap_plan 74

krep_mod_unload
krep_mod_load broker_id=1 || ktap_bail "cannot load $KREP_KO"

# --- topics -----------------------------------------------------------
ktap_check "topic create with partitions, rf and config" \
	"$K" topic create orders partitions 2 rf 1 \
	config min.insync.replicas=1,segment_bytes=65536
same "topic list --json" \
	"$("$K" --json topic list | jq -c '.[0] | [.topic, .partitions,
		.replication_factor, .config.segment_bytes]')" \
	'["orders",2,1,65536]'
same "topic describe: one line per partition" \
	"$("$K" topic describe orders | cut -d' ' -f1-5)" \
	"orders 0 leader=1 epoch=0 role=leader
orders 1 leader=1 epoch=0 role=leader"
fails "topic create twice: TOPIC_ALREADY_EXISTS" 1 TOPIC_ALREADY_EXISTS \
	"$K" topic create orders
fails "topic describe of an unknown topic" 1 UNKNOWN_TOPIC_OR_PARTITION \
	"$K" topic describe nosuch
same "error as JSON on stdout" \
	"$("$K" --json topic create orders 2>/dev/null)" \
	'{"error":"TOPIC_ALREADY_EXISTS","code":36,"errno":"EEXIST","message":"topic already exists"}'

# README's error table: refusals carry Kafka's code, not the policy's ERANGE
fails "a 250-character topic name: INVALID_TOPIC_EXCEPTION" 1 \
	INVALID_TOPIC_EXCEPTION "$K" topic create "$(printf 'x%.0s' {1..250})"
fails "partitions 0: INVALID_PARTITIONS" 1 INVALID_PARTITIONS \
	"$K" topic create p0 partitions 0
fails "partitions 1025: INVALID_PARTITIONS" 1 INVALID_PARTITIONS \
	"$K" topic create p1025 partitions 1025
fails "replication-factor 0: INVALID_REPLICATION_FACTOR" 1 \
	INVALID_REPLICATION_FACTOR "$K" topic create rf0 replication-factor 0
# policy-level refusals: krepctl's own check of a topic configuration,
# and the kernel's netlink policy (no code of its own) named by krepctl
fails "config min_insync_replicas=0: INVALID_CONFIG" 1 INVALID_CONFIG \
	"$K" topic create mi0 config min_insync_replicas=0
same "config segment_bytes=100 as JSON: INVALID_CONFIG with the range" \
	"$("$K" --json topic create sb config segment_bytes=100 2>/dev/null)" \
	'{"error":"INVALID_CONFIG","code":40,"errno":"EINVAL","message":"topic create: segment_bytes must be 4096..1073741824, not 100"}'
fails "consume max-bytes 0: INVALID_FETCH_SIZE" 1 INVALID_FETCH_SIZE \
	"$K" consume orders partition 0 max-bytes 0
same "consume max-bytes 0 as JSON: the attribute and the allowed range" \
	"$("$K" --json consume orders partition 0 max-bytes 0 2>/dev/null | jq -c '[.error, .code, .attribute, .allowed]')" \
	'["INVALID_FETCH_SIZE",4,"max_bytes","1..1048576"]'
err=$(echo x | "$K" produce orders partition 0 timeout 40000 2>&1 >/dev/null)
same "produce timeout 40000: INVALID_REQUEST, the allowed range" \
	"$err" "krepctl: Numerical result out of range: integer out of range (attribute timeout_ms, allowed 0..30000) [INVALID_REQUEST]"
same "topic describe --json: the leader epoch cache as epochs" \
	"$("$K" --json topic describe orders | jq -c '.[0].epochs')" \
	'[{"epoch":0,"start_offset":0}]'

# --- produce and consume --------------------------------------------------
seq -f 'record %g of ten thousand' 1 10000 >"$TMP/in"
same "produce 10000 lines in batches of 100" \
	"$("$K" produce orders batch 100 <"$TMP/in")" \
	"produced 10000 records to orders-0, offsets 0..9999"
"$K" consume orders >"$TMP/out"
ktap_check "consume them back byte for byte" cmp "$TMP/in" "$TMP/out"
"$K" consume orders max-bytes 1048576 >"$TMP/out" 2>"$TMP/err"
ktap_check "the same with 1 MiB fetches (KREP_A_RECORDS over 64 KiB)" \
	cmp "$TMP/in" "$TMP/out" || ktap_diag_stdin <"$TMP/err"
same "HW and LEO after them" \
	"$("$K" --json topic describe orders | jq -c '.[0] | [.leo, .hw, .lso]')" \
	"[10000,10000,10000]"
same "produce --json to partition 1" \
	"$(printf 'a\nb\n' | "$K" --json produce orders partition 1)" \
	'{"topic":"orders","partition":1,"records":2,"first_offset":0,"last_offset":1}'

# random bytes (every value but the newline) in lines of 1, 173 and 0 bytes
{
	head -c 1000 /dev/urandom | tr '\n' '\0' | fold -b -w 1
	head -c 300000 /dev/urandom | tr '\n' '\0' | fold -b -w 173
	printf '\n\n'
} >"$TMP/bin"
"$K" topic create bin
"$K" produce bin batch 37 <"$TMP/bin" >/dev/null
"$K" consume bin >"$TMP/binout"
ktap_check "binary values (NUL, tab, invalid UTF-8) round trip" \
	cmp "$TMP/bin" "$TMP/binout"

same "consume -o OFFSET -c COUNT" \
	"$("$K" consume orders -o 41 -c 2)" \
	"record 42 of ten thousand
record 43 of ten thousand"
same "consume -o -N: the last N" \
	"$("$K" consume orders partition 0 -o -1)" "record 10000 of ten thousand"
out=$("$K" consume orders -o end 2>"$TMP/err")
rc=$?
same "consume -o end: nothing, exit 0, no error" \
	"$rc stdout:$out stderr:$(<"$TMP/err")" "0 stdout: stderr:"

printf 'k1=v1\nk2=v2\nnokey\n' |
	"$K" produce orders partition 1 -K = header h=1 header x=y batch 3 \
	timestamp 5000 >/dev/null
same "consume --format full: offset, time, key, value, headers" \
	"$("$K" consume orders partition 1 -o 2 --format full)" \
	"$(printf '2\t5000\tk1\tv1\th=1,x=y\n3\t5000\tk2\tv2\th=1,x=y\n4\t5000\t\tnokey\th=1,x=y')"
same "consume --json: one object per record, with topic and partition" \
	"$("$K" --json consume orders partition 1 -o 3 -c 2)" \
	'{"topic":"orders","partition":1,"offset":3,"timestamp":5000,"key":"k2","value":"v2","headers":{"h":"1","x":"y"},"encoding":"utf8"}
{"topic":"orders","partition":1,"offset":4,"timestamp":5000,"key":null,"value":"nokey","headers":{"h":"1","x":"y"},"encoding":"utf8"}'
same "JSON: a value that is not UTF-8 comes as base64, every byte kept" \
	"$(printf 'a\tb\001\377\n' | "$K" produce orders partition 1 >/dev/null;
	   "$K" --json consume orders partition 1 -o 5 |
	   jq -r '.encoding + " " + .value')" \
	"base64 $(printf 'a\tb\001\377' | base64)"
same "JSON: control bytes in UTF-8 stay text" \
	"$(printf 'c\001d\n' | "$K" produce orders partition 1 >/dev/null;
	   "$K" --json consume orders partition 1 -o 6 | jq -c '[.encoding, .value]')" \
	'["utf8","c\u0001d"]'

# --- kcat-like: key partitioning, -K, -D, -Z, -f FORMAT, every partition ---
# Kafka's murmur2 over 2 partitions: foobar, 21 -> 0; abc, "", lkjh... -> 1
"$K" topic create keyed partitions 2
lk=lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8
same "produce without a partition: each key where Kafka puts it" \
	"$(printf 'foobar=1\nabc=2\n21=3\n%s=4\n=5\nnokey\n' "$lk" |
	   "$K" produce keyed -K = batch 10)" \
	"produced 3 records to keyed-0, offsets 0..2
produced 3 records to keyed-1, offsets 0..2"
same "consume -f FORMAT, every partition in turn" \
	"$("$K" consume keyed -e -f '%t/%p/%o %k=%s (%K)\n')" \
	"keyed/0/0 foobar=1 (6)
keyed/0/1 21=3 (2)
keyed/0/2 =nokey (-1)
keyed/1/0 abc=2 (3)
keyed/1/1 $lk=4 (48)
keyed/1/2 =5 (0)"
same "produce -D SEP -K '\t' -Z: custom separators, empty means null" \
	"$(printf 'k\t|\tv|x\ty' | "$K" produce keyed partition 0 -D '|' -K '\t' -Z >/dev/null;
	   "$K" --json consume keyed partition 0 -o 3 | jq -c '[.key, .value]')" \
	'["k",null]
[null,"v"]
["x","y"]'
same "consume -c COUNT counts over every partition" \
	"$("$K" consume keyed -c 8 | wc -l)" "8"

"$K" topic create huge
seq 1 100000 >"$TMP/h"
same "100000 records in batches of 1000" \
	"$("$K" produce huge batch 1000 <"$TMP/h")" \
	"produced 100000 records to huge-0, offsets 0..99999"
"$K" consume huge >"$TMP/hout"
ktap_check "and back" cmp "$TMP/h" "$TMP/hout"

# --- offsets --------------------------------------------------------------
"$K" topic create ts
printf 'a\nb\n' | "$K" produce ts timestamp 1000 batch 2 >/dev/null
printf 'c\n' | "$K" produce ts timestamp 2000 >/dev/null
printf 'd\n' | "$K" produce ts timestamp 3000 >/dev/null
same "offsets earliest, latest" \
	"$("$K" offsets ts partition 0 earliest) $("$K" offsets ts partition 0)" "0 4"
same "offsets by time: first at or after it" \
	"$("$K" offsets ts partition 0 1500 | cut -d' ' -f1) $("$K" offsets ts partition 0 2000 | cut -d' ' -f1) $("$K" offsets ts partition 0 9999)" \
	"2 2 4"
same "offsets --json" "$("$K" --json offsets ts partition 0 2500)" \
	'{"offset":3,"timestamp":3000}'
same "offsets without a partition: every partition" \
	"$("$K" offsets keyed)" "keyed 0 6
keyed 1 3"
same "offsets --json of every partition" \
	"$("$K" --json offsets keyed earliest)" \
	'[{"topic":"keyed","partition":0,"offset":0,"timestamp":null},{"topic":"keyed","partition":1,"offset":0,"timestamp":null}]'
same "consume -o s@MS" "$("$K" consume ts -o s@2000 | tr '\n' ' ')" "c d "

# --- delete-records -----------------------------------------------------
same "delete-records before 2" "$("$K" delete-records ts before 2)" \
	"log_start=2 lw=2"
same "consume from the new log start" \
	"$("$K" consume ts | tr '\n' ' ')" "c d "
fails "consume below the log start: OFFSET_OUT_OF_RANGE" 1 \
	OFFSET_OUT_OF_RANGE "$K" consume ts -o 0
fails "delete-records beyond HW: OFFSET_OUT_OF_RANGE" 1 \
	OFFSET_OUT_OF_RANGE "$K" delete-records ts before 10
fails "consume beyond LEO: OFFSET_OUT_OF_RANGE" 1 OFFSET_OUT_OF_RANGE \
	"$K" consume ts -o 99
fails "consume at 2^64-1: OFFSET_OUT_OF_RANGE" 1 OFFSET_OUT_OF_RANGE \
	"$K" consume ts -o 18446744073709551615
fails "unknown topic: UNKNOWN_TOPIC_OR_PARTITION" 1 \
	UNKNOWN_TOPIC_OR_PARTITION "$K" consume nosuch

# --- too large ------------------------------------------------------------
"$K" topic create small config max_message_bytes=200
fails "a batch over max_message_bytes: MESSAGE_TOO_LARGE" 1 \
	MESSAGE_TOO_LARGE bash -c "head -c 300 /dev/zero | tr '\\0' x | $K produce small"
# to a topic whose max_message_bytes (the default, 1048588) allows it: krepctl
# refuses it itself, before the kernel could
err=$(head -c 70000 /dev/zero | tr '\0' x | "$K" produce bin 2>&1 >/dev/null)
rc=$?
if [ "$rc" = 1 ] && [[ $err == *"more than one netlink attribute holds"*"[MESSAGE_TOO_LARGE]" ]]; then
	ktap_ok "a record over one netlink attribute: krepctl refuses it, MESSAGE_TOO_LARGE"
else
	ktap_diag "exit $rc: $err"
	ktap_fail "a record over one netlink attribute: krepctl refuses it, MESSAGE_TOO_LARGE"
fi

# --- transactions ---------------------------------------------------------
"$K" topic create tx
printf 'p1\np2\n' | "$K" produce tx >/dev/null
same "txn begin" "$("$K" txn tx 7:0 begin)" "offset=2 lso=2"
printf 't1\nt2\n' | "$K" produce tx txn 7:0 batch 2 >/dev/null
same "open transaction: read_uncommitted sees it" \
	"$("$K" consume tx | tr '\n' ' ')" "p1 p2 t1 t2 "
same "open transaction: LSO stays at its first offset" \
	"$("$K" --json topic describe tx | jq -c '.[0] | [.lso, .hw]')" "[2,4]"
same "open transaction: read_committed stops at the LSO" \
	"$("$K" consume tx --isolation read_committed | tr '\n' ' ')" "p1 p2 "
same "offsets latest: HW for read_uncommitted, LSO for read_committed" \
	"$("$K" offsets tx partition 0) $("$K" offsets tx partition 0 --isolation read_committed)" \
	"4 2"
same "offsets lag: HW - position and LSO - position, as Kafka counts them" \
	"$("$K" offsets tx partition 0 lag 1) $("$K" --json offsets tx partition 0 --isolation read_committed lag 1)" \
	'4 lag=3 {"offset":2,"timestamp":null,"lag":1}'
err=$("$K" offsets tx lag 1 2>&1) && rc=0 || rc=$?
if [ "$rc" = 2 ] && [[ $err == *"lag needs partition N and latest"* ]]; then
	ktap_ok "offsets lag without a partition: a usage error (exit 2)"
else
	ktap_diag "exit $rc: $err"
	ktap_fail "offsets lag without a partition: a usage error (exit 2)"
fi
printf 'p3\n' | "$K" produce tx >/dev/null
same "txn abort: the marker's offset and the LSO" \
	"$("$K" txn tx 7:0 abort)" "offset=5 lso=6"
same "aborted: read_committed skips it and the marker" \
	"$("$K" consume tx --isolation read_committed | tr '\n' ' ')" \
	"p1 p2 p3 "
"$K" txn tx 8:1 begin >/dev/null
printf 'c1\n' | "$K" produce tx txn 8:1 >/dev/null
same "txn commit --json" "$("$K" --json txn tx 8:1 commit)" \
	'{"offset":7,"lso":8}'
same "committed: read_committed sees it, no markers" \
	"$("$K" consume tx --isolation read_committed -o 5 | tr '\n' ' ')" \
	"c1 "
fails "commit without begin: INVALID_TXN_STATE" 1 INVALID_TXN_STATE \
	"$K" txn tx 8:1 commit

# --- follow ------------------------------------------------------------------
"$K" consume tx -f -o end >"$TMP/follow" 2>&1 &
pid=$!
if krep_wait_for 60 krep_parked $pid; then
	printf 'f1\nf2\n' | "$K" produce tx >/dev/null
	krep_wait_for 60 grep -q f2 "$TMP/follow"
else
	ktap_diag "the consumer never waited in a FETCH"
fi
kill -INT $pid
wait $pid
rc=$?
same "consume -f prints new records, SIGINT ends it with status 0" \
	"$rc $(tr '\n' ' ' <"$TMP/follow")" "0 f1 f2 "

# --follow over every partition: a fetch each in turn, new records of both
"$K" consume keyed --follow -o end -f '%p:%s\n' >"$TMP/kfollow" 2>&1 &
pid=$!
if krep_wait_for 60 krep_parked $pid; then
	printf 'foobar=f0\nabc=f1\n' | "$K" produce keyed -K = >/dev/null
	krep_wait_for 60 grep -qx 0:f0 "$TMP/kfollow" &&
		krep_wait_for 60 grep -qx 1:f1 "$TMP/kfollow"
else
	ktap_diag "the consumer of keyed never waited in a FETCH"
fi
kill -INT $pid
wait $pid
rc=$?
same "consume --follow of every partition: each one's new records, SIGINT ends it" \
	"$rc $(sort "$TMP/kfollow" | tr '\n' ' ')" "0 0:f0 1:f1 "

# --- NOT_LEADER names the leader ------------------------------------------
# broker 2 never comes: led-1's preferred leader is broker 2 (epoch 0)
"$K" broker set peers 2@192.0.2.2:9093
"$K" topic create led partitions 2 rf 2 config replica_lag_time_max_ms=100
err=$(echo x | "$K" produce led partition 1 acks 1 2>&1 >/dev/null)
rc=$?
if [ "$rc" = 1 ] && [[ $err == *"[NOT_LEADER_OR_FOLLOWER]"*"partition led-1 is led by broker 2 at 192.0.2.2:9093" ]]; then
	ktap_ok "NOT_LEADER_OR_FOLLOWER names the leader and its address"
else
	ktap_diag "exit $rc: $err"
	ktap_fail "NOT_LEADER_OR_FOLLOWER names the leader and its address"
fi
same "the same in the JSON error" \
	"$(echo x | "$K" --json produce led partition 1 acks 1 2>/dev/null |
	   jq -c '[.error, .leader, .leader_address]')" \
	'["NOT_LEADER_OR_FOLLOWER",2,"192.0.2.2:9093"]'
echo y | "$K" produce led partition 0 acks 1 >/dev/null
led0_hw() {
	[ "$("$K" --json topic describe led | jq '.[] | select(.partition == 0) | .hw')" = 1 ]
}
krep_wait_for 30 led0_hw || ktap_diag "led-0's HW never reached 1"
out=$("$K" consume led 2>"$TMP/err")
rc=$?
same "consume of every partition: what is led here, the rest named, exit 1" \
	"$rc $out $(grep -c 'partition led-1 is led by broker 2' "$TMP/err")" "1 y 1"
out=$("$K" offsets led 2>"$TMP/err")
rc=$?
same "offsets of every partition: what is led here, the rest named, exit 1" \
	"$rc $out $(grep -c 'partition led-1 is led by broker 2' "$TMP/err")" "1 led 0 1 1"

# --- health and describe's filters ------------------------------------------
# led-0: RF 2, its follower (broker 2) never came, ISR {1}: under-replicated
same "health of a healthy topic: exit 0" \
	"$("$K" health orders; echo "rc=$?")" "healthy: 2 partitions
rc=0"
out=$("$K" health led)
rc=$?
same "health: an under-replicated partition named, exit 1" \
	"$rc $(grep -c '^led-0 under-replicated isr=1/2$' <<<"$out") $(tail -n1 <<<"$out" | cut -d: -f1)" \
	"1 1 unhealthy"
same "stats --check: exit 1 as well" \
	"$("$K" stats led --check >/dev/null; echo $?)" "1"
same "topic describe --under-replicated" \
	"$("$K" topic describe led --under-replicated | grep -v '^  remote ' | cut -d' ' -f1-2)" \
	"led 0"
same "topic describe --at-min-isr, --under-min-isr" \
	"$("$K" topic describe orders --at-min-isr | cut -d' ' -f1-2) / $("$K" topic describe --under-min-isr)" \
	"orders 0
orders 1 / "

ktap_check "topic delete" "$K" topic delete orders
krep_mod_unload
ktap_finish
