// SPDX-License-Identifier: GPL-2.0
/*
 * The secret in a file: a regular file that only its owner may access,
 * MIN..MAX bytes not counting one final newline.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "secret.h"

static void wipe(void *p, size_t n)
{
	explicit_bzero(p, n);
}

/**
 * krep_secret_file_read - read the secret in @path into @key
 * @path: the file
 * @key: room for @max bytes
 * @min: the fewest bytes a secret has
 * @max: the most
 * @len: set to the secret's length
 * @err: set to a one-line reason on failure
 * @errlen: its size
 *
 * Return: 0 or a negative errno.
 */
int krep_secret_file_read(const char *path, uint8_t *key, size_t min,
			  size_t max, size_t *len, char *err, size_t errlen)
{
	uint8_t buf[4096 + 2];
	size_t got = 0;
	struct stat st;
	ssize_t n;
	int fd, ret;

	*len = 0;
	if (max > sizeof(buf) - 2)
		max = sizeof(buf) - 2;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open secret file %s: %s", path,
			 strerror(errno));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "cannot stat secret file %s: %s", path,
			 strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		snprintf(err, errlen, "secret file %s is not a regular file",
			 path);
		goto out;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		ret = -EPERM;
		snprintf(err, errlen,
			 "secret file %s is accessible by group or others (mode %04o): make it private (chmod 600)",
			 path, (unsigned int)(st.st_mode & 07777));
		goto out;
	}
	while (got < max + 2) {
		n = read(fd, buf + got, max + 2 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			snprintf(err, errlen, "cannot read secret file %s: %s",
				 path, strerror(errno));
			goto out;
		}
		if (!n)
			break;
		got += n;
	}
	if (got && buf[got - 1] == '\n')
		got--;
	if (got > max) {
		ret = -EMSGSIZE;
		snprintf(err, errlen, "secret file %s holds more than %zu bytes",
			 path, max);
		goto out;
	}
	if (got < min) {
		ret = -EINVAL;
		snprintf(err, errlen,
			 "secret file %s holds %zu bytes: at least %zu are needed (without the final newline)",
			 path, got, min);
		goto out;
	}
	memcpy(key, buf, got);
	*len = got;
	ret = 0;
out:
	wipe(buf, sizeof(buf));
	close(fd);
	return ret;
}
