#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# replication.sh - three brokers replicate over in-kernel TCP: byte-exact
# followers, HW over the ISR, acks=all, ISR shrink and expand, a follower
# that keeps up, min.insync.replicas, peers that break the wire protocol,
# and namespace deletion and rmmod in the middle of replication.
#
#   +- netns B1 (krep-b1-*) -+  +- netns B2 (krep-b2-*) -+  +- netns B3 (krep-b3-*) -+
#   | broker 1, cluster krepr|  | broker 2, cluster krepr|  | broker 3, cluster krepr|
#   | listen 10.201.0.1:9092 |  | listen 10.201.0.2:9092 |  | listen 10.201.0.3:9092 |
#   | kr0 10.201.0.1/24      |  | kr0 10.201.0.2/24      |  | kr0 10.201.0.3/24      |
#   +-----------|------------+  +-----------|------------+  +-----------|------------+
#               | veth                      | veth                      | veth
#   +- netns BR |(krep-br-*) ---------------|---------------------------|-----------+
#   |           p1 ------------ bridge krbr p2 ------------------------ p3          |
#   |                                 |                                             |
#   |                                 px                                            |
#   +---------------------------------|---------------------------------------------+
#                                     | veth
#   +- netns X (krep-x-*) ------------|--------+
#   | kr0 10.201.0.9/24: the bad peer          |
#   | (repl_helper.py badpeer and flood)       |
#   +------------------------------------------+
#
# Every broker peers with the other two and creates the same topics, all
# with replica_lag_time_max_ms=1000 (so the ISR scan runs every 500 ms):
#   bulk    3 partitions, RF 3: partition p led by broker p+1
#   acks    1 partition,  RF 3, led by broker 1
#   minisr  1 partition,  RF 3, led by broker 1, min_insync_replicas=2
# A broker is frozen by taking its kr0 down: its TCP connections stall
# without closing, as on a lost link.
#
# 1. bulk: 50,000 records (acks=all, batch 500) to bulk-0 while all three
#    brokers are sampled: leader HW = min(LEO, ISR followers' LEO) in each
#    PARTITION_GET, follower HW <= own LEO and <= the leader's next HW;
#    then every replica byte for byte (FETCH with KREP_A_FOLLOWER_READ).
# 2. acks=all needs both followers: with broker 3 frozen it times out,
#    the ISR shrink comes after LAG (and by 1.5 x LAG + slack), acks=all
#    then completes on {1,2}, and broker 3 rejoins once its link is back.
# 3. a follower keeping up with one record per 100 ms stays in the ISR.
# 4. min_insync_replicas=2, ISR {1}: NOT_ENOUGH_REPLICAS(_AFTER_APPEND),
#    acks=1 appends without moving HW, past retention_bytes; once HW
#    catches up, retention shrinks the log with no further append.
# 5. garbage, truncated, oversized, unknown and impostor frames, and a
#    flood of silent connections, each dropped with a logged reason while
#    replication goes on.
# 6. a follower's namespace deleted mid-replication, then rmmod with the
#    other connections up and a consumer parked in FETCH: no leak, no WARN.
# Prints KTAP; leaves the module unloaded and no namespace behind.

# shellcheck disable=SC2317 # the conditions krep_wait_for polls
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd jq ip /usr/bin/python3

HELPER=$here/repl_helper.py
CLUSTER=krepr
NET=10.201.0
PORT=9092
LAG=1000		# replica_lag_time_max_ms of every topic
# ISR shrink deadline: the scan runs every LAG/2, so a follower goes at most
# 1.5 x LAG after it was last caught up; SLACK is for the emulated VM
SLACK=1500
BULK=50000		# records to bulk-0
SIDE=2000		# records to bulk-1 and bulk-2
STEADY=40		# records, one every 100 ms, in the steady stream
FLOOD=150		# connections that never say HELLO
RSEG=16384		# minisr's segment_bytes ...
RKEEP=65536		# ... and retention_bytes


tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
mark=replication-$$

# --- helpers --------------------------------------------------------------

kc() { # NS ARGS...: krepctl in broker namespace NS
	local ns=$1
	shift
	"$KREPCTL" --netns "$ns" "$@"
}

describe() { # NS [TOPIC]: the JSON array of the broker's replicas
	"$KREPCTL" --netns "$1" --json topic describe ${2:+"$2"}
}

# part NS TOPIC P: one partition's replica, compact JSON
part() {
	describe "$1" "$2" | jq -c --argjson p "$3" '.[] | select(.partition == $p)'
}

py() { # NS ARGS...: the helper in namespace NS
	local ns=$1
	shift
	ip netns exec "$ns" /usr/bin/python3 "$HELPER" "$@"
}

jf() { # JSON FILTER
	jq -r "$2" <<<"$1"
}

section() { # NAME: a "# " line with the time since the start
	ktap_diag "$1 (at ${SECONDS}s)"
}

now_ms() {
	local t=${EPOCHREALTIME/./}
	echo $((t / 1000))
}

# ready_all: every partition a broker leads has its whole AR in the ISR and
# knows every follower's LEO, on all three brokers
ready_one() {
	describe "$1" | jq -e 'all(.[] | select(.role == "leader");
		(.isr | length) == (.replicas | length) and
		all(.remotes[]; .in_isr and .leo != null))' >/dev/null 2>&1
}
ready_all() {
	ready_one "$B1" && ready_one "$B2" && ready_one "$B3"
}

# sleep without a process: read on a FIFO nobody writes
mkfifo "$tmp/nap"
exec {napfd}<>"$tmp/nap"
nap() { read -r -t "$1" -u "$napfd" _ || true; }

