#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# observability.sh - krep seen from outside: bpftrace on the krep:*
# tracepoints, the ready scripts of tools/bpftrace, krepctl watch (BPF),
# krepctl stats and krepd --metrics (Prometheus text, the commit latency
# histogram), on three brokers while records are produced and a follower
# is cut off and comes back; then a krepd --metrics across rmmod and
# insmod.
#
#   +- netns B1 (krep-ob1-*) -+  +- netns B2 (krep-ob2-*) -+  +- netns B3 (krep-ob3-*) -+
#   | broker 1, cluster kobs  |  | broker 2                |  | broker 3                |
#   | kr0 10.202.0.1/24       |  | kr0 10.202.0.2/24       |  | kr0 10.202.0.3/24       |
#   | krepd --metrics         |  |                         |  |                         |
#   |   127.0.0.1:9100        |  |                         |  |                         |
#   +-----------|-------------+  +-----------|-------------+  +-----------|-------------+
#               | veth                       | veth                       | veth
#   +- netns BR (krep-obr-*) -------------- p1 ------------- p2 ----------- p3 ------+
#   |                          bridge krbr                                         |
#   +------------------------------------------------------------------------------+
#
# Topic "obs": 3 partitions, RF 3, replica_lag_time_max_ms=1000; partition
# p is led by broker p+1. Everything is watched from broker 1 (obs-0). A
# follower is cut off by taking broker 3's kr0 down (brokers reconnect
# within reconnect_backoff_max_ms=500). bpftrace attaches slowly under
# emulation (20-60 s of LLVM each): every bpftrace starts, niced, as soon
# as the namespaces exist and attaches while the cluster comes up; the
# watches start in section 1. All are waited for (what BEGIN prints for
# bpftrace, a first line for watch), each is sent SIGINT as soon as its
# part is done and reaped only when its output is needed, so they detach
# while the suite goes on; every one must exit by itself, status 0, before
# the module is unloaded.

# shellcheck disable=SC2317 # the conditions krep_wait_for polls
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd jq ip bpftrace setpriv awk

BT=$KREP_ROOT/tools/bpftrace
CLUSTER=kobs
NET=10.202.0
PORT=9092
LAG=1000
RECORDS=300		# produced to obs-0, in batches of 10, acks=all
METRICS=127.0.0.1:9100
METRICS0=127.0.0.1:9101	# krepd --metrics in the initial namespace

tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"

# --- helpers --------------------------------------------------------------

kc() { # NS ARGS...: krepctl in broker namespace NS
	local ns=$1
	shift
	"$KREPCTL" --netns "$ns" "$@"
}

describe() { # NS [TOPIC]: the JSON array of the broker's replicas
	"$KREPCTL" --netns "$1" --json topic describe ${2:+"$2"}
}

part() { # NS TOPIC P: one partition's replica, compact JSON
	describe "$1" "$2" | jq -c --argjson p "$3" '.[] | select(.partition == $p)'
}

section() {
	ktap_diag "$1 (at ${SECONDS}s)"
}

# Background BPF tools: bg_start NAME CMD... runs CMD with its output in
# $tmp/NAME.out and its pid in BG_NAME; bg_int NAME... sends SIGINT
# (bpftrace then detaches and prints its maps, watch and krepd stop);
# bg_reap NAME... waits for each to exit and records how in BG_RC_NAME: its
# exit status, or "killed" if it was still there BG_DEADLINE seconds after
# its SIGINT (it is then killed), and when in BG_END_NAME. The deadline
# leaves the suite time to report within its time limit.
BG_DEADLINE=120
BG_ALL=()
bg_start() {
	local name=$1
	shift
	"$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	printf -v "BG_$name" %s "$!"
	BG_ALL+=("$name")
	krep_cleanup_push "kill -INT $! 2>/dev/null; wait $! 2>/dev/null"
}

bg_int() { # NAME...
	local n v

	for n in "$@"; do
		v=BG_$n
		kill -INT "${!v}" 2>/dev/null
		printf -v "BG_INT_$n" %s "$SECONDS"
	done
}

# exit_wait NAME PID DEADLINE: wait until PID has exited (bash reaps its
# children as they exit, and keeps their status for wait), or until
# $SECONDS reaches DEADLINE (false).
#
# bpftrace 0.17 (Debian 12's) polls with epoll_wait(100 ms) and looks at
# the flag its SIGINT handler sets only when epoll_wait was interrupted: a
# SIGINT that comes while it is between two calls is lost, and it polls on
# for ever. One found in epoll_wait for a second's worth of samples, 2 s
# after its last SIGINT, has lost it: it gets another (once it has left
# that loop it is never in epoll_wait again with SIGINT left to its
# default, so this never kills it half-way).
exit_wait() {
	local name=$1 pid=$2 deadline=$3 last=$SECONDS polls=0 stack

	while kill -0 "$pid" 2>/dev/null; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		stack=
		read -r -d '' stack 2>/dev/null <"/proc/$pid/stack"
		[[ $stack != *do_epoll_wait* ]] || polls=$((polls + 1))
		if [ "$polls" -ge 10 ] && [ $((SECONDS - last)) -ge 2 ]; then
			ktap_diag "$name (pid $pid) lost its SIGINT (still polling at ${SECONDS}s): SIGINT again"
			kill -INT "$pid" 2>/dev/null
			last=$SECONDS polls=0
		fi
		krep_nap 0.1
	done
}

