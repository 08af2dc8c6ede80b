#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kafka.sh - Kafka clients against the brokers' Kafka listeners: kcat
# (librdkafka), kafka-python and KafkaJS, unchanged, plus raw requests.
#
#   B1 10.203.0.1            B2 10.203.0.2            B3 10.203.0.3
#   replication :9092, Kafka clients :9192 on each; topic kt, 3 partitions,
#   RF 3, partition P led by broker P+1
#
#   kcat -L           Metadata: 3 brokers at their advertised addresses,
#                     each partition's leader, replicas and ISR
#   kcat -P / -C      1000 records produced (acks=all) through broker 2 to
#                     partition 0 (led by broker 1), copied once by the
#                     leader (socket buffers to log), and read back, byte for
#                     byte, from the beginning to the end; 100 more
#                     with enable.idempotence=true, each stored once
#   kcat -P acks 0, 1 with keys and headers to kh, read back with keys,
#                     values, headers and timestamps
#   kafka-python      keyed records to partition 1 and back (no group)
#   confluent-kafka   the same, delivery callbacks, the partition assigned
#   KafkaJS           records to partition 2, then ListOffsets (admin); a
#                     consumer group stops, told there is no coordinator
#   kafka_raw.py      ApiVersions v0/v3/unsupported, unknown and invalid
#                     topics, NOT_LEADER_OR_FOLLOWER on a follower,
#                     InitProducerId and idempotence (a retry answered
#                     with its offset, sequence gaps and old epochs
#                     refused), pipelining, malformed and oversized
#                     requests, a Produce sent 16 bytes per segment,
#                     FindCoordinator (COORDINATOR_NOT_AVAILABLE), 1000
#                     idle connections and a reader of no answers
#   a parked Fetch    woken by a produce, not by its 20 s max wait
#   krepd             every broker names the leader of partitions it does
#                     not host (km: 3 partitions, RF 2), also after a
#                     leader is cut off and krepd elects another
#   librdkafka        rdk_client.c: an idempotent producer of keyed
#                     records to kf (6 partitions, RF 3) while broker 2
#                     is cut off and krepd moves its leaders; a consumer
#                     of every partition (assigned) reads each
#                     acknowledged record once, in order per partition
#
# Prints KTAP; leaves the module unloaded.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd kcat jq python3 node cmp
[ -x "$here/rdk_client" ] || ktap_bail "selftests/rdk_client is not built (make selftests)"

NET=10.203.0
PORT=9092
KAFKA_PORT=9192
# shellcheck source=selftests/cluster.sh
. "$here/cluster.sh"

tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
krep_cleanup_push krep_mod_unload

ktap_plan 72

krep_mod_unload || ktap_bail "krep is loaded and rmmod fails"
mark=kafka-$$
krep_kmsg_mark "$mark"
krep_mod_load || ktap_bail "cannot load krep.ko"
cluster_up kafka || ktap_bail "cannot set up three brokers"
# kafka_raw.py in broker 1's namespace, one long-lived Python for its
# checks and its Metadata polls (a Python start costs about a second in
# the VM); it loads while the clients below run
krep_pyserve_start raw1 "$B1" kafka_raw || ktap_bail "cannot start kafka_raw.py"

# shellcheck disable=SC2317 # the conditions krep_wait_for polls
isr_full() {
	describe "$B1" kt | jq -e 'length == 3 and
		all(.[]; (.isr | length) == 3)' >/dev/null
}

cluster_topic kt partitions 3 replication-factor 3 ||
	ktap_bail "cannot create topic kt"
krep_wait_for 60 cluster_peers_up || ktap_bail "peers do not connect"
krep_wait_for 60 isr_full || ktap_bail "kt's ISR does not fill"
ktap_ok "3 brokers with Kafka listeners, topic kt with a full ISR"

