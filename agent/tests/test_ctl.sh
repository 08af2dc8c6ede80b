#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-only checks of krepd --controller and krepctl elect: command lines
# (--help exits 0 with the usage on stdout; bad command lines and config
# files exit 2 with the reason, file:line for config files), and the
# control socket end to end against a controller whose only broker cannot
# be reached (a network namespace that does not exist), so no module is
# needed and no broker is touched: status, brokers, elect, the state file
# lock, a second controller on the same socket, SIGUSR1, SIGTERM and the
# controller epoch across restarts; --metrics: the controller's families
# (active, epoch, a broker fenced, elections by reason from a state file
# that calls for them, a preferred election) by the text format's rules
# (tests/test_metrics --check). The controller's work on real brokers
# runs in the VM (selftests/epochs.sh and failover.sh). KTAP (selftests/lib.sh).
#
# Usage: agent/tests/test_ctl.sh [KREPCTL [KREPD]]

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=agent/tests/lib.sh
. "$here/lib.sh"

K=${1:-$KREPCTL}
D=${2:-$KREPD}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

usage() { # MESSAGE PROG ARGS...: exits 2 with MESSAGE on stderr
	local msg=$1 err rc

	shift
	err=$("$@" 2>&1 >/dev/null </dev/null)
	rc=$?
	[ $rc = 2 ] && [[ $err == *"$msg"* ]]
	ok $? "${1##*/} ${*:2} exits 2: $msg"
	[ $rc = 2 ] || ktap_diag "exit $rc: $err"
}

NS=krep-test-ctl-none-$$
B=(--broker "1@netns:$NS")
S=(--state-file "$tmp/krepd.state" --socket "$tmp/krepd.sock")

ktap_plan 56

# --- command lines ---------------------------------------------------------

help "$D"
help "$K" elect
out=$("$D" --help)
[[ $out == *--controller* && $out == *"broker ID netns NAME"* ]]
ok $? "krepd --help documents --controller and the config file"
out=$("$K" help 2>/dev/null)
[[ $out == *"  elect "* ]]
ok $? "krepctl help lists elect"

usage "--broker needs --controller" "$D" --broker 1@local
usage "--config needs --controller" "$D" --config /nonexistent
usage "--once is not a controller option" "$D" --controller --once "${B[@]}"
usage "--metrics '127.0.0.1:0': port 0" "$D" --controller --metrics 127.0.0.1:0 "${B[@]}"
usage "no brokers" "$D" --controller
usage "'x' is not a broker id" "$D" --controller --broker x@local
usage "expected ID@local, ID@netns:NAME" "$D" --controller --broker 1@bogus
usage "broker 1 given twice" "$D" --controller "${B[@]}" --broker 1@local
usage "poll-ms: 5 is not in 10..60000" "$D" --controller "${B[@]}" --poll-ms 5
usage "at least 2 x poll-ms" "$D" --controller "${B[@]}" --poll-ms 1000 --session-timeout-ms 1500
usage "needs a value" "$D" --controller --state-file
usage "cannot open /nonexistent/krepd.conf" "$D" --controller --config /nonexistent/krepd.conf

cat >"$tmp/bad.conf" <<EOF
# a config with two bad lines
broker 1 netns b1
broker 2 carrier-pigeon
poll-ms 100
poll-ms often
EOF
err=$("$D" --controller --config "$tmp/bad.conf" 2>&1 >/dev/null)
rc=$?
[ $rc = 2 ] && [[ $err == *"bad.conf:3: broker 2: unknown kind 'carrier-pigeon'"* ]] &&
	[[ $err == *"bad.conf:5: poll-ms given twice"* ]] && [[ $err != *Usage:* ]]
ok $? "krepd --config: every bad line is reported as FILE:LINE: reason, exit 2"
[ $rc = 2 ] || ktap_diag "exit $rc: $err"

