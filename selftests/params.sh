#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# params.sh - krep.ko's module parameters (kmod/param.c).
#
#   initial netns
#   +------------------------------------------------------+
#   |  insmod krep.ko broker_id= cluster_id= listen=       |
#   |                 peers= topics=                       |
#   |  good values:  loads, `krepctl --json broker show`   |
#   |                shows them                            |
#   |  bad values:   insmod fails, one "krep: bad ..."     |
#   |                line in dmesg, module not loaded      |
#   +------------------------------------------------------+
#
# Each good set of values must load and show up in the initial namespace's
# broker; each bad one must make insmod fail, leave exactly the one
# documented line in the kernel log and leave the module unloaded.
# Topics are read back with `krepctl --json topic list`.
# Prints KTAP; leaves the module unloaded.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=selftests/lib.sh
. "$here/lib.sh"

krep_require_vm
krep_require_cmd jq

krep_cleanup_push krep_mod_unload

# ---------------------------------------------------------------------
# helpers

# repeat CHAR N: N copies of CHAR
repeat() {
	local s
	printf -v s '%*s' "$2" ''
	printf '%s' "${s// /$1}"
}

# peer_list N: "1@10.0.0.1:1,...,N@10.0.0.N:1", short enough for 65 peers
# to stay within the kernel's 1024 characters for a string parameter
peer_list() {
	local i s=
	for ((i = 1; i <= $1; i++)); do
		s+="${s:+,}$i@10.0.0.$i:1"
	done
	printf '%s' "$s"
}

# peer_json N: the JSON array krepctl shows for peer_list N, without states
peer_json() {
	local i s=
	for ((i = 1; i <= $1; i++)); do
		s+="${s:+,}{\"id\":$i,\"addr\":\"10.0.0.$i:1\"}"
	done
	printf '[%s]' "$s"
}

# mark the kernel log; klog prints what was logged since, without times
nmark=0
log_mark() {
	nmark=$((nmark + 1))
	krep_kmsg_mark "params-$$-$nmark"
}

klog() {
	dmesg | awk -v m="krep-selftests: mark params-$$-$nmark" '
		found { sub(/^\[ *[0-9]+\.[0-9]+\] /, ""); print }
		index($0, m) && substr($0, index($0, m) + length(m)) == "" { found = 1 }'
}

# the krep lines logged since log_mark, except the taint notes of the first
# load of an unsigned out-of-tree module
krep_log() {
	klog | grep '^krep: ' |
		grep -v -e 'taints kernel' -e 'module verification failed'
}

# what a good load may log besides "loaded" and "unloaded": the listener
# and peer connections are runtime matters, not parameter errors
krep_log_unexpected() {
	krep_log | grep -v -e '^krep: loaded' -e '^krep: unloaded' \
		-e '^krep: cannot listen on ' -e '^krep: connection '
}

# JSON of `krepctl --json broker show` without the generation and the peer
# states, which follow the connections (null if a state is not valid)
NORMALIZE='del(.generation) | .peers |= map(if (.state | IN("configured",
	"connecting", "up", "down")) then del(.state) else null end)'

# good DESC JSON PARAM...: loads with PARAM..., and the broker shows JSON
# (compared as JSON values, normalized with $NORMALIZE)
good() {
	local desc=$1 want=$2 out got errs
	shift 2

	log_mark
	if ! out=$(insmod "$KREP_KO" "$@" 2>&1); then
		ktap_diag "insmod $*: $out"
		krep_log | ktap_diag_stdin
		ktap_fail "good: $desc"
		return
	fi
	got=$("$KREPCTL" --json broker show 2>&1)
	rmmod krep
	errs=$(krep_log_unexpected)
	if [ -n "$errs" ]; then
		ktap_diag "unexpected kernel log: $errs"
		ktap_fail "good: $desc"
	elif ! jq -e --argjson want "$want" "$NORMALIZE | . == \$want" \
		>/dev/null 2>&1 <<<"$got"; then
		ktap_diag "insmod $*"
		ktap_diag "want: $want"
		ktap_diag "got:  $got"
		ktap_fail "good: $desc"
	else
		ktap_ok "good: $desc"
	fi
}

