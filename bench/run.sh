#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh - the benchmark, inside the test VM (make bench runs it through
# selftests/vm/run.sh; bench/report.py turns its output into the tables).
#
#   initial namespace (VM)              netns kbench-b2       netns kbench-b3
#   10.77.0.1 on br0 ----------+------- veth 10.77.0.2        veth 10.77.0.3
#     krep broker 1 (insmod)    \------ krep broker 2         krep broker 3
#       (Kafka port :9093)              (:9093)               (:9093)
#     redis primary                     redis replica         redis replica
#     nats n1, etcd e1                  nats n2, etcd e2      nats n3, etcd e3
#     the clients                       tcp_rr/iperf3 server
#
# krep is measured twice: through its netlink interface (krep_load, the
# "krep" system) and through its Kafka listener with librdkafka over TCP
# (kafka_load, the "kafka" system: the same brokers and topic b1, the
# way the peers' clients reach their servers).
#
# The client runs beside the leader (krep broker 1 leads partition 0,
# the Redis primary, the NATS stream leader and the etcd leader are moved
# there, and checked before each of their blocks), so a commit costs the
# same network hops for every system. While one system is measured, the
# servers of the others are stopped (SIGSTOP): idle, NATS and etcd alone
# keep an emulated VM's CPUs busy.
#
# Every measurement is one bounded run of a load generator (bench/*.c):
# at most COUNT requests and at most SECONDS. After a warm-up round
# (trial 0, discarded) come BENCH_TRIALS trials; each runs the calibration
# and every system's cases, the systems in a different order each trial.
# Each run prints
#
#	BENCH-RAW trial=T system=S case=C key=value...
#
# and at the end the latencies pooled over the trials (BENCH-PCTL), the
# systems that could not be measured (BENCH-NOTMEASURED system=S
# reason=...) and BENCH-DONE. Exit status 1 when a system could not run
# at all (named on stderr), else 0: timings never fail the run.
#
# Environment (defaults in brackets):
#   BENCH_TRIALS [4]      trials after the warm-up
#   BENCH_SECS [1.2]      length of a many-in-flight (throughput) run, s
#   BENCH_LAT_N [2500]    requests of a one-in-flight (latency) run ...
#   BENCH_LAT_SECS [3]    ... or this many seconds, whichever comes first
#   BENCH_KREP_LAT_SECS [8]  the same for krep acks=all, 100 B: its
#                         samples (pooled over the trials) give the commit
#                         latency percentiles, 10,000 of them when a commit
#                         takes less than 3 ms
#   BENCH_INFLIGHT [8]    writers of a many-in-flight run
#   BENCH_INFLIGHT_MANY [32]  writers of krep's extra, deeper run (1
#                         partition), where acks=all is not bound by
#                         the round trip of 8 writers
#   BENCH_BATCH_BYTES [16384]  the batched runs: BENCH_INFLIGHT writers,
#                         each request one batch of this many payload
#                         bytes (Kafka's default batch.size): 163 records
#                         of 100 B, 16 of 1 KiB; krep and Redis (NATS and
#                         etcd clients here send one record per request)
#   BENCH_BUDGET [780]    seconds the whole run may take: after the
#                         first trial, a trial starts only if the slowest
#                         so far would still end in time (the VM's
#                         timeout in make bench is 900 s)
#   BENCH_SYSTEMS ["krep kafka redis nats etcd"]  (kafka: krep through
#                         its Kafka port; it needs krep's brokers, so
#                         "kafka" alone starts them too)
set -u

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
ROOT=$PWD
B=$ROOT/bench
KREPCTL=$ROOT/agent/krepctl/krepctl
PATH=/usr/sbin:/sbin:/usr/bin:/bin
export PATH

TRIALS=${BENCH_TRIALS:-4}
SECS=${BENCH_SECS:-1.2}
LAT_N=${BENCH_LAT_N:-2500}
LAT_SECS=${BENCH_LAT_SECS:-3}
KREP_LAT_SECS=${BENCH_KREP_LAT_SECS:-8}
BUDGET=${BENCH_BUDGET:-780}
INFL=${BENCH_INFLIGHT:-8}
INFL_MANY=${BENCH_INFLIGHT_MANY:-32}
BATCH_BYTES=${BENCH_BATCH_BYTES:-16384}
SYSTEMS=${BENCH_SYSTEMS:-krep kafka redis nats etcd}
SIZES="100 1024"