boot() { echo "$NET.$1:$KAFKA_PORT"; }
# relay_results FILE: kafka_raw.py's "ok ..."/"not ok ..." lines as
# results, other lines as diagnostics; their count in $nres
relay_results() {
	local line

	nres=0
	while read -r line; do
		case $line in
		"ok "*) ktap_ok "${line#ok }"; nres=$((nres + 1)) ;;
		"not ok "*) ktap_fail "${line#not ok }"; nres=$((nres + 1)) ;;
		*) ktap_diag "$line" ;;
		esac
	done <"$1"
}
# bx N CMD...: CMD in broker N's namespace, a minute at most
bx() { timeout 60 ip netns exec "$(bns "$1")" "${@:2}"; }
# client OUT DESC CMD...: a client whose exit status is the check DESC;
# what it printed goes to OUT and to the log either way
client() {
	if "${@:3}" >"$1" 2>&1; then
		ktap_diag "$(cat "$1")"
		ktap_ok "$2"
	else
		ktap_diag_stdin <"$1"
		ktap_fail "$2"
	fi
}
# jqf EXPR FILE: jq -e on a file that must not be empty
jqf() { test -s "$2" && jq -e "$1" "$2"; }

# 1. kcat -L: Metadata
if bx 2 kcat -b "$(boot 2)" -L -J -t kt -m 15 >"$tmp/meta.json" 2>"$tmp/meta.err"; then
	ktap_ok "kcat -L through broker 2 answers"
else
	ktap_diag_stdin <"$tmp/meta.err"
	ktap_fail "kcat -L through broker 2 answers"
fi
ktap_check "Metadata lists brokers 1, 2, 3 at their Kafka listeners" \
	jqf "[.brokers[] | \"\\(.id) \\(.name)\"] | sort ==
		[\"1 $NET.1:9192\", \"2 $NET.2:9192\", \"3 $NET.3:9192\"]" \
	"$tmp/meta.json"
ktap_check "Metadata: kt has 3 partitions, partition P led by broker P+1" \
	jqf '.topics[] | select(.topic == "kt") | .partitions |
		length == 3 and all(.[]; .leader == .partition + 1)' \
	"$tmp/meta.json"
ktap_check "Metadata: every partition has replicas 1, 2, 3 and all in the ISR" \
	jqf '.topics[] | select(.topic == "kt") | .partitions |
		all(.[]; ([.replicas[].id] | sort) == [1, 2, 3] and
			([.isrs[].id] | sort) == [1, 2, 3])' "$tmp/meta.json"

# 1b. kt1: RF 1, broker 2 hosts partition 1 only; its Metadata still
# names each partition's leader, so a client bootstrapped from broker 2
# alone produces to all three
cluster_topic kt1 partitions 3 replication-factor 1 || ktap_bail "topic kt1"
bx 2 kcat -b "$(boot 2)" -L -J -t kt1 -m 15 >"$tmp/meta1.json" 2>/dev/null
ktap_check "Metadata from broker 2: kt1's partitions it does not host are led by brokers 1 and 3" \
	jqf '.topics[] | select(.topic == "kt1") | .partitions |
		length == 3 and all(.[]; .leader == .partition + 1 and
			([.replicas[].id] == [.partition + 1]))' "$tmp/meta1.json"
awk 'BEGIN { for (i = 1; i <= 60; i++) printf "k%d:v%d\n", i, i }' >"$tmp/in1"
bx 2 kcat -b "$(boot 2)" -P -t kt1 -K: -X acks=all <"$tmp/in1" 2>"$tmp/p1.err"
n1=()
for i in 1 2 3; do
	n1+=("$(kc "$(bns "$i")" --json topic describe kt1 | jq '[.[] | .hw] | add')")
done
ktap_check "kcat -P bootstrapped from broker 2 alone: 60 keyed records, on each broker some (${n1[*]})" \
	eval '[ $((n1[0] + n1[1] + n1[2])) = 60 ] && [ "${n1[0]}" -gt 0 ] &&
		[ "${n1[1]}" -gt 0 ] && [ "${n1[2]}" -gt 0 ]'

# 2. kcat produce and consume: through broker 2, to partition 0 (leader 1)
awk 'BEGIN { for (i = 1; i <= 1000; i++) {
	s = sprintf("kcat-%04d-", i); for (j = 0; j < i % 97; j++) s = s "x"
	print s } }' >"$tmp/in"
