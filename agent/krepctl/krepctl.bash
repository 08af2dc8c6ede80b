# SPDX-License-Identifier: GPL-2.0
# bash completion for krepctl: commands from 'krepctl help', subcommands
# of broker and topic, topic names from 'krepctl topic list' where a
# command takes a topic, and each command's keywords and options from its
# --help (the words before two spaces at the start of its option lines).
# Installed by 'make install' into bash-completion's directory.

_krepctl_words() { # the commands 'krepctl help' lists
	"$1" help 2>/dev/null |
		sed -n '/^Commands:$/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p'
}

_krepctl_keywords() { # KREPCTL CMD...: keywords and options of its --help
	"$@" --help 2>/dev/null |
		sed -n 's/^  \(-[-a-zA-Z]*\|[a-z][a-z-]*\)[ ,].*/\1/p' |
		sort -u
}

_krepctl() {
	local cur=${COMP_WORDS[COMP_CWORD]} prog=${COMP_WORDS[0]}
	local i cmd= sub= ncmd=0 words

	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-n|--netns) ((i++)); continue;;
		-*) continue;;
		esac
		if [ -z "$cmd" ]; then
			cmd=${COMP_WORDS[i]}
			ncmd=$i
		elif [ -z "$sub" ] && { [ "$cmd" = topic ] || [ "$cmd" = broker ]; }; then
			sub=${COMP_WORDS[i]}
			ncmd=$i
		fi
	done
	if [ -z "$cmd" ]; then
		if [[ $cur == -* ]]; then
			words="--netns --json --help --version"
		else
			words=$(_krepctl_words "$prog")
		fi
	elif [ "$cmd" = topic ] && [ -z "$sub" ]; then
		words="create delete list describe"
	elif [ "$cmd" = broker ] && [ -z "$sub" ]; then
		words="show set"
	elif [ $((COMP_CWORD - ncmd)) = 1 ] &&
	     [[ $cmd$sub =~ ^(produce|consume|offsets|delete-records|txn|stats|health|topicdelete|topicdescribe)$ ]]; then
		words=$("$prog" topic list 2>/dev/null | cut -d' ' -f1)
	else
		words=$(_krepctl_keywords "$prog" $cmd $sub)
	fi
	mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
}

complete -F _krepctl krepctl