# topics DESC CHECK PARAM...: loads with PARAM..., and the jq expression
# CHECK holds for `krepctl --json topic list` (t(NAME) is the topic NAME)
topics() {
	local desc=$1 check=$2 out got errs
	shift 2

	log_mark
	if ! out=$(insmod "$KREP_KO" "$@" 2>&1); then
		ktap_diag "insmod $*: $out"
		krep_log | ktap_diag_stdin
		ktap_fail "good: $desc"
		return
	fi
	got=$("$KREPCTL" --json topic list 2>&1)
	rmmod krep
	errs=$(krep_log_unexpected)
	if [ -n "$errs" ]; then
		ktap_diag "unexpected kernel log: $errs"
		ktap_fail "good: $desc"
	elif ! jq -e "def t(\$n): first(.[] | select(.topic == \$n)); $check" \
		>/dev/null 2>&1 <<<"$got"; then
		ktap_diag "insmod $*"
		ktap_diag "want: $check"
		ktap_diag "got:  $got"
		ktap_fail "good: $desc"
	else
		ktap_ok "good: $desc"
	fi
}

# bad DESC LINE PARAM...: insmod with PARAM... fails, the kernel logs
# exactly "krep: LINE", and the module is not loaded
bad() {
	local desc=$1 want="krep: $2" got
	shift 2

	log_mark
	if insmod "$KREP_KO" "$@" 2>/dev/null; then
		rmmod krep
		ktap_diag "insmod $* succeeded"
		ktap_fail "bad: $desc"
		return
	fi
	got=$(krep_log)
	if krep_mod_loaded; then
		ktap_diag "module loaded after a failed insmod"
		ktap_fail "bad: $desc"
	elif [ "$got" != "$want" ]; then
		ktap_diag "insmod $*"
		ktap_diag "want: $want"
		ktap_diag_stdin <<<"got:  $got"
		ktap_fail "bad: $desc"
	else
		ktap_ok "bad: $desc"
	fi
}

# ---------------------------------------------------------------------
# the cases

CID64=$(repeat c 64)
CID65=$(repeat c 65)
T249=$(repeat t 249)
T250=$(repeat t 250)
P64=$(peer_list 64)
P65=$(peer_list 65)
PEER2='{"id":2,"addr":"10.0.0.2:9092"}'
PEER3='{"id":3,"addr":"[fd00::3]:9092"}'
NONE='{"broker_id":null,"cluster_id":null,"listen":null,"peers":[]}'

ktap_plan 72

krep_mod_unload

# good values
good "no parameters" "$NONE"
good "empty values mean unset" "$NONE" broker_id=-1 cluster_id= listen= \
	peers= topics=
good "broker_id=0" \
	'{"broker_id":0,"cluster_id":null,"listen":null,"peers":[]}' broker_id=0
good "broker_id=2147483647" \
	'{"broker_id":2147483647,"cluster_id":null,"listen":null,"peers":[]}' \
	broker_id=2147483647
good "cluster_id" \
	'{"broker_id":null,"cluster_id":"prod-1_A","listen":null,"peers":[]}' \
	cluster_id=prod-1_A
good "cluster_id of 64 characters" \
	"{\"broker_id\":null,\"cluster_id\":\"$CID64\",\"listen\":null,\"peers\":[]}" \
	cluster_id="$CID64"
good "listen IPv4" \
	'{"broker_id":null,"cluster_id":null,"listen":"127.0.0.1:9092","peers":[]}' \
	listen=127.0.0.1:9092
good "listen IPv6, not a local address" \
	'{"broker_id":null,"cluster_id":null,"listen":"[fd00::1]:65535","peers":[]}' \
	'listen=[fd00::1]:65535'
good "listen IPv6 loopback, port 1" \
	'{"broker_id":null,"cluster_id":null,"listen":"[::1]:1","peers":[]}' \
	'listen=[::1]:1'