kc "$B1" --json stats >"$tmp/st0"
if bx 2 kcat -b "$(boot 2)" -P -t kt -p 0 -X acks=all -X linger.ms=5 \
	<"$tmp/in" 2>"$tmp/p.err"; then
	ktap_ok "kcat -P: 1000 records to partition 0 with acks=all"
else
	ktap_diag_stdin <"$tmp/p.err"
	ktap_fail "kcat -P: 1000 records to partition 0 with acks=all"
fi
# the leader copied each batch once, socket buffers to log: what it copied
# out of its sockets meanwhile (the requests' other fields, the followers'
# FETCH requests) is a small part of what it appended
kc "$B1" --json stats >"$tmp/st1"
ktap_check "broker 1 copied the batches once, socket to log: rx_copy_bytes grew by less than a quarter of produce_bytes" \
	jq -e -n --slurpfile a "$tmp/st0" --slurpfile b "$tmp/st1" '
	($b[0].counters.produce_bytes - $a[0].counters.produce_bytes) as $p |
	($b[0].counters.rx_copy_bytes - $a[0].counters.rx_copy_bytes) as $r |
	if $p > 50000 and $r * 4 < $p then true
	else "produce_bytes +\($p), rx_copy_bytes +\($r)" | halt_error(1) end'
bx 3 kcat -b "$(boot 3)" -C -t kt -p 0 -o beginning -e -q \
	>"$tmp/out" 2>"$tmp/c.err"
ktap_check "kcat -C reads the 1000 records back byte for byte" \
	cmp "$tmp/in" "$tmp/out"
hw=$(kc "$B1" --json topic describe kt | jq '.[] | select(.partition == 0) | .hw')
ktap_check "partition 0's HW on broker 1 is 1000 (kcat -P)" test "$hw" = 1000
kcat_end() {
	bx 1 kcat -b "$(boot 1)" -Q -t "kt:0:-1" 2>/dev/null |
		awk '{ print $NF }'
}
end=$(kcat_end)
ktap_check "kcat -Q (ListOffsets latest) gives 1000 for partition 0" \
	test "$end" = 1000

# followers have the records too: leader-independent bytes
krep_wait_for 30 eval '[ "$(kc "$B3" --json topic describe kt |
	jq ".[] | select(.partition == 0) | .leo")" = 1000 ]'
ktap_check "broker 3 (a follower) has partition 0's 1000 records" \
	test "$(kc "$B3" --json topic describe kt |
		jq '.[] | select(.partition == 0) | .leo')" = 1000

# an idempotent producer (InitProducerId, then sequences): every record
# once, through broker 3
seq -f "idem-%g" 1 100 >"$tmp/idem.in"
if bx 3 kcat -b "$(boot 3)" -P -t kt -p 0 -X enable.idempotence=true \
	-X linger.ms=5 <"$tmp/idem.in" 2>"$tmp/idem.err" &&
   ! grep -qi "fatal\|error" "$tmp/idem.err"; then
	bx 3 kcat -b "$(boot 3)" -C -t kt -p 0 -o 1000 -e -q >"$tmp/idem.out" 2>&1
	ktap_check "kcat -X enable.idempotence=true: 100 records, each stored once" \
		cmp "$tmp/idem.in" "$tmp/idem.out"
else
	ktap_diag_stdin <"$tmp/idem.err"
	ktap_fail "kcat -X enable.idempotence=true: 100 records, each stored once"
fi