NS2=kbench-b2
NS3=kbench-b3
IP1=10.77.0.1
IP2=10.77.0.2
IP3=10.77.0.3
KPORT=9093	# every broker's Kafka listener (replication: 9092)
W=/tmp/kbench
PIDS=()
declare -A SYS_PIDS=()	# system -> pids of its servers
declare -A NOTMEASURED=()	# system -> reason
declare -A RUNS_OK=() RUNS_FAILED=()

log() { printf 'bench: %s\n' "$*"; }
# bg SYSTEM NAME NSNUM CMD...: a server of SYSTEM in the background (the
# command itself, so that its pid can be stopped), output in $W/NAME.log
bg() {
	local sys=$1 name=$2 n=$3
	shift 3
	if [ "$n" = 1 ]; then
		"$@" >"$W/$name.log" 2>&1 &
	else
		ip netns exec "kbench-b$n" "$@" >"$W/$name.log" 2>&1 &
	fi
	PIDS+=($!)
	SYS_PIDS[$sys]+=" $!"
}
# only SYSTEM: let its servers run, stop every other system's (SIGSTOP):
# idle, the Go runtimes and Raft heartbeats of NATS and etcd alone keep
# an emulated VM's CPUs most of the time busy. krep, in the kernel,
# cannot be stopped; idle it costs next to nothing.
only() {
	local s
	for s in "${!SYS_PIDS[@]}"; do
		# shellcheck disable=SC2086
		if [ "$s" = "$1" ]; then
			kill -CONT ${SYS_PIDS[$s]} 2>/dev/null
		else
			kill -STOP ${SYS_PIDS[$s]} 2>/dev/null
		fi
	done
}
not_measured() {	# not_measured SYSTEM REASON
	NOTMEASURED[$1]=$2
	log "$1: not measured: $2"
}
wait_for() {	# wait_for SECONDS CMD...
	local t=$1 i
	shift
	for ((i = 0; i < t * 5; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}
on() { [[ " $SYSTEMS " == *" $1 "* ]] && [ -z "${NOTMEASURED[$1]:-}" ]; }

cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; kill -CONT "$p" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del $NS2 2>/dev/null
	ip netns del $NS3 2>/dev/null
	rmmod krep 2>/dev/null
	ip link del br0 2>/dev/null
}
trap cleanup EXIT

# measure TRIAL SYSTEM CASE CMD...: one run; its RESULT line becomes a
# BENCH-RAW line (also kept in MEASURED). A failed run is reported and
# counted.
measure() {
	local trial=$1 sys=$2 case=$3 out rc w=$SECONDS
	shift 3
	out=$("$@" 2>"$W/err.txt")
	rc=$?
	MEASURED=
	if [[ $out == *RESULT\ * ]]; then
		out=${out#*RESULT }
		MEASURED=${out%%$'\n'*}
		echo "BENCH-RAW trial=$trial system=$sys case=$case rc=$rc wall=$((SECONDS - w)) ${out%%$'\n'*}"
	fi
	if [ "$rc" != 0 ]; then
		echo "BENCH-FAIL trial=$trial system=$sys case=$case rc=$rc: $(head -c 300 "$W/err.txt" | tr '\n' ' ')"
	fi
	if [ "$rc" = 0 ] || [ "$rc" = 3 ]; then
		RUNS_OK[$sys]=$((${RUNS_OK[$sys]:-0} + 1))
	else
		RUNS_FAILED[$sys]=$((${RUNS_FAILED[$sys]:-0} + 1))
	fi
	return 0
}

# opts TRIAL INFLIGHT NAME [LATENCY_SECONDS]: the options of a run in
# OPTS (no subshell: a fork costs a lot under emulation): one in flight is
# count-bound for the latency samples, many in flight time-bound; the
# latencies go to $W/lat-NAME (not in the warm-up)
opts() {
	if [ "$1" = 0 ]; then
		OPTS=(-n 200 -d 0.5)
	elif [ "$2" = 1 ]; then
		OPTS=(-n "$LAT_N" -d "${4:-$LAT_SECS}" -l "$W/lat-$3")
	else
		OPTS=(-n 10000000 -d "$SECS" -l "$W/lat-$3")
	fi
	OPTS+=(-t "$2")
}

#------------------------------------------------------------------------
# set-up

setup_net() {
	local n
	modprobe veth 2>/dev/null
	modprobe bridge 2>/dev/null
	ip link add br0 type bridge && ip link set br0 up &&
		ip addr add $IP1/24 dev br0 || return 1
	for n in 2 3; do
		ip netns add kbench-b$n &&
			ip link add v$n type veth peer name eth0 netns kbench-b$n &&
			ip link set v$n master br0 up &&
			ip -n kbench-b$n addr add 10.77.0.$n/24 dev eth0 &&
			ip -n kbench-b$n link set eth0 up &&
			ip -n kbench-b$n link set lo up || return 1
	done
	# no bridge netfilter and no STP delay between the namespaces
	ip link set br0 type bridge stp_state 0 forward_delay 0 2>/dev/null
	return 0
}

# Each system comes up in two steps, start_SYS (launch) and ready_SYS
# (wait for it, a bounded wait), so that the systems start together.

KREP_CFG=min_insync_replicas=2:retention_bytes=33554432:segment_bytes=4194304
# Each broker's log memory: 5 partitions at retention_bytes hold 160 MiB,
# and an acks=1 batched run outruns its followers by ~100 MiB, which the
# leader keeps until their HW lets retention drop it. 3 x 512 MiB fits
# the 4 GiB VM beside Redis' 3 x 256 MiB.
KREP_MEM=$((512 << 20))
# The Kafka listeners (kafka_listen, on every broker, so that Metadata
# lists all three) only when the kafka system runs.
start_krep() {
	local n others kafka=()
	[[ " $SYSTEMS " == *" kafka "* ]] && kafka=(kafka_listen=$IP1:$KPORT)
	insmod kmod/krep.ko broker_id=1 cluster_id=bench listen=$IP1:9092 \
		log_memory_max=$KREP_MEM "${kafka[@]}" \
		peers=2@$IP2:9092,3@$IP3:9092 \
		topics=b1:1:3:$KREP_CFG,b4:4:3:$KREP_CFG ||
		{ echo "insmod failed"; return 1; }
	for n in 2 3; do
		others=$(for o in 1 2 3; do [ $o = $n ] || printf '%s@10.77.0.%s:9092,' $o $o; done)
		[ ${#kafka[@]} = 0 ] || kafka=(kafka-listen 10.77.0.$n:$KPORT)
		"$KREPCTL" --netns kbench-b$n broker set id $n cluster bench \
			listen 10.77.0.$n:9092 peers "${others%,}" \
			"${kafka[@]}" >/dev/null &&
		for t in b1:1 b4:4; do
			"$KREPCTL" --netns kbench-b$n topic create ${t%:*} \
				partitions ${t#*:} replication-factor 3 \
				config "${KREP_CFG//:/,}" >/dev/null || return 1
		done || { echo "broker $n set-up failed"; return 1; }
	done
}
# an acks=all record to every partition commits, and every ISR is full
krep_replicating() {
	local t p out
	for t in b1:1 b4:4; do
		p=${t#*:}
		out=$("$B/krep_load" --topic "${t%:*}" --partitions "$p" --acks all \
			--timeout-ms 3000 --brokers -,$NS2,$NS3 -t "$p" -n "$p" -d 5) ||
			return 1
		[[ $out == *" isr_min=3 "* ]] || return 1
	done
}
ready_krep() {
	wait_for 60 krep_replicating || { echo "no acks=all commit with a full ISR after 60 s"; return 1; }
}

# kafka: krep's brokers, through their Kafka listeners (start_krep
# starts them; "kafka" without "krep" in BENCH_SYSTEMS starts them here)
start_kafka() {
	[[ " $SYSTEMS " == *" krep "* ]] || start_krep
}
KAFKA_LOAD=("$B/kafka_load" --bootstrap $IP1:$KPORT --topic b1 --partition 0
	--brokers -,$NS2,$NS3)
# one record through the Kafka port, acks=all
kafka_produces() {
	"${KAFKA_LOAD[@]}" --mode sync -t 1 -n 1 -d 5 >/dev/null
}
ready_kafka() {
	if [[ " $SYSTEMS " != *" krep "* ]]; then
		ready_krep || return 1
	elif ! on krep; then
		echo "krep's brokers did not come up"
		return 1
	fi
	wait_for 30 kafka_produces ||
		{ echo "no acks=all produce through the Kafka port after 30 s"; return 1; }
}

REDIS_OPTS=(--save "" --appendonly no --protected-mode no --port 6379 --daemonize no
	--maxmemory 256mb --dir "$W")
start_redis() {
	bg redis redis1 1 redis-server --bind $IP1 "${REDIS_OPTS[@]}" --dbfilename r1.rdb
	bg redis redis2 2 redis-server --bind $IP2 "${REDIS_OPTS[@]}" --dbfilename r2.rdb --replicaof $IP1 6379
	bg redis redis3 3 redis-server --bind $IP3 "${REDIS_OPTS[@]}" --dbfilename r3.rdb --replicaof $IP1 6379
}
redis_online() { [ "$(redis-cli -h $IP1 info replication | grep -c 'state=online')" = 2 ]; }
ready_redis() {
	wait_for 60 redis_online || { echo "replicas not online after 60 s"; return 1; }
}

start_nats() {
	local n routes
	for n in 1 2 3; do
		routes=$(for o in 1 2 3; do [ $o = $n ] || printf 'nats-route://10.77.0.%s:6222, ' $o; done)
		mkdir -p "$W/nats$n"
		cat >"$W/nats$n.conf" <<-EOF
		server_name: n$n
		listen: 10.77.0.$n:4222
		jetstream { store_dir: "$W/nats$n", max_memory_store: 64MB, max_file_store: 512MB }
		cluster { name: kbench, listen: 10.77.0.$n:6222, routes: [ ${routes%, } ] }
		EOF
		bg nats nats$n $n nats-server -c "$W/nats$n.conf"
	done
}
ready_nats() {	# creates the stream: at most 90 s, then 30 s to move its leader
	"$B/nats_pub" --url nats://$IP1:4222 --setup --leader n1 \
		--max-bytes $((64 << 20)) 2>&1
}

ETCD_CLUSTER=e1=http://$IP1:2380,e2=http://$IP2:2380,e3=http://$IP3:2380
start_etcd() {
	local n
	for n in 1 2 3; do
		bg etcd etcd$n $n etcd --name e$n --data-dir "$W/etcd$n" \
			--listen-client-urls http://10.77.0.$n:2379 \
			--advertise-client-urls http://10.77.0.$n:2379 \
			--listen-peer-urls http://10.77.0.$n:2380 \
			--initial-advertise-peer-urls http://10.77.0.$n:2380 \
			--initial-cluster $ETCD_CLUSTER --initial-cluster-state new \
			--initial-cluster-token kbench \
			--heartbeat-interval 100 --election-timeout 2000 \
			--auto-compaction-mode revision --auto-compaction-retention 10000 \
			--logger zap --log-level error
	done
}
ready_etcd() {
	etcd_ok() { ETCDCTL_API=3 etcdctl --endpoints http://$IP1:2379,http://$IP2:2379,http://$IP3:2379 endpoint health; }
	wait_for 90 etcd_ok || { echo "members not healthy after 90 s"; return 1; }
	# move the leader next to the client (member ids in hex, as
	# move-leader wants them: JSON gives them in decimal, beyond bash's
	# arithmetic)
	etcd_lead || etcd_move_leader
	if etcd_lead; then echo "leader is e1"; else echo "leader is not e1 (could not be moved)"; fi
}
etcd_lead() {	# true when e1 leads
	ETCDCTL_API=3 etcdctl --endpoints http://$IP1:2379 endpoint status |
		awk -F', ' '{ exit $5 != "true" }'
}
etcd_move_leader() {
	local id
	id=$(ETCDCTL_API=3 etcdctl --endpoints http://$IP1:2379 member list |
		awk -F', ' '$3 == "e1" { print $1 }')
	ETCDCTL_API=3 etcdctl --endpoints http://$IP1:2379,http://$IP2:2379,http://$IP3:2379 \
		move-leader "$id" 2>&1 | tail -n1
	wait_for 10 etcd_lead
}

#------------------------------------------------------------------------
# the cases of each system

# busy and total jiffies of the VM into CPU_BUSY, CPU_ALL (no fork)
cpu_read() {
	local c u n s i w q sq st
	read -r c u n s i w q sq st _ </proc/stat
	CPU_BUSY=$((u + n + s + q + sq + st))
	CPU_ALL=$((CPU_BUSY + i + w))
}

# idle TRIAL SYSTEM: what the system's servers cost the VM while no load
# runs (1 s)
idle() {
	local b0 a0
	cpu_read
	b0=$CPU_BUSY a0=$CPU_ALL
	sleep 1
	cpu_read
	echo "BENCH-RAW trial=$1 system=$2 case=idle rc=0 busy_pct=$(((CPU_BUSY - b0) * 100 / (CPU_ALL - a0 + 1)))"
}

run_calib() {	# run_calib TRIAL
	local t=$1 s out bps
	opts "$t" 1 calib-pingpong 3
	[ "$t" = 0 ] || OPTS+=(-n 2000)
	measure "$t" calib pingpong-1024 "$B/tcp_rr" client $IP2 7001 -s 1024 "${OPTS[@]}"
	for s in $SIZES; do
		out=$(timeout 20 iperf3 -c $IP2 -p 5201 -t $((t ? 2 : 1)) -l "$s" -J 2>&1)
		bps=$(jq -r '.end.sum_received.bits_per_second // empty' <<<"$out" 2>/dev/null)
		if [ -n "$bps" ]; then
			echo "BENCH-RAW trial=$t system=calib case=iperf3-$s rc=0 mb_per_s=$(awk -v b="$bps" 'BEGIN { printf "%.3f", b / 8e6 }') size=$s"
			RUNS_OK[calib]=$((${RUNS_OK[calib]:-0} + 1))
		else
			echo "BENCH-FAIL trial=$t system=calib case=iperf3-$s rc=1: $(head -c 300 <<<"$out" | tr '\n' ' ')"
			RUNS_FAILED[calib]=$((${RUNS_FAILED[calib]:-0} + 1))
		fi
	done
}

run_krep() {	# run_krep TRIAL
	local t=$1 s acks shape topic parts infl case batch
	for s in $SIZES; do
		for acks in all 1; do
			for shape in p1-if1 p1-ifN p1-ifM p4-ifN p1-ifB; do
				batch=1
				case $shape in
				p1-if1) topic=b1 parts=1 infl=1 ;;
				p1-ifN) topic=b1 parts=1 infl=$INFL ;;
				p1-ifM) topic=b1 parts=1 infl=$INFL_MANY ;;
				p4-ifN) topic=b4 parts=4 infl=$INFL ;;
				p1-ifB) topic=b1 parts=1 infl=$INFL
					batch=$((BATCH_BYTES / s)) ;;
				esac
				case=$shape-acks$acks-$s
				if [ "$acks$s" = all100 ]; then
					opts "$t" $infl "krep-$case" "$KREP_LAT_SECS"
				else
					opts "$t" $infl "krep-$case"
				fi
				measure "$t" krep "$case" "$B/krep_load" --topic $topic \
					--partitions $parts --acks $acks \
					--brokers -,$NS2,$NS3 -s "$s" -b $batch \
					"${OPTS[@]}"
			done
		done
	done
}

# krep through the Kafka port (kafka_load, librdkafka): at each size the
# shapes of the netlink runs (acks=all) plus one producer with batches,
# then a consumer reading back every record these runs wrote:
#   p1-if1   one producer, one record in flight (linger.ms 0)
#   p1-ifN   INFL producers (connections), one record in flight each
#   p1-ifB   INFL producers, batch.size BATCH_BYTES, linger.ms 5, each
#            with at most 2 batches of payload unacknowledged (one being
#            committed, the next filling), as the netlink p1-ifB's
#            writers each have one batch in flight and the next ready
#   p1-ifB1  one producer, batch.size BATCH_BYTES, linger.ms 5, at most
#            INFL batches of payload unacknowledged (netlink p1-ifB's)
#   consume  one consumer, no group, from the first record of this size's
#            runs to the end
#   p1-ifB1 again with acks=1 (after the consumer; kafka_load waits until
#            the followers caught up, as krep_load does)
#   raw-ifB  netlink p1-ifB's own writers (krep_load --kafka): INFL
#            connections, each with one batch request (Produce v7) in
#            flight, the same batches; only the transport differs
run_kafka() {	# run_kafka TRIAL
	local t=$1 s shape infl args case n rec
	for s in $SIZES; do
		n=0
		for shape in p1-if1 p1-ifN p1-ifB p1-ifB1; do
			case $shape in
			p1-if1) infl=1 args=(--mode sync) ;;
			p1-ifN) infl=$INFL args=(--mode sync) ;;
			p1-ifB) infl=$INFL args=(--mode batched
				--window $((2 * BATCH_BYTES))) ;;
			p1-ifB1) infl=1 args=(--mode batched
				--window $((INFL * BATCH_BYTES))) ;;
			esac
			case=$shape-acksall-$s
			if [ $shape = p1-ifB1 ]; then	# time-bound, as p1-ifB
				opts "$t" "$INFL" "kafka-$case"
				OPTS+=(-t 1)
			else
				opts "$t" $infl "kafka-$case"
			fi
			measure "$t" kafka "$case" "${KAFKA_LOAD[@]}" "${args[@]}" \
				--batch-bytes "$BATCH_BYTES" -s "$s" "${OPTS[@]}"
			# the records it appended, with each producer's first
			rec=0
			[[ $MEASURED =~ (^| )ok=([0-9]+) ]] && rec=${BASH_REMATCH[2]}
			n=$((n + rec + infl))
		done
		measure "$t" kafka "consume-$s" "${KAFKA_LOAD[@]}" --mode consume \
			--from-end "$n" -s "$s" -n 100000000 -d 20
		opts "$t" "$INFL" "kafka-p1-ifB1-acks1-$s"
		measure "$t" kafka "p1-ifB1-acks1-$s" "${KAFKA_LOAD[@]}" \
			--mode batched --acks 1 --window $((INFL * BATCH_BYTES)) \
			--batch-bytes "$BATCH_BYTES" -s "$s" "${OPTS[@]}" -t 1
		opts "$t" "$INFL" "kafka-raw-ifB-acksall-$s"
		measure "$t" kafka "raw-ifB-acksall-$s" "$B/krep_load" --topic b1 \
			--partitions 1 --acks all --brokers -,$NS2,$NS3 \
			--kafka $IP1:$KPORT,$IP2:$KPORT,$IP3:$KPORT -s "$s" \
			-b $((BATCH_BYTES / s)) "${OPTS[@]}"
	done
}

