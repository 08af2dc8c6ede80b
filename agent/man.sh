#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# man.sh PROGRAM: a man page (section 8, roff) for krepctl or krepd, made
# from their --help, so that the two cannot drift apart: the synopsis and
# description from PROGRAM --help, then for krepctl a subsection per
# command 'krepctl help' lists (and per subcommand of broker and topic)
# with that command's --help. Written to standard output.
#
#	agent/man.sh agent/krepctl/krepctl >krepctl.8

set -euo pipefail

prog=$1
name=$(basename "$prog")

# --help text as roff lines kept as they are: backslashes doubled, a
# leading dot or quote guarded
verbatim() {
	printf '.nf\n'
	sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
	printf '.fi\n'
}

case $name in
krepctl) what="administer the krep broker of a network namespace";;
krepd)	 what="krep's controller, relay and metrics exporter";;
*)	 echo "man.sh: $name: not krepctl or krepd" >&2; exit 2;;
esac

printf '.TH %s 8 "" "krep" "System Administration"\n' "$(tr a-z A-Z <<<"$name")"
printf '.SH NAME\n%s \\- %s\n' "$name" "$what"
printf '.SH DESCRIPTION\n'
"$prog" --help | verbatim
if [ "$name" = krepctl ]; then
	printf '.SH COMMANDS\n'
	for c in $("$prog" help | sed -n '/^Commands:$/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p'); do
		[ "$c" = help ] && continue
		printf '.SS %s\n' "$c"
		"$prog" "$c" --help | verbatim
		case $c in
		broker) subs="show set";;
		topic) subs="create delete list describe";;
		*) subs=;;
		esac
		for s in $subs; do
			printf '.SS %s %s\n' "$c" "$s"
			"$prog" "$c" "$s" --help | verbatim
		done
	done
fi
printf '.SH SEE ALSO\n'
if [ "$name" = krepctl ]; then
	printf '.BR krepd (8)\n'
else
	printf '.BR krepctl (8)\n'
fi