usage "give --preferred, --status or --brokers" "$K" elect
usage "give one of --preferred, --status and --brokers" "$K" elect --status --preferred
usage "unexpected argument 'orders'" "$K" elect --status orders
usage "partition 'x' is not a number" "$K" elect --preferred orders x
usage "unexpected argument 'y'" "$K" elect --preferred orders 1 y
usage "unknown option '--bogus'" "$K" elect --status --bogus
usage "needs a value" "$K" elect --status --socket
usage "drop --netns" "$K" --netns b1 elect --status
usage "option '--socket' needs a value" "$K" topic create t --socket
usage "empty --socket" "$K" topic delete t --socket=
usage "drop --netns" "$K" --netns b1 topic create t --controller

# --- the control socket, with no broker to reach ----------------------------

err=$("$K" elect --status --socket "$tmp/none.sock" 2>&1)
rc=$?
[ $rc = 1 ] && [[ $err == *"cannot ask krepd"*"is krepd --controller running?"* ]]
ok $? "krepctl elect without a krepd: exit 1, says why"

listening() { # the socket is there, or krepd is gone
	[ -S "$tmp/krepd.sock" ] || ! kill -0 "$pid" 2>/dev/null
}

M=()	# --metrics ADDR, or nothing
start() { # SESSION_TIMEOUT_MS: start krepd --controller in the background; waits for its socket
	"$D" --controller --foreground "${B[@]}" "${S[@]}" --poll-ms 50 \
		--session-timeout-ms "$1" "${M[@]}" >>"$tmp/krepd.out" 2>&1 &
	pid=$!
	krep_wait_for 30 listening && [ -S "$tmp/krepd.sock" ]
}

brokers() { # elect --brokers into $out, its status into $rc
	out=$("$K" elect --brokers --socket "$tmp/krepd.sock" 2>&1)
	rc=$?
}

fenced() { # broker 1 is fenced
	brokers
	[ $rc = 0 ] && [[ $out == *'{"id":1,"reachable":false,"fenced":true,'* ]]
}

# --metrics ADDR: the scrapes' bodies go to $tmp/metrics
MADDR=127.0.0.1:$(free_port)
M=(--metrics "$MADDR")
metrics() { scrape_body "$MADDR" "$tmp/metrics"; }
has() { # LINE...: the last scrape has every LINE
	local l

	for l; do
		grep -qxF -- "$l" "$tmp/metrics" || return 1
	done
}
scraped() { metrics && has "$@"; }	# LINE...: scrape until they are there

start 300
ok $? "krepd --controller starts with an unreachable broker and listens"
# the session timeout (300 ms) passes, and broker 1 is fenced
krep_wait_for 30 fenced
krep_wait_for 10 scraped "krep_controller_fenced_brokers 1" &&
	has "krep_controller_active 1" "krep_controller_epoch 1" \
		"krep_controller_fencings_total 1" "krep_controller_brokers 1" \
		"krep_controller_unreachable_brokers 1" "krep_up 0" &&
	"$here/test_metrics" --check "$tmp/metrics"
rc=$?
ok $rc "krepd --controller --metrics: active 1, epoch 1, broker 1 fenced (gauge and counter), the broker's krep_up 0, by the text format's rules"
[ $rc = 0 ] || { [ -s "$tmp/metrics" ] && ktap_diag_stdin <"$tmp/metrics"; }
[ $rc = 0 ] && [[ $(head -n 1 <<<"$out") == '{"controller_epoch":1,"owner":"'* ]] &&
	[[ $out == *'{"id":1,"reachable":false,"fenced":true,"claimed":false,"incarnation":null}'* ]]
