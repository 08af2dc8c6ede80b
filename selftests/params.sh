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
krep_require_cmd jq python3

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

# Each case is one insmod, preceded by a mark in the kernel log. In an
# emulated VM that shares its host every process costs a good fraction of
# a second (jq and dmesg more), and an insmod, a dmesg and a jq for each
# of some eighty cases took most of the suite's time. So:
# - the module is loaded and unloaded by one python3 process for them
#   all (modcall, below), with the system calls insmod and rmmod make:
#   finit_module(2) with the parameters as insmod joins them, and
#   delete_module(2);
# - each case only records what it saw while the module was loaded:
#   C_FAIL, why it failed if it did, and the output of krepctl --json with
#   a jq expression that must hold for it (json_check);
# - at the end one dmesg is split at the marks (the lines after mark N, up
#   to the next, are case N's), one jq run evaluates every expression, and
#   the results come in the order of the cases.
tmp=$(mktemp -d)
krep_cleanup_push rm -rf "$tmp"

# modcall load PARAM... | modcall unload: true if the kernel said yes; else
# $modcall_err is its error (strerror)
coproc KMOD {
	exec python3 -u -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_finit_module, SYS_delete_module = 313, 176	# x86_64
for line in sys.stdin:
    cmd, _, params = line.rstrip("\n").partition(" ")
    if cmd == "load":
        fd = os.open(sys.argv[1], os.O_RDONLY | os.O_CLOEXEC)
        ret = libc.syscall(SYS_finit_module, fd, params.encode(), 0)
        err = ctypes.get_errno()
        os.close(fd)
    else:
        ret = libc.syscall(SYS_delete_module, b"krep", os.O_NONBLOCK)
        err = ctypes.get_errno()
    print("0" if ret == 0 else "1 " + os.strerror(err))
' "$KREP_KO"
}
krep_cleanup_push "kill $KMOD_PID 2>/dev/null"
modcall_err=
modcall() {
	local rc

	printf '%s\n' "$*" >&"${KMOD[1]}"
	read -r rc modcall_err <&"${KMOD[0]}" || { modcall_err="python3 helper gone"; return 1; }
	[ "$rc" = 0 ]
}
declare -a C_DESC C_KIND C_WANT C_FAIL
declare -A J_EXPR=()	# $tmp/json.N.K -> the jq expression that must hold for it
nmark=0 njson=0

# case_begin KIND DESC [WANT]: a new case, and its mark
case_begin() {
	nmark=$((nmark + 1))
	C_KIND[nmark]=$1
	C_DESC[nmark]=$2
	C_WANT[nmark]=${3:-}
	C_FAIL[nmark]=
	krep_kmsg_mark "params-$$-$nmark"
}

# case_fail MSG...: the current case fails, MSG says why (a diag line)
case_fail() {
	C_FAIL[nmark]+="$*"$'\n'
}

# json_check EXPR CMD...: the jq expression EXPR must be true for the JSON
# CMD prints (checked by results(); $tmp/json.N.K keeps the output)
json_check() {
	local expr=$1 f
	shift

	njson=$((njson + 1))
	f=$tmp/json.$nmark.$njson
	"$@" >"$f" 2>&1
	J_EXPR[$f]=$expr
}

loaded() {
	[ -d /sys/module/krep ]
}

# the module as loaded: the /sys/module/krep/parameters/ values of $SYS
# ("NAME=VALUE ..."), and the jq expression $STATS on `krepctl --json stats`
loaded_checks() {
	local kv v

	for kv in ${SYS:-}; do
		v=
		read -r v 2>/dev/null <"/sys/module/krep/parameters/${kv%%=*}"
		[ "$v" = "${kv#*=}" ] ||
			case_fail "/sys/module/krep/parameters/${kv%%=*}: '$v', want '${kv#*=}'"
	done
	[ -z "${STATS:-}" ] || json_check "$STATS" "$KREPCTL" --json stats
}

# load PARAM...: loads, or fails the case with the kernel's error; true if
# loaded
load() {
	modcall load "$@" && return 0
	case_fail "insmod $*: $modcall_err"
	return 1
}

unload() {
	modcall unload || case_fail "rmmod: $modcall_err"
}

# JSON of `krepctl --json broker show` without the generation and the peer
# states, which follow the connections (null if a state is not valid)
NORMALIZE='del(.generation) | .peers |= map(if (.state | IN("configured",
	"connecting", "up", "down")) then del(.state) else null end)'

