#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# log.sh - one broker's partition logs and watermarks through krepctl:
# produce, consume, offsets, delete-records, txn and topic, as a user
# drives them.
#
#   initial netns
#   +------------------------------------------------------------------+
#   | krep.ko broker_id=1 (default 256 MiB log memory cap)             |
#   |                                                                  |
#   |  krepctl produce --> big-0   100,000 records, four kinds of key, |
#   |                              header and timestamp, read back     |
#   |  krepctl consume <--         byte for byte (--format full and    |
#   |                              --json)                             |
#   |  errors, acks, offsets by time, transactions (read_committed)    |
#   |  consume -f parked at the end: woken by a produce, ended by the  |
#   |  topic's deletion                                                |
#   |  last: broker set peers 2,3 (never there), an RF=3 topic with an |
#   |  acks=all produce parked on it, a consumer parked on big-0, and  |
#   |  rmmod: both return, nothing leaks                               |
#   +------------------------------------------------------------------+
#
# The precise error paths (errno, extack, Kafka code of every refusal) are
# log_genl.sh's (log_test.c); here each is checked once as krepctl prints
# it: exit status 1 and Kafka's error name. Prints KTAP; leaves the module
# unloaded.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd awk cmp diff

NREC=100000		# records in big-0, four chunks
CHUNK=$((NREC / 4))
# The longest a FETCH may wait and an acks=all PRODUCE may take (the
# kernel's maximum for both): a parked request that returns sooner after
# its client was started was woken, it did not time out. That is the
# bound, not a guess at how fast a busy machine is.
WAIT_MS=30000

tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"
krep_cleanup_push krep_mod_unload

kc() {
	"$KREPCTL" "$@"
}

# run DESC WANT_STATUS NEEDLE CMD...: ok if CMD exits WANT_STATUS and its
# output (stdout and stderr) holds NEEDLE
run() {
	local desc=$1 want=$2 needle=$3 out rc
	shift 3

	out=$("$@" 2>&1) && rc=0 || rc=$?
	if [ "$rc" = "$want" ] && grep -qF -- "$needle" <<<"$out"; then
		ktap_ok "$desc"
		return 0
	fi
	ktap_diag "exit $rc (want $want), want \"$needle\" in the output of: $*"
	[ -z "$out" ] || ktap_diag "$out"
	ktap_fail "$desc"
	return 1
}

# run_eq DESC WANT CMD...: ok if CMD succeeds and prints exactly WANT
run_eq() {
	local desc=$1 want=$2 out rc
	shift 2

	out=$("$@" 2>&1) && rc=0 || rc=$?
	if [ "$rc" = 0 ] && [ "$out" = "$want" ]; then
		ktap_ok "$desc"
		return 0
	fi
	ktap_diag "exit $rc: $*"
	ktap_diag "got:  $(printf '%q' "$out")"
	ktap_diag "want: $(printf '%q' "$want")"
	ktap_fail "$desc"
	return 1
}

# jnum KEY: the first number KEY has in the JSON on stdin
jnum() {
	grep -oE "\"$1\":-?[0-9]+" | head -n 1 | cut -d: -f2
}

# wm TOPIC: "leo hw lso log_start" of partition 0
wm() {
	local j

	j=$(kc --json topic describe "$1") || return 1
	echo "$(jnum leo <<<"$j") $(jnum hw <<<"$j") $(jnum lso <<<"$j") $(jnum log_start <<<"$j")"
}


# gone PID: PID has exited (it is our child: wait reaps it)
# shellcheck disable=SC2317 # called through krep_wait_for
gone() {
	! kill -0 "$1" 2>/dev/null
}

# waited PID SECONDS: wait up to SECONDS for PID to exit; its status in
# $waited_rc (255 if it had to be killed)
waited() {
	waited_rc=255
	if krep_wait_for "$2" gone "$1"; then
		wait "$1"
		waited_rc=$?
		return 0
	fi
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 1
}

ms() {
	echo $(($(date +%s%N) / 1000000))
}

ktap_plan 24

krep_kmsg_mark log-$$
krep_mod_unload
krep_mod_load broker_id=1 || ktap_bail "insmod krep.ko broker_id=1 failed"

# ---------------------------------------------------------------------
# Errors as krepctl prints them

kc topic create e >/dev/null || ktap_bail "topic create e failed"
kc topic create small config max_message_bytes=200 >/dev/null ||
	ktap_bail "topic create small failed"
printf '%s\n' a b c | kc produce e >/dev/null || ktap_bail "produce to e failed"

run "bad topic name '.': refused with the kernel's reason" 1 \
	"topic name cannot be '.' or '..'" kc topic create .