bg_reap() { # NAME...
	local n v t r rc

	for n in "$@"; do
		v=BG_$n
		t=BG_INT_$n
		r=BG_RC_$n
		[ -z "${!r:-}" ] || continue	# reaped already
		# bpftrace detaches every probe before it prints its maps, which
		# takes as long as attaching did (tens of seconds on a busy
		# emulated VM): a kill before that would lose the maps
		if exit_wait "$n" "${!v}" $((${!t} + BG_DEADLINE)); then
			wait "${!v}"
			rc=$?
		else
			ktap_diag "$n (pid ${!v}) still runs ${BG_DEADLINE}s after its SIGINT:" \
				"$(grep -E '^(State|SigBlk|SigIgn|SigCgt):' "/proc/${!v}/status" 2>&1 | tr '\n' ' ')" \
				"$(head -n 8 "/proc/${!v}/stack" 2>&1 | tr '\n' ' ')"
			kill -KILL "${!v}" 2>/dev/null
			wait "${!v}" 2>/dev/null
			rc=killed
		fi
		printf -v "BG_RC_$n" %s "$rc"
		printf -v "BG_END_$n" %s "$SECONDS"
	done
}

# bpftrace prints "Attaching N probes..." before it attaches them and runs
# BEGIN once they all are: wait for what BEGIN prints (a line beginning
# with PREFIX). The polls of this suite's waits start no process where a
# builtin does (an exec costs ~150 ms of CPU in the emulated VM)
attached() { # NAME PREFIX
	local l
	while IFS= read -r l; do
		[[ $l != "$2"* ]] || return 0
	done <"$tmp/$1.out"
	return 1
}

bt_wait() { # NAME PREFIX: wait until attached, or fail with its output
	krep_wait_for 120 attached "$1" "$2" && return 0
	cat "$tmp/$1.out" "$tmp/$1.err" | head -n 20 | ktap_diag_stdin
	return 1
}

lines() { # NAME: its number of output lines
	local -a a
	mapfile -t a <"$tmp/$1.out"
	echo "${#a[@]}"
}

refreshed() { # NAME N: krepctl watch NAME has printed at least N lines
	local -a a
	mapfile -t a <"$tmp/$1.out"
	[ "${#a[@]}" -ge "$2" ]
}

# scrape: GET /metrics from inside B1 (bash's /dev/tcp), checked as
# Prometheus text by prom.awk: the samples, "name{labels} value" a line, in
# $tmp/metrics, the first problem in $tmp/prom.err
scrape() {
	ip netns exec "$B1" bash -c '
		exec 3<>"/dev/tcp/${1%:*}/${1##*:}" || exit 1
		printf "GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n" "$1" >&3
		cat <&3' scrape "$METRICS" >"$tmp/scrape.raw" 2>"$tmp/prom.err" &&
		awk -f "$tmp/prom.awk" "$tmp/scrape.raw" >"$tmp/metrics" 2>"$tmp/prom.err"
}

# scrape0: the same of the krepd in the initial namespace ($METRICS0)
scrape0() {
	bash -c '
		exec 3<>"/dev/tcp/${1%:*}/${1##*:}" || exit 1
		printf "GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n" "$1" >&3
		cat <&3' scrape "$METRICS0" >"$tmp/scrape.raw" 2>"$tmp/prom.err" &&
		awk -f "$tmp/prom.awk" "$tmp/scrape.raw" >"$tmp/metrics" 2>"$tmp/prom.err"
}

metric() { # SERIES: its value in the last scrape, or "absent"
	awk -v k="$1" '$1 == k { v = $2 } END { print v == "" ? "absent" : v }' \
		"$tmp/metrics"
}