ok $? "elect --brokers: epoch 1, broker 1 unreachable and fenced after the session timeout"
[ $rc = 0 ] || ktap_diag "exit $rc: $out"
out=$("$K" elect --status --socket "$tmp/krepd.sock")
rc=$?
[ $rc = 0 ] && [ -z "$out" ]
ok $? "elect --status: no partitions known, exit 0"
out=$("$K" elect --preferred --socket "$tmp/krepd.sock")
rc=$?
[ $rc = 0 ] && [ -z "$out" ]
ok $? "elect --preferred on no partitions: nothing to do, exit 0"
err=$("$K" elect --preferred orders 0 --socket "$tmp/krepd.sock" 2>&1)
rc=$?
[ $rc = 1 ] && [[ $err == *"krepd: UNKNOWN_TOPIC_OR_PARTITION: unknown topic or partition"* ]]
ok $? "elect --preferred on an unknown topic: exit 1, krepd says why"
err=$("$K" topic create orders partitions 3 rf 1 --socket "$tmp/krepd.sock" 2>&1)
rc=$?
[ $rc = 1 ] && [[ $err == *"krepd: INVALID_REPLICATION_FACTOR: replication factor larger than the number of live brokers"* ]]
ok $? "topic create --controller with every broker fenced: exit 1, INVALID_REPLICATION_FACTOR"
err=$("$K" topic create "bad/name" --socket "$tmp/krepd.sock" 2>&1)
rc=$?
[ $rc = 1 ] && [[ $err == *"krepd: INVALID_TOPIC_EXCEPTION: a topic name holds only [a-zA-Z0-9._-]"* ]]
ok $? "topic create --controller with a bad name: exit 1, INVALID_TOPIC_EXCEPTION"
err=$("$K" topic create t partitions 2000 --socket "$tmp/krepd.sock" 2>&1)
rc=$?
[ $rc = 1 ] && [[ $err == *"krepd: INVALID_PARTITIONS: partitions must be 1..1024"* ]]
ok $? "topic create --controller with 2000 partitions: exit 1, INVALID_PARTITIONS"
err=$("$K" topic create t config min_insync_replicas=0 --socket "$tmp/krepd.sock" 2>&1)
rc=$?
[ $rc = 1 ] && [ "$err" = "krepctl: Invalid argument: topic create: min_insync_replicas must be 1..65, not 0 [INVALID_CONFIG]" ]
ok $? "topic create --controller with min_insync_replicas=0: krepctl refuses it, exit 1, INVALID_CONFIG"
# krepd itself, asked by another client: it would keep a topic no broker takes
out=$(python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"topic-create t 1 1 max_message_bytes=10\n")
print(s.makefile().read(), end="")' "$tmp/krepd.sock" 2>&1)
[ "$out" = "error INVALID_CONFIG: max_message_bytes must be 64..1048588, not 10" ]
ok $? "krepd's topic-create with max_message_bytes=10: error INVALID_CONFIG with the range"
err=$("$K" topic delete nosuch --controller --socket "$tmp/krepd.sock" 2>&1)
rc=$?
[ $rc = 1 ] && [[ $err == *"krepd: UNKNOWN_TOPIC_OR_PARTITION: no such topic"* ]]
ok $? "topic delete --controller of an unknown topic: exit 1, UNKNOWN_TOPIC_OR_PARTITION"
err=$("$K" topic create t --socket "$tmp/nosuch.sock" 2>&1)
rc=$?
[ $rc = 1 ] && [[ $err == *"cannot ask krepd at $tmp/nosuch.sock"* ]]
ok $? "topic create --controller without a krepd: exit 1, says why"

err=$("$D" --controller --foreground "${B[@]}" "${S[@]}" 2>&1)
rc=$?
[ $rc = 1 ] && [[ $err == *"krepd.state.lock is locked: another krepd --controller"* ]]
ok $? "a second controller on the same state file: exit 1"
err=$("$D" --controller --foreground "${B[@]}" --state-file "$tmp/other.state" \
	--socket "$tmp/krepd.sock" 2>&1)
rc=$?
[ $rc = 1 ] && [[ $err == *"another krepd --controller listens there"* ]]
ok $? "a second controller on the same socket: exit 1"

kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
[ $rc = 0 ] && [ ! -e "$tmp/krepd.sock" ] &&
	grep -qx "controller-epoch 1" "$tmp/krepd.state" &&
	grep -qx "broker 1 incarnation - fenced 1" "$tmp/krepd.state"
ok $? "SIGTERM: exit 0, socket removed, state written (epoch 1, broker 1 fenced)"
[ $rc = 0 ] || ktap_diag_stdin <"$tmp/krepd.out"