# A producer fed through a FIFO, started ahead so that its records go out
# at once when written (no process start in between).
#   fifo_producer NAME NS ARGS...  start krepctl --json NS produce ARGS;
#                                  sets FP_PID and FP_FD
#   fifo_producer_end              close its input, wait; status in FP_RC
fifo_producer() {
	local name=$1 ns=$2 w i
	shift 2
	rm -f "$tmp/$name.fifo"
	mkfifo "$tmp/$name.fifo"
	"$KREPCTL" --netns "$ns" --json produce "$@" <"$tmp/$name.fifo" \
		>"$tmp/$name.out" 2>"$tmp/$name.err" &
	FP_PID=$!
	krep_cleanup_push "kill $FP_PID 2>/dev/null"
	exec {FP_FD}>"$tmp/$name.fifo"
	# ready once it sleeps reading its standard input
	for ((i = 0; i < 50; i++)); do
		w=
		read -r w <"/proc/$FP_PID/wchan" 2>/dev/null || true
		case $w in
		*pipe_read*) return 0 ;;
		esac
		nap 0.1
	done
	return 0
}
fifo_producer_end() {
	exec {FP_FD}>&-
	wait "$FP_PID"
	FP_RC=$?
}

# kernel log lines since our mark NAME
klog() { krep_kmsg_since "$1"; }

# kernel timestamp (seconds) of the marker NAME
kmark_ts() {
	dmesg | grep -F "krep-selftests: mark $1" | grep -vF "mark $1-" |
		sed -nE '1s/^\[ *([0-9.]+)\].*/\1/p'
}

ktap_plan 39

# --- set-up ---------------------------------------------------------------

krep_kmsg_mark "$mark"
krep_mod_unload
modprobe veth 2>/dev/null
modprobe bridge 2>/dev/null
# shellcheck disable=SC2119 # no module parameters: one broker per netns
krep_mod_load || ktap_bail "insmod krep.ko failed"

for n in B1 B2 B3 BR X; do
	krep_netns_add "$n" "${n,,}" || ktap_bail "ip netns add failed"
done

{
	for i in 1 2 3; do
		v=B$i
		echo "link add kr0 netns ${!v} type veth peer name p$i netns $BR"
	done
	echo "link add kr0 netns $X type veth peer name px netns $BR"
} | ip -b - || ktap_bail "cannot create the veth links"
printf '%s\n' "link add krbr type bridge" "link set krbr up" \
	"link set p1 master krbr up" "link set p2 master krbr up" \
	"link set p3 master krbr up" "link set px master krbr up" |
	ip -n "$BR" -b - || ktap_bail "cannot set up the bridge"
for i in 1 2 3 9; do
	case $i in 9) ns=$X ;; *) v=B$i; ns=${!v} ;; esac
	printf '%s\n' "link set lo up" "addr add $NET.$i/24 dev kr0" \
		"link set kr0 up" | ip -n "$ns" -b - ||
		ktap_bail "cannot address netns $ns"
done

setup_ok=0
for i in 1 2 3; do
	v=B$i
	peers=
	for j in 1 2 3; do
		[ "$j" = "$i" ] || peers+="${peers:+,}$j@$NET.$j:$PORT"
	done
	kc "${!v}" broker set id "$i" cluster "$CLUSTER" \
		listen "$NET.$i:$PORT" peers "$peers" || setup_ok=1
	kc "${!v}" topic create bulk partitions 3 replication-factor 3 \
		config replica_lag_time_max_ms=$LAG || setup_ok=1
	kc "${!v}" topic create acks partitions 1 replication-factor 3 \
		config replica_lag_time_max_ms=$LAG || setup_ok=1
	kc "${!v}" topic create minisr partitions 1 replication-factor 3 \
		config replica_lag_time_max_ms=$LAG,min_insync_replicas=2,segment_bytes=$RSEG,retention_bytes=$RKEEP ||
		setup_ok=1
done
peers_up() {
	local ns
	for ns in "$B1" "$B2" "$B3"; do
		kc "$ns" --json broker show |
			jq -e 'all(.peers[]; .state == "up")' >/dev/null || return 1
	done
}
krep_wait_for 60 peers_up || setup_ok=1
krep_wait_for 60 ready_all || setup_ok=1
if [ "$setup_ok" = 0 ]; then
	ktap_ok "3 brokers up: every peer connected, every ISR full"
else
	for ns in "$B1" "$B2" "$B3"; do
		kc "$ns" --json broker show | ktap_diag_stdin
		describe "$ns" | ktap_diag_stdin
	done
	ktap_fail "3 brokers up: every peer connected, every ISR full"
	ktap_bail "the cluster did not come up"
fi

# --- 1. bulk: 50,000 records, byte-exact followers, watermarks ------------

section "1. bulk replication"

seq -f "bulk0-%06.0f-abcdefghijklmnopqrstuvwxyz" 0 $((BULK - 1)) >"$tmp/in0"
seq -f "bulk1-%06.0f" 0 $((SIDE - 1)) >"$tmp/in1"
seq -f "bulk2-%06.0f-0123456789" 0 $((SIDE - 1)) >"$tmp/in2"

kc "$B1" --json produce bulk partition 0 batch 500 acks all <"$tmp/in0" \
	>"$tmp/prod0" 2>&1 &
pid0=$!
kc "$B2" --json produce bulk partition 1 batch 100 acks all <"$tmp/in1" \
	>"$tmp/prod1" 2>&1 &
pid1=$!
kc "$B3" --json produce bulk partition 2 batch 100 acks all <"$tmp/in2" \
	>"$tmp/prod2" 2>&1 &
pid2=$!
krep_cleanup_push "kill $pid0 $pid1 $pid2 2>/dev/null"

# Samplers, one per broker, in parallel while bulk-0 is produced and for two
# dumps after: each line one PARTITION_GET dump (atomic per partition) with
# the times (us) it was asked for and answered.
sampler() { # BROKER-NUMBER
	local v=B$1 n=0 after=0 running d t0 t1
	while [ "$n" -lt 200 ]; do
		running=false
		kill -0 "$pid0" 2>/dev/null && running=true
		t0=${EPOCHREALTIME/./}
		d=$(describe "${!v}" bulk) || d=null
		t1=${EPOCHREALTIME/./}
		echo "{\"t0\":$t0,\"t1\":$t1,\"broker\":$1,\"running\":$running,\"d\":$d}"
		n=$((n + 1))
		[ "$running" = true ] || [ "$((after += 1))" -lt 2 ] || break
	done >"$tmp/samples.$1"
}
for b in 1 2 3; do
	sampler "$b" &
	spid[b]=$!
