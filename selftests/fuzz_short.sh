#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fuzz_short.sh - make check's short fuzz pass: selftests/fuzz.sh (every
# target: kafka-leader, kafka-follower, peer-follower, peer-leader and
# genl, then the checks that the brokers survived) for
# KREP_FUZZ_SHORT_SECS seconds (default 15), with a random seed it prints
# (KREP_FUZZ_SEED=S replays it). Any finding fails the suite. The
# topology, the oracles and the results are fuzz.sh's.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
KREP_FUZZ_SECS=${KREP_FUZZ_SHORT_SECS:-15} exec "$here/fuzz.sh"