# 2b. kcat -P with acks=0 and acks=1, keys and headers, to kh (one
# partition, RF 3, led by broker 1) through broker 2; read back with
# keys, values, headers and timestamps (CreateTime, kept as sent)
cluster_topic kh partitions 1 replication-factor 3 || ktap_bail "topic kh"
: >"$tmp/kh.want"
t0=$(date +%s%3N)
for a in 0 1; do
	awk -v a=$a 'BEGIN { for (i = 1; i <= 50; i++)
		printf "k%d-%d:acks%d value %d\n", a, i, a, i }' >"$tmp/kh.in$a"
	bx 2 kcat -b "$(boot 2)" -P -t kh -p 0 -K: -H "acks=$a" -H "n=v$a" \
		-X acks=$a <"$tmp/kh.in$a" 2>>"$tmp/kh.err"
	awk -F: -v a=$a '{ print $1 "|" $2 "|acks=" a ",n=v" a }' \
		"$tmp/kh.in$a" >>"$tmp/kh.want"
done
bx 3 kcat -b "$(boot 3)" -C -t kh -p 0 -o beginning -c 100 -q \
	-f '%k|%s|%h|%T\n' >"$tmp/kh.out" 2>>"$tmp/kh.err"
t1=$(date +%s%3N)
ktap_check "kcat -P with acks=0 and acks=1 and two headers: 100 records read back with their keys, values and headers" \
	eval 'cut -d"|" -f1-3 "$tmp/kh.out" | cmp -s - "$tmp/kh.want"'
ktap_check "... and their timestamps, as kcat stamped them (within the $((t1 - t0)) ms of the run)" \
	eval '[ "$(awk -F"|" -v t0="$t0" -v t1="$t1" \
		"\$4 >= t0 && \$4 <= t1" "$tmp/kh.out" | wc -l)" = 100 ]'

# 3. kafka-python: partition 1 (leader 2) through broker 3
client "$tmp/kp.out" \
	"kafka-python: 200 records to partition 1 (acks=all), read back, end offset +200" \
	bx 3 python3 "$here/kafka_python_client.py" "$(boot 3)" kt 1 200

# 3b. confluent-kafka (librdkafka under Python): partition 1 through
# broker 2
client "$tmp/ck.out" \
	"confluent-kafka: 150 records to partition 1 (acks=all), each delivered, read back in order with the partition assigned" \
	bx 2 python3 "$here/confluent_client.py" "$(boot 2)" kt 1 150

# 4. KafkaJS: partition 2 (leader 3) through broker 1
client "$tmp/kj.out" \
	"KafkaJS: 300 records to partition 2 (acks=-1), ListOffsets high +300" \
	bx 1 node "$here/kafkajs_client.js" "$(boot 1)" kt 2 300
leo2=$(kc "$B3" --json topic describe kt | jq '.[] | select(.partition == 2) | .hw')
ktap_check "partition 2's HW on its leader is 300" test "$leo2" = 300
# a KafkaJS consumer group needs a coordinator, which krep has not: it
# stops with an error that says so (FindCoordinator answers
# COORDINATOR_NOT_AVAILABLE) instead of waiting
client "$tmp/kg.out" \
	"KafkaJS consumer group: told COORDINATOR_NOT_AVAILABLE, stops with an error naming the coordinator" \
	bx 1 node "$here/kafkajs_client.js" --group "$(boot 1)" kt

# 5. raw requests: versions, errors, pipelining, bad requests; the
# krep_kafka_request tracepoint sees them (through tracefs)
tr=/sys/kernel/tracing
[ -d "$tr/events/krep" ] || tr=/sys/kernel/debug/tracing
echo >"$tr/trace"
echo 1 >"$tr/events/krep/krep_kafka_request/enable"
krep_pyserve raw1 "$(boot 1)" kt 1 "$(boot 2)" >"$tmp/raw.out" 2>&1
rc=$?
echo 0 >"$tr/events/krep/krep_kafka_request/enable"
cat "$tr/trace" >"$tmp/trace"
relay_results "$tmp/raw.out"
nraw=$nres
# kafka_raw.py has 28 checks: one result each, and one for its exit
ktap_check "kafka_raw.py ran its 28 checks and passed (status $rc)" \
	test "$nraw" = 28 -a "$rc" = 0