# run_peer TRIAL SYSTEM MODE SHAPES CMD...: a peer's cases, one record
# per request (p1-if1, p1-ifN) or batched (p1-ifB)
run_peer() {
	local t=$1 sys=$2 mode=$3 shapes=$4 s shape infl batch
	shift 4
	for s in $SIZES; do
		for shape in $shapes; do
			infl=$INFL batch=1
			case $shape in
			p1-if1) infl=1 ;;
			p1-ifB) batch=$((BATCH_BYTES / s)) ;;
			esac
			opts "$t" $infl "$sys-$shape-$mode-$s"
			measure "$t" "$sys" "$shape-$mode-$s" "$@" -s "$s" \
				-b $batch "${OPTS[@]}"
		done
	done
}
run_redis() {
	run_peer "$1" redis wait2 "p1-if1 p1-ifN p1-ifB" "$B/redis_wait" \
		--host $IP1 --replicas 2
}
run_nats() {
	# a stop may have cost n1 the stream's leadership: take it back
	ready_nats >"$W/leader.out" 2>&1 ||
		echo "BENCH-FAIL trial=$1 system=nats case=leader rc=1: $(tail -n 2 "$W/leader.out" | tr '\n' ' ')"
	echo "BENCH-RAW trial=$1 system=nats case=leader rc=0 $(grep -o 'leader=[^ ]*' "$W/leader.out")"
	run_peer "$1" nats r3 "p1-if1 p1-ifN" "$B/nats_pub" --url nats://$IP1:4222
}
run_etcd() {
	etcd_lead || etcd_move_leader >/dev/null 2>&1
	echo "BENCH-RAW trial=$1 system=etcd case=leader rc=0 leader=$(etcd_lead && echo e1 || echo other)"
	run_peer "$1" etcd put "p1-if1 p1-ifN" "$B/etcd_put" --addr $IP1
}