done
wait "${spid[1]}" "${spid[2]}" "${spid[3]}"
jq -c -s 'sort_by(.t0) | to_entries[] | .value + {seq: .key}' \
	"$tmp"/samples.[123] >"$tmp/samples"
during=$(jq -s '[.[] | select(.running)] | length' "$tmp/samples")
wait "$pid0"; rc0=$?
wait "$pid1"; rc1=$?
wait "$pid2"; rc2=$?

want0="{\"topic\":\"bulk\",\"partition\":0,\"records\":$BULK,\"first_offset\":0,\"last_offset\":$((BULK - 1))}"
want1="{\"topic\":\"bulk\",\"partition\":1,\"records\":$SIDE,\"first_offset\":0,\"last_offset\":$((SIDE - 1))}"
want2="{\"topic\":\"bulk\",\"partition\":2,\"records\":$SIDE,\"first_offset\":0,\"last_offset\":$((SIDE - 1))}"
if [ "$rc0$rc1$rc2" = 000 ] && [ "$(cat "$tmp/prod0")" = "$want0" ] &&
   [ "$(cat "$tmp/prod1")" = "$want1" ] && [ "$(cat "$tmp/prod2")" = "$want2" ]; then
	ktap_ok "bulk: $BULK records to bulk-0 (batch 500) and $SIDE to bulk-1, bulk-2, acks=all"
else
	ktap_diag "exit $rc0 $rc1 $rc2"
	cat "$tmp/prod0" "$tmp/prod1" "$tmp/prod2" | ktap_diag_stdin
	ktap_fail "bulk: $BULK records to bulk-0 (batch 500) and $SIDE to bulk-1, bulk-2, acks=all"
fi