# [SYS=... STATS=...] good DESC JSON PARAM...: loads with PARAM..., the
# broker shows JSON (compared as JSON values, normalized with $NORMALIZE),
# loaded_checks pass, and nothing but the expected is logged
good() {
	local desc=$1 want=$2
	shift 2

	case_begin good "good: $desc"
	load "$@" || return
	json_check "norm == ($want)" "$KREPCTL" --json broker show
	loaded_checks
	unload
}

# topics DESC CHECK PARAM...: loads with PARAM..., and the jq expression
# CHECK holds for `krepctl --json topic list` (t(NAME) is the topic NAME)
topics() {
	local desc=$1 check=$2
	shift 2

	case_begin good "good: $desc"
	load "$@" || return
	json_check "$check" "$KREPCTL" --json topic list
	unload
}

# bad DESC LINE PARAM...: insmod with PARAM... fails, the kernel logs
# exactly "krep: LINE", and the module is not loaded
bad() {
	local desc=$1 want="krep: $2"
	shift 2

	case_begin bad "bad: $desc" "$want"
	if modcall load "$@"; then
		unload
		case_fail "insmod $* succeeded"
	elif loaded; then
		case_fail "module loaded after a failed insmod"
	fi
}

# raw DESC LINE PARAM...: as bad, but LINE is logged by the kernel's
# parameter parsing, not by krep (anywhere in the case's log)
raw() {
	local desc=$1 want=$2
	shift 2

	case_begin raw "bad: $desc" "$want"
	if modcall load "$@"; then
		unload
		case_fail "insmod succeeded"
	elif loaded; then
		case_fail "module loaded after a failed insmod"
	fi
}

