// SPDX-License-Identifier: GPL-2.0
/*
 * krepd --controller's configuration file and flags (cluster.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "ep.h"
#include "genl.h"

#define TOKENS_MAX	8

static const struct {
	const char *key;
	uint32_t min, max;
} settings[KREP_CS_NSETTINGS] = {
	[KREP_CS_SESSION_TIMEOUT]	= { "session-timeout-ms", 100, 3600000 },
	[KREP_CS_POLL]			= { "poll-ms", 10, 60000 },
	[KREP_CS_LEASE]			= { "lease-ms", 100, 600000 },
	[KREP_CS_PREFERRED]		= { "preferred-election-interval-ms",
					    0, 86400000 },
	[KREP_CS_STATE_FILE]		= { "state-file" },
	[KREP_CS_SOCKET]		= { "socket" },
};

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

void krep_cluster_init(struct krep_cluster *c)
{
	memset(c, 0, sizeof(*c));
	c->session_timeout_ms = KREP_DEFAULT_SESSION_TIMEOUT_MS;
	c->poll_ms = KREP_DEFAULT_POLL_MS;
	c->preferred_ms = KREP_DEFAULT_PREFERRED_MS;
	snprintf(c->state_file, sizeof(c->state_file), "%s",
		 KREP_DEFAULT_STATE_FILE);
	snprintf(c->socket, sizeof(c->socket), "%s", KREP_DEFAULT_SOCKET);
}

const struct krep_cluster_broker *krep_cluster_broker(const struct krep_cluster *c,
						      uint32_t id)
{
	size_t i;

	for (i = 0; i < c->nbrokers; i++)
		if (c->brokers[i].id == id)
			return &c->brokers[i];
	return NULL;
}

static int parse_id(const char *s, uint32_t *id, char *err, size_t errlen)
{
	if (krep_u32_parse(s, id) || *id > KREP_BROKER_ID_MAX)
		return fail(err, errlen,
			    "'%s' is not a broker id (0..%u)", s,
			    KREP_BROKER_ID_MAX);
	return 0;
}

static int check_netns(const char *name, char *err, size_t errlen)
{
	if (!*name || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, "..") ||
	    strlen(name) >= sizeof(((struct krep_session_addr *)0)->netns))
		return fail(err, errlen, "invalid network namespace name '%s'",
			    name);
	return 0;
}

/* "HOST:PORT" or "[V6]:PORT": a host and a port 1..65535. */
static int check_relay(const char *hp, size_t len, char *err, size_t errlen)
{
	char buf[sizeof(((struct krep_session_addr *)0)->relay)];
	const char *colon;
	uint32_t port;

	if (len >= sizeof(buf))
		return fail(err, errlen, "relay address too long");
	memcpy(buf, hp, len);
	buf[len] = '\0';
	if (buf[0] == '[') {
		const char *rb = strchr(buf, ']');

		if (!rb || rb == buf + 1 || rb[1] != ':')
			return fail(err, errlen,
				    "relay '%s' is not HOST:PORT or [IPV6]:PORT",
				    buf);
		colon = rb + 1;
	} else {
		colon = strrchr(buf, ':');
		if (!colon || colon == buf || memchr(buf, ':', colon - buf))
			return fail(err, errlen,
				    "relay '%s' is not HOST:PORT or [IPV6]:PORT",
				    buf);
	}
	if (krep_u32_parse(colon + 1, &port) || !port || port > 65535)
		return fail(err, errlen, "relay '%s': port '%s' is not 1..65535",
			    buf, colon + 1);
	return 0;
}

static int check_path(const char *what, const char *path, size_t size,
		      char *err, size_t errlen)
{
	if (!*path)
		return fail(err, errlen, "%s: empty path", what);
	if (strlen(path) >= size)
		return fail(err, errlen, "%s: path longer than %zu characters",
			    what, size - 1);
	return 0;
}

static int broker_add(struct krep_cluster *c, const struct krep_cluster_broker *b,
		      char *err, size_t errlen)
{
	if (krep_cluster_broker(c, b->id))
		return fail(err, errlen, "broker %u given twice", b->id);
	if (c->nbrokers >= KREP_CLUSTER_BROKERS_MAX)
		return fail(err, errlen, "more than %d brokers",
			    KREP_CLUSTER_BROKERS_MAX);
	c->brokers[c->nbrokers++] = *b;
	return 0;
}