run "duplicate topic: TOPIC_ALREADY_EXISTS, also as JSON" 1 \
	'{"error":"TOPIC_ALREADY_EXISTS","code":36,"errno":"EEXIST"' \
	kc --json topic create e
run "produce to an unknown topic: UNKNOWN_TOPIC_OR_PARTITION" 1 \
	"[UNKNOWN_TOPIC_OR_PARTITION]" sh -c "echo x | '$KREPCTL' produce nope"
run "consume above LEO: OFFSET_OUT_OF_RANGE" 1 \
	"[OFFSET_OUT_OF_RANGE]" kc consume e -o 4
run "delete-records beyond HW: OFFSET_OUT_OF_RANGE" 1 \
	"[OFFSET_OUT_OF_RANGE]" kc delete-records e before 4
run "txn commit without begin: INVALID_TXN_STATE" 1 \
	"[INVALID_TXN_STATE]" kc txn e 9:0 commit
run "record over max_message_bytes: MESSAGE_TOO_LARGE" 1 \
	"[MESSAGE_TOO_LARGE]" sh -c "printf '%0300d\n' 0 | '$KREPCTL' produce small"

# ---------------------------------------------------------------------
# acks 0, 1 and all on RF=1: each appends at the next offset, HW follows

ok=1
for a in 0 1 all; do
	out=$(echo "acks-$a" | kc produce e acks "$a") || ok=0
	ktap_diag "acks $a: $out"
done
[ "$(wm e)" = "6 6 6 0" ] || { ok=0; ktap_diag "leo hw lso log_start: $(wm e)"; }
got=$(kc consume e -o 3)
[ "$got" = $'acks-0\nacks-1\nacks-all' ] || { ok=0; ktap_diag "read back: $got"; }
if [ "$ok" = 1 ]; then
	ktap_ok "acks 0, 1 and all on RF=1 append and move HW"
else
	ktap_fail "acks 0, 1 and all on RF=1 append and move HW"
fi
run_eq "delete-records moves the log start" "log_start=2 lw=2" \
	kc delete-records e before 2
run "consume below the log start: OFFSET_OUT_OF_RANGE" 1 \
	"[OFFSET_OUT_OF_RANGE]" kc consume e -o 1

# ---------------------------------------------------------------------
# 100,000 records read back byte for byte
#
# chunk 0: -K '|' keys, header src=a          timestamp 1600000000000
# chunk 1: null keys, headers h1=x and h2=''  timestamp 1600000000001
# chunk 2: -K '=' keys, key 'fixed' for lines without '=', no header,
#          timestamp 1700000000000
# chunk 3: null keys, header n=3              timestamp 4102444800000
# Values: plain, empty, quotes and backslashes, tabs, UTF-8, bytes that
# are not UTF-8, 500-byte ones; keys are plain ASCII. --json gives a record
# whose value is not UTF-8 as base64 (key, value and header values).

gen() { # CHUNK FIRST_OFFSET: writes $tmp/in.C, appends to expect.{full,json}
	LC_ALL=C awk -v c="$1" -v n="$CHUNK" -v base="$2" \
		-v in_f="$tmp/in.$1" -v full_f="$tmp/expect.full" \
		-v json_f="$tmp/expect.json" '
	function b64(s,   out, i, n, a, b, c, v) {
		out = ""
		n = length(s)
		for (i = 1; i <= n; i += 3) {
			a = ord[substr(s, i, 1)]
			b = i + 1 <= n ? ord[substr(s, i + 1, 1)] : 0
			c = i + 2 <= n ? ord[substr(s, i + 2, 1)] : 0
			v = a * 65536 + b * 256 + c
			out = out substr(B, int(v / 262144) + 1, 1) \
			      substr(B, int(v / 4096) % 64 + 1, 1)
			out = out (i + 1 <= n ? substr(B, int(v / 64) % 64 + 1, 1) : "=")
			out = out (i + 2 <= n ? substr(B, v % 64 + 1, 1) : "=")
		}
		return out
	}
	BEGIN {
		B = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
		for (i = 1; i < 256; i++)
			ord[sprintf("%c", i)] = i
		split("1600000000000 1600000000001 1700000000000 4102444800000", tss, " ")
		ts = tss[c + 1]
		long = sprintf("%0500d", 0)
		for (i = 0; i < n; i++) {
			# v as produced, jv as --json prints it
			v = "v" c "-" i
			if (i % 7 == 0) v = ""
			else if (i % 23 == 0) v = long i
			else if (i % 17 == 0) v = "\303\274\342\202\254" i
			jv = v
			bin = 0
			if (i % 7 && i % 11 == 0) {
				v = "q\"\\" i "\\\""
				jv = "q\\\"\\\\" i "\\\\\\\""
			} else if (i % 7 && i % 13 == 0) {
				v = "tab\there" i
				jv = "tab\\there" i
			} else if (i % 7 && i % 19 == 0) {
				v = "\377raw" i "\377"
				jv = b64(v)
				bin = 1
			}
			knull = 0; k = ""; hf = ""; hj = "{}"
			if (c == 0) {
				k = "k" i; line = k "|" v
				hf = "src=a"
				hj = "{\"src\":\"" (bin ? b64("a") : "a") "\"}"
			} else if (c == 1) {
				knull = 1; line = v
				hf = "h1=x,h2="
				hj = "{\"h1\":\"" (bin ? b64("x") : "x") "\",\"h2\":\"\"}"
			} else if (c == 2) {
				if (i % 2) { k = "key" i; line = k "=" v }
				else { k = "fixed"; line = v }
			} else {
				knull = 1; line = v
				hf = "n=3"
				hj = "{\"n\":\"" (bin ? b64("3") : "3") "\"}"
			}
			jk = knull ? "null" : "\"" (bin ? b64(k) : k) "\""
			off = base + i
			print line > in_f
			printf "%d\t%s\t%s\t%s\t%s\n", off, ts, k, v, hf >> full_f
			printf "{\"topic\":\"big\",\"partition\":0,\"offset\":%d,\"timestamp\":%s,\"key\":%s,\"value\":\"%s\",\"headers\":%s,\"encoding\":\"%s\"}\n", \
				off, ts, jk, jv, hj, bin ? "base64" : "utf8" >> json_f
		}
	}'
}