# a partition for the view SIGUSR1 logs (one line per partition; krepd
# knows none so far)
cat >>"$tmp/krepd.state" <<EOF
topic v min-isr 1 unclean 0 partitions 1 rf 1 config - held -
partition v 0 leader none leader-epoch 0 partition-epoch 0 replicas 1 isr 1 elr -
topic w min-isr 2 unclean 0 partitions 1 rf 2 config min_insync_replicas=2 held -
partition w 0 leader none leader-epoch 0 partition-epoch 0 replicas 1,2 isr 1 elr -
EOF
# a session timeout this long fences no broker before the checks: fenced
# can only come from the state file
M=()
start 600000
brokers
[ $rc = 0 ] && [[ $out == '{"controller_epoch":2,'* ]] &&
	[[ $out == *'{"id":1,"reachable":false,"fenced":true,'* ]]
ok $? "restarted: controller epoch 2 (the state file's + 1), broker 1 still fenced"
[ $rc = 0 ] || ktap_diag "exit $rc: $out"

# topic describe --controller: the cluster as krepd sees it, filtered
wv="v 0 leader=- epoch=0 partition_epoch=0 replicas=1 isr=1 min_isr=1 elr=- offline=1"
ww="w 0 leader=- epoch=0 partition_epoch=0 replicas=1,2 isr=1 min_isr=2 elr=- offline=1"
want="$wv
$ww"
out=$("$K" topic describe --socket "$tmp/krepd.sock" 2>&1)
[ "$out" = "$want" ]
ok $? "topic describe --controller: every partition, as krepd sees it, min_isr included"
[ "$out" = "$want" ] || ktap_diag "got: $out"
out=$("$K" topic describe v --unavailable --socket "$tmp/krepd.sock" 2>&1)/$("$K" topic describe --under-replicated --socket "$tmp/krepd.sock" 2>&1)/$("$K" topic describe nosuch --socket "$tmp/krepd.sock" 2>&1)
[ "$out" = "$wv/$ww/" ]
ok $? "topic describe --controller --unavailable, --under-replicated, another topic"
[ "$out" = "$wv/$ww/" ] || ktap_diag "got: $out"
out=$("$K" --json topic describe v --socket "$tmp/krepd.sock" 2>&1)
jwant='[{"topic":"v","partition":0,"leader":null,"leader_epoch":0,"partition_epoch":0,"replicas":[1],"isr":[1],"min_isr":1,"elr":[],"offline":true}]'
[ "$out" = "$jwant" ]
ok $? "topic describe --controller --json: krepd's objects in an array"
[ "$out" = "$jwant" ] || ktap_diag "got: $out"
# min ISR: v's ISR (1) is at min(min_isr 1, replicas 1); w's (1) is
# under min(min_isr 2, replicas 2)
out=$("$K" topic describe --at-min-isr --socket "$tmp/krepd.sock" 2>&1)/$("$K" topic describe --under-min-isr --socket "$tmp/krepd.sock" 2>&1)/$("$K" --json topic describe --under-min-isr --socket "$tmp/krepd.sock" 2>&1 | jq -c '[.[] | [.topic, .min_isr]]')
[ "$out" = "$wv/$ww/[[\"w\",2]]" ]
ok $? "topic describe --controller --at-min-isr, --under-min-isr: by krepd's min_isr (text and --json)"
[ "$out" = "$wv/$ww/[[\"w\",2]]" ] || ktap_diag "got: $out"

viewed() {
	grep -qF 'view {"topic":"v","partition":0,"leader":null,' "$tmp/krepd.out"
}
kill -USR1 "$pid"
krep_wait_for 30 viewed && kill -0 "$pid" 2>/dev/null
ok $? "SIGUSR1 logs the view and krepd goes on"
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
[ $rc = 0 ] && grep -qx "controller-epoch 2" "$tmp/krepd.state" &&
	grep -qx "partition v 0 leader none leader-epoch 0 partition-epoch 0 replicas 1 isr 1 elr -" "$tmp/krepd.state"
ok $? "SIGTERM again: exit 0, epoch 2 and the partition written"

