// SPDX-License-Identifier: GPL-2.0
/*
 * tcp_rr - the calibration's TCP ping-pong: the client writes --size bytes,
 * the server echoes them, the client reads them back; one round trip per
 * request, TCP_NODELAY on both ends (netperf's TCP_RR).
 *
 *   tcp_rr server ADDR PORT [--lifetime SECONDS]
 *   tcp_rr client ADDR PORT [-s SIZE] [-n COUNT] [-d SECONDS] [-l LATFILE]
 *
 * The server serves every connection from a thread of its own and exits by
 * itself after --lifetime seconds (default 1200).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"

static const char usage[] =
"Usage: tcp_rr server ADDR PORT [--lifetime SECONDS]\n"
"       tcp_rr client ADDR PORT [-s SIZE] [-n COUNT] [-d SECONDS] [-l LATFILE]\n";

static struct sockaddr_in sa;

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void *echo(void *p)
{
	int fd = (int)(long)p;
	char buf[65536];
	ssize_t n, w, off;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n; off += w) {
			w = write(fd, buf + off, n - off);
			if (w <= 0)
				goto out;
		}
	}
out:
	close(fd);
	return NULL;
}

static int serve(int lifetime)
{
	int one = 1, lfd, fd;
	pthread_t th;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(lfd, 16)) {
		fprintf(stderr, "%s: cannot listen: %s\n", bench_prog,
			strerror(errno));
		return 1;
	}
	alarm(lifetime);
	for (;;) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		nodelay(fd);
		if (pthread_create(&th, NULL, echo, (void *)(long)fd))
			close(fd);
		else
			pthread_detach(th);
	}
}

struct conn {
	int fd, size;
	char *buf;
};

static struct bench_opts opts;

static void *conn_init(int tid, void *arg)
{
	struct conn *c = calloc(1, sizeof(*c));

	(void)tid;
	(void)arg;
	if (!c)
		return NULL;
	c->size = opts.size;
	c->buf = malloc(c->size);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (!c->buf || c->fd < 0 ||
	    connect(c->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "%s: cannot connect: %s\n", bench_prog,
			strerror(errno));
		return NULL;
	}
	nodelay(c->fd);
	bench_fill((uint8_t *)c->buf, c->size, 1);
	return c;
}

static int conn_op(void *ctx, uint64_t seq)
{
	struct conn *c = ctx;
	ssize_t n;
	int off;

	(void)seq;
	if (write(c->fd, c->buf, c->size) != c->size)
		return -1;
	for (off = 0; off < c->size; off += n) {
		n = read(c->fd, c->buf + off, c->size - off);
		if (n <= 0)
			return -1;
	}
	return 0;
}

static void conn_fini(void *ctx)
{
	struct conn *c = ctx;

	close(c->fd);
	free(c->buf);
	free(c);
}

static int lifetime_opt(const char *name, const char *val, void *arg)
{
	if (strcmp(name, "--lifetime"))
		return -1;
	*(int *)arg = atoi(val);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct bench_ops ops = {
		.thread_init = conn_init,
		.op = conn_op,
		.thread_fini = conn_fini,
	};
	struct bench_result r;
	int lifetime = 1200, rc;

	bench_prog = "tcp_rr";
	if (argc < 4) {
		fputs(usage, stderr);
		return 2;
	}
	sa.sin_family = AF_INET;
	sa.sin_port = htons(atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1) {
		fprintf(stderr, "%s: bad address %s\n", bench_prog, argv[2]);
		return 2;
	}
	argv[3] = argv[1];
	if (!strcmp(argv[1], "server")) {
		bench_parse(argc - 3, argv + 3, &opts, lifetime_opt, &lifetime,
			    usage);
		return serve(lifetime);
	}
	if (strcmp(argv[1], "client")) {
		fputs(usage, stderr);
		return 2;
	}
	bench_parse(argc - 3, argv + 3, &opts, NULL, NULL, usage);
	rc = bench_run(&opts, &ops, NULL, &r);
	bench_print(&opts, &r, NULL);
	return rc ? 1 : bench_status(&r);
}