kc topic create big >/dev/null || ktap_bail "topic create big failed"
: >"$tmp/expect.full"
: >"$tmp/expect.json"
t0=$(ms)
for c in 0 1 2 3; do
	gen "$c" $((c * CHUNK))
done
ktap_diag "generated $NREC records and what to expect in $(($(ms) - t0)) ms"
ok=1
t0=$(ms)
kc --json produce big -K '|' header src=a timestamp 1600000000000 batch 1000 \
	<"$tmp/in.0" >"$tmp/p.0" || ok=0
kc --json produce big header h1=x header h2= timestamp 1600000000001 batch 1000 \
	<"$tmp/in.1" >"$tmp/p.1" || ok=0
kc --json produce big -K = key fixed timestamp 1700000000000 batch 1000 \
	<"$tmp/in.2" >"$tmp/p.2" || ok=0
kc --json produce big header n=3 timestamp 4102444800000 batch 1000 \
	<"$tmp/in.3" >"$tmp/p.3" || ok=0
ktap_diag "produced $NREC records in $(($(ms) - t0)) ms"
for c in 0 1 2 3; do
	want="{\"topic\":\"big\",\"partition\":0,\"records\":$CHUNK,\"first_offset\":$((c * CHUNK)),\"last_offset\":$((c * CHUNK + CHUNK - 1))}"
	[ "$(cat "$tmp/p.$c")" = "$want" ] ||
		{ ok=0; ktap_diag "chunk $c: $(cat "$tmp/p.$c")"; }
done
[ "$(wm big)" = "$NREC $NREC $NREC 0" ] || { ok=0; ktap_diag "big: $(wm big)"; }
if [ "$ok" = 1 ]; then
	ktap_ok "$NREC records produced at offsets 0..$((NREC - 1)), HW = LEO"
else
	ktap_fail "$NREC records produced at offsets 0..$((NREC - 1)), HW = LEO"
fi

# compare DESC EXPECTED GOT
compare() {
	if cmp -s "$2" "$3"; then
		ktap_ok "$1"
	else
		ktap_diag "$(wc -l <"$3") lines read back, $(wc -l <"$2") expected; first differences:"
		diff "$2" "$3" | head -n 6 | cut -c1-200 | ktap_diag_stdin
		ktap_fail "$1"
	fi
}

t0=$(ms)
kc consume big --format full >"$tmp/got.full" 2>"$tmp/err.full" ||
	ktap_diag "consume: $(cat "$tmp/err.full")"
ktap_diag "consumed $NREC records in $(($(ms) - t0)) ms"
compare "$NREC records read back byte for byte (--format full)" \
	"$tmp/expect.full" "$tmp/got.full"
kc --json consume big >"$tmp/got.json" 2>"$tmp/err.json" ||
	ktap_diag "consume --json: $(cat "$tmp/err.json")"
compare "$NREC records read back byte for byte (--json: null keys, escapes)" \
	"$tmp/expect.json" "$tmp/got.json"