# leader: HW = min(LEO, LEO of every ISR follower), in one PARTITION_GET;
# the ISR holds the leader and matches the remotes' in_isr
viol=$(jq -r -s '
	.[] | . as $s | select($s.d != null) | $s.d[] | select(.role == "leader") |
	([.leo] + [.remotes[] | select(.in_isr) | .leo]) as $m |
	if ($m | any(. == null)) then
		"sample \($s.seq) bulk-\(.partition): an ISR follower without LEO"
	elif .hw != ($m | min) then
		"sample \($s.seq) bulk-\(.partition) on \($s.broker): hw \(.hw) != min \($m)"
	elif (.leader as $ld | .isr | any(. == $ld) | not) then
		"sample \($s.seq) bulk-\(.partition): leader not in ISR \(.isr)"
	elif (.isr | sort) != ([.leader] + [.remotes[] | select(.in_isr) | .id] | sort) then
		"sample \($s.seq) bulk-\(.partition): ISR \(.isr) vs remotes in_isr"
	else empty end' "$tmp/samples" 2>&1)
nsamp=$(grep -c . "$tmp/samples")
if [ -z "$viol" ] && [ "$during" -ge 3 ]; then
	ktap_ok "bulk: leader HW = min(leader LEO, ISR followers' LEO) at every sample ($nsamp dumps, $during while producing)"
else
	[ "$during" -ge 3 ] || ktap_diag "only $during dumps while bulk-0 was being produced"
	head -n 20 <<<"$viol" | ktap_diag_stdin
	ktap_fail "bulk: leader HW = min(leader LEO, ISR followers' LEO) at every sample ($nsamp dumps, $during while producing)"
fi

# followers: HW <= own LEO, HW <= the leader's HW in its next sample;
# everywhere LSO <= HW <= LEO; no HW ever moves backward on a replica
viol=$(jq -r -s '
	. as $all |
	(range(0; length) as $i | $all[$i] as $s | select($s.d != null) |
	 $s.d[] | . as $r |
	 (if .lso > .hw or .hw > .leo then
		"sample \($s.seq) bulk-\(.partition) on \($s.broker): lso \(.lso) hw \(.hw) leo \(.leo)"
	  else empty end),
	 (select(.role == "follower") |
	  first($all[$i + 1:][] | select(.broker == $r.leader and .d != null and .t0 > $s.t1) |
		.d[] | select(.partition == $r.partition)) as $l |
	  if $r.hw > $l.hw then
		"sample \($s.seq) bulk-\($r.partition) follower \($s.broker) hw \($r.hw) > leader hw \($l.hw) sampled after"
	  else empty end)),
	([.[] | select(.d != null) | .broker as $b | .d[] |
	  {k: "\($b)/\(.partition)", hw}] | group_by(.k)[] |
	 . as $g | range(1; length) as $j |
	 select($g[$j].hw < $g[$j - 1].hw) |
	 "replica \($g[$j].k): hw went back from \($g[$j - 1].hw) to \($g[$j].hw)")
	' "$tmp/samples" 2>&1)
if [ -z "$viol" ]; then
	ktap_ok "bulk: followers' HW <= own LEO and <= the leader's HW sampled after; LSO <= HW <= LEO; HW never backward"
else
	head -n 20 <<<"$viol" | ktap_diag_stdin
	ktap_fail "bulk: followers' HW <= own LEO and <= the leader's HW sampled after; LSO <= HW <= LEO; HW never backward"
fi

# every replica catches up: LEO = HW = the end, same log bytes
final_ok() {
	local ns
	: >"$tmp/final"
	for ns in "$B1" "$B2" "$B3"; do
		describe "$ns" bulk >>"$tmp/final" || return 1
	done
	jq -e -s --argjson a "$BULK" --argjson b "$SIDE" '
		[.[][]] | length == 9 and
		all(.[]; (if .partition == 0 then $a else $b end) as $e |
			.leo == $e and .hw == $e and .lso == $e) and
		(group_by(.partition) | all(.[]; map(.log_bytes) | unique | length == 1))
		' "$tmp/final" >/dev/null
}
if krep_wait_for 30 final_ok; then
	ktap_ok "bulk: every replica of bulk-0..2 ends with LEO = HW = LSO = the end and the same log bytes"
else
	jq -c '.[] | {partition, role, leo, hw, lso, log_bytes}' "$tmp/final" | ktap_diag_stdin
	ktap_fail "bulk: every replica of bulk-0..2 ends with LEO = HW = LSO = the end and the same log bytes"
fi

# a follower receives replicated batches straight into its log's pages:
# one copy (socket to log) per byte, none through a buffer
copy_viol=
for ns in "$B2" "$B3"; do
	held=$(jq -s --arg ns "$ns" '[.[][] | select(.role == "follower") | .log_bytes] | add // 0' \
		<(describe "$ns" bulk))
	counters=$(kc "$ns" --json stats | jq -c '.counters')
	jq -e --argjson held "$held" \
		'.follower_bytes == 0 and .rx_copy_bytes >= $held and $held > 0' \
		<<<"$counters" >/dev/null ||
		copy_viol+="$ns: holds $held follower log bytes, counters $counters; "
done
if [ -z "$copy_viol" ]; then
	ktap_ok "bulk: followers copied each replicated byte once, socket to log (follower_bytes 0, rx_copy_bytes >= the bytes they hold)"
else
	ktap_diag "$copy_viol"
	ktap_fail "bulk: followers copied each replicated byte once, socket to log (follower_bytes 0, rx_copy_bytes >= the bytes they hold)"
fi

# the leaders counted the FETCH responses that carried records: at least
# one, and no more than the records the followers hold (each carries >= 1)
resps=0
held=0
for ns in "$B1" "$B2" "$B3"; do
	n=$(kc "$ns" --json stats | jq '.counters.fetch_responses')
	h=$(describe "$ns" bulk | jq '[.[] | select(.role == "follower") | .leo] | add // 0')
	resps=$((resps + ${n:-0}))
	held=$((held + ${h:-0}))
done
if [ "$resps" -gt 0 ] && [ "$resps" -le "$held" ]; then
	ktap_ok "bulk: leaders counted $resps FETCH responses with records for $held replicated records (fetch_responses)"
else
	ktap_fail "bulk: leaders counted FETCH responses with records: $resps for $held replicated records"
fi

kc "$B1" consume bulk partition 0 -c "$BULK" max-bytes 65531 >"$tmp/out0" 2>"$tmp/cons.err"
if cmp -s "$tmp/in0" "$tmp/out0"; then
	ktap_ok "bulk: consume from the leader returns the $BULK records byte-exact"
else
	ktap_diag "consume: $(wc -l <"$tmp/out0") lines; $(head -c 300 "$tmp/cons.err")"
	cmp "$tmp/in0" "$tmp/out0" 2>&1 | ktap_diag_stdin
	ktap_fail "bulk: consume from the leader returns the $BULK records byte-exact"
fi

# every replica read with FETCH + KREP_A_FOLLOWER_READ (the helper; krepctl
# consume reads from the leader only): the raw batches must be identical
# on all three, the values those produced
dump_ok=0
for b in 1 2 3; do
	v=B$b
	py "${!v}" dump bulk 0,1,2 "$tmp/dump.$b" >"$tmp/sum.$b" 2>&1 || dump_ok=1
	for p in 0 1 2; do
		cmp -s "$tmp/in$p" "$tmp/dump.$b.$p" || {
			ktap_diag "broker $b bulk-$p: values differ from the input"
			dump_ok=1
		}
	done
done
cmp -s "$tmp/sum.1" "$tmp/sum.2" && cmp -s "$tmp/sum.1" "$tmp/sum.3" || dump_ok=1
grep -q "^partition 0 records $BULK .* hw $BULK " "$tmp/sum.1" || dump_ok=1
if [ "$dump_ok" = 0 ]; then
	ktap_ok "bulk: all 3 replicas of bulk-0..2 hold the same batches byte for byte (follower read), values as produced"
else
	for b in 1 2 3; do
		sed "s/^/broker $b: /" "$tmp/sum.$b"
	done | ktap_diag_stdin
	ktap_fail "bulk: all 3 replicas of bulk-0..2 hold the same batches byte for byte (follower read), values as produced"
fi

# --- 2. acks=all, a frozen follower, ISR shrink and expand ------------------

section "2. acks=all and ISR shrink/expand"

krep_wait_for 30 ready_all || ktap_diag "ISR not full before the acks test"

out=$(echo one | kc "$B1" --json produce acks acks all timeout 5000 2>&1)
rc=$?
off=$(jq -r .last_offset <<<"$out" 2>/dev/null)
l=$(part "$B1" acks 0)
f2=$(part "$B2" acks 0)
f3=$(part "$B3" acks 0)
if [ "$rc" = 0 ] && [ -n "$off" ] && [ "$off" != null ] &&
   jq -e --argjson o "$off" '.hw > $o and all(.remotes[]; .in_isr and .leo > $o)' <<<"$l" >/dev/null &&
   jq -e --argjson o "$off" '.leo > $o' <<<"$f2" >/dev/null &&
   jq -e --argjson o "$off" '.leo > $o' <<<"$f3" >/dev/null; then
	ktap_ok "acks=all with the full ISR completes with both followers holding the record"
else
	ktap_diag "exit $rc: $out"
	ktap_diag "leader: $l"
	ktap_diag "followers: $f2 $f3"
	ktap_fail "acks=all with the full ISR completes with both followers holding the record"
fi

# freeze broker 3; the producer is already waiting on its standard input
fifo_producer frozen "$B1" acks acks all timeout 300
krep_kmsg_mark "$mark-freeze"
t_down=$(now_ms)
ip -n "$B3" link set kr0 down
echo two >&"$FP_FD"
fifo_producer_end
l9=$(part "$B1" acks 0)
t_after=$(now_ms)
err=$(jq -r .error "$tmp/frozen.out" 2>/dev/null)
tout_off=$(($(jf "$l9" .leo) - 1))

# watch the shrink: every sample has broker 3 in the ISR only while it was
# caught up within LAG (+ the scan period + SLACK), and out of it only
# after more than LAG
: >"$tmp/shrink"
shrunk=1
for ((i = 0; i < 60; i++)); do
	l=$(part "$B1" acks 0) || continue
	echo "$l" >>"$tmp/shrink"
	if jq -e '.remotes[] | select(.id == 3) | .in_isr | not' <<<"$l" >/dev/null; then
		shrunk=0
		break
	fi
done
viol=$(jq -r --argjson lag "$LAG" --argjson slack "$SLACK" '
	. as $l | .remotes[] | select(.id == 3) |
	if .in_isr | not then
		(if .caught_up_age_ms <= $lag then
		  "out of the ISR after only \(.caught_up_age_ms) ms" else empty end)
	elif .caught_up_age_ms > ($lag * 3 / 2 + $slack) and .leo != $l.leo then
		"still in the ISR \(.caught_up_age_ms) ms after it was caught up"
	else empty end' "$tmp/shrink")
sline=$(klog "$mark-freeze" | grep -E "acks-0: ISR shrink: broker 3 out of sync for [0-9]+ ms" | head -n 1)
sms=$(sed -nE 's/.*out of sync for ([0-9]+) ms.*/\1/p' <<<"$sline")
ts_mark=$(kmark_ts "$mark-freeze")
ts_shrink=$(sed -nE 's/^\[ *([0-9.]+)\].*/\1/p' <<<"$sline")
since_cut=$(awk -v a="$ts_mark" -v b="$ts_shrink" 'BEGIN { if (a == "" || b == "") print -1; else printf "%d", (b - a) * 1000 }')
# the timed-out produce: HW stayed below its record while broker 3 was in
# the ISR (a sample after the shrink cannot tell: HW then moved on)
if jq -e '.remotes[] | select(.id == 3) | .in_isr' <<<"$l9" >/dev/null; then
	held=$(jq -e --argjson o "$tout_off" '.hw <= $o' <<<"$l9" >/dev/null && echo 0 || echo 1)
	where="broker 3 still in the ISR $((t_after - t_down)) ms after the cut, HW held at $(jf "$l9" .hw)"
else
	held=0
	where="broker 3 out of the ISR $since_cut ms after the cut"
fi
if [ "$FP_RC" = 1 ] && [ "$err" = REQUEST_TIMED_OUT ] && [ "$held" = 0 ]; then
	ktap_ok "broker 3 frozen: acks=all times out with REQUEST_TIMED_OUT, exit 1 ($where)"
else
	ktap_diag "exit $FP_RC: $(cat "$tmp/frozen.out" "$tmp/frozen.err")"
	ktap_diag "$where; leader: $l9"
	ktap_fail "broker 3 frozen: acks=all times out with REQUEST_TIMED_OUT, exit 1 ($where)"
fi

# strict: the kernel waited more than LAG since the follower was last
# caught up; and from outside, that was at most one fetch period (a parked
# FETCH is answered within replica_fetch_wait_max_ms, 500, plus a round
# trip: 250 here) before the cut, whose mark comes just before it
if [ "$shrunk" = 0 ] && [ -z "$viol" ] && [ -n "$sms" ] && [ "$sms" -gt "$LAG" ] &&
   [ "$since_cut" -ge $((LAG - 500 - 250)) ]; then
	ktap_ok "ISR shrink of broker 3 only after > ${LAG} ms out of sync (kernel: $sms ms; $since_cut ms after the cut)"
else
	ktap_diag "shrunk=$shrunk line: ${sline:-none}; since the cut: $since_cut ms"
	[ -z "$viol" ] || ktap_diag "$viol"
	tail -n 3 "$tmp/shrink" | ktap_diag_stdin
	ktap_fail "ISR shrink of broker 3 only after > ${LAG} ms out of sync (kernel: ${sms:-?} ms; $since_cut ms after the cut)"
fi
if [ "$shrunk" = 0 ] && [ -n "$sms" ] && [ "$sms" -le $((LAG * 3 / 2 + SLACK)) ] && [ -z "$viol" ]; then
	ktap_ok "ISR shrink within 1.5 x lag + ${SLACK} ms slack ($sms ms)"
else
	ktap_fail "ISR shrink within 1.5 x lag + ${SLACK} ms slack (${sms:-no shrink} ms)"
fi

out=$(echo three | kc "$B1" --json produce acks acks all timeout 5000 2>&1)
rc=$?
l=$(part "$B1" acks 0)
if [ "$rc" = 0 ] && jq -e '.isr == [1, 2] and .hw == .leo' <<<"$l" >/dev/null; then
	ktap_ok "acks=all completes on the smaller ISR {1,2}"
else
	ktap_diag "exit $rc: $out"
	ktap_diag "leader: $l"
	ktap_fail "acks=all completes on the smaller ISR {1,2}"
fi

t_up=$SECONDS
ip -n "$B3" link set kr0 up
rejoined() {
	part "$B1" acks 0 | jq -e '.isr == [1, 2, 3]' >/dev/null
}
krep_wait_for 90 rejoined
rj=$?
t_up=$((SECONDS - t_up))
out=$(echo four | kc "$B1" --json produce acks acks all timeout 10000 2>&1)
rc=$?
off=$(jq -r .last_offset <<<"$out" 2>/dev/null)
f3=$(part "$B3" acks 0)
eline=$(klog "$mark-freeze" | grep -cE "acks-0: ISR expand: broker 3 caught up at [0-9]+")
if [ "$rj" = 0 ] && [ "$eline" -ge 1 ] && [ "$rc" = 0 ] &&
   jq -e --argjson o "$off" '.leo > $o' <<<"$f3" >/dev/null; then
	ktap_ok "link restored: broker 3 rejoins the ISR (expand, within ${t_up}s) and acks=all needs it again"
else
	ktap_diag "rejoined=$rj expand lines=$eline produce exit $rc: $out"
	ktap_diag "leader: $(part "$B1" acks 0)"
	ktap_diag "broker 3: $f3"
	ktap_fail "link restored: broker 3 rejoins the ISR (expand) and acks=all needs it again"
fi

# --- 3. a follower that keeps up with a steady stream stays in the ISR ----

section "3. steady stream"

krep_wait_for 60 ready_all || ktap_diag "ISR not full before the steady stream"
l0=$(part "$B1" acks 0)
krep_kmsg_mark "$mark-steady"
fifo_producer steady "$B1" acks acks 1
(
	for ((i = 0; i < STEADY; i++)); do
		echo "steady-$i" >&"$FP_FD"
		nap 0.1
	done
) &
gen=$!
krep_cleanup_push "kill $gen 2>/dev/null"
: >"$tmp/steady"
while kill -0 "$gen" 2>/dev/null; do
	part "$B1" acks 0 >>"$tmp/steady"
done
wait "$gen"
fifo_producer_end
l1=$(part "$B1" acks 0)
echo "$l1" >>"$tmp/steady"
nst=$(grep -c . "$tmp/steady")
bad=$(jq -r 'select(.isr != [1, 2, 3]) | "isr \(.isr) at leo \(.leo)"' "$tmp/steady")
shr=$(klog "$mark-steady" | grep -E "acks-0: ISR shrink" || true)
pe0=$(jf "$l0" .partition_epoch)
pe1=$(jf "$l1" .partition_epoch)
if [ "$FP_RC" = 0 ] && [ -z "$bad" ] && [ -z "$shr" ] && [ "$pe0" = "$pe1" ]; then
	ktap_ok "steady stream ($STEADY records, one per 100 ms, acks=1): no follower leaves the ISR ($nst samples, partition epoch $pe0)"
else
	ktap_diag "producer exit $FP_RC $(cat "$tmp/steady.err"); partition epoch $pe0 -> $pe1"
	[ -z "$bad" ] || head -n 5 <<<"$bad" | ktap_diag_stdin
	[ -z "$shr" ] || ktap_diag "$shr"
	ktap_fail "steady stream ($STEADY records, one per 100 ms, acks=1): no follower leaves the ISR ($nst samples, partition epoch $pe0)"
fi
caught() {
	local l
	l=$(part "$B1" acks 0)
	jq -e --argjson n "$(jf "$l0" .leo)" --argjson k "$STEADY" \
		'. as $l | .leo == $n + $k and .hw == .leo and all(.remotes[]; .leo == $l.leo)' \
		<<<"$l" >/dev/null &&
	[ "$(part "$B2" acks 0 | jq .hw)" = "$(jf "$l" .leo)" ] &&
	[ "$(part "$B3" acks 0 | jq .hw)" = "$(jf "$l" .leo)" ]
}
if krep_wait_for 20 caught; then
	ktap_ok "steady stream: every record replicated, HW = LEO on all replicas"
else
	ktap_diag "leader: $(part "$B1" acks 0)"
	ktap_fail "steady stream: every record replicated, HW = LEO on all replicas"
fi

# --- 4. min_insync_replicas=2 with ISR = {leader} ----------------------------

section "4. min_insync_replicas"

krep_wait_for 60 ready_all || ktap_diag "ISR not full before the min ISR test"
echo m1 | kc "$B1" produce minisr acks all timeout 10000 >/dev/null 2>&1 ||
	ktap_diag "acks=all to minisr with the full ISR failed"
krep_kmsg_mark "$mark-minisr"
ip -n "$B2" link set kr0 down
ip -n "$B3" link set kr0 down
# an acks=all produce waits for the cut followers until the ISR shrinks
# below min_insync_replicas under it
l0=$(part "$B1" minisr 0)
out=$(echo m2 | kc "$B1" --json produce minisr acks all timeout 20000 2>/dev/null)
rc=$?
alone() {
	part "$B1" minisr 0 >"$tmp/alone" && jq -e '.isr == [1]' "$tmp/alone" >/dev/null
}
krep_wait_for 30 alone
al=$?
if [ "$al" = 0 ] && [ "$rc" = 1 ] &&
   [ "$(jq -r .error <<<"$out")" = NOT_ENOUGH_REPLICAS_AFTER_APPEND ] &&
   [ "$(jq -r .code <<<"$out")" = 20 ] &&
   jq -e --argjson a "$l0" '.leo == $a.leo + 1 and .hw == $a.hw' "$tmp/alone" >/dev/null; then
	ktap_ok "minisr: both followers cut, ISR shrinks to {1}; the waiting acks=all fails with NOT_ENOUGH_REPLICAS_AFTER_APPEND"
else
	ktap_diag "produce exit $rc: $out"
	ktap_diag "before: $l0"
	ktap_diag "after:  $(cat "$tmp/alone")"
	ktap_fail "minisr: both followers cut, ISR shrinks to {1}; the waiting acks=all fails with NOT_ENOUGH_REPLICAS_AFTER_APPEND"
fi
la=$(cat "$tmp/alone")
out=$(echo m3 | kc "$B1" --json produce minisr acks all timeout 2000 2>/dev/null)
rc=$?
lb=$(part "$B1" minisr 0)
if [ "$rc" = 1 ] && [ "$(jq -r .error <<<"$out")" = NOT_ENOUGH_REPLICAS ] &&
   [ "$(jq -r .code <<<"$out")" = 19 ] &&
   [ "$(jf "$la" .leo)" = "$(jf "$lb" .leo)" ] && [ "$(jf "$lb" .isr)" = "$(jf "$la" .isr)" ]; then
	ktap_ok "minisr: acks=all fails with NOT_ENOUGH_REPLICAS, nothing appended (LEO $(jf "$lb" .leo))"
else
	ktap_diag "exit $rc: $out"
	ktap_diag "before: $la"
	ktap_diag "after:  $lb"
	ktap_fail "minisr: acks=all fails with NOT_ENOUGH_REPLICAS, nothing appended"
fi
out=$(printf 'm4\nm5\nm6\n' | kc "$B1" --json produce minisr acks 1 2>&1)
rc=$?
nap 1.2
lc=$(part "$B1" minisr 0)
if [ "$rc" = 0 ] &&
   jq -e --argjson b "$lb" '.leo == $b.leo + 3 and .hw == $b.hw and .hw < $b.leo and .isr == [1]' \
	<<<"$lc" >/dev/null; then
	ktap_ok "minisr: acks=1 appends (LEO $(jf "$lb" .leo) -> $(jf "$lc" .leo)) but HW stays at $(jf "$lc" .hw) below min ISR"
else
	ktap_diag "exit $rc: $out"
	ktap_diag "before: $lb"
	ktap_diag "after:  $lc"
	ktap_fail "minisr: acks=1 appends but HW does not move below min ISR"
fi
# ~320 KB more at acks=1 while HW cannot move: retention may drop
# nothing above HW, so the log grows past retention_bytes
head -c 240000 /dev/urandom | base64 -w 1000 |
	kc "$B1" produce minisr acks 1 >/dev/null 2>&1 ||
	ktap_diag "the acks=1 burst to minisr failed"
lburst=$(part "$B1" minisr 0)
t_up=$SECONDS
ip -n "$B2" link set kr0 up
ip -n "$B3" link set kr0 up
full_minisr() {
	part "$B1" minisr 0 >"$tmp/full" &&
		jq -e '.isr == [1, 2, 3] and .hw == .leo' "$tmp/full" >/dev/null
}
krep_wait_for 90 full_minisr
rj=$?
t_up=$((SECONDS - t_up))
# no append since the burst: only the HW move can apply retention, on
# the leader, and the followers adopt its log start
lr=$(part "$B1" minisr 0)
kept=1
for ns in "$B1" "$B2" "$B3"; do
	part "$ns" minisr 0 | jq -e --argjson l "$lr" --argjson max $((RKEEP + RSEG)) \
		'.log_bytes <= $max and .log_start == $l.log_start and .log_start > 0' \
		>/dev/null || kept=0
done
if [ "$rj" = 0 ] && [ "$kept" = 1 ] &&
   jq -e --argjson max $((RKEEP + RSEG)) '.log_bytes > $max and .hw < .leo' <<<"$lburst" >/dev/null; then
	ktap_ok "minisr: a log past retention_bytes while HW was held ($(jf "$lburst" .log_bytes) B) shrinks to $(jf "$lr" .log_bytes) B once HW catches up, with no append; followers adopt log start $(jf "$lr" .log_start)"
else
	ktap_diag "after the burst: $lburst"
	for ns in "$B1" "$B2" "$B3"; do ktap_diag "after the rejoin: $(part "$ns" minisr 0)"; done
	ktap_fail "minisr: a log past retention_bytes while HW was held shrinks once HW catches up, followers adopt its log start"
fi
out=$(echo m7 | kc "$B1" --json produce minisr acks all timeout 10000 2>&1)
rc=$?
if [ "$rj" = 0 ] && [ "$rc" = 0 ]; then
	ktap_ok "minisr: links restored, ISR {1,2,3} within ${t_up}s, HW = LEO again, acks=all completes"
else
	ktap_diag "rejoined=$rj, produce exit $rc: $out"
	ktap_diag "leader: $(cat "$tmp/full")"
	ktap_fail "minisr: links restored, ISR {1,2,3}, HW = LEO again, acks=all completes"
fi

# --- 5. peers that break the protocol ---------------------------------------

section "5. bad peers"

krep_wait_for 60 ready_all || ktap_diag "ISR not full before the bad peers"
nap 5.5		# a fresh window for the rate-limited "closed:" lines
l0=$(part "$B1" acks 0)
krep_kmsg_mark "$mark-bad"
py "$X" badpeer "$NET.1:$PORT" "$CLUSTER" 1 2 garbage short-hello oversized \
	bad-type fetch-first bad-cluster unknown-id bad-fetch hello trunc-hold \
	>"$tmp/bad" 2>&1
bad_rc=$?
log=$(klog "$mark-bad")
badcase() { # CASE DESC REASON MAXSEC [MINSEC]
	local t line
	line=$(grep "^$1 " "$tmp/bad")
	t=$(sed -nE "s/^$1 closed ([0-9.]+)$/\\1/p" <<<"$line")
	if [ -n "$t" ] &&
	   awk -v t="$t" -v lo="${5:-0}" -v hi="$4" 'BEGIN { exit !(t >= lo && t <= hi) }' &&
	   grep -qE "krep: connection from broker [-0-9]+ \($NET\.9:[0-9]+\) closed: $3\$" <<<"$log"; then
		ktap_ok "bad peer: $2: dropped in ${t}s, '$3'"
	else
		ktap_diag "helper: ${line:-nothing} (exit $bad_rc)"
		grep -E "connection from|suppressed" <<<"$log" | ktap_diag_stdin
		ktap_fail "bad peer: $2: dropped, '$3'"
	fi
}
badcase garbage "garbage bytes" "bad frame magic" 3
badcase short-hello "a HELLO with a truncated payload" "malformed or repeated HELLO" 3
badcase oversized "a header announcing 4 MiB + 1" "oversized frame" 3
badcase bad-type "an unknown frame type" "unknown frame type" 3
badcase fetch-first "a FETCH before HELLO" "first frame is not HELLO" 3
badcase bad-cluster "a HELLO with the wrong cluster id" "cluster id mismatch" 3
badcase unknown-id "a HELLO from an unknown broker id" "broker id is not a configured peer" 3
badcase bad-fetch "a malformed FETCH after a good HELLO" "malformed FETCH header" 3
badcase trunc-hold "a truncated frame, then silence" "no HELLO in time" 12 4
if grep -qx "hello answered" "$tmp/bad"; then
	ktap_ok "a well-formed HELLO is answered with broker 1's HELLO"
else
	ktap_diag_stdin <"$tmp/bad"
	ktap_fail "a well-formed HELLO is answered with broker 1's HELLO"
fi

# the flood: $FLOOD connections that never say HELLO; meanwhile acks=all
nap 5.5
krep_kmsg_mark "$mark-flood"
FLOOD_READY=$tmp/flood.ready py "$X" flood "$NET.1:$PORT" "$FLOOD" 25 \
	>"$tmp/flood" 2>&1 &
fpid=$!
krep_cleanup_push "kill $fpid 2>/dev/null"
krep_wait_for 30 test -e "$tmp/flood.ready"
out=$(echo during-flood | kc "$B1" --json produce acks acks all timeout 10000 2>&1)
prc=$?
wait "$fpid"
log=$(klog "$mark-flood")
read -r _ _ opened _ closed _ early _ open _ tmax <"$tmp/flood" 2>/dev/null
if [ "${opened:-0}" = "$FLOOD" ] && [ "${closed:-0}" = "$FLOOD" ] && [ "${open:-1}" = 0 ] &&
   [ "${early:-0}" -ge 1 ] && grep -q "krep: refusing a connection" <<<"$log" &&
   grep -qE "closed: no HELLO in time" <<<"$log"; then
	ktap_ok "flood of $FLOOD silent connections: all dropped ($early refused at once, the rest after the HELLO deadline, last at ${tmax}s)"
else
	ktap_diag "helper: $(cat "$tmp/flood")"
	grep -E "refusing|no HELLO|suppressed" <<<"$log" | head -n 5 | ktap_diag_stdin
	ktap_fail "flood of $FLOOD silent connections: all dropped"
fi
if [ "$prc" = 0 ]; then
	ktap_ok "acks=all completes while the flood holds the listener"
else
	ktap_diag "exit $prc: $out"
	ktap_fail "acks=all completes while the flood holds the listener"
fi
out=$(py "$X" badpeer "$NET.1:$PORT" "$CLUSTER" 1 3 hello 2>&1)
hrc=$?
out2=$(echo after-bad | kc "$B1" --json produce acks acks all timeout 10000 2>&1)
prc=$?
l1=$(part "$B1" acks 0)
if [ "$hrc" = 0 ] && [ "$out" = "hello answered" ] && [ "$prc" = 0 ] &&
   jq -e --argjson a "$l0" '.isr == [1, 2, 3] and .partition_epoch == $a.partition_epoch and .hw == .leo' \
	<<<"$l1" >/dev/null; then
	ktap_ok "after the bad peers: new peers are answered, the ISR never changed, acks=all completes"
else
	ktap_diag "hello: $out (exit $hrc); produce exit $prc: $out2"
	ktap_diag "before: $l0"
	ktap_diag "after:  $l1"
	ktap_fail "after the bad peers: new peers are answered, the ISR never changed, acks=all completes"
fi

# --- 6. namespace deletion and rmmod in the middle of replication ----------

section "6. netns deletion and rmmod"

# acks=all records, one every ~20 ms, from a producer restarted on errors;
# in a process group of its own (set -m) to be stopped as a whole
set -m
(
	exec {fd}<>"$tmp/nap"
	i=0
	while :; do
		for ((k = 0; k < 100; k++)); do
			echo "loop-$i-$k"
			read -r -t 0.02 -u "$fd" _
		done
		i=$((i + 1))
	done | while :; do
		"$KREPCTL" --netns "$B1" produce acks acks all timeout 3000 \
			>/dev/null 2>>"$tmp/loop.err" || echo fail >>"$tmp/loop.fails"
		nap 0.2
	done
) &
loop=$!
set +m
krep_cleanup_push "kill -- -$loop 2>/dev/null; kill $loop 2>/dev/null"
nap 2
la=$(part "$B1" acks 0)
krep_kmsg_mark "$mark-delete"
ip netns del "$B3"
dele=$?
nap 1
progress() {
	part "$B1" acks 0 >"$tmp/prog" &&
		jq -e --argjson a "$la" '.isr == [1, 2] and .hw > $a.leo + 20' "$tmp/prog" >/dev/null
}
krep_wait_for 30 progress
prog=$?
if [ "$dele" = 0 ] && [ "$prog" = 0 ]; then
	ktap_ok "follower's namespace deleted mid-replication: ISR {1,2}, HW keeps advancing ($(jf "$la" .hw) -> $(jq .hw "$tmp/prog"))"
else
	ktap_diag "ip netns del: $dele; before: $la"
	ktap_diag "now: $(cat "$tmp/prog")"
	ktap_fail "follower's namespace deleted mid-replication: ISR {1,2}, HW keeps advancing"
fi

# stop the loop; park a consumer at the end of the log; rmmod with the
# 1<->2 connections up
kill -- -"$loop" 2>/dev/null
wait "$loop" 2>/dev/null
up2=$(kc "$B1" --json broker show | jq -r '.peers[] | select(.id == 2) | .state')
kc "$B1" consume acks -o end -f wait 30000 >/dev/null 2>"$tmp/parked.err" &
cpid=$!
krep_cleanup_push "kill $cpid 2>/dev/null"
nap 2
t0=$(now_ms)
timeout 60 rmmod krep
rmrc=$?
t1=$(now_ms)
krep_wait_for 10 eval '! kill -0 '"$cpid"' 2>/dev/null'
cgone=$?
if [ "$rmrc" = 0 ] && [ "$up2" = up ] && [ "$cgone" = 0 ]; then
	ktap_ok "rmmod with peers up and a consumer parked in FETCH: done in $((t1 - t0)) ms, the consumer ends"
else
	ktap_diag "rmmod exit $rmrc; peer 2 was $up2; consumer gone: $cgone ($(cat "$tmp/parked.err"))"
	ktap_fail "rmmod with peers up and a consumer parked in FETCH"
fi
wait "$cpid" 2>/dev/null
ok=0
for ns in "$B1" "$B2" "$BR" "$X"; do
	ip netns del "$ns" || ok=1
done
if [ "$ok" = 0 ] && ! krep_mod_loaded; then
	ktap_ok "module gone, remaining namespaces deleted"
else
	ktap_fail "module gone, remaining namespaces deleted"
fi
log=$(klog "$mark")
if krep_kernel_bad <<<"$log" | ktap_diag_stdin; then
	ktap_fail "kernel log: no WARNING, BUG, oops or leak in the whole suite"
elif ! grep -q "krep: unloaded" <<<"$log"; then
	ktap_fail "kernel log: no WARNING, BUG, oops or leak in the whole suite (no 'unloaded' line)"
else
	ktap_ok "kernel log: no WARNING, BUG, oops or leak in the whole suite"
fi

ktap_finish
