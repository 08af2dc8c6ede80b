#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""pyserve.py - one long-lived Python for many calls of a test helper.

Usage: pyserve.py MODULE

Imports selftests/MODULE.py once, then for every line of standard input
(the arguments, separated by US, 0x1f) calls MODULE.main([MODULE, ARG...])
and writes what it printed: each line of its standard output as "1 LINE",
each line of its standard error as "2 LINE", then "\\x1e STATUS" (its
return value, or the status it exited with). Ends at the end of its input.

A Python start costs about half a second in the emulated test VM; a suite
that asks a helper hundreds of times keeps one of these per network
namespace instead (selftests/lib.sh: krep_pyserve_start, krep_pyserve).
"""

import contextlib
import importlib
import io
import os
import sys
import traceback


def call(mod, name, argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = mod.main([name] + argv)
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except Exception:  # a helper's bug is its call's failure, not ours
            traceback.print_exc()
            rc = 1
    return out.getvalue(), err.getvalue(), 0 if rc is None else rc


def main(argv):
    if len(argv) != 2:
        print(__doc__.split("\n\n", 1)[1].split("\n\n", 1)[0], file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    name = argv[1]
    mod = importlib.import_module(name)
    for line in sys.stdin:
        line = line.rstrip("\n")
        args = line.split("\x1f") if line else []
        out, err, rc = call(mod, name, args)
        reply = []
        for tag, text in (("1", out), ("2", err)):
            reply += [tag + " " + s for s in text.splitlines()]
        reply.append("\x1e %d" % rc)
        sys.stdout.write("\n".join(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