good "peers, IPv4 and IPv6" \
	"{\"broker_id\":1,\"cluster_id\":null,\"listen\":null,\"peers\":[$PEER2,$PEER3]}" \
	broker_id=1 'peers=2@10.0.0.2:9092,3@[fd00::3]:9092'
good "64 peers" \
	"{\"broker_id\":0,\"cluster_id\":null,\"listen\":null,\"peers\":$(peer_json 64)}" \
	broker_id=0 peers="$P64"
good "the example of kmod/param.c" \
	"{\"broker_id\":1,\"cluster_id\":\"prod\",\"listen\":\"10.0.0.1:9092\",\"peers\":[$PEER2,$PEER3]}" \
	broker_id=1 cluster_id=prod listen=10.0.0.1:9092 \
	'peers=2@10.0.0.2:9092,3@[fd00::3]:9092' \
	topics=orders:3:3:min_insync_replicas=2,audit:1:1
good "topics with a single broker" \
	'{"broker_id":4,"cluster_id":null,"listen":null,"peers":[]}' \
	broker_id=4 topics=t:1:1
topics "topics of the example, with a default and a given config" \
	'length == 2 and
	 (t("orders") | .partitions == 3 and .replication_factor == 3 and
		.config.min_insync_replicas == 2) and
	 (t("audit") | .partitions == 1 and .replication_factor == 1 and
		.config.min_insync_replicas == 1)' \
	broker_id=1 'peers=2@10.0.0.2:9092,3@[fd00::3]:9092' \
	topics=orders:3:3:min_insync_replicas=2,audit:1:1
topics "topics: every config key at its lowest" \
	'length == 1 and t("t").config == {"min_insync_replicas": 1,
	 "replica_lag_time_max_ms": 10, "segment_bytes": 4096,
	 "retention_bytes": -1, "max_message_bytes": 64,
	 "unclean_leader_election": 0}' \
	broker_id=1 \
	topics=t:1:1:min_insync_replicas=1:replica_lag_time_max_ms=10:segment_bytes=4096:retention_bytes=-1:max_message_bytes=64:unclean_leader_election=0
topics "topics: every config key at its highest" \
	'length == 1 and t("t").config == {"min_insync_replicas": 65,
	 "replica_lag_time_max_ms": 3600000, "segment_bytes": 1073741824,
	 "retention_bytes": 9223372036854775807, "max_message_bytes": 1048588,
	 "unclean_leader_election": 1}' \
	broker_id=1 \
	topics=t:1:1:min_insync_replicas=65:replica_lag_time_max_ms=3600000:segment_bytes=1073741824:retention_bytes=9223372036854775807:max_message_bytes=1048588:unclean_leader_election=1
topics "topics: names of [a-zA-Z0-9._-], 249 characters" \
	"length == 3 and t(\"a.b_c-D9\") and t(\"...\") and t(\"$T249\")" \
	broker_id=1 topics="a.b_c-D9:1:1,...:1:1,$T249:1:1"
topics "topics: 1024 partitions" \
	'length == 1 and t("wide").partitions == 1024' \
	broker_id=1 topics=wide:1024:1
topics "topics: replication factor 65" \
	'length == 1 and t("tall").replication_factor == 65' \
	broker_id=0 peers="$P64" topics=tall:1:65
topics "topics: replication factor = number of brokers" \
	'[.[] | [.topic, .partitions, .replication_factor]] | sort ==
	 [["a", 2, 3], ["b", 1, 2], ["c", 5, 1]]' \
	broker_id=9 'peers=2@10.0.0.2:9092,3@[fd00::3]:9092' \
	topics=a:2:3,b:1:2,c:5:1
good "log_memory_max at its lowest" "$NONE" log_memory_max=1048576

# bad log_memory_max
bad "log_memory_max below 1 MiB" \
	"bad log_memory_max 1048575: must be at least 1048576" \
	log_memory_max=1048575

# bad broker_id
bad "broker_id=-2" "bad broker_id -2: must be 0..2147483647" broker_id=-2
bad "broker_id=-2147483648" \
	"bad broker_id -2147483648: must be 0..2147483647" broker_id=-2147483648
