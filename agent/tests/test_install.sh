#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-only check of 'make -C agent install' into a scratch DESTDIR with
# PREFIX=/usr: the programs run from there; the man pages made from
# --help have a subsection for every command 'krepctl help' lists and
# format without a groff warning; krepctl's bash completion completes
# commands, subcommands and keywords; the systemd units start
# /usr/sbin/krepd; the bpftrace tools are there. KTAP on stdout.
#
# Usage: agent/tests/test_install.sh

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=agent/tests/lib.sh
. "$here/lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
d=$tmp/root

ktap_plan 7

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

grep -qx 'ExecStart=/usr/sbin/krepd --controller --config /etc/krep/krepd.conf --foreground' \
	"$d/usr/lib/systemd/system/krepd.service" &&
	grep -q '^ExecStart=/usr/sbin/krepd --relay ' \
		"$d/usr/lib/systemd/system/krep-relay.service"
ok $? "systemd units start \$SBINDIR/krepd"

n=0
for t in "$here"/../../tools/bpftrace/*.bt; do
	[ -x "$d/usr/share/krep/bpftrace/${t##*/}" ] && n=$((n + 1))
done
[ "$n" -ge 4 ]
ok $? "the bpftrace tools in /usr/share/krep/bpftrace ($n)"

ktap_finish