# An HTTP/1.0 response holding a Prometheus text exposition (format
# 0.0.4): status 200, Content-Type text/plain; in the body every line a
# "# HELP", "# TYPE" or sample line, names and labels well formed, values
# numbers, one TYPE per metric before its samples, counters named *_total,
# no series twice; a histogram's NAME_bucket (with le, cumulative, +Inf
# last and equal to NAME_count), NAME_sum and NAME_count samples. Prints
# the samples; the first problem exits 1.
cat >"$tmp/prom.awk" <<'EOF'
function fail(msg) {
	print "line " NR ": " msg ": " $0 >"/dev/stderr"
	bad = 1
	exit 1
}
BEGIN {
	name = "[a-zA-Z_:][a-zA-Z0-9_:]*"
	label = "[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\]|\\\\[\\\\\"n])*\""
	sample = "^" name "(\\{(" label "(," label ")*,?)?\\})? [^ ]+( -?[0-9]+)?$"
	number = "^([-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?|NaN|[-+]?Inf)$"
	split("counter gauge histogram summary untyped", t, " ")
	for (i in t)
		types[t[i]] = 1
}
{ sub(/\r$/, "") }
NR == 1 {
	if ($0 !~ /^HTTP\/1\.[01] 200 /)
		fail("status")
	next
}
!body && $0 == "" {
	body = 1
	if (!ctype)
		fail("no Content-Type text/plain")
	next
}
!body {
	if (tolower($0) ~ /^content-type: *text\/plain/)
		ctype = 1
	next
}
/^# (HELP|TYPE) / {
	if ($3 !~ ("^" name "$"))
		fail("bad metric name")
	if ($2 == "TYPE") {
		if (!($4 in types) || NF != 4)
			fail("bad type")
		if ($3 in typeof)
			fail("second TYPE")
		typeof[$3] = $4
	} else {
		if ($3 in help)
			fail("second HELP")
		help[$3] = 1
	}
	next
}
/^#/ { next }
{
	if ($0 !~ sample)
		fail("not a sample")
	m = $1
	sub(/\{.*/, "", m)
	h = m
	if (sub(/_(bucket|sum|count)$/, "", h) && typeof[h] == "histogram") {
		if (m ~ /_bucket$/) {
			if ($1 !~ /le="[^"]+"/)
				fail("a bucket without le")
			if (h in inf)
				fail("a bucket after le=\"+Inf\"")
			if (h in cum && $2 + 0 < cum[h])
				fail("a bucket count that falls")
			cum[h] = $2 + 0
			if ($1 ~ /le="\+Inf"/)
				inf[h] = $2 + 0
		} else if (m ~ /_count$/ && !((h in inf) && inf[h] == $2 + 0)) {
			fail("_count is not the +Inf bucket")
		}
		m = h
	}
	if (!(m in typeof))
		fail("no TYPE before the sample")
	if (typeof[m] == "counter" && m !~ /_total$/)
		fail("counter without _total")
	if ($2 !~ number)
		fail("value not a number")
	if ($1 in seen)
		fail("series twice")
	seen[$1] = 1
	n++
	print $1, $2
}
END {
	if (!bad && !n) {
		print "no samples" >"/dev/stderr"
		exit 1
	}
}
EOF

ktap_plan 19

# --- set-up ---------------------------------------------------------------

krep_mod_unload
modprobe veth 2>/dev/null
modprobe bridge 2>/dev/null
# one broker per netns; a follower whose link comes back reconnects
# within 0.5 s (section 4), not the default 5 s backoff
krep_mod_load reconnect_backoff_max_ms=500 || ktap_bail "insmod krep.ko failed"

for n in B1 B2 B3 BR; do
	krep_netns_add "$n" "o${n,,}" || ktap_bail "ip netns add failed"
done
NS1=$(stat -L -c %i "/run/netns/$B1")
NS2=$(stat -L -c %i "/run/netns/$B2")
NS3=$(stat -L -c %i "/run/netns/$B3")
# The bpftrace tools take longest (LLVM compiles each program under
# emulation, 20 to 60 s, about 10 s of CPU each): all of them start now,
# niced so that the set-up is not starved, and attach while the cluster
# comes up. They look at topic obs only, and obs has no record before
# section 1 (no HW advance); the ISR changes of section 4 are looked for
# after a mark. commit-latency.bt and hw-advance.bt are for section 1,
# isr-changes.bt and replica-lag.bt for section 4.
bg_start lat nice -n 19 bpftrace "$BT/commit-latency.bt" obs
bg_start hwa nice -n 19 bpftrace "$BT/hw-advance.bt" obs
bg_start isr nice -n 19 bpftrace "$BT/isr-changes.bt" obs
bg_start rlag nice -n 19 bpftrace "$BT/replica-lag.bt" obs
for i in 1 2 3; do
	v=B$i
	echo "link add kr0 netns ${!v} type veth peer name p$i netns $BR"
done | ip -b - || ktap_bail "cannot create the veth links"
printf '%s\n' "link add krbr type bridge" "link set krbr up" \
	"link set p1 master krbr up" "link set p2 master krbr up" \
	"link set p3 master krbr up" | ip -n "$BR" -b - ||
	ktap_bail "cannot set up the bridge"
for i in 1 2 3; do
	v=B$i
	printf '%s\n' "link set lo up" "addr add $NET.$i/24 dev kr0" \
		"link set kr0 up" | ip -n "${!v}" -b - ||
		ktap_bail "cannot address netns ${!v}"
done

setup_ok=0
for i in 1 2 3; do
	v=B$i
	kc "${!v}" broker set id "$i" cluster "$CLUSTER" \
		listen "$NET.$i:$PORT" || setup_ok=1
done
# every listener is up before any broker dials: no connect retries
for i in 1 2 3; do
	v=B$i
	peers=
	for j in 1 2 3; do
		[ "$j" = "$i" ] || peers+="${peers:+,}$j@$NET.$j:$PORT"
	done
	kc "${!v}" broker set peers "$peers" || setup_ok=1
	kc "${!v}" topic create obs partitions 3 replication-factor 3 \
		config replica_lag_time_max_ms=$LAG || setup_ok=1
done
ready_one() { # NS: its led partitions have every follower in the ISR with a LEO
	describe "$1" | jq -e 'all(.[] | select(.role == "leader");
		(.isr | length) == (.replicas | length) and
		all(.remotes[]; .in_isr and .leo != null))' >/dev/null 2>&1
}
ready_all() { ready_one "$B1" && ready_one "$B2" && ready_one "$B3"; }
peers_up() {
	local ns
	for ns in "$B1" "$B2" "$B3"; do
		kc "$ns" --json broker show |
			jq -e 'all(.peers[]; .state == "up")' >/dev/null || return 1
	done
}
krep_wait_for 60 peers_up || setup_ok=1
krep_wait_for 60 ready_all || setup_ok=1
bg_start krepd "$KREPD" --netns "$B1" --foreground --metrics "$METRICS"
krep_wait_for 10 scrape || setup_ok=1
# and one in the initial namespace, for section 5's rmmod and insmod
bg_start krepd0 "$KREPD" --foreground --metrics "$METRICS0"
krep_wait_for 10 scrape0 || setup_ok=1
if [ "$setup_ok" = 0 ]; then
	ktap_ok "3 brokers up, every ISR full; krepd --metrics $METRICS in broker 1's namespace"
else
	for ns in "$B1" "$B2" "$B3"; do
		describe "$ns" | ktap_diag_stdin
	done
	cat "$tmp/krepd.out" "$tmp/krepd.err" "$tmp/prom.err" | ktap_diag_stdin
	ktap_fail "3 brokers up, every ISR full; krepd --metrics $METRICS in broker 1's namespace"
	ktap_bail "the cluster did not come up"