# ---------------------------------------------------------------------
# Offsets by time: 0-2 at 1000 ms, 3-4 at 2000 ms, 5 at 3000 ms

ok=1
kc topic create ts >/dev/null || ok=0
printf '%s\n' a b c | kc produce ts timestamp 1000 batch 10 >/dev/null || ok=0
printf '%s\n' d e | kc produce ts timestamp 2000 batch 10 >/dev/null || ok=0
echo f | kc produce ts timestamp 3000 >/dev/null || ok=0
for q in "1500:3 2000" "3000:5 3000" "3001:6" "earliest:0" "latest:6"; do
	got=$(kc offsets ts partition 0 "${q%%:*}")
	[ "$got" = "${q#*:}" ] || { ok=0; ktap_diag "offsets ${q%%:*}: '$got', want '${q#*:}'"; }
done
got=$(kc consume ts -o s@1001 -c 1 --format full)
[ "$got" = $'3\t2000\t\td\t' ] || { ok=0; ktap_diag "consume -o s@1001: '$got'"; }
if [ "$ok" = 1 ]; then
	ktap_ok "offsets earliest, latest and by timestamp"
else
	ktap_fail "offsets earliest, latest and by timestamp"
fi

# ---------------------------------------------------------------------
# Transactions: read_committed never shows an aborted record
#
#   0 p1 | 1-2 a1 a2 (producer 7, aborted) | 3 abort marker |
#   4 c1 (producer 8) | 5 commit marker | 6 p2

kc topic create tx >/dev/null || ktap_bail "topic create tx failed"
echo p1 | kc produce tx >/dev/null
kc txn tx 7:0 begin >/dev/null
printf '%s\n' a1 a2 | kc produce tx txn 7:0 batch 2 >/dev/null
read -r leo hw lso _ <<<"$(wm tx)"
if [ "$hw" = 3 ] && [ "$lso" = 1 ]; then
	ktap_ok "LSO < HW while a transaction is open"
else
	ktap_diag "leo $leo hw $hw lso $lso, want hw 3 lso 1"
	ktap_fail "LSO < HW while a transaction is open"
fi
kc txn tx 7:0 abort >/dev/null
kc txn tx 8:0 begin >/dev/null
echo c1 | kc produce tx txn 8:0 >/dev/null
out=$(kc txn tx 8:0 commit)
echo p2 | kc produce tx >/dev/null
read -r leo hw lso _ <<<"$(wm tx)"
if [ "$out" = "offset=5 lso=6" ] && [ "$leo $hw $lso" = "7 7 7" ]; then
	ktap_ok "LSO == HW once the transactions are decided"
else
	ktap_diag "commit: '$out'; leo $leo hw $hw lso $lso, want 7 7 7"
	ktap_fail "LSO == HW once the transactions are decided"
fi
run_eq "read_committed shows only committed records" $'p1\nc1\np2' \
	kc consume tx --isolation read_committed
run_eq "read_uncommitted shows the aborted records too" $'p1\na1\na2\nc1\np2' \
	kc consume tx --isolation read_uncommitted

# ---------------------------------------------------------------------
# A consumer parked at the end

kc topic create wake >/dev/null || ktap_bail "topic create wake failed"
t0=$(ms)
"$KREPCTL" consume wake -o end -f -c 1 wait "$WAIT_MS" --format full \
	>"$tmp/wake.out" 2>&1 &
cpid=$!
if krep_wait_for 60 krep_parked "$cpid"; then
	t1=$(ms)
	echo hello | kc produce wake acks 1 timestamp 5 >/dev/null
	waited "$cpid" $((WAIT_MS / 1000 + 30))
	dt=$(($(ms) - t0))
	ktap_diag "parked consumer returned ${dt} ms after it started, $(($(ms) - t1)) ms after the produce started"
	if [ "$waited_rc" = 0 ] && [ "$dt" -lt "$WAIT_MS" ] &&
	   [ "$(cat "$tmp/wake.out")" = $'0\t5\t\thello\t' ]; then
		ktap_ok "consume -f parked at the end is woken by a produce"
	else
		ktap_diag "exit $waited_rc: $(cat "$tmp/wake.out")"
		ktap_fail "consume -f parked at the end is woken by a produce"
	fi
else
	kill "$cpid" 2>/dev/null
	ktap_diag "consumer never parked: $(cat "$tmp/wake.out")"
	ktap_fail "consume -f parked at the end is woken by a produce"
fi

