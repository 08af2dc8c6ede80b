/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's host-only unit tests print TAP: "ok N - what" or
 * "not ok N - what # line L" per CHECK(), then the plan and a summary
 * from tap_done(), whose result is the test's exit status.
 */
#ifndef KREP_AGENT_TAP_H
#define KREP_AGENT_TAP_H

#include <stdbool.h>

extern int tap_ntests, tap_nfailed;

void tap_check(bool ok, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define CHECK(cond, ...)	tap_check(!!(cond), __LINE__, __VA_ARGS__)

#endif