fi

# --- 1. HW advances: hw-advance.bt, commit-latency.bt, watch ---------------

section "1. produce $RECORDS records to obs-0 under bpftrace and krepctl watch"

hw0=$(part "$B1" obs 0 | jq .hw)
# the second watch is for section 4: attaching it with the first saves time
bg_start watch1 "$KREPCTL" --netns "$B1" --json watch --interval 500
bg_start watch2 "$KREPCTL" --netns "$B1" --json watch obs --interval 500
bt_ok=0
# BEGIN runs once every probe is attached; "Attaching" comes before
bt_wait lat Tracing || bt_ok=1
bt_wait hwa 'TIME(ms)' || bt_ok=1
bt_wait isr 'TIME(ms)' || bt_ok=1
bt_wait rlag Tracing || bt_ok=1
# watch is attached once it prints its first refresh
watch_wait() { # NAME
	krep_wait_for 120 test -s "$tmp/$1.out" && return 0
	ktap_diag "krepctl watch ($1) printed nothing"
	head -n 5 "$tmp/$1.err" | ktap_diag_stdin
	return 1
}
watch_wait watch1 || bt_ok=1
watch2_ok=0
watch_wait watch2 || watch2_ok=1

seq -f "obs-%04.0f" 1 "$RECORDS" >"$tmp/records"
kc "$B1" produce obs partition 0 acks all batch 10 <"$tmp/records" \
	>"$tmp/produce.out" 2>&1 || {
	ktap_diag "krepctl produce exited $?: $(tail -n 3 "$tmp/produce.out" | tr '\n' ' ')"
	bt_ok=1
}
hw1=$(part "$B1" obs 0 | jq .hw)
# hw-advance.bt's lines for broker 1's obs-0 ("MS NETNS 1 obs-0 OLD ->
# NEW EPOCH ISR", NETNS broker 1's namespace) as "MS OLD NEW", in the
# order they happened: bpftrace prints each CPU's perf buffer in turn, so
# two advances made on two CPUs may be printed in either order (sorted by
# time, then by OLD within a millisecond)
hw_b1() {
	awk -v ns="$NS1" '$2 == ns && $3 == 1 && $4 == "obs-0" { print $1, $5, $7 }' \
		"$tmp/hwa.out" | sort -k1,1n -k2,2n
}
# Every advance, in order: old < new, each starting where the last
# ended, from the HW before the produce to the one PARTITION_GET reports
# after; what breaks that, a line each.
hw_viol() {
	hw_b1 | awk -v first="$hw0" -v last="$hw1" '
	{ n++
	  if ($2 + 0 >= $3 + 0) print "advance " n ": old " $2 " >= new " $3
	  if (n == 1 && $2 != first) print "first advance from " $2 ", HW was " first
	  if (n > 1 && $2 != prev) print "advance " n ": from " $2 ", the previous ended at " prev
	  prev = $3 }
	END { if (!n) print "no HW advance seen"
	      else if (prev != last) print "last advance to " prev ", PARTITION_GET says " last }'
}
# first, without a process (hw_viol starts three, ten times a second
# while bpftrace has not printed everything): an advance of broker 1's
# obs-0 ends at that HW
hw_end_seen() {
	local ns b tp new
	while read -r _ ns b tp _ _ new _; do
		[ "$ns $b $tp $new" != "$NS1 1 obs-0 $hw1" ] || return 0
	done <"$tmp/hwa.out"
	return 1
}
hw_whole() { [ -z "$(hw_viol)" ]; }
# bpftrace prints from its perf buffer as it is scheduled: on a loaded
# machine, long after the produce; the other CPU's buffer, if any, within
# its next poll (100 ms) once it prints
if ! krep_wait_for 180 hw_end_seen; then
	ktap_diag "hw-advance.bt printed no advance to HW $hw1 within 180 s"
	bt_ok=1
elif ! krep_wait_for 20 hw_whole; then
	ktap_diag "hw-advance.bt's advances were not whole within 20 s of the last"
	bt_ok=1
fi
# two more refreshes of watch, so it has read the maps after the produce
# (the first may have read them before)
watch_ok=0
n=$(lines watch1)
krep_wait_for 60 refreshed watch1 $((n + 2)) || {
	ktap_diag "krepctl watch did not refresh twice after the produce ($n lines)"
	watch_ok=1
}
# done with these: they detach while the suite goes on
bg_int lat hwa watch1

viol=$(hw_viol)
nadv=$(hw_b1 | wc -l)
if [ "$bt_ok" = 0 ] && [ "$hw1" = "$((hw0 + RECORDS))" ] && [ -z "$viol" ]; then
	ktap_ok "hw-advance.bt obs: $nadv HW advances of obs-0 in broker 1's namespace, in order, old < new, contiguous, $hw0 -> $hw1 as PARTITION_GET says"
else
	ktap_diag "HW before $hw0, after $hw1 (want $((hw0 + RECORDS)))"
	head -n 10 <<<"$viol" | ktap_diag_stdin
	head -n 10 "$tmp/hwa.out" "$tmp/hwa.err" "$tmp/produce.out" | ktap_diag_stdin
	ktap_fail "hw-advance.bt obs: HW advances of obs-0 in broker 1's namespace, in order, old < new, contiguous, ending at PARTITION_GET's HW"
fi

