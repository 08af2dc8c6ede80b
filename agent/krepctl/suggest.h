/* SPDX-License-Identifier: GPL-2.0 */
/*
 * "Did you mean": the candidate nearest to a mistyped word.
 */
#ifndef KREP_AGENT_SUGGEST_H
#define KREP_AGENT_SUGGEST_H

/*
 * The candidate of @cands (NULL-terminated) nearest to @word by edit
 * distance (insertions, deletions, substitutions, swaps of neighbours),
 * when that distance is at most 2 and less than half of @word's length
 * (or @word is a prefix of exactly one candidate); else NULL.
 */
const char *krep_suggest(const char *word, const char *const *cands);

#endif
