/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A secret read from a private file: krepd's relay secret, a broker's
 * cluster secret (krepctl broker set secret-file).
 */
#ifndef KREP_SECRET_H
#define KREP_SECRET_H

#include <stddef.h>
#include <stdint.h>

int krep_secret_file_read(const char *path, uint8_t *key, size_t min,
			  size_t max, size_t *len, char *err, size_t errlen);

#endif