# watch counted the same advances (only broker 1's: the netns filter),
# and its histogram holds broker 1's commits and no others
bg_reap watch1
w=$(tail -n 1 "$tmp/watch1.out")
if [ "$watch_ok" = 0 ] && jq -e --argjson ns "$NS1" --argjson n "$nadv" --argjson hw "$hw1" \
	--argjson hw0 "$hw0" '
	(.partitions | length) == 3 and
	all(.partitions[]; .netns == $ns and .broker == 1) and
	(.partitions[] | select(.topic == "obs" and .partition == 0) |
	 .hw_advances == $n and .hw == $hw and .commits > 0 and
	 .produce_records == ($hw - $hw0)) and
	.commit_latency_us.count == ([.partitions[].commits] | add) and
	.commit_latency_us.count == ([.commit_latency_us.buckets[].count] | add) and
	all(.commit_latency_us.buckets[]; .le > 0)' <<<"$w" >/dev/null 2>&1; then
	ktap_ok "krepctl watch: $nadv HW advances of obs-0 like bpftrace, broker 1's partitions only, commit histogram of $(jq .commit_latency_us.count <<<"$w")"
else
	ktap_diag "bpftrace saw $nadv advances, HW $hw1; watch's last refresh:"
	jq -c '.partitions[] | {netns, broker, topic, partition, hw, hw_advances, commits, produce_records}' <<<"$w" 2>&1 | ktap_diag_stdin
	jq -c .commit_latency_us <<<"$w" 2>&1 | ktap_diag_stdin
	head -n 5 "$tmp/watch1.err" | ktap_diag_stdin
	ktap_fail "krepctl watch: counts the HW advances bpftrace saw, broker 1's partitions only, commit histogram"
fi

# krepd's krep_commit_latency_seconds (from the krep_hw_advance trace
# event of broker 1's namespace) counts the commits watch counted
wcommits=$(jq '.commit_latency_us.count' <<<"$w" 2>/dev/null)
if scrape && [ -n "$wcommits" ] && [ "$wcommits" -gt 0 ] &&
   [ "$(metric krep_commit_latency_seconds_count)" = "$wcommits" ] &&
   [ "$(metric 'krep_commit_latency_seconds_bucket{le="+Inf"}')" = "$wcommits" ] &&
   awk -v s="$(metric krep_commit_latency_seconds_sum)" 'BEGIN { exit !(s > 0) }' &&
   [ "$(metric krep_commit_latency_events_lost_total)" = 0 ]; then
	ktap_ok "krepd --metrics: krep_commit_latency_seconds, a histogram of the $wcommits commits watch counted, sum $(metric krep_commit_latency_seconds_sum) s"
else
	ktap_diag "watch counted ${wcommits:-nothing}"
	ktap_diag_stdin <"$tmp/prom.err"
	grep commit_latency "$tmp/metrics" | ktap_diag_stdin
	grep -v '^$' "$tmp/krepd.out" "$tmp/krepd.err" | tail -n 5 | ktap_diag_stdin
	ktap_fail "krepd --metrics: krep_commit_latency_seconds counts the commits watch counted"
fi