# a 200 KB batch with a bad CRC is refused with CORRUPT_MESSAGE, and the
# room the leader had taken for it goes back (log memory stays)
kc "$B1" --json stats >"$tmp/cs0"
cerr=$(krep_pyserve raw1 --corrupt "$(boot 1)" kt 200000 2>&1)
kc "$B1" --json stats >"$tmp/cs1"
ktap_check "a 200 KB batch with a bad CRC: CORRUPT_MESSAGE (2), and broker 1's log memory does not keep its room" \
	jq -e -n --arg e "$cerr" --slurpfile a "$tmp/cs0" --slurpfile b "$tmp/cs1" '
	($b[0].log_memory_bytes - $a[0].log_memory_bytes) as $d |
	if $e == "2" and $d < 100000 then true
	else "error \($e), log memory +\($d)" | halt_error(1) end'
# ApiVersions v3 answered (correlation 8), the unknown API key refused
ktap_check "krep_kafka_request traced kafka_raw.py's ApiVersions v3 and its unknown API key" \
	eval 'grep -q "api=18 v3 correlation=8 bytes=[0-9]* err=0" "$tmp/trace" &&
	      grep -q "api=1234 v0 correlation=1 bytes=[0-9]* err=-71" "$tmp/trace"'

# 6. a consumer's parked Fetch is woken by a produce
echo >"$tr/trace"
echo 1 >"$tr/events/krep/krep_kafka_request/enable"
start=$SECONDS
bx 3 kcat -b "$(boot 3)" -C -t kt -p 0 -o end -c 1 -q \
	-X fetch.wait.max.ms=20000 >"$tmp/late" 2>"$tmp/late.err" &
cpid=$!
# the consumer is at the end once broker 1 (kt-0's leader) has its first
# Fetch (api 1): librdkafka sends one only after ListOffsets gave it the
# end, so the record produced next is after it (an established connection
# alone is not: the end may not be asked yet)
krep_wait_for 30 grep -q 'broker=1 api=1 ' "$tr/trace" ||
	ktap_diag "no Fetch traced on broker 1: $(grep -c api= "$tr/trace") requests"
echo 0 >"$tr/events/krep/krep_kafka_request/enable"
echo late-record | bx 1 kcat -b "$(boot 1)" -P -t kt -p 0 2>/dev/null
wait "$cpid"
took=$((SECONDS - start))
ktap_check "a consumer at the end gets the next record (fetch.wait.max.ms 20000)" \
	grep -qx late-record "$tmp/late"
ktap_check "... before its Fetch's 20 s max wait ran out ($took s)" \
	test "$took" -lt 20