#------------------------------------------------------------------------

start=$SECONDS
mkdir -p $W
longest=0
slub=$(cat /sys/kernel/slab/kmalloc-64/sanity_checks 2>/dev/null)
clk=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)
echo "BENCH-BEGIN trials=$TRIALS slub_debug_checks=${slub:-?} clocksource=${clk:-?} secs=$SECS lat_n=$LAT_N inflight=$INFL inflight_many=$INFL_MANY batch_bytes=$BATCH_BYTES systems=\"$SYSTEMS\" kernel=$(uname -r) cpus=$(nproc) cpu=\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')\""
for f in krep_load kafka_load tcp_rr redis_wait nats_pub etcd_put bench_pctl; do
	[ -x "$B/$f" ] || { echo "bench: $B/$f is not built (make -C bench)" >&2; exit 1; }
done
setup_net || { echo "bench: cannot build the network" >&2; exit 1; }
bg calib tcp_rr 2 "$B/tcp_rr" server $IP2 7001 --lifetime 1200
bg calib iperf3 2 iperf3 -s -B $IP2 -p 5201
for sys in $SYSTEMS; do
	case $sys in krep|kafka|redis|nats|etcd) ;; *) echo "bench: unknown system $sys" >&2; exit 2 ;; esac
	start_$sys >"$W/setup-$sys.out" 2>&1 ||
		not_measured "$sys" "start failed: $(tail -n 3 "$W/setup-$sys.out" | tr '\n' ' ')"