/* "broker ID local|netns NAME|relay HOST:PORT secret-file PATH" */
static int broker_line(struct krep_cluster *c, char **tok, int n,
		       char *err, size_t errlen)
{
	struct krep_cluster_broker b = { 0 };
	struct krep_session_addr *a = &b.addr;
	int want;

	if (n < 3)
		return fail(err, errlen,
			    "broker: expected 'broker ID local|netns NAME|relay HOST:PORT secret-file PATH'");
	if (parse_id(tok[1], &b.id, err, errlen))
		return -EINVAL;
	if (!strcmp(tok[2], "local")) {
		a->kind = KREP_SESSION_LOCAL;
		want = 3;
	} else if (!strcmp(tok[2], "netns")) {
		a->kind = KREP_SESSION_NETNS;
		want = 4;
		if (n < 4)
			return fail(err, errlen,
				    "broker %u netns: missing namespace name",
				    b.id);
		if (check_netns(tok[3], err, errlen))
			return -EINVAL;
		strcpy(a->netns, tok[3]);
	} else if (!strcmp(tok[2], "relay")) {
		a->kind = KREP_SESSION_RELAY;
		want = 6;
		if (n < 4)
			return fail(err, errlen,
				    "broker %u relay: missing HOST:PORT", b.id);
		if (check_relay(tok[3], strlen(tok[3]), err, errlen))
			return -EINVAL;
		strcpy(a->relay, tok[3]);
		if (n < 6 || strcmp(tok[4], "secret-file"))
			return fail(err, errlen,
				    "broker %u relay: expected 'secret-file PATH' after %s",
				    b.id, tok[3]);
		if (check_path("secret-file", tok[5], sizeof(a->secret_file),
			       err, errlen))
			return -EINVAL;
		strcpy(a->secret_file, tok[5]);
	} else {
		return fail(err, errlen,
			    "broker %u: unknown kind '%s' (local, netns or relay)",
			    b.id, tok[2]);
	}
	if (n > want)
		return fail(err, errlen, "broker %u: unexpected '%s'", b.id,
			    tok[want]);
	return broker_add(c, &b, err, errlen);
}

int krep_cluster_set(struct krep_cluster *c, enum krep_cluster_setting setting,
		     const char *val, char *err, size_t errlen)
{
	const char *key = settings[setting].key;
	uint32_t v;

	switch (setting) {
	case KREP_CS_STATE_FILE:
		if (check_path(key, val, sizeof(c->state_file), err, errlen))
			return -EINVAL;
		strcpy(c->state_file, val);
		return 0;
	case KREP_CS_SOCKET:
		if (check_path(key, val, sizeof(c->socket), err, errlen))
			return -EINVAL;
		strcpy(c->socket, val);
		return 0;
	default:
		break;
	}
	if (krep_u32_parse(val, &v))
		return fail(err, errlen, "%s: '%s' is not a number", key, val);
	if (v < settings[setting].min || v > settings[setting].max)
		return fail(err, errlen, "%s: %u is not in %u..%u", key, v,
			    settings[setting].min, settings[setting].max);
	switch (setting) {
	case KREP_CS_SESSION_TIMEOUT:
		c->session_timeout_ms = v;
		break;
	case KREP_CS_POLL:
		c->poll_ms = v;
		break;
	case KREP_CS_LEASE:
		c->lease_ms = v;
		break;
	case KREP_CS_PREFERRED:
		c->preferred_ms = v;
		break;
	default:
		break;
	}
	return 0;
}

int krep_cluster_parse_line(struct krep_cluster *c, const char *line,
			    char *err, size_t errlen)
{
	char buf[1024], *tok[TOKENS_MAX], *p, *save = NULL;
	int n = 0, i;

	if (strlen(line) >= sizeof(buf))
		return fail(err, errlen, "line longer than %zu characters",
			    sizeof(buf) - 1);
	strcpy(buf, line);
	p = strchr(buf, '#');
	if (p)
		*p = '\0';
	for (p = strtok_r(buf, " \t\r\n", &save); p;
	     p = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == TOKENS_MAX)
			return fail(err, errlen, "too many words");
		tok[n++] = p;
	}
	if (!n)
		return 0;
	if (!strcmp(tok[0], "broker"))
		return broker_line(c, tok, n, err, errlen);
	for (i = 0; i < KREP_CS_NSETTINGS; i++) {
		if (strcmp(tok[0], settings[i].key))
			continue;
		if (n != 2)
			return fail(err, errlen, "%s: expected one value",
				    tok[0]);
		if (c->set[i])
			return fail(err, errlen, "%s given twice", tok[0]);
		if (krep_cluster_set(c, i, tok[1], err, errlen))
			return -EINVAL;
		c->set[i] = true;
		return 0;
	}
	return fail(err, errlen, "unknown keyword '%s'", tok[0]);
}

