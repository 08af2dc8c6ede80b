// SPDX-License-Identifier: GPL-2.0
/*
 * "Did you mean" for mistyped commands, keywords and options (suggest.h):
 * optimal string alignment distance, on short words only.
 */
#include <string.h>

#include "suggest.h"

#define WORD_MAX	64

static size_t min3(size_t a, size_t b, size_t c)
{
	size_t m = a < b ? a : b;

	return m < c ? m : c;
}

static size_t distance(const char *a, const char *b)
{
	size_t d[WORD_MAX + 1][WORD_MAX + 1];
	size_t la = strlen(a), lb = strlen(b), i, j, cost;

	if (la > WORD_MAX || lb > WORD_MAX)
		return WORD_MAX;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			cost = a[i - 1] != b[j - 1];
			d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1,
				       d[i - 1][j - 1] + cost);
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < d[i][j])
				d[i][j] = d[i - 2][j - 2] + 1;
		}
	}
	return d[la][lb];
}

const char *krep_suggest(const char *word, const char *const *cands)
{
	const char *best = NULL, *prefix = NULL;
	size_t best_d = WORD_MAX, d, len = strlen(word);
	int nprefix = 0;

	if (!len)
		return NULL;
	for (; *cands; cands++) {
		d = distance(word, *cands);
		if (d < best_d) {
			best_d = d;
			best = *cands;
		}
		if (!strncmp(*cands, word, len)) {
			prefix = *cands;
			nprefix++;
		}
	}
	if (best && best_d <= 2 && best_d * 2 < len)
		return best;
	return nprefix == 1 ? prefix : NULL;
}