done
for sys in $SYSTEMS; do
	on "$sys" || continue
	if ready_$sys >>"$W/setup-$sys.out" 2>&1; then
		log "$sys: up at $((SECONDS - start)) s"
		sed "s/^/bench: $sys: /" "$W/setup-$sys.out"
	else
		sed "s/^/bench: $sys: /" "$W/setup-$sys.out"
		not_measured "$sys" "set-up failed: $(tail -n 3 "$W/setup-$sys.out" | tr '\n' ' ')"
	fi
done

order=(calib $SYSTEMS)
for ((t = 0; t <= TRIALS; t++)); do
	# one trial always; more only if the slowest so far would still fit
	if [ $t -ge 2 ] && [ $((SECONDS - start + longest)) -gt "$BUDGET" ]; then
		echo "BENCH-NOTE trials stopped after $((t - 1)) of $TRIALS: the next would pass BENCH_BUDGET=$BUDGET s"
		break
	fi
	t0=$SECONDS
	log "trial $t$([ $t = 0 ] && echo ' (warm-up, discarded)') at $((SECONDS - start)) s"
	n=${#order[@]}
	for ((i = 0; i < n; i++)); do
		sys=${order[$(((i + t) % n))]}
		[ "$sys" = calib ] || on "$sys" || continue
		only "$sys"
		idle "$t" "$sys"
		run_$sys "$t"
	done
	took=$((SECONDS - t0))
	[ $t -gt 0 ] && [ $took -gt $longest ] && longest=$took
done

# latencies pooled over the trials
for f in "$W"/lat-*; do
	[ -s "$f" ] || continue
	name=${f#"$W"/lat-}
	res=$("$B/bench_pctl" "$f")
	echo "BENCH-PCTL system=${name%%-*} case=${name#*-} ${res#PCTL }"
done

rc=0
for sys in calib $SYSTEMS; do
	if [ -z "${NOTMEASURED[$sys]:-}" ] && [ "${RUNS_OK[$sys]:-0}" = 0 ]; then
		not_measured "$sys" "every run failed (see BENCH-FAIL lines)"
	fi
	if [ -n "${NOTMEASURED[$sys]:-}" ]; then
		echo "BENCH-NOTMEASURED system=$sys reason=${NOTMEASURED[$sys]}"
		echo "bench: $sys could not be measured: ${NOTMEASURED[$sys]}" >&2
		rc=1
	fi
done
echo "BENCH-DONE seconds=$((SECONDS - start)) rc=$rc"
exit $rc