# The hist() of commit-latency.bt for [netns, obs, 0]: the bucket lines
# ("[lo, hi)  N |@@|", or "[N]  N |@@|") below "@commit_us[NS, obs, 0]:",
# whose counts add up to the count of its stats line; and hw-advance.bt's
# NETNS and BROKER columns: each of obs-0's lines names a broker and its
# own namespace, the leader's and a follower's among them (a follower's
# HW advances as its fetches bring the leader's).
lat_check() {
	local hist hsum hcount cols want

	# (and hw-advance.bt, so that both are waited for soon after their
	# SIGINT: see exit_wait)
	bg_reap lat hwa
	hist=$(awk -v k="@commit_us[$NS1, obs, 0]:" '
		$0 == k || $0 == k " " { on = 1; next }
		on && /^\[/ { print; next }
		on { on = 0 }' "$tmp/lat.out")
	hsum=$(awk -F'|' '{ n = split($1, f, " "); s += f[n] } END { print s + 0 }' <<<"$hist")
	hcount=$(sed -nE "s/^@commit_us_stats\[$NS1, obs, 0\]: count ([0-9]+),.*/\1/p" "$tmp/lat.out")
	if [ -n "$hist" ] && [ "$hsum" -gt 0 ] && [ "$hsum" = "${hcount:-x}" ]; then
		ktap_ok "commit-latency.bt: hist() of $hsum commits of obs-0 in broker 1's namespace, $(wc -l <<<"$hist") bucket lines"
	else
		ktap_diag "commit-latency.bt: ${BG_RC_lat:-not reaped} (exit status)"
		head -n 30 "$tmp/lat.out" "$tmp/lat.err" | ktap_diag_stdin
		ktap_fail "commit-latency.bt: a hist() for obs-0 in broker 1's namespace"
	fi
	# (only obs has records here: its topic filter is not what this tests)
	cols=$(awk '$4 == "obs-0" { print $2 "/" $3 }' "$tmp/hwa.out" | sort -u | paste -sd' ')
	want=" $NS1/1 $NS2/2 $NS3/3 "
	if [[ " $cols " == *" $NS1/1 "* ]] && [[ $cols == *" "* ]] &&
	   [ -z "$(for c in $cols; do [[ $want == *" $c "* ]] || echo "$c"; done)" ]; then
		ktap_ok "hw-advance.bt obs: obs-0's NETNS and BROKER columns, each line a broker in its own namespace ($cols)"
	else
		ktap_diag "NETNS/BROKER of obs-0's lines: ${cols:-none}; want broker 1's and a follower's of $want"
		head -n 10 "$tmp/hwa.out" "$tmp/hwa.err" | ktap_diag_stdin
		ktap_fail "hw-advance.bt obs: obs-0's NETNS and BROKER columns, each line a broker in its own namespace, the leader's and a follower's"
	fi
}

# --- 2. watch --once --json against PARTITION_GET --------------------------

section "2. watch --once --json and topic describe --json"

agree() {
	kc "$B1" --json watch --once --interval 200 >"$tmp/once.json" 2>"$tmp/once.err" &&
		describe "$B1" >"$tmp/describe.json" &&
		jq -e -s '
		.[0].partitions as $w | .[1] as $d |
		($w | length) == ($d | length) and
		all($d[]; . as $p |
			first($w[] | select(.topic == $p.topic and .partition == $p.partition)) |
			.leader == $p.leader and .leader_epoch == $p.leader_epoch and
			.role == $p.role and .isr == $p.isr and
			.isr_size == ($p.isr | length) and .replicas == $p.replicas and
			.leo == $p.leo and .hw == $p.hw and .hw_lag == ($p.leo - $p.hw) and
			.under_replicated == (($p.isr | length) < ($p.replicas | length)) and
			.under_min_isr == false)
		' "$tmp/once.json" "$tmp/describe.json" >/dev/null
}
if krep_wait_for 60 agree; then
	ktap_ok "krepctl watch --once --json agrees with topic describe --json on all 3 partitions"
else
	cat "$tmp/once.json" "$tmp/once.err" "$tmp/describe.json" | ktap_diag_stdin
	ktap_fail "krepctl watch --once --json agrees with topic describe --json"
fi

# without privileges: as nobody, tracefs is closed; as root without
# CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN, loading the programs is refused
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$KREPCTL" watch --once 2>&1)
rc=$?
caps=-bpf,-perfmon,-sys_admin
out2=$(setpriv --bounding-set=$caps --inh-caps=$caps "$KREPCTL" watch --once 2>&1)
rc2=$?
if [ "$rc" = 1 ] && grep -q 'permission denied' <<<"$out" &&
   [ "$rc2" = 1 ] && grep -q 'cannot load the BPF programs: permission denied' <<<"$out2"; then
	ktap_ok "krepctl watch without privileges: exit 1, '$(cut -c1-70 <<<"$out2")...'"
else
	ktap_diag "as nobody: exit $rc: $out"
	ktap_diag "as root without $caps: exit $rc2: $out2"
	ktap_fail "krepctl watch without privileges: exit 1 with a permission message"
fi

# --- 3. the metrics endpoint and stats, all in sync ------------------------

section "3. krepd --metrics and krepctl stats"

all_present() { # SERIES...: all in the last scrape
	local m
	for m in "$@"; do
		[ "$(metric "$m")" != absent ] || { ktap_diag "no $m"; return 1; }
	done
}

if scrape && [ "$(metric krep_up)" = 1 ] &&
   [ "$(metric krep_under_replicated_partitions)" = 0 ] &&
   [ "$(metric krep_partitions)" = 3 ] && [ "$(metric krep_leader_partitions)" = 1 ] &&
   [ "$(metric 'krep_partition_hw_lag{topic="obs",partition="0"}')" = 0 ] &&
   all_present krep_under_min_isr_partitions krep_at_min_isr_partitions \
	krep_offline_partitions krep_isr_shrinks_total krep_isr_expands_total \
	krep_max_follower_lag_offsets krep_max_follower_lag_ms \
	krep_records_total krep_fetch_responses_total \
	'krep_partition_lso_lag{topic="obs",partition="2"}' &&
   [ "$(metric krep_log_memory_max_bytes)" = $((256 << 20)) ] &&
   [ "$(metric krep_log_memory_bytes)" -gt 0 ]; then
	ktap_ok "GET /metrics parses as Prometheus text: $(wc -l <"$tmp/metrics") series, none under-replicated"
else
	cat "$tmp/prom.err" "$tmp/metrics" | ktap_diag_stdin
	ktap_fail "GET /metrics parses as Prometheus text with krep's metrics"
fi

if kc "$B1" --json stats >"$tmp/stats.json" &&
   jq -e --argjson r "$((hw1))" '.broker_id == 1 and .partitions == 3 and
	.leader_partitions == 1 and .under_replicated_partitions == 0 and
	.under_min_isr_partitions == 0 and .offline_partitions == 0 and
	.isr_shrinks == null and .counters.records == $r and
	(.by_partition | length) == 3' "$tmp/stats.json" >/dev/null &&
   kc "$B1" stats | grep -q '^  under-replicated partitions  *0$'; then
	ktap_ok "krepctl stats: 3 partitions, 1 led, none under-replicated, $hw1 records"
else
	cat "$tmp/stats.json" | ktap_diag_stdin
	ktap_fail "krepctl stats: 3 partitions, 1 led, none under-replicated"
fi

# commit-latency.bt has had sections 2 and 3 to detach
lat_check

# --- 4. a follower cut off and restored ------------------------------------

section "4. broker 3 cut off and restored"

isr_ok=0
# isr-changes.bt's lines from now on: its TIME(ms) is nsecs, CLOCK_MONOTONIC,
# which /proc/uptime counts too in the VM (it never sleeps); a line
# printed late from the perf buffer still carries the time of its event
isr_t0=$(awk '{ printf "%d", $1 * 1000 }' /proc/uptime)
isr_seen() { # EVENT: broker 1 took follower 3 out of obs-0's ISR, or in
	awk -v t="$isr_t0" -v ns="$NS1" -v e="$1" '$1 >= t && $2 == ns &&
		$3 == 1 && $4 == e && $5 == "obs-0" && $6 == 3 { f = 1 }
		END { exit !f }' "$tmp/isr.out"
}
ip -n "$B3" link set kr0 down
# an acks=all produce waits for the expiration scan to drop broker 3
seq 1 10 | kc "$B1" produce obs partition 0 acks all timeout 30000 \
	>"$tmp/produce2.out" 2>&1 || isr_ok=1
isr_is() { # JSON-ARRAY: obs-0's ISR on broker 1
	[ "$(part "$B1" obs 0 | jq -c .isr)" = "$1" ]
}
krep_wait_for 20 isr_is '[1,2]' || isr_ok=1
if [ "$isr_ok" = 0 ] && krep_wait_for 20 isr_seen shrink; then
	ktap_ok "isr-changes.bt: broker 1 shrinks obs-0's ISR without follower 3 ($(grep -c shrink "$tmp/isr.out") shrink lines)"
else
	part "$B1" obs 0 | ktap_diag_stdin
	cat "$tmp/produce2.out" | ktap_diag_stdin
	head -n 20 "$tmp/isr.out" "$tmp/isr.err" | ktap_diag_stdin
	ktap_fail "isr-changes.bt: broker 1 shrinks obs-0's ISR without follower 3"
fi

urp_is() { # N [MIN_SHRINKS MIN_EXPANDS]
	scrape && [ "$(metric krep_under_replicated_partitions)" = "$1" ] &&
		awk -v a="$(metric krep_isr_shrinks_total)" -v b="${2:-0}" \
			-v c="$(metric krep_isr_expands_total)" -v d="${3:-0}" \
			'BEGIN { exit !(a >= b && c >= d) }'
}
if krep_wait_for 10 urp_is 1 1 0 &&
   kc "$B1" --json stats | jq -e '.under_replicated_partitions == 1 and
	.at_min_isr_partitions == 0 and .max_follower_lag_offsets >= 10' >/dev/null; then
	ktap_ok "cut off: krep_under_replicated_partitions 1, krep_isr_shrinks_total $(metric krep_isr_shrinks_total); stats agrees"
else
	cat "$tmp/prom.err" "$tmp/metrics" | ktap_diag_stdin
	kc "$B1" --json stats | ktap_diag_stdin
	ktap_fail "cut off: krep_under_replicated_partitions 1 and a shrink counted; stats agrees"
fi

# replica-lag.bt: the cut-off follower's lag grows with every append on
# the leader, though it fetches nothing (two more produces, a print apart)
rlag_vals() { # FROM-LINE: follower 3's printed lags on obs-0 (broker 1)
	tail -n +"$1" "$tmp/rlag.out" |
		sed -nE "s/^@lag\[$NS1, obs, 0, 3\]: ([0-9]+)\$/\1/p"
}
rlag_at_least() { # FROM-LINE N: a lag of N or more printed since FROM-LINE
	rlag_vals "$1" | awk -v n="$2" '$1 >= n { f = 1 } END { exit !f }'
}
leo0=$(part "$B1" obs 0 | jq .leo)
mark=$(lines rlag)
seq 1 10 | kc "$B1" produce obs partition 0 acks 1 >/dev/null 2>&1
krep_wait_for 10 rlag_at_least "$mark" 20
mark2=$(lines rlag)
seq 1 10 | kc "$B1" produce obs partition 0 acks 1 >/dev/null 2>&1
f3=$(part "$B1" obs 0 | jq '.remotes[] | select(.id == 3) | .leo')
want=$(($(part "$B1" obs 0 | jq .leo) - f3))
if krep_wait_for 10 rlag_at_least "$mark2" "$want" &&
   [ "$(rlag_vals "$mark" | head -n 1)" -lt "$want" ] && [ "$want" -ge 30 ]; then
	ktap_ok "replica-lag.bt obs: follower 3 cut off, its lag grows with the leader's appends: $(rlag_vals "$mark" | uniq | tr '\n' ' ')(LEO $leo0 -> $((f3 + want)), follower at $f3)"
else
	ktap_diag "follower 3 at ${f3:-?}, leader from $leo0, want a lag of ${want:-?}"
	tail -n 30 "$tmp/rlag.out" | ktap_diag_stdin
	head -n 5 "$tmp/rlag.err" | ktap_diag_stdin
	ktap_fail "replica-lag.bt obs: the cut-off follower's lag grows with the leader's appends"
fi

ip -n "$B3" link set kr0 up
restored_ok=0
krep_wait_for 90 isr_is '[1,2,3]' || restored_ok=1
if [ "$restored_ok" = 0 ] && krep_wait_for 10 urp_is 0 1 1; then
	ktap_ok "restored: broker 3 back in obs-0's ISR, krep_under_replicated_partitions 0, krep_isr_expands_total $(metric krep_isr_expands_total)"
else
	part "$B1" obs 0 | ktap_diag_stdin
	cat "$tmp/prom.err" "$tmp/metrics" | ktap_diag_stdin
	ktap_fail "restored: broker 3 back in obs-0's ISR, krep_under_replicated_partitions 0, an expand counted"
fi

# once back, replica-lag.bt prints follower 3's lag as 0 again
mark=$(lines rlag)
caught_up3() { [ "$(rlag_vals "$mark" | tail -n 1)" = 0 ]; }
if [ "$restored_ok" = 0 ] && krep_wait_for 20 caught_up3; then
	ktap_ok "replica-lag.bt obs: follower 3 back, its lag printed as 0"
else
	tail -n 20 "$tmp/rlag.out" | ktap_diag_stdin
	ktap_fail "replica-lag.bt obs: follower 3 back, its lag printed as 0"
fi
bg_int rlag

krep_wait_for 30 isr_seen expand || watch2_ok=1
# two more refreshes, so that watch has read the maps after the expand
n=$(lines watch2)
krep_wait_for 60 refreshed watch2 $((n + 2)) || {
	ktap_diag "krepctl watch obs did not refresh twice after the expand ($n lines)"
	watch2_ok=1
}
# the metrics were the last use of krepd
bg_int isr watch2 krepd
bg_reap watch2
w=$(tail -n 1 "$tmp/watch2.out")
if [ "$watch2_ok" = 0 ] && isr_seen expand && jq -e '(.partitions | length) == 3 and
	all(.partitions[]; .topic == "obs") and
	(.partitions[] | select(.partition == 0) |
	 .isr_shrinks >= 1 and .isr_expands >= 1 and .isr_size == 3 and
	 .under_replicated == false)' <<<"$w" >/dev/null 2>&1; then
	ktap_ok "isr-changes.bt saw the expand; krepctl watch obs counted $(jq '.partitions[] | select(.partition == 0) | "\(.isr_shrinks) shrink(s) and \(.isr_expands) expand(s)"' -r <<<"$w") of obs-0"
else
	grep -E 'shrink|expand' "$tmp/isr.out" | ktap_diag_stdin
	jq -c '.partitions[] | {topic, partition, isr, isr_shrinks, isr_expands}' <<<"$w" 2>&1 |
		ktap_diag_stdin
	ktap_fail "isr-changes.bt saw the expand; krepctl watch obs counted the shrink and the expand of obs-0"
fi

# --- 5. the end: no BPF left, module gone ----------------------------------

section "5. shutdown; krepd --metrics across rmmod and insmod"

# all but krepd0, which stays up across the rmmod
BG_ALL=("${BG_ALL[@]/krepd0}")
read -ra BG_ALL <<<"${BG_ALL[*]}"
bg_reap "${BG_ALL[@]}"
exits=
for n in "${BG_ALL[@]}"; do
	v=BG_RC_$n
	t=BG_INT_$n
	e=BG_END_$n
	ktap_diag "$n: exit ${!v}, SIGINT at ${!t}s, reaped at ${!e}s"
	[ "${!v}" = 0 ] && continue
	exits+=" $n"
	head -n 5 "$tmp/$n.err" | ktap_diag_stdin
done
if [ -z "$exits" ]; then
	ktap_ok "every bpftrace, krepctl watch and krepd exited by itself on SIGINT, status 0 (${BG_ALL[*]})"
else
	ktap_fail "every bpftrace, krepctl watch and krepd exited by itself on SIGINT, status 0:$exits did not"
fi

for n in B1 B2 B3 BR; do
	ip netns del "${!n}"
done
if krep_wait_for 30 rmmod krep 2>/dev/null; then
	out=$("$KREPCTL" watch --once 2>&1)
	rc=$?
	if [ "$rc" = 1 ] && grep -q 'tracepoints are missing' <<<"$out"; then
		ktap_ok "krep unloaded; krepctl watch: exit 1, '$(cut -c1-70 <<<"$out")...'"
	else
		ktap_diag "exit $rc: $out"
		ktap_fail "krep unloaded; krepctl watch exits 1 saying the tracepoints are missing"
	fi
else
	lsmod | grep krep | ktap_diag_stdin
	ktap_fail "krep unloaded (nothing holds it)"
fi

# krepd0 traced krep_hw_advance in a tracefs instance of its own all
# along, which held nothing: it answers krep_up 0 now, krep_up 1 once the
# module is back, and leaves no instance behind when it stops
up_is() { scrape0 && [ "$(metric krep_up)" = "$1" ]; }
instances() { # the krepd-PID instances of tracefs, a line each
	local d
	for d in /sys/kernel/tracing/instances/krepd-*; do
		[ -d "$d" ] && echo "${d##*/}"
	done
}
k0_ok=0
krep_wait_for 10 up_is 0 || { ktap_diag "not krep_up 0 after rmmod"; k0_ok=1; }
count0=$(metric krep_commit_latency_seconds_count)
# shellcheck disable=SC2119 # no module parameters
krep_mod_load || k0_ok=1
krep_wait_for 10 up_is 1 || { ktap_diag "not krep_up 1 after insmod"; k0_ok=1; }
[ "$(metric krep_commit_latency_seconds_count)" = "$count0" ] || {
	ktap_diag "the histogram's count went from $count0 to $(metric krep_commit_latency_seconds_count)"
	k0_ok=1
}
during=$(instances)
bg_int krepd0
bg_reap krepd0
# shellcheck disable=SC2154 # BG_RC_krepd0 is bg_reap's
if [ "$k0_ok" = 0 ] && [ "$BG_RC_krepd0" = 0 ] && [ -n "$during" ] &&
   [ -z "$(instances)" ] && rmmod krep; then
	ktap_ok "krepd --metrics across rmmod and insmod: krep_up 0, then 1 (histogram kept), its tracefs instance $during gone at exit"
else
	ktap_diag "krepd0: exit ${BG_RC_krepd0:-?}; instances while it ran: '$during', after: '$(instances)'"
	grep -v '^$' "$tmp/krepd0.out" "$tmp/krepd0.err" | tail -n 10 | ktap_diag_stdin
	ktap_fail "krepd --metrics across rmmod and insmod: krep_up 0, then 1, its tracefs instance gone at exit"
fi

ktap_finish