t0=$(ms)
"$KREPCTL" consume wake -o end -f wait "$WAIT_MS" >"$tmp/del.out" 2>&1 &
cpid=$!
if krep_wait_for 60 krep_parked "$cpid"; then
	t1=$(ms)
	kc topic delete wake
	waited "$cpid" $((WAIT_MS / 1000 + 30))
	dt=$(($(ms) - t0))
	ktap_diag "parked consumer returned ${dt} ms after it started, $(($(ms) - t1)) ms after the deletion started"
	if [ "$waited_rc" = 1 ] && [ "$dt" -lt "$WAIT_MS" ] &&
	   grep -qF "[UNKNOWN_TOPIC_OR_PARTITION]" "$tmp/del.out"; then
		ktap_ok "consume -f ends with UNKNOWN_TOPIC_OR_PARTITION when its topic is deleted"
	else
		ktap_diag "exit $waited_rc: $(cat "$tmp/del.out")"
		ktap_fail "consume -f ends with UNKNOWN_TOPIC_OR_PARTITION when its topic is deleted"
	fi
else
	kill "$cpid" 2>/dev/null
	ktap_diag "consumer never parked: $(cat "$tmp/del.out")"
	ktap_fail "consume -f ends with UNKNOWN_TOPIC_OR_PARTITION when its topic is deleted"
fi
run "produce to the deleted topic: UNKNOWN_TOPIC_OR_PARTITION" 1 \
	"[UNKNOWN_TOPIC_OR_PARTITION]" sh -c "echo x | '$KREPCTL' produce wake"

# ---------------------------------------------------------------------
# rmmod with topics full of data, a parked consumer and a parked
# acks=all produce (RF=3, the followers never come)

ok=1
kc topic create more partitions 2 >/dev/null || ok=0
for p in 0 1; do
	seq 1 20000 | kc produce more partition "$p" acks 1 batch 2000 >/dev/null || ok=0
done
kc broker set peers 2@192.0.2.2:9092,3@192.0.2.3:9092 >/dev/null || ok=0
kc topic create stuck rf 3 config replica_lag_time_max_ms=3600000 >/dev/null || ok=0
[ "$ok" = 1 ] || ktap_diag "setting up the rmmod scenario failed"

# background jobs run krepctl itself, so that $! is its pid
t0=$(ms)
"$KREPCTL" consume big -o end -f wait "$WAIT_MS" >"$tmp/rm.cons" 2>&1 &
cpid=$!
"$KREPCTL" produce stuck acks all timeout "$WAIT_MS" <<<x >"$tmp/rm.prod" 2>&1 &
ppid=$!
if krep_wait_for 60 krep_parked "$cpid" && krep_wait_for 60 krep_parked "$ppid"; then
	t1=$(ms)
	if out=$(rmmod krep 2>&1); then
		ktap_ok "rmmod with full topics, a parked consumer and a parked produce"
	else
		ktap_diag "rmmod: $out"
		ktap_fail "rmmod with full topics, a parked consumer and a parked produce"
	fi
	ktap_diag "rmmod took $(($(ms) - t1)) ms"
	waited "$cpid" $((WAIT_MS / 1000 + 30))
	crc=$waited_rc
	waited "$ppid" $((WAIT_MS / 1000 + 30))
	prc=$waited_rc
	dt=$(($(ms) - t0))
	ktap_diag "they returned ${dt} ms after they started"
	if [ "$crc" = 1 ] && [ "$prc" = 1 ] && [ "$dt" -lt "$WAIT_MS" ]; then
		ktap_ok "the parked consumer and produce return with an error"
	else
		ktap_diag "consumer exit $crc: $(cat "$tmp/rm.cons")"
		ktap_diag "producer exit $prc: $(cat "$tmp/rm.prod")"
		ktap_fail "the parked consumer and produce return with an error"
	fi
else
	ktap_diag "consumer: $(cat "$tmp/rm.cons")"
	ktap_diag "producer: $(cat "$tmp/rm.prod")"
	ktap_fail "rmmod with full topics, a parked consumer and a parked produce"
	ktap_fail "the parked consumer and produce return with an error"
	kill "$cpid" "$ppid" 2>/dev/null
	wait
	krep_mod_unload
fi

log=$(krep_kmsg_since log-$$)
if krep_kernel_bad <<<"$log" |
	ktap_diag_stdin; then
	ktap_fail "no leak, WARNING, BUG or oops in the kernel log"
elif ! grep -q 'krep: unloaded' <<<"$log"; then
	ktap_diag "no 'krep: unloaded' line in the kernel log"
	ktap_fail "no leak, WARNING, BUG or oops in the kernel log"
else
	ktap_ok "no leak, WARNING, BUG or oops in the kernel log"
fi

ktap_finish