# 6b. under krepd: every broker names every partition's leader, epoch
# and ISR, hosted there or not, and hears when the leader moves (krepd
# sends its LEADER_AND_ISR to the brokers without a replica too, as
# Kafka's controller sends UpdateMetadata)
cluster_krepd "$tmp"
# shellcheck disable=SC2317 # the conditions krep_wait_for polls
km_create() {
	"$KREPCTL" topic create km partitions 3 rf 2 --socket "$SOCK" \
		>"$tmp/km.create" 2>&1
}
# shellcheck disable=SC2317
km_view() { # ISR: krepd's view of km, [{p, l, e, i}] by partition, when
	# each of the 3 has a leader and an ISR of at least ISR replicas
	"$KREPCTL" elect --status --socket "$SOCK" 2>/dev/null |
		jq -c -s --argjson isr "$1" '
		[.[] | select(.topic == "km")] | sort_by(.partition) |
		select(length == 3 and all(.[]; (.isr | length) >= $isr and
			.leader != null)) |
		map({p: .partition, l: .leader, e: .leader_epoch,
		     i: (.isr | sort)})' | grep .
}
# shellcheck disable=SC2317
km_meta_is() { # VIEW N ADDR...: each ADDR, asked from broker N's namespace,
	# answers km's Metadata as VIEW has it, every partition without error
	# (kafka_raw.py --metadata, through the long-lived rawN)
	krep_pyserve "raw$2" --metadata km "${@:3}" >"$tmp/km.meta" || return 1
	jq -e -s --argjson v "$1" --argjson n $(($# - 2)) '
		group_by(.broker) | length == $n and all(.[];
			all(.[]; .error == 0) and
			(map({p: .partition, l: .leader, e: .leader_epoch,
			      i: (.isr | sort)}) | sort_by(.p)) == $v)' \
		"$tmp/km.meta" >/dev/null
}
# shellcheck disable=SC2317
km_agreed() { # N ADDR...: as km_meta_is, with krepd's current view
	local v
	v=$(km_view 2) && km_meta_is "$v" "$@"
}
krep_wait_for 60 km_create || ktap_diag_stdin <"$tmp/km.create"
ktap_check "under krepd, brokers 1, 2 and 3 each name the leader, epoch and ISR of km's 3 partitions (RF 2) as krepd has them" \
	krep_wait_for 60 km_agreed 1 "$(boot 1)" "$(boot 2)" "$(boot 3)"
v0=$(km_view 2) || v0='[]'
a=$(jq '.[0].l' <<<"$v0")
e0=$(jq '.[0].e' <<<"$v0")
c=$("$KREPCTL" elect --status --socket "$SOCK" 2>/dev/null |
	jq -s '[.[] | select(.topic == "km" and .partition == 0)][0].replicas |
		([1, 2, 3] - .)[0]')
ktap_diag "km-0: leader $a at epoch $e0; broker $c has no replica of it"
[ -n "${_krep_ps_in[raw$c]:-}" ] || krep_pyserve_start "raw$c" "$(bns "$c")" kafka_raw ||
	ktap_diag "cannot start kafka_raw.py in broker $c's namespace"
link_down "$a"
# shellcheck disable=SC2317
km0_moved() { # km-0 has a new leader, and broker C, not a replica, says so
	local v
	v=$(km_view 1) || return 1
	jq -e --argjson a "$a" --argjson e "$e0" \
		'.[0].l != $a and .[0].e > $e' <<<"$v" >/dev/null &&
		km_meta_is "$v" "$c" "$(boot "$c")"
}
ktap_check "km-0's leader $a cut off: broker $c, which hosts no replica of it, names the new leader and epoch" \
	krep_wait_for 90 km0_moved
link_up "$a"

# 6c. librdkafka (selftests/rdk_client.c) across a failover krepd drives:
# an idempotent producer of keyed records to kf (6 partitions, RF 3)
# through broker 1 while broker 2, which leads some of them, is cut off;
# then a consumer with every partition assigned reads each acknowledged
# record exactly once, in order within its partition
# shellcheck disable=SC2317 # the conditions krep_wait_for polls
kf_create() {
	"$KREPCTL" topic create kf partitions 6 rf 3 --socket "$SOCK" \
		>"$tmp/kf.create" 2>&1
}
# shellcheck disable=SC2317
kf_leaders() { # MIN_ISR: kf's leaders by partition, each with >= MIN_ISR
	"$KREPCTL" elect --status --socket "$SOCK" 2>/dev/null |
		jq -r -s --argjson isr "$1" '
		[.[] | select(.topic == "kf")] | sort_by(.partition) |
		select(length == 6 and all(.[]; (.isr | length) >= $isr and
			.leader != null)) | map(.leader) | join(" ")' | grep .
}
# shellcheck disable=SC2317
kf_acked() { [ "$(wc -l <"$tmp/kf.acked")" -ge "$1" ]; }
# shellcheck disable=SC2317
kf_off2() { # every kf partition has a leader other than broker 2
	local l
	l=$(kf_leaders 1) && [[ " $l " != *" 2 "* ]]
}
krep_wait_for 60 kf_create || ktap_diag_stdin <"$tmp/kf.create"
krep_wait_for 60 kf_leaders 3 >/dev/null
ktap_diag "kf's leaders by partition: $(kf_leaders 3)"
: >"$tmp/kf.acked"
timeout 150 ip netns exec "$B1" "$here/rdk_client" produce \
	"$(boot 1),$(boot 3)" kf 2000 400 "$tmp/kf.acked" \
	>"$tmp/kf.prod" 2>&1 &
ppid=$!
krep_wait_for 60 kf_acked 400
link_down 2
ktap_check "broker 2 cut off while librdkafka produces: krepd moves every kf leader elsewhere" \
	krep_wait_for 90 kf_off2
link_up 2
ktap_diag "kf's leaders by partition after: $(kf_leaders 1)"
wait "$ppid"
prc=$?
ktap_diag "$(cat "$tmp/kf.prod")"
ktap_check "librdkafka idempotent producer: 2000 keyed records to kf, every one acknowledged (status $prc)" \
	eval '[ "$prc" = 0 ] && grep -qx "produced 2000 acked 2000 failed 0" "$tmp/kf.prod"'
ktap_check "the records' keys spread them over all 6 partitions" \
	eval '[ "$(cut -d" " -f1 "$tmp/kf.acked" | sort -u | wc -l)" = 6 ]'
client "$tmp/kf.cons" \
	"librdkafka consumer, every partition assigned: reads each to its end" \
	bx 1 "$here/rdk_client" consume "$(boot 1),$(boot 3)" kf "$tmp/kf.out"
# exactly once: each acknowledged key and value read once, in the
# partition it was acknowledged in, no record twice; in order: within a
# partition the value numbers only grow
awk 'NR == FNR { ack[$3 " " $4] = $1; n++; next }
	{ seen[$3 " " $4]++; where[$3 " " $4] = $1
	  i = substr($4, 7) + 0
	  if ($1 in last && i <= last[$1]) disorder++
	  last[$1] = i }
	END { for (r in ack) if (seen[r] != 1 || where[r] != ack[r]) lost++
	      for (r in seen) if (seen[r] > 1) dup++
	      printf "%d acknowledged, %d read: %d not read once where acknowledged, %d read twice, %d out of order\n",
		n, FNR, lost, dup, disorder }' \
	"$tmp/kf.acked" "$tmp/kf.out" >"$tmp/kf.check"
ktap_check "every acknowledged record read exactly once and in order within its partition ($(cat "$tmp/kf.check"))" \
	grep -qE '^2000 acknowledged, [0-9]+ read: 0 not read once where acknowledged, 0 read twice, 0 out of order$' "$tmp/kf.check"

kill "$KREPD_PID" 2>/dev/null
wait "$KREPD_PID" 2>/dev/null
grep -E 'km|kf|fenced' "$tmp/krepd.log" | tail -n 20 | ktap_diag_stdin

# 7. the limits, on one broker in the VM's own namespace
krep_mod_unload || ktap_diag "rmmod before the limits failed"
ip link set lo up
LIMITS="kafka_max_connections=3 kafka_max_request_bytes=65536 kafka_idle_ms=1500 kafka_request_ms=3000 kafka_wait_max_ms=1000"
# shellcheck disable=SC2086 # the parameters are words
if krep_mod_load broker_id=1 kafka_listen=127.0.0.1:9192 $LIMITS; then
	ktap_ok "loaded with $LIMITS"
else
	ktap_fail "loaded with $LIMITS"
fi
timeout 120 python3 "$here/kafka_raw.py" --limits 127.0.0.1:9192 3 65536 1500 \
	3000 1000 >"$tmp/limits.out" 2>&1
rc=$?
relay_results "$tmp/limits.out"
nlim=$nres
ktap_check "kafka_raw.py --limits ran its 7 checks and passed (status $rc)" \
	test "$nlim" = 7 -a "$rc" = 0

krep_teardown_checks "$mark"
ktap_finish
