#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-only checks of krepctl's command line: every command's --help exits
# 0 and prints its usage on stdout; bad command lines exit 2 with a
# one-line usage error and "Try 'krepctl COMMAND --help'." on stderr
# (a did-you-mean for a near miss; JSON on stdout with --json), before any
# contact with the kernel; and, as the host has no krep module, that
# krepctl says so with a hint to load it. Output is KTAP (selftests/lib.sh); the exit status is 1 if any
# check failed.
#
# Usage: agent/tests/test_cli.sh [PATH-TO-KREPCTL]

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=agent/tests/lib.sh
. "$here/lib.sh"

K=${1:-$KREPCTL}

# usage MESSAGE ARGS...: exits 2 with two lines on stderr, MESSAGE and
# "Try 'krepctl ... --help'.", no stdout
usage() {
	local msg=$1 out err rc

	shift
	err=$("$K" "$@" 2>&1 >/dev/null </dev/null)
	rc=$?
	out=$("$K" "$@" 2>/dev/null </dev/null)
	[ $rc = 2 ] && [[ $err == *"$msg"* ]] &&
		[[ $(tail -n1 <<<"$err") == "Try 'krepctl"*" --help'." ]] &&
		[ "$(wc -l <<<"$err")" = 2 ] && [ -z "$out" ]
	ok $? "krepctl $* exits 2: $msg"
}

# exact DESC WANT_STATUS WANT_STDERR WANT_STDOUT ARGS...
exact() {
	local desc=$1 rc_want=$2 err_want=$3 out_want=$4 out err rc

	shift 4
	err=$("$K" "$@" 2>&1 >/dev/null </dev/null)
	rc=$?
	out=$("$K" "$@" 2>/dev/null </dev/null)
	[ "$rc" = "$rc_want" ] && [ "$err" = "$err_want" ] &&
		[ "$out" = "$out_want" ]
	ok $? "$desc" || { ktap_diag "exit $rc"; ktap_diag "stderr: $err"; ktap_diag "stdout: $out"; }
}

# README.md's "krepctl command reference" has a synopsis line for every
# command "krepctl help" lists ("    krepctl [OPTION]... COMMAND ..."),
# so that the two cannot drift apart: one check per command
readme=$KREP_ROOT/README.md
ref=$(sed -n '/^## krepctl command reference$/,/^## /p' "$readme" 2>/dev/null)
cmds=$("$K" help 2>/dev/null | sed -n '/^Commands:$/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')

ktap_plan $((57 + $(wc -w <<<"$cmds")))

help "$K"
help "$K" broker
help "$K" topic
help "$K" topic create
help "$K" topic delete
help "$K" topic list
help "$K" topic describe
help "$K" produce
help "$K" consume
help "$K" offsets
help "$K" delete-records
help "$K" txn
help "$K" health

out=$("$K" help 2>/dev/null)
for c in broker topic produce consume offsets delete-records txn help; do
	[[ $out == *"  $c "* ]]
	ok $? "krepctl help lists $c"
done

[ -n "$ref" ] && [ "$(wc -w <<<"$cmds")" -ge 10 ]
ok $? "README.md has a command reference and krepctl help lists commands"
for c in $cmds; do
	grep -Eq "^    krepctl( \[[^]]*\])* $c( |\$)" <<<"$ref"
	ok $? "README.md's command reference has krepctl $c"
done

out=$("$K" help consume 2>/dev/null)
[[ $out == "Usage: krepctl consume"* ]]
ok $? "krepctl help consume shows consume's usage"
out=$("$K" help topic create 2>/dev/null)
[[ $out == "Usage: krepctl topic create"* ]]
ok $? "krepctl help topic create shows its usage"

usage "unknown command 'bogus'" bogus
usage "topic: unknown command 'rename'" topic rename x
usage "missing topic name" topic create
usage "unknown keyword 'colour'" topic create t colour red
usage "unknown config key 'nope'" topic create t config nope=1
usage "missing topic name" topic delete
usage "unexpected argument 'b'" topic delete a b
usage "unexpected argument 'x'" topic list x
usage "unexpected argument 'b'" topic describe a b
usage "missing topic" produce
usage "acks must be 0, 1 or all" produce t acks 2
usage "batch must be" produce t batch 0
usage "is not PRODUCER_ID:EPOCH" produce t txn 5
usage "missing topic" consume
usage "is not beginning, end" consume t -o later
usage "isolation must be" consume t --isolation dirty
usage "format must be" consume t --format csv
usage "unknown option '-z'" consume t -z
usage "missing topic" offsets
usage "unexpected argument 'soon'" offsets t soon
usage "missing 'before OFFSET'" delete-records t
usage "missing begin, commit or abort" txn t 1:0
usage "missing PID:EPOCH" txn t commit
usage "producer epoch '70000'" txn t 1:70000 begin
usage "unknown option '--bogus'" topic describe --bogus

exact "a mistyped command: one line, a did-you-mean, where --help is" 2 \
	"krepctl: unknown command 'consum'; did you mean 'consume'?
Try 'krepctl --help'." "" consum t
exact "a mistyped subcommand names its own --help" 2 \
	"krepctl: topic: unknown command 'craete'; did you mean 'create'?
Try 'krepctl topic --help'." "" topic craete t
exact "a mistyped keyword of produce" 2 \
	"krepctl: produce: unknown keyword 'bacth'; did you mean 'batch'?
Try 'krepctl produce --help'." "" produce t bacth 2
exact "a mistyped option of consume" 2 \
	"krepctl: consume: unknown option '--folow'; did you mean '--follow'?
Try 'krepctl consume --help'." "" consume t --folow
exact "no suggestion when nothing is near" 2 \
	"krepctl: topic create: unknown keyword 'colour'
Try 'krepctl topic create --help'." "" topic create t colour red
exact "a usage error with --json: the object on stdout as well" 2 \
	"krepctl: produce: unknown keyword 'bacth'; did you mean 'batch'?
Try 'krepctl produce --help'." \
	'{"error":null,"code":null,"errno":"EINVAL","message":"produce: unknown keyword '"'bacth'; did you mean 'batch'?"'","usage":"krepctl produce --help"}' \
	produce t bacth 2 --json

# The host never loads krep.ko (docs/design.md, section 5): krepctl says
# so with a hint, as text and as JSON
exact "module not loaded: the error and a hint to load it" 1 \
	"krepctl: the krep module is not loaded (no generic netlink family 'krep')
krepctl: hint: load it: modprobe krep, or insmod kmod/krep.ko from the build tree, with its parameters (broker_id=...)" \
	"" topic list
exact "module not loaded, with --json" 1 \
	"krepctl: the krep module is not loaded (no generic netlink family 'krep')
krepctl: hint: load it: modprobe krep, or insmod kmod/krep.ko from the build tree, with its parameters (broker_id=...)" \
	'{"error":null,"code":null,"errno":"ENOENT","message":"the krep module is not loaded (no generic netlink family '"'krep'"')","hint":"load it: modprobe krep, or insmod kmod/krep.ko from the build tree, with its parameters (broker_id=...)"}' \
	--json topic list

ktap_finish