# --metrics: elections move the counters. Brokers 1 and 3 live (never
# reached, but not fenced before a session timeout this long), 2 fenced
# in the state file: v and e had no leader and get one (from the ISR, from
# the ELR), u's leader 2 is fenced and only an unclean election finds one,
# o's is fenced with nobody to replace it (offline); p's leader moves to
# its preferred replica when krepctl elect --preferred asks.
cat >"$tmp/m.state" <<EOF
version 1
controller-epoch 3
broker 1 incarnation - fenced 0
broker 2 incarnation - fenced 1
broker 3 incarnation - fenced 0
topic v min-isr 1 unclean 0 partitions 1 rf 1 config - held -
partition v 0 leader none leader-epoch 0 partition-epoch 0 replicas 1 isr 1 elr -
topic e min-isr 2 unclean 0 partitions 1 rf 2 config - held -
partition e 0 leader none leader-epoch 1 partition-epoch 1 replicas 2,1 isr 2 elr 1
topic u min-isr 1 unclean 1 partitions 1 rf 2 config - held -
partition u 0 leader 2 leader-epoch 3 partition-epoch 3 replicas 2,1 isr 2 elr -
topic o min-isr 1 unclean 0 partitions 1 rf 1 config - held -
partition o 0 leader 2 leader-epoch 0 partition-epoch 0 replicas 2 isr 2 elr -
topic p min-isr 1 unclean 0 partitions 1 rf 2 config - held -
partition p 0 leader 3 leader-epoch 0 partition-epoch 0 replicas 1,3 isr 1,3 elr -
EOF
MADDR=127.0.0.1:$(free_port)
"$D" --controller --foreground --broker "1@netns:$NS-1" --broker "2@netns:$NS-2" \
	--broker "3@netns:$NS-3" --state-file "$tmp/m.state" --socket "$tmp/m.sock" \
	--poll-ms 50 --session-timeout-ms 600000 --preferred-interval-ms 0 \
	--metrics "$MADDR" >>"$tmp/m.out" 2>&1 &
pid=$!
reason() { echo "krep_controller_elections_total{reason=\"$1\"} $2"; }
krep_wait_for 30 scraped "krep_controller_active 1" &&
	has "krep_controller_epoch 4" "$(reason offline 2)" \
		"$(reason leader_fenced 1)" "$(reason leader_left_isr 0)" \
		"$(reason leader_restarted 0)" "$(reason replica_lost 0)" \
		"$(reason preferred 0)" "$(reason leader_offline 0)" \
		"krep_controller_elr_elections_total 1" \
		"krep_controller_unclean_elections_total 1" \
		"krep_controller_partitions_offlined_total 1" \
		"krep_controller_fencings_total 0" \
		"krep_controller_fenced_brokers 1" "krep_controller_brokers 3" \
		"krep_controller_partitions 5" \
		"krep_controller_offline_partitions 1" \
		"krep_controller_under_min_isr_partitions 1" &&
	"$here/test_metrics" --check "$tmp/metrics"
rc=$?
ok $rc "--metrics: elections by reason (2 of leaderless partitions, 1 of a fenced leader), 1 from the ELR, 1 unclean, 1 partition offline, broker 2 fenced"
[ $rc = 0 ] || { ktap_diag_stdin <"$tmp/metrics"; ktap_diag_stdin <"$tmp/m.out"; }
out=$("$K" elect --preferred p 0 --socket "$tmp/m.sock" 2>&1)
rc=$?
[ $rc = 0 ] && krep_wait_for 10 scraped "$(reason preferred 1)" &&
	has "$(reason offline 2)" "krep_controller_offline_partitions 1" &&
	"$here/test_metrics" --check "$tmp/metrics"
ok $? "--metrics: krepctl elect --preferred p 0 moves reason=\"preferred\" to 1"
[ $rc = 0 ] || ktap_diag "exit $rc: $out"
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
[ $rc = 0 ] && ! scrape "$MADDR" >/dev/null 2>&1
ok $? "--metrics: SIGTERM: exit 0, the endpoint closed"

echo "broker 1 netns x" >"$tmp/corrupt.state"
err=$("$D" --controller --foreground "${B[@]}" --state-file "$tmp/corrupt.state" \
	--socket "$tmp/c.sock" 2>&1)
rc=$?
[ $rc = 1 ] && [[ $err == *"corrupt.state:1: the first statement must be 'version 1'"* ]]
ok $? "a corrupt state file: krepd refuses to start (exit 1, file:line)"

ktap_finish
