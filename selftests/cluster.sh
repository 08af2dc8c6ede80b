# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# cluster.sh - three brokers in three network namespaces, for the suites
# that need a cluster. Source it after lib.sh:
#
#   cluster_up CLUSTER       create namespaces B1 B2 B3 (their names in $B1
#                            $B2 $B3) and BR (a bridge krbr), a veth kr0 in
#                            each broker with $NET.N/24, and configure broker
#                            N (id N, listen $NET.N:$PORT, the other two as
#                            peers); the module must be loaded. False on
#                            failure.
#   cluster_topic ARGS...    krepctl topic create ARGS on every broker
#   cluster_peers_up         true when every broker's peers are all up
#   bns N                    the namespace name of broker N
#   link_down N, link_up N   take broker N's kr0 down or up: its TCP
#                            connections stall as on a cut cable
#   cluster_topic_on N ARGS...  krepctl topic create ARGS on broker N
#   cluster_broker_recreate N CLUSTER [ARGS...]  broker N loses its
#                            namespace and every log in memory, and comes
#                            back empty (ARGS: more of `broker set`, such
#                            as `log-dir DIR` to recover from)
#   cluster_log_dirs DIR     broker N gets the log directory DIR/cN
#                            (made if need be); before any topic
#   cluster_krepd DIR        krepd --controller over the three brokers'
#                            namespaces (polls every 250 ms, session
#                            timeout 3 s), its socket DIR/krepd.sock (also
#                            in $SOCK), state and log in DIR; its pid in
#                            $KREPD_PID, killed at cleanup
#   kc NS ARGS...            krepctl --netns NS ARGS
#   describe NS [TOPIC]      krepctl --json topic describe
#   part NS TOPIC P          one partition of describe, compact JSON
#
# NET and PORT may be set before sourcing; with KAFKA_PORT set, broker N
# also serves Kafka clients on $NET.N:$KAFKA_PORT. With CLUSTER_BROKERS
# set (say "1"), cluster_up configures only those brokers: the other
# namespaces get their address and no broker, for scripted peers.

: "${NET:=10.201.0}"
: "${PORT:=9092}"

kc() {
	local ns=$1
	shift
	"$KREPCTL" --netns "$ns" "$@"
}

describe() {
	"$KREPCTL" --netns "$1" --json topic describe ${2:+"$2"}
}

part() {
	describe "$1" "$2" | jq -c --argjson p "$3" '.[] | select(.partition == $p)'
}

bns() {
	local v=B$1
	echo "${!v}"
}

link_down() { ip -n "$(bns "$1")" link set kr0 down; }
link_up() { ip -n "$(bns "$1")" link set kr0 up; }

cluster_up() {
	local cluster=$1 i j n v peers ns

	modprobe veth 2>/dev/null
	modprobe bridge 2>/dev/null
	for n in B1 B2 B3 BR; do
		krep_netns_add "$n" "${n,,}" || return 1
	done
	for i in 1 2 3; do
		v=B$i
		echo "link add kr0 netns ${!v} type veth peer name p$i netns $BR"
	done | ip -b - || return 1
	printf '%s\n' "link add krbr type bridge" "link set krbr up" \
		"link set p1 master krbr up" "link set p2 master krbr up" \
		"link set p3 master krbr up" | ip -n "$BR" -b - || return 1
	for i in 1 2 3; do
		ns=$(bns "$i")
		printf '%s\n' "link set lo up" "addr add $NET.$i/24 dev kr0" \
			"link set kr0 up" | ip -n "$ns" -b - || return 1
		[[ " ${CLUSTER_BROKERS:-1 2 3} " == *" $i "* ]] || continue
		peers=
		for j in 1 2 3; do
			[ "$j" = "$i" ] || peers+="${peers:+,}$j@$NET.$j:$PORT"
		done
		kc "$ns" broker set id "$i" cluster "$cluster" \
			listen "$NET.$i:$PORT" peers "$peers" \
			${KAFKA_PORT:+kafka-listen "$NET.$i:$KAFKA_PORT"} \
			>/dev/null || return 1
	done
}

cluster_topic() {
	local i

	for i in 1 2 3; do
		kc "$(bns "$i")" topic create "$@" >/dev/null || return 1
	done
}

cluster_peers_up() {
	local i

	for i in 1 2 3; do
		kc "$(bns "$i")" --json broker show |
			jq -e 'all(.peers[]; .state == "up")' >/dev/null || return 1
	done
}

# cluster_topic_on N ARGS...: krepctl topic create ARGS on broker N only
cluster_topic_on() {
	local n=$1
	shift
	kc "$(bns "$n")" topic create "$@" >/dev/null
}

cluster_log_dirs() {
	local i

	for i in 1 2 3; do
		mkdir -p "$1/c$i" &&
			kc "$(bns "$i")" broker set log-dir "$1/c$i" >/dev/null ||
			return 1
	done
}

cluster_krepd() {
	SOCK=$1/krepd.sock
	"$KREPD" --controller --foreground --session-timeout-ms 3000 \
		--poll-ms 250 --preferred-interval-ms 0 \
		--state-file "$1/krepd.state" --socket "$SOCK" \
		--broker "1@netns:$B1" --broker "2@netns:$B2" \
		--broker "3@netns:$B3" >"$1/krepd.log" 2>&1 &
	KREPD_PID=$!
	krep_cleanup_push "kill $KREPD_PID 2>/dev/null; wait $KREPD_PID 2>/dev/null"
}

# cluster_broker_recreate N CLUSTER [ARGS...]: broker N loses its namespace
# (and every log in memory) and comes back as a new, empty broker with the
# same name, address and configuration, and ARGS given to its `broker
# set` too. Waits until the old namespace is really gone, which
# needs every socket in it closed (krepd closes its session when the name
# points elsewhere).
cluster_broker_recreate() {
	local n=$1 cluster=$2 ns j peers i

	shift 2
	ns=$(bns "$n")
	ip netns del "$ns" || return 1
	for ((i = 0; i < 200; i++)); do
		ip -n "$BR" link show "p$n" >/dev/null 2>&1 || break
		sleep 0.1
	done
	ip -n "$BR" link show "p$n" >/dev/null 2>&1 && return 1
	ip netns add "$ns" || return 1
	ip link add kr0 netns "$ns" type veth peer name "p$n" netns "$BR" ||
		return 1
	ip -n "$BR" link set "p$n" master krbr up || return 1
	printf '%s\n' "link set lo up" "addr add $NET.$n/24 dev kr0" \
		"link set kr0 up" | ip -n "$ns" -b - || return 1
	peers=
	for j in 1 2 3; do
		[ "$j" = "$n" ] || peers+="${peers:+,}$j@$NET.$j:$PORT"
	done
	kc "$ns" broker set id "$n" cluster "$cluster" \
		listen "$NET.$n:$PORT" peers "$peers" "$@" >/dev/null
}
