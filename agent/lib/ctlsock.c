// SPDX-License-Identifier: GPL-2.0
/*
 * krepd --controller's control socket, both ends (ctlsock.h).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctlsock.h"

struct krep_ctlsock {
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int addr_of(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (!*path || strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

/* Wait for @events on @fd until @deadline: 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int64_t left;
	int ret;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		ret = poll(&pfd, 1, (int)left);
		if (ret > 0)
			return 0;
		if (ret < 0 && errno != EINTR)
			return -errno;
	}
}

static int write_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	ssize_t n;
	int err;

	while (len) {
		n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			buf += n;
			len -= n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		err = wait_fd(fd, POLLOUT, deadline);
		if (err)
			return err;
	}
	return 0;
}

struct krep_ctlsock *krep_ctlsock_open(const char *path, char *err,
				       size_t errlen)
{
	struct krep_ctlsock *cs;
	struct sockaddr_un sa;
	char dir[PATH_MAX];
	int fd;

	if (addr_of(path, &sa)) {
		fail(err, errlen, "socket path '%s' is empty or too long", path);
		return NULL;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	if (mkdir(dirname(dir), 0755) && errno != EEXIST) {
		fail(err, errlen, "cannot create the directory of %s: %s", path,
		     strerror(errno));
		return NULL;
	}
	/* a live krepd answers: keep its socket; a dead one's goes */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			close(fd);
			fail(err, errlen,
			     "%s: another krepd --controller listens there",
			     path);
			return NULL;
		}
		close(fd);
		unlink(path);
	}
	cs = calloc(1, sizeof(*cs));
	if (!cs) {
		fail(err, errlen, "out of memory");
		return NULL;
	}
	strcpy(cs->path, path);
	cs->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (cs->fd < 0 || bind(cs->fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(path, 0600) || listen(cs->fd, 8)) {
		fail(err, errlen, "cannot listen on %s: %s", path,
		     strerror(errno));
		if (cs->fd >= 0)
			close(cs->fd);
		free(cs);
		return NULL;
	}
	return cs;
}

void krep_ctlsock_close(struct krep_ctlsock *cs)
{
	if (!cs)
		return;
	close(cs->fd);
	unlink(cs->path);
	free(cs);
}

int krep_ctlsock_fd(const struct krep_ctlsock *cs)
{
	return cs->fd;
}

/* Read one line from @fd into @buf before @deadline; 0 or -errno. */
static int read_line(int fd, char *buf, size_t size, int64_t deadline)
{
	size_t len = 0;
	ssize_t n;
	char *nl;
	int err;

	for (;;) {
		n = recv(fd, buf + len, size - 1 - len, MSG_DONTWAIT);
		if (n > 0) {
			len += n;
			buf[len] = '\0';
			nl = strchr(buf, '\n');
			if (nl) {
				*nl = '\0';
				if (nl > buf && nl[-1] == '\r')
					nl[-1] = '\0';
				return 0;
			}
			if (len == size - 1)
				return -EMSGSIZE;
			continue;
		}
		if (n == 0) {
			/* EOF: a request without its newline is one too */
			buf[len] = '\0';
			return len ? 0 : -ENODATA;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		err = wait_fd(fd, POLLIN, deadline);
		if (err)
			return err;
	}
}

void krep_ctlsock_serve(struct krep_ctlsock *cs, krep_ctlsock_handler handle,
			void *arg)
{
	char line[KREP_CTLSOCK_LINE_MAX + 1], *reply = NULL;
	int64_t deadline = now_ms() + KREP_CTLSOCK_TIMEOUT_MS;
	size_t size = 0;
	FILE *out;
	int fd;

	fd = accept4(cs->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	if (read_line(fd, line, sizeof(line), deadline)) {
		close(fd);
		return;
	}
	out = open_memstream(&reply, &size);
	if (!out) {
		close(fd);
		return;
	}
	handle(line, out, arg);
	if (!fclose(out))
		write_all(fd, reply, size,
			  now_ms() + KREP_CTLSOCK_TIMEOUT_MS);
	free(reply);
	close(fd);
}

int krep_ctlsock_call(const char *path, const char *request, int timeout_ms,
		      char **reply)
{
	int64_t deadline = now_ms() + timeout_ms;
	struct sockaddr_un sa;
	char *buf = NULL, *nb;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, err;

	*reply = NULL;
	if (addr_of(path, &sa))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	err = write_all(fd, request, strlen(request), deadline);
	if (!err)
		err = write_all(fd, "\n", 1, deadline);
	while (!err) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 16384;
			nb = realloc(buf, cap);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
		}
		n = recv(fd, buf + len, cap - len - 1, MSG_DONTWAIT);
		if (n > 0) {
			len += n;
			continue;
		}
		if (n == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			err = -errno;
			break;
		}
		err = wait_fd(fd, POLLIN, deadline);
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	if (!buf) {
		buf = malloc(1);
		if (!buf)
			return -ENOMEM;
	}
	buf[len] = '\0';
	*reply = buf;
	return 0;
}