bad "broker_id=2147483648 (not an int)" \
	"\`2147483648' invalid for parameter \`broker_id'" broker_id=2147483648
bad "broker_id=abc" "\`abc' invalid for parameter \`broker_id'" broker_id=abc

# bad cluster_id
bad "cluster_id with '.'" \
	"bad cluster_id 'a.b': cluster id has a character outside [A-Za-z0-9_-]" \
	cluster_id=a.b
bad "cluster_id with a space" \
	"bad cluster_id 'a b': cluster id has a character outside [A-Za-z0-9_-]" \
	'cluster_id="a b"'
bad "cluster_id of 65 characters" \
	"bad cluster_id '$CID65': cluster id must have 1 to 64 characters" \
	cluster_id="$CID65"

# bad listen
bad "listen without port" \
	"bad listen '10.0.0.1': expected ADDR:PORT" listen=10.0.0.1
bad "listen with an empty port" \
	"bad listen '10.0.0.1:': port must be 1..65535" listen=10.0.0.1:
bad "listen port 0" \
	"bad listen '10.0.0.1:0': port must be 1..65535" listen=10.0.0.1:0
bad "listen port 65536" \
	"bad listen '10.0.0.1:65536': port must be 1..65535" listen=10.0.0.1:65536
bad "listen port not a number" \
	"bad listen '10.0.0.1:http': port must be 1..65535" listen=10.0.0.1:http
bad "listen host name" \
	"bad listen 'localhost:9092': bad IPv4 address (host names are not resolved)" \
	listen=localhost:9092
bad "listen IPv4 out of range" \
	"bad listen '10.0.0.256:9092': bad IPv4 address (host names are not resolved)" \
	listen=10.0.0.256:9092
bad "listen bad IPv6" \
	"bad listen '[fd00::zz]:9092': bad IPv6 address (expected [ADDR6]:PORT)" \
	'listen=[fd00::zz]:9092'
bad "listen IPv6 without ']'" \
	"bad listen '[fd00::1:9092': bad IPv6 address (expected [ADDR6]:PORT)" \
	'listen=[fd00::1:9092'
bad "listen IPv6 without brackets" \
	"bad listen 'fd00::1:9092': bad IPv4 address (host names are not resolved)" \
	listen=fd00::1:9092
bad "listen empty brackets" \
	"bad listen '[]:9092': bad IPv6 address (expected [ADDR6]:PORT)" \
	'listen=[]:9092'

# bad peers
bad "peer without '@'" \
	"bad peers entry '2-10.0.0.2:9092': expected ID@ADDR:PORT" \
	broker_id=1 peers=2-10.0.0.2:9092
bad "peer id not a number" \
	"bad peers entry 'x@10.0.0.2:9092': peer id must be 0..2147483647" \
	broker_id=1 peers=x@10.0.0.2:9092
bad "peer id 2147483648" \
	"bad peers entry '2147483648@10.0.0.2:9092': peer id must be 0..2147483647" \
	broker_id=1 peers=2147483648@10.0.0.2:9092
bad "peer id empty" \
	"bad peers entry '@10.0.0.2:9092': peer id must be 0..2147483647" \
	broker_id=1 peers=@10.0.0.2:9092
bad "peer without port" \
	"bad peers entry '2@10.0.0.2': expected ADDR:PORT" \
	broker_id=1 peers=2@10.0.0.2
bad "peer port 0" \
	"bad peers entry '3@[fd00::3]:0': port must be 1..65535" \
	broker_id=1 'peers=2@10.0.0.2:9092,3@[fd00::3]:0'
bad "peer host name" \
	"bad peers entry '2@broker2:9092': bad IPv4 address (host names are not resolved)" \
	broker_id=1 peers=2@broker2:9092
bad "peers with an empty entry" \
	"bad peers entry '': expected ID@ADDR:PORT" \
	broker_id=1 peers=2@10.0.0.2:9092,,3@10.0.0.3:9092
bad "duplicate peer ids" \
	"bad peers '2@10.0.0.2:9092,2@10.0.0.3:9092': duplicate peer id" \
	broker_id=1 peers=2@10.0.0.2:9092,2@10.0.0.3:9092