int krep_cluster_load(struct krep_cluster *c, const char *path)
{
	char *line = NULL, err[256];
	size_t size = 0;
	unsigned int lineno = 0;
	ssize_t len;
	int ret = 0;
	FILE *f;

	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "%s: cannot open %s: %s\n", krep_prog, path,
			strerror(errno));
		return -1;
	}
	while ((len = getline(&line, &size, f)) >= 0) {
		lineno++;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (strlen(line) != (size_t)len) {
			fprintf(stderr, "%s: %s:%u: NUL byte in line\n",
				krep_prog, path, lineno);
			ret = -1;
			continue;
		}
		if (krep_cluster_parse_line(c, line, err, sizeof(err))) {
			fprintf(stderr, "%s: %s:%u: %s\n", krep_prog, path,
				lineno, err);
			ret = -1;
		}
	}
	if (ferror(f)) {
		fprintf(stderr, "%s: cannot read %s: %s\n", krep_prog, path,
			strerror(errno));
		ret = -1;
	}
	free(line);
	fclose(f);
	return ret;
}

int krep_cluster_broker_flag(struct krep_cluster *c, const char *val,
			     char *err, size_t errlen)
{
	struct krep_cluster_broker b = { 0 };
	struct krep_session_addr *a = &b.addr;
	const char *at = strchr(val, '@'), *spec, *hp, *file;
	char id[16];

	if (!at || at == val || (size_t)(at - val) >= sizeof(id))
		return fail(err, errlen,
			    "expected ID@local, ID@netns:NAME or ID@relay:HOST:PORT:SECRETFILE");
	memcpy(id, val, at - val);
	id[at - val] = '\0';
	if (parse_id(id, &b.id, err, errlen))
		return -EINVAL;
	spec = at + 1;
	if (!strcmp(spec, "local")) {
		a->kind = KREP_SESSION_LOCAL;
	} else if (!strncmp(spec, "netns:", 6)) {
		a->kind = KREP_SESSION_NETNS;
		if (check_netns(spec + 6, err, errlen))
			return -EINVAL;
		strcpy(a->netns, spec + 6);
	} else if (!strncmp(spec, "relay:", 6)) {
		a->kind = KREP_SESSION_RELAY;
		hp = spec + 6;
		/* HOST:PORT:FILE, HOST maybe [V6]: the file follows the port */
		file = hp;
		if (*file == '[')
			file = strchr(file, ']') ?: file;
		file = strchr(file, ':');
		file = file ? strchr(file + 1, ':') : NULL;
		if (!file)
			return fail(err, errlen,
				    "expected ID@relay:HOST:PORT:SECRETFILE");
		if (check_relay(hp, file - hp, err, errlen))
			return -EINVAL;
		memcpy(a->relay, hp, file - hp);
		a->relay[file - hp] = '\0';
		if (check_path("secret file", file + 1, sizeof(a->secret_file),
			       err, errlen))
			return -EINVAL;
		strcpy(a->secret_file, file + 1);
	} else {
		return fail(err, errlen,
			    "expected ID@local, ID@netns:NAME or ID@relay:HOST:PORT:SECRETFILE");
	}
	return broker_add(c, &b, err, errlen);
}

int krep_cluster_finish(struct krep_cluster *c, char *err, size_t errlen)
{
	uint32_t lease;

	if (!c->nbrokers)
		return fail(err, errlen,
			    "no brokers: give --broker or 'broker' lines in --config");
	if (c->session_timeout_ms < 2 * c->poll_ms)
		return fail(err, errlen,
			    "session-timeout-ms %u must be at least 2 x poll-ms (%u)",
			    c->session_timeout_ms, c->poll_ms);
	if (c->lease_ms && c->lease_ms < 2 * c->poll_ms)
		return fail(err, errlen,
			    "lease-ms %u must be at least 2 x poll-ms (%u)",
			    c->lease_ms, c->poll_ms);
	if (c->preferred_ms && c->preferred_ms < c->poll_ms)
		return fail(err, errlen,
			    "preferred-election-interval-ms %u is shorter than poll-ms (%u)",
			    c->preferred_ms, c->poll_ms);
	if (!c->lease_ms) {
		lease = c->session_timeout_ms;
		if (lease < 2 * c->poll_ms)
			lease = 2 * c->poll_ms;
		if (lease < settings[KREP_CS_LEASE].min)
			lease = settings[KREP_CS_LEASE].min;
		if (lease > settings[KREP_CS_LEASE].max)
			lease = settings[KREP_CS_LEASE].max;
		c->lease_ms = lease;
	}
	return 0;
}
