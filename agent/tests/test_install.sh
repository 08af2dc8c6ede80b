#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-only check of 'make -C agent install' into a scratch DESTDIR with
# PREFIX=/usr: the programs run from there; the man pages made from
# --help have a subsection for every command 'krepctl help' lists and
# format without a groff warning; krepctl's bash completion completes
# commands, subcommands and keywords; the systemd units start
# /usr/sbin/krepd, krep-module.service runs modprobe krep before the relay
# and krepd --metrics, and its example /etc/modprobe.d/krep.conf gives
# modprobe one "options krep" line; systemd-analyze verify takes the units
# (installed a second time under a PREFIX of their own, where their
# programs are); the bpftrace tools are there. KTAP on stdout.
#
# Usage: agent/tests/test_install.sh

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=agent/tests/lib.sh
. "$here/lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
d=$tmp/root

ktap_plan 10

make -s --no-print-directory -C "$here/.." install DESTDIR="$d" PREFIX=/usr >"$tmp/make.out" 2>&1
ok $? "make install DESTDIR=... PREFIX=/usr"
[ -s "$tmp/make.out" ] && ktap_diag_stdin <"$tmp/make.out"

"$d/usr/sbin/krepctl" --version | grep -q '^krepctl ' &&
	"$d/usr/sbin/krepd" --help | grep -q '^Usage: krepd'
ok $? "the installed krepctl and krepd run"

man8=$d/usr/share/man/man8
cmds=$("$d/usr/sbin/krepctl" help | sed -n '/^Commands:$/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
missing=
for c in $cmds; do
	[ "$c" = help ] || grep -qx ".SS $c" "$man8/krepctl.8" || missing="$missing $c"
done
head -n1 "$man8/krepctl.8" | grep -q '^\.TH KREPCTL 8 ' && [ -z "$missing" ] &&
	grep -qx '.SS topic create' "$man8/krepctl.8" &&
	head -n1 "$man8/krepd.8" | grep -q '^\.TH KREPD 8 '
ok $? "man pages: krepctl.8 with a subsection per command, krepd.8"
[ -z "$missing" ] || ktap_diag "krepctl.8 lacks:$missing"

if command -v groff >/dev/null; then
	out=$(LC_ALL=C groff -man -Tutf8 -ww -z "$man8/krepctl.8" "$man8/krepd.8" 2>&1)
	[ -z "$out" ]
	ok $? "the man pages format without a groff warning"
	[ -z "$out" ] || ktap_diag "$out"
else
	ktap_fail "groff is installed (scripts/deps.sh installs it)"
fi

# complete WORDS...: what the completion offers for the last word
complete_words() {
	(
		PATH=$d/usr/sbin:$PATH
		# shellcheck source=agent/krepctl/krepctl.bash
		. "$d/usr/share/bash-completion/completions/krepctl"
		COMP_WORDS=("$@")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_krepctl
		echo "${COMPREPLY[*]}"
	)
}
[ "$(complete_words krepctl pro)" = produce ] &&
	[ "$(complete_words krepctl topic de)" = "delete describe" ] &&
	[ "$(complete_words krepctl produce t ba)" = batch ] &&
	[ "$(complete_words krepctl consume t --fo)" = "--follow --format" ]
ok $? "bash completion: commands, subcommands, keywords and options"

u=$d/usr/lib/systemd/system
grep -qx 'ExecStart=/usr/sbin/krepd --controller --config /etc/krep/krepd.conf --foreground' \
	"$u/krepd.service" &&
	grep -q '^ExecStart=/usr/sbin/krepd --relay ' "$u/krep-relay.service" &&
	grep -qx 'ExecStart=/usr/sbin/krepd --metrics ${KREP_METRICS} --foreground' \
		"$u/krep-metrics.service"
ok $? "systemd units start \$SBINDIR/krepd"

# unit FILE KEY: the values of KEY= in FILE, a line each
unit() { sed -n "s/^$2=//p" "$1"; }
[ "$(unit "$u/krep-module.service" ExecStart)" = "/sbin/modprobe krep" ] &&
	[ "$(unit "$u/krep-module.service" ExecStop)" = "/sbin/modprobe -r krep" ] &&
	[ "$(unit "$u/krep-module.service" Type)" = oneshot ] &&
	[ "$(unit "$u/krep-module.service" RemainAfterExit)" = yes ] &&
	unit "$u/krep-module.service" After | grep -qw network-online.target &&
	unit "$u/krep-relay.service" Wants | grep -qw krep-module.service &&
	unit "$u/krep-relay.service" After | grep -qw krep-module.service &&
	unit "$u/krep-metrics.service" Wants | grep -qw krep-module.service &&
	unit "$u/krep-metrics.service" After | grep -qw krep-module.service &&
	unit "$u/krepd.service" After | grep -qw krep-module.service &&
	grep -q ' /usr/share/krep/examples/modprobe.d/krep.conf' \
		"$u/krep-module.service"
ok $? "krep-module.service: modprobe krep after the network, before the relay, krepd --metrics and the controller"

# the example, uncommented, is one "options krep" line for modprobe
ex=$d/usr/share/krep/examples/modprobe.d/krep.conf
sed -e 's/^#options /options /' -e 's/^#\t/\t/' "$ex" >"$tmp/krep.conf"
opts=$(modprobe -C "$tmp/krep.conf" --showconfig 2>&1 | grep '^options krep ')
[ -f "$ex" ] && [ "$(wc -l <<<"$opts")" = 1 ] &&
	[[ $opts == "options krep broker_id=1 "*" log_dir=/var/lib/krep/logs" ]]
ok $? "the example modprobe.d/krep.conf: one options line for modprobe"
[ -n "$opts" ] || ktap_diag "modprobe --showconfig: nothing for krep"

# systemd-analyze verify wants the programs at their ExecStart paths
p=$tmp/prefix
make -s --no-print-directory -C "$here/.." install PREFIX="$p" >"$tmp/make2.out" 2>&1 &&
	out=$(cd "$p/lib/systemd/system" &&
	      SYSTEMD_LOG_LEVEL=warning systemd-analyze verify \
		./krep-module.service ./krepd.service ./krep-relay.service \
		./krep-metrics.service 2>&1) &&
	[ -z "$out" ]
ok $? "systemd-analyze verify: the four units"
[ -z "$out" ] || ktap_diag "$out"

n=0
for t in "$here"/../../tools/bpftrace/*.bt; do
	[ -x "$d/usr/share/krep/bpftrace/${t##*/}" ] && n=$((n + 1))
done
[ "$n" -ge 4 ]
ok $? "the bpftrace tools in /usr/share/krep/bpftrace ($n)"

ktap_finish