bad "peer id = broker_id" \
	"bad peers '2@10.0.0.2:9092,1@10.0.0.3:9092': peer id equals the broker's own id" \
	broker_id=1 peers=2@10.0.0.2:9092,1@10.0.0.3:9092
bad "peers without broker_id" \
	"bad peers '2@10.0.0.2:9092': peers need the broker's own id to be set" \
	peers=2@10.0.0.2:9092
bad "65 peers" "bad peers: more than 64 peers" broker_id=0 peers="$P65"

# the kernel refuses a string parameter of more than 1024 characters before
# the module sees it
log_mark
if insmod "$KREP_KO" broker_id=0 peers="$(repeat 1 1025)" 2>/dev/null; then
	rmmod krep
	ktap_fail "bad: peers longer than 1024 characters"
elif krep_mod_loaded || ! klog | grep -qx 'peers: string parameter too long'
then
	klog | cut -c1-200 | ktap_diag_stdin
	ktap_fail "bad: peers longer than 1024 characters"
else
	ktap_ok "bad: peers longer than 1024 characters"
fi

# bad topics
bad "topics without broker_id" "bad topics: topics need broker_id" topics=t:1:1
bad "topic name with '/'" \
	"bad topics entry 'a/b:1:1': topic name has a character outside [a-zA-Z0-9._-]" \
	broker_id=1 topics=a/b:1:1
bad "topic name '.'" \
	"bad topics entry '.:1:1': topic name cannot be '.' or '..'" \
	broker_id=1 topics=.:1:1
bad "topic name '..'" \
	"bad topics entry '..:1:1': topic name cannot be '.' or '..'" \
	broker_id=1 topics=..:1:1
bad "topic name of 250 characters" \
	"bad topics entry '$T250:1:1': topic name longer than 249 characters" \
	broker_id=1 topics="$T250:1:1"
bad "topic name empty" \
	"bad topics entry ':1:1': empty topic name" broker_id=1 topics=:1:1
bad "topic without replication factor" \
	"bad topics entry 't:1': expected NAME:PARTITIONS:RF" \
	broker_id=1 topics=t:1
bad "partitions 0" \
	"bad topics entry 't:0:1': partitions must be 1..1024" \
	broker_id=1 topics=t:0:1
bad "partitions 1025" \
	"bad topics entry 't:1025:1': partitions must be 1..1024" \
	broker_id=1 topics=t:1025:1
bad "replication factor 0" \
	"bad topics entry 't:1:0': replication factor must be at least 1" \
	broker_id=1 topics=t:1:0
bad "replication factor > number of brokers" \
	"bad topics entry 't:1:3': replication factor larger than the number of brokers" \
	broker_id=1 peers=2@10.0.0.2:9092 topics=t:1:3
bad "replication factor 2 with a single broker" \
	"bad topics entry 't:1:2': replication factor larger than the number of brokers" \
	broker_id=1 topics=t:1:2
bad "unknown config key" \
	"bad topics entry 't:1:1:cleanup_policy=1': unknown topic config key" \
	broker_id=1 topics=t:1:1:cleanup_policy=1
bad "config value below range" \
	"bad topics entry 't:1:1:min_insync_replicas=0': value out of range" \
	broker_id=1 topics=t:1:1:min_insync_replicas=0
bad "config value above range" \
	"bad topics entry 't:1:1:segment_bytes=1073741825': value out of range" \
	broker_id=1 topics=t:1:1:segment_bytes=1073741825
bad "config value not an integer" \
	"bad topics entry 't:1:1:segment_bytes=big': topic config value must be an integer" \
	broker_id=1 topics=t:1:1:segment_bytes=big
bad "config without '='" \
	"bad topics entry 't:1:1:segment_bytes': expected KEY=VALUE after the replication factor" \
	broker_id=1 topics=t:1:1:segment_bytes
bad "duplicate topic" "bad topics: topic 'a' given twice" \
	broker_id=1 topics=a:1:1,b:1:1,a:2:1

ktap_expect_fail "module not loaded at the end" krep_mod_loaded
ktap_finish
