// SPDX-License-Identifier: GPL-2.0
/*
 * krepctl topic create|delete --controller: ask krepd --controller, over
 * its control socket (ctlsock.h), to create or delete a topic on every
 * broker of the cluster, with the replicas it assigns.
 *
 * Text output: one line per partition created, "TOPIC-P replicas=A,B,C";
 * a broker that was not reached or refused goes to stderr as
 * "krepctl: broker N: why" (krepd retries it every poll). --json prints
 * krepd's objects as they come. Exit status 0 when krepd took the
 * request, 1 when it refused it or could not be asked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctlsock.h"
#include "krepctl.h"

#define TOPIC_CTL_TIMEOUT_MS	30000

int krepctl_controller_opts(int *argc, char **argv, const char **sock,
			    void (*usage_fn)(FILE *f), const char *cmd)
{
	bool asked = false;
	int i, n = 1;

	*sock = KREP_DEFAULT_SOCKET;
	for (i = 1; i < *argc; i++) {
		if (!strcmp(argv[i], "--controller")) {
			asked = true;
		} else if (!strcmp(argv[i], "--socket")) {
			if (i + 1 == *argc) {
				krepctl_usage_error(usage_fn,
						    "%s: option '--socket' needs a value",
						    cmd);
				return -EINVAL;
			}
			*sock = argv[++i];
			asked = true;
		} else if (!strncmp(argv[i], "--socket=", 9)) {
			*sock = argv[i] + 9;
			asked = true;
		} else {
			argv[n++] = argv[i];
		}
	}
	*argc = n;
	if (asked && !**sock) {
		krepctl_usage_error(usage_fn, "%s: empty --socket", cmd);
		return -EINVAL;
	}
	return asked;
}

const char *krepctl_krepd_field(const char *line, const char *key, char *buf,
				size_t size)
{
	char pat[64];
	const char *p, *end;
	size_t len;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	if (*p == '"')
		end = strchr(++p, '"');
	else if (*p == '[')
		end = strchr(++p, ']');
	else
		end = p + strcspn(p, ",}");
	if (!end)
		return NULL;
	len = end - p;
	if (len >= size)
		len = size - 1;
	memcpy(buf, p, len);
	buf[len] = '\0';
	return buf;
}

int krepctl_krepd_call(const char *sock, const char *request, int timeout_ms,
		       void (*each)(const char *line, void *arg), void *arg)
{
	char *reply = NULL, *line, *next, *final = NULL;
	int err, ret = KREP_EXIT_OK;

	err = krep_ctlsock_call(sock, request, timeout_ms, &reply);
	if (err) {
		fprintf(stderr, "%s: cannot ask krepd at %s: %s%s\n", krep_prog,
			sock, strerror(-err),
			err == -ENOENT || err == -ECONNREFUSED ?
			" (is krepd --controller running?)" : "");
		return KREP_EXIT_ERR;
	}
	/* every line but the last is an object; the last says how it went */
	for (line = reply; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (line[0] != '{') {
			final = line;
			break;
		}
		each(line, arg);
	}
	if (!final) {
		fprintf(stderr, "%s: incomplete reply from krepd\n", krep_prog);
		ret = KREP_EXIT_ERR;
	} else if (!strncmp(final, "error ", 6)) {
		fprintf(stderr, "%s: krepd: %s\n", krep_prog, final + 6);
		ret = KREP_EXIT_ERR;
	} else if (strcmp(final, "ok")) {
		ret = KREP_EXIT_ERR;
	}
	free(reply);
	return ret;
}

static void print_object(const char *line)
{
	char topic[256], part[16], replicas[1024], broker[16], done[8];
	char err[512];

	if (krepctl_krepd_field(line, "replicas", replicas, sizeof(replicas)) &&
	    krepctl_krepd_field(line, "topic", topic, sizeof(topic)) &&
	    krepctl_krepd_field(line, "partition", part, sizeof(part))) {
		printf("%s-%s replicas=%s\n", topic, part, replicas);
	} else if (krepctl_krepd_field(line, "broker", broker, sizeof(broker)) &&
		   krepctl_krepd_field(line, "done", done, sizeof(done)) &&
		   strcmp(done, "true")) {
		fprintf(stderr, "%s: broker %s: %s\n", krep_prog, broker,
			krepctl_krepd_field(line, "error", err, sizeof(err)) ? err : "?");
	}
}

static void each_object(const char *line, void *arg)
{
	const struct krepctl *ctl = arg;

	if (ctl->json)
		printf("%s\n", line);
	else
		print_object(line);
}

int krepctl_topic_controller(struct krepctl *ctl, const char *sock,
			     const char *request)
{
	if (ctl->netns) {
		fprintf(stderr, "%s: --controller talks to krepd's control socket, not to a broker: drop --netns\n",
			krep_prog);
		return KREP_EXIT_USAGE;
	}
	return krepctl_krepd_call(sock, request, TOPIC_CTL_TIMEOUT_MS,
				  each_object, ctl);
}