# the results, in the order of the cases, from the kernel log split at the
# marks into $tmp/log.N (timestamps removed)
results() {
	local i line found loaded desc f
	local -a log krep unexpected

	if ! dmesg >"$tmp/klog" 2>&1; then
		ktap_diag "cannot read the kernel log: $(<"$tmp/klog")"
		: >"$tmp/klog"
	fi
	awk -v pre="krep-selftests: mark params-$$-" -v dir="$tmp" '
	{ sub(/^\[ *[0-9]+\.[0-9]+\] /, "") }
	index($0, pre) == 1 && substr($0, length(pre) + 1) ~ /^[0-9]+$/ {
		if (f)
			close(f)
		f = dir "/log." substr($0, length(pre) + 1)
		printf "" >f
		next
	}
	f { print >f }' "$tmp/klog"
	json_results
	for ((i = 1; i <= nmark; i++)); do
		desc=${C_DESC[i]}
		if [ ! -f "$tmp/log.$i" ]; then
			case_fail_at "$i" "no mark params-$$-$i in the kernel log"
			log=()
		else
			mapfile -t log <"$tmp/log.$i"
		fi
		# krep's lines, without the taint notes of the first load of
		# an unsigned out-of-tree module
		krep=() unexpected=() found=0 loaded=0
		for line in "${log[@]}"; do
			[ "$line" != "${C_WANT[i]}" ] || found=1
			[[ $line == "krep: "* ]] || continue
			[[ $line == *"taints kernel"* || $line == *"module verification failed"* ]] &&
				continue
			krep+=("$line")
			[[ $line != "krep: loaded"* ]] || loaded=1
			# what a good load may log besides "loaded" and "unloaded":
			# the listener and peer connections are runtime matters,
			# not parameter errors
			[[ $line == "krep: loaded"* || $line == "krep: unloaded"* ||
			   $line == "krep: cannot listen on "* ||
			   $line == "krep: connection "* ]] || unexpected+=("$line")
		done
		case ${C_KIND[i]} in
		good)
			[ ${#unexpected[@]} = 0 ] ||
				case_fail_at "$i" "unexpected kernel log: ${unexpected[*]}"
			# (and its own log is there)
			[ "$loaded" = 1 ] ||
				case_fail_at "$i" "no 'krep: loaded' in the kernel log"
			;;
		bad)
			if [ ${#krep[@]} != 1 ] || [ "${krep[0]}" != "${C_WANT[i]}" ]; then
				case_fail_at "$i" "want: ${C_WANT[i]}"
				case_fail_at "$i" "got:  $(printf '%s\n' "${krep[@]}")"
			fi
			;;
		raw)
			[ "$found" = 1 ] || case_fail_at "$i" "no line '${C_WANT[i]}' in: $(printf '%s\n' "${log[@]}" | cut -c1-200)"
			;;
		esac
		for f in "${!J_EXPR[@]}"; do
			[[ $f == "$tmp/json.$i."* ]] || continue
			[ -z "${J_OK[$f]:-}" ] || continue
			case_fail_at "$i" "want: ${J_EXPR[$f]}"
			case_fail_at "$i" "got:  $(cut -c1-500 "$f")"
		done
		if [ -z "${C_FAIL[i]}" ]; then
			ktap_ok "$desc"
		else
			ktap_diag_stdin <<<"${C_FAIL[i]%$'\n'}"
			ktap_fail "$desc"
		fi
	done
}

# J_OK[FILE] set for each output of json_check whose expression holds: one
# jq run over them all (each file's lines joined back, then parsed)
declare -A J_OK=()
# shellcheck disable=SC2016,SC2028 # jq's $variables, jq's "\n"
json_results() {
	local f n=0

	[ ${#J_EXPR[@]} -gt 0 ] || return 0
	{
		echo "def norm: $NORMALIZE;"
		echo 'def t($n): first(.[] | select(.topic == $n));'
		echo 'def check($f):'
		for f in "${!J_EXPR[@]}"; do
			printf '%s $f == "%s" then (%s)\n' \
				"$([ $n = 0 ] && echo if || echo elif)" "$f" "${J_EXPR[$f]}"
			n=$((n + 1))
		done
		echo 'else false end;'
		echo '[inputs | {f: input_filename, l: .}] | group_by(.f)[] |'
		echo '.[0].f as $f | (map(.l) | join("\n")) as $raw |'
		echo 'select((try ($raw | fromjson | check($f)) catch false) == true) | $f'
	} >"$tmp/checks.jq"
	while IFS= read -r f; do
		J_OK[$f]=1
	done < <(jq -nRr -f "$tmp/checks.jq" "${!J_EXPR[@]}" 2>"$tmp/jq.err")
	[ ! -s "$tmp/jq.err" ] || ktap_diag "jq: $(head -c 500 "$tmp/jq.err")"
}

case_fail_at() { # N MSG...
	local n=$1
	shift
	C_FAIL[n]+="$*"$'\n'
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
NONE='{"broker_id":null,"cluster_id":null,"listen":null,"kafka_listen":null,"kafka_advertised":null,"cluster_secret":false,"log_dir":null,"peers":[]}'

ktap_plan 104

krep_mod_unload || ktap_bail "krep is loaded and rmmod fails"

# good values
SYS="hello_timeout_ms=5000 fetch_timeout_ms=3000 reconnect_backoff_max_ms=5000
     socket_timeout_ms=30000 kafka_idle_ms=600000 kafka_request_ms=30000
     kafka_wait_max_ms=30000 kafka_max_request_bytes=8388608
     kafka_max_connections=1024 close_log_interval_ms=5000 log_memory_max=$((256 << 20))
     producers_max=1024 producer_id_expiration_ms=86400000" \
	good "no parameters (the defaults in /sys/module/krep/parameters/)" "$NONE"
good "empty values mean unset" "$NONE" broker_id=-1 cluster_id= listen= \
	peers= topics=
good "broker_id=0" \
	'{"broker_id":0,"cluster_id":null,"listen":null,"kafka_listen":null,"kafka_advertised":null,"cluster_secret":false,"log_dir":null,"peers":[]}' broker_id=0
good "broker_id=2147483647" \
	'{"broker_id":2147483647,"cluster_id":null,"listen":null,"kafka_listen":null,"kafka_advertised":null,"cluster_secret":false,"log_dir":null,"peers":[]}' \
	broker_id=2147483647
good "cluster_id" \
	'{"broker_id":null,"cluster_id":"prod-1_A","listen":null,"kafka_listen":null,"kafka_advertised":null,"cluster_secret":false,"log_dir":null,"peers":[]}' \
	cluster_id=prod-1_A
good "cluster_id of 64 characters" \
	"{\"broker_id\":null,\"cluster_id\":\"$CID64\",\"listen\":null,\"kafka_listen\":null,\"kafka_advertised\":null,\"cluster_secret\":false,\"log_dir\":null,\"peers\":[]}" \
	cluster_id="$CID64"
good "listen IPv4" \
	'{"broker_id":null,"cluster_id":null,"listen":"127.0.0.1:9092","kafka_listen":null,"kafka_advertised":null,"cluster_secret":false,"log_dir":null,"peers":[]}' \
	listen=127.0.0.1:9092
good "listen IPv6, not a local address" \
	'{"broker_id":null,"cluster_id":null,"listen":"[fd00::1]:65535","kafka_listen":null,"kafka_advertised":null,"cluster_secret":false,"log_dir":null,"peers":[]}' \
	'listen=[fd00::1]:65535'
good "listen IPv6 loopback, port 1" \
	'{"broker_id":null,"cluster_id":null,"listen":"[::1]:1","kafka_listen":null,"kafka_advertised":null,"cluster_secret":false,"log_dir":null,"peers":[]}' \
	'listen=[::1]:1'
good "peers, IPv4 and IPv6" \
	"{\"broker_id\":1,\"cluster_id\":null,\"listen\":null,\"kafka_listen\":null,\"kafka_advertised\":null,\"cluster_secret\":false,\"log_dir\":null,\"peers\":[$PEER2,$PEER3]}" \
	broker_id=1 'peers=2@10.0.0.2:9092,3@[fd00::3]:9092'
good "64 peers" \
	"{\"broker_id\":0,\"cluster_id\":null,\"listen\":null,\"kafka_listen\":null,\"kafka_advertised\":null,\"cluster_secret\":false,\"log_dir\":null,\"peers\":$(peer_json 64)}" \
	broker_id=0 peers="$P64"
good "the example of kmod/param.c" \
	"{\"broker_id\":1,\"cluster_id\":\"prod\",\"listen\":\"10.0.0.1:9092\",\"kafka_listen\":null,\"kafka_advertised\":null,\"cluster_secret\":false,\"log_dir\":null,\"peers\":[$PEER2,$PEER3]}" \
	broker_id=1 cluster_id=prod listen=10.0.0.1:9092 \
	'peers=2@10.0.0.2:9092,3@[fd00::3]:9092' \
	topics=orders:3:3:min_insync_replicas=2,audit:1:1
good "topics with a single broker" \
	'{"broker_id":4,"cluster_id":null,"listen":null,"kafka_listen":null,"kafka_advertised":null,"cluster_secret":false,"log_dir":null,"peers":[]}' \
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
	 "unclean_leader_election": 0, "flush_messages": 1, "flush_ms": 0,
	 "segment_ms": 1}' \
	broker_id=1 \
	topics=t:1:1:min_insync_replicas=1:replica_lag_time_max_ms=10:segment_bytes=4096:retention_bytes=-1:max_message_bytes=64:unclean_leader_election=0:flush_messages=1:flush_ms=0:segment_ms=1
topics "topics: every config key at its highest" \
	'length == 1 and t("t").config == {"min_insync_replicas": 65,
	 "replica_lag_time_max_ms": 3600000, "segment_bytes": 1073741824,
	 "retention_bytes": 9223372036854775807, "max_message_bytes": 1048588,
	 "unclean_leader_election": 1, "flush_messages": 9223372036854775807,
	 "flush_ms": 9223372036854775807, "segment_ms": 9223372036854775807}' \
	broker_id=1 \
	topics=t:1:1:min_insync_replicas=65:replica_lag_time_max_ms=3600000:segment_bytes=1073741824:retention_bytes=9223372036854775807:max_message_bytes=1048588:unclean_leader_election=1:flush_messages=9223372036854775807:flush_ms=9223372036854775807:segment_ms=9223372036854775807
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
# the cap as the broker counts it, in stats, and as the parameter reads
SYS="log_memory_max=1048576" STATS='.log_memory_max_bytes == 1048576' \
	good "log_memory_max at its lowest (stats and /sys/module/krep/parameters/ say so)" \
	"$NONE" log_memory_max=1048576

# bad log_memory_max
bad "log_memory_max below 1 MiB" \
	"bad log_memory_max 1048575: must be at least 1048576" \
	log_memory_max=1048575

# the deadlines, 100..600000 ms each
DEADLINES="hello_timeout_ms fetch_timeout_ms reconnect_backoff_max_ms socket_timeout_ms
	   kafka_idle_ms kafka_request_ms kafka_wait_max_ms close_log_interval_ms"
lo=() hi=()
for d in $DEADLINES; do
	lo+=("$d=100")
	hi+=("$d=600000")
done
SYS="${lo[*]}" good "every deadline at its lowest, 100 ms (in /sys/module/krep/parameters/)" \
	"$NONE" "${lo[@]}"
SYS="${hi[*]}" good "every deadline at its highest, 600000 ms (in /sys/module/krep/parameters/)" \
	"$NONE" "${hi[@]}"
for d in $DEADLINES; do
	bad "$d=99" "bad $d 99: must be 100..600000" "$d=99"
	bad "$d=600001" "bad $d 600001: must be 100..600000" "$d=600001"
done

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

# the Kafka listener
good "kafka_listen and kafka_advertised" \
	'{"broker_id":1,"cluster_id":null,"listen":null,"kafka_listen":"127.0.0.1:9192","kafka_advertised":"kafka-1.example:9192","cluster_secret":false,"log_dir":null,"peers":[]}' \
	broker_id=1 kafka_listen=127.0.0.1:9192 kafka_advertised=kafka-1.example:9192
bad "kafka_listen on a wildcard address without kafka_advertised" \
	"bad kafka_listen '0.0.0.0:9192': a Kafka listener on a wildcard address needs an advertised address" \
	broker_id=1 kafka_listen=0.0.0.0:9192
bad "kafka_advertised with an underscore" \
	"bad kafka_advertised 'a_b:1': advertised host has a character outside [A-Za-z0-9.-]" \
	broker_id=1 kafka_listen=127.0.0.1:9192 kafka_advertised=a_b:1
bad "kafka_max_request_bytes=65535" \
	"bad kafka_max_request_bytes 65535: must be 65536..104857600" \
	kafka_max_request_bytes=65535
bad "kafka_max_connections=0" \
	"bad kafka_max_connections 0: must be 1..65536" kafka_max_connections=0

# producer state per partition (kmod/producer.c)
SYS="producers_max=1048576 producer_id_expiration_ms=1000" \
	good "producers_max at its highest, producer_id_expiration_ms at its lowest" \
	"$NONE" producers_max=1048576 producer_id_expiration_ms=1000
bad "producers_max=0" "bad producers_max 0: must be 1..1048576" producers_max=0
bad "producer_id_expiration_ms=999" \
	"bad producer_id_expiration_ms 999: must be 1000..2147483647" \
	producer_id_expiration_ms=999

# topics and hosted partitions per broker (kmod/topic.c): insmod's topics=
# and TOPIC_NEW past them are refused, POLICY_VIOLATION naming the limit
SYS="topics_max=65536 partitions_max=1048576" \
	good "topics_max and partitions_max at their highest" \
	"$NONE" topics_max=65536 partitions_max=1048576
bad "topics_max=0" "bad topics_max 0: must be 1..65536" topics_max=0
bad "topics_max=65537" "bad topics_max 65537: must be 1..65536" \
	topics_max=65537
bad "partitions_max=0" "bad partitions_max 0: must be 1..1048576" \
	partitions_max=0
bad "topics= past topics_max=2" \
	"topic 'c': topics_max reached: the broker holds as many topics as it may" \
	broker_id=1 topics_max=2 topics=a:1:1,b:1:1,c:1:1
bad "topics= past partitions_max=3" \
	"topic 'b': partitions_max reached: the broker would host more partitions than it may" \
	broker_id=1 partitions_max=3 topics=a:2:1,b:2:1
# krepctl --json's error object (stdout), for json_check
kc_err() { "$KREPCTL" --json "$@" 2>/dev/null; }
limit_err() { # LIMIT: the jq expression for TOPIC_NEW refused past LIMIT
	echo ".error == \"POLICY_VIOLATION\" and .code == 44 and .errno == \"EDQUOT\" and (.message | startswith(\"$1 reached\"))"
}
case_begin good "good: TOPIC_NEW past topics_max=2 and partitions_max=4: POLICY_VIOLATION naming the limit; up to them, created"
if load broker_id=1 topics_max=2 partitions_max=4 topics=a:3:1; then
	json_check "$(limit_err partitions_max)" \
		kc_err topic create b partitions 2 replication-factor 1
	json_check '.topic == "b"' \
		kc_err topic create b partitions 1 replication-factor 1
	json_check "$(limit_err topics_max)" \
		kc_err topic create c partitions 1 replication-factor 1
	json_check '([.[].topic] | sort) == ["a", "b"]' "$KREPCTL" --json topic list
	unload
fi

# the kernel refuses a string parameter of more than 1024 characters before
# the module sees it
raw "peers longer than 1024 characters" 'peers: string parameter too long' \
	broker_id=0 peers="$(repeat 1 1025)"

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

results
ktap_finish
