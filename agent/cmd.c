// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl's command plumbing, shared by every command file: dispatch from
 * a command table, help and usage errors, and connecting to the kernel.
 */
#include <stdarg.h>
#include <string.h>

#include "krepctl.h"

void krepctl_list_cmds(FILE *f, const struct krepctl_cmd *list)
{
	for (; list->name; list++)
		fprintf(f, "  %-10s %s\n", list->name, list->summary);
}

bool krepctl_is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help") ||
	       !strcmp(arg, "help");
}

/* Print "krepctl: <message>" and @usage to stderr; returns KREP_EXIT_USAGE. */
int krepctl_usage_error(void (*usage_fn)(FILE *f), const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", krep_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (usage_fn) {
		fputc('\n', stderr);
		usage_fn(stderr);
	}
	return KREP_EXIT_USAGE;
}

/*
 * Run the subcommand named by argv[1] from @list (argv[0] names the
 * group, @parent, or is a placeholder at the top level). With no
 * subcommand, run @dflt if there is one.
 */
int krepctl_dispatch(struct krepctl *ctl, const char *parent,
		     const struct krepctl_cmd *list, const char *dflt,
		     void (*usage_fn)(FILE *f), int argc, char **argv)
{
	char *dflt_argv[] = { (char *)dflt, NULL };
	const struct krepctl_cmd *c;
	const char *name;

	if (argc < 2) {
		if (!dflt)
			return krepctl_usage_error(usage_fn, "%s%smissing command",
						   parent ? parent : "",
						   parent ? ": " : "");
		argc = 1;
		argv = dflt_argv;
		name = dflt;
	} else {
		argc--;
		argv++;
		name = argv[0];
	}
	for (c = list; c->name; c++)
		if (!strcmp(c->name, name))
			return c->run(ctl, argc, argv);
	if (krepctl_is_help(name)) {
		usage_fn(stdout);
		return KREP_EXIT_OK;
	}
	return krepctl_usage_error(usage_fn, "%s%sunknown command '%s'",
				   parent ? parent : "", parent ? ": " : "",
				   name);
}

/*
 * Enter --netns (if given) and open the krep family. Called by commands
 * once their arguments are known to be good. Returns 0 or KREP_EXIT_ERR.
 */
int krepctl_connect(struct krepctl *ctl)
{
	if (ctl->gl.sk)
		return 0;
	if (ctl->netns && krep_netns_enter(ctl->netns))
		return KREP_EXIT_ERR;
	if (krep_genl_open(&ctl->gl))
		return KREP_EXIT_ERR;
	return 0;
}
