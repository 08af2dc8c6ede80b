# SPDX-License-Identifier: GPL-2.0
#
# krep top-level build.
#
#   make               kmod/krep.ko, agent/krepctl/krepctl, agent/krepd/krepd, selftests
#   make check         install what is missing, build, run sparse,
#                      checkpatch, the agent's unit tests and the
#                      runner's, then every
#                      selftest suite in VMs side by side ("selftests: N
#                      passed, M failed" after a table of the suites)
#   make check SUITES="replication epochs"   the same, for some suites
#   make demo          install what is missing, build, run the demo in the VM
#   make vm-shell      an interactive shell in the same VM
#   make sparse        sparse over the module (endian checks on), must be clean
#   make checkpatch    checkpatch.pl over the module and uapi, must be clean
#   make runner-test   the test of the selftests' suite queue (host, no VM)
#   make install       krepctl, krepd, man pages, bash completion, bpftrace
#                      tools, systemd units (PREFIX, DESTDIR; agent/Makefile)
#
# KDIR: the kernel build dir (default: the running kernel's when it has one,
# else the newest Debian kernel's headers with a matching /boot/vmlinuz).
# check, demo and vm-shell always build against the VM kernel.

KDIR ?= $(shell scripts/kdir.sh)
NPROC := $(shell nproc 2>/dev/null || echo 2)
VM_KDIR = $(shell scripts/kdir.sh --vm)
TOOLS := build/linux-tools
VM := selftests/vm/run.sh
# make check's suites (selftests/suites.list names; all when empty) and
# how many VMs share them out (selftests/check.sh)
SUITES ?=
CHECK_VMS ?= 3

# trace.h is written in the TRACE_EVENT macro language, which checkpatch
# does not parse (the kernel's own trace headers draw the same complaints)
KSRC := $(filter-out %.mod.c kmod/trace.h,$(wildcard kmod/*.c kmod/*.h)) \
	uapi/linux/krep.h uapi/linux/krep_wire.h

.PHONY: all module agent selftests tools deps check agent-test runner-test \
	demo vm-shell sparse checkpatch clean help install

all: module agent selftests

help:
	@sed -n '3,/^$$/{/^$$/d;s/^# \{0,1\}//;p}' Makefile

# through the root Kbuild (obj-m += kmod/), as DKMS builds it: kmod/krep.ko
module:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

agent:
	$(MAKE) -C agent

install: agent
	$(MAKE) -C agent install

tools:
	@scripts/kernel-tools.sh $(TOOLS)

# relay_smoke.sh's probe is one of the agent's tests: built with the
# selftests, not left to make check's agent tests beside the VMs (after
# the agent, whose objects it shares: no two makes in agent/ at once)
selftests: tools agent
	$(MAKE) -C selftests KSFT_DIR=$(CURDIR)/$(TOOLS)
	$(MAKE) -C agent tests/test_relay

deps:
	@scripts/deps.sh

# check, demo and vm-shell install packages first, then build in a sub-make
# so that KDIR is looked up after the kernel headers exist.
# Once all is built the VMs start, and beside them on the host (check.sh
# --beside: the emulation leaves part of the host's CPUs idle) sparse only
# checks (C=2 checks every file, and finds each object built: one build of
# the module, nothing relinked under the VMs), with checkpatch and the
# agent's tests, which mostly wait (on etcd's leases) and run side by side
# themselves (-j8), and the test of check.sh's suite queue; -O keeps each
# one's output together, and check.sh shows it once the VMs are done.
check: deps
	$(MAKE) -j$(NPROC) KDIR="$(VM_KDIR)" all
	KREP_CHECK_VMS=$(CHECK_VMS) selftests/check.sh \
		--beside '$(MAKE) -j3 -O KDIR="$(VM_KDIR)" sparse checkpatch agent-test runner-test' \
		$(SUITES)

agent-test: agent
	$(MAKE) -j8 -O -C agent test

# selftests/run_all.sh --claim, the queue the VMs take the suites from,
# on the host with suites of its own
runner-test:
	selftests/test_runner.sh

# make demo STEP=N stops after step N and opens a shell in the VM there
demo: deps
	$(MAKE) KDIR="$(VM_KDIR)" all
ifeq ($(STEP),)
	$(VM) -- scripts/demo.sh
else
	KREP_SHELL_INIT="scripts/demo.sh --step $(STEP)" $(VM) --shell
endif

# the demo's cluster, without the narration
vm-shell: deps
	$(MAKE) KDIR="$(VM_KDIR)" all
	KREP_SHELL_INIT="scripts/demo.sh --setup-only" $(VM) --shell

# make bench: krep against Redis (WAIT), NATS JetStream and etcd in one VM
# boot, with a TCP calibration; bench/run.sh runs in the VM and prints its
# figures on the console, bench/report.py makes build/bench/results.md and
# results.csv from it (README, "Benchmark"). The VM boots without
# slub_debug here (its checks slow every kernel allocation) and with the
# TSC as clocksource: qemu's TCG offers only the HPET otherwise, whose
# emulated reads make every clock_gettime() a slow system call and
# penalise the userspace peers. Then, in the same boot,
# bench/logdir_ratio.sh compares krep in memory with a log directory
# (page cache, and flush_messages=1) on build/bench/disk.img, a sparse
# 1 GiB file attached as a virtio disk (formatted in the VM, removed after).
BENCH_TIMEOUT ?= 1200
.PHONY: bench
bench: deps
	@scripts/deps.sh --bench
	$(MAKE) KDIR="$(VM_KDIR)" module agent
	$(MAKE) -C bench
	@mkdir -p build/bench
	@rm -f build/bench/vm.rc build/bench/results.md build/bench/results.csv \
		build/bench/disk.img
	truncate -s 1G build/bench/disk.img
	{ echo "BENCH-HOST loadavg=\"$$(cut -d' ' -f1-3 /proc/loadavg)\" nproc=$$(nproc)"; \
		KREP_VM_MEM=4096 KREP_VM_APPEND="slub_debug=- $(KREP_VM_APPEND)" \
		$(VM) --timeout $(BENCH_TIMEOUT) --disk build/bench/disk.img -- \
		'bench/run.sh; rc=$$?; bench/logdir_ratio.sh || rc=1; exit $$rc'; \
		echo $$? >build/bench/vm.rc; } 2>&1 | tee build/bench/console.log
	@rm -f build/bench/disk.img
	@echo
	@python3 bench/report.py build/bench/console.log build/bench
	@echo "bench: tables in build/bench/results.md and results.csv"
	@rc=$$(cat build/bench/vm.rc 2>/dev/null); [ "$$rc" = 0 ] || \
		{ echo "bench: the VM run failed (status $${rc:-unknown}), see above" >&2; exit 1; }

# sparse (C=2 checks every file; endian checks are on by default in 6.1
# via -D__CHECK_ENDIAN__ being implied). Any warning fails the target.
sparse:
	@mkdir -p build
	$(MAKE) -j$(NPROC) -C $(KDIR) M=$(CURDIR) C=2 CHECK=sparse \
		CF="-D__CHECK_ENDIAN__" \
		modules 2>&1 | tee build/sparse.log
	@! grep -E '(warning|error):' build/sparse.log | \
		grep -v -e '^/usr/src' -e '^make\[[0-9]*\]: ' \
		|| { echo "sparse: not clean (see above)"; exit 1; }
	@echo "sparse: clean"

checkpatch: tools
	perl $(TOOLS)/checkpatch.pl --no-tree --strict --terse --show-types \
		--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG,MACRO_ARG_REUSE \
		-f $(filter %.c %.h,$(KSRC))
	@echo "checkpatch: clean"

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	-$(MAKE) -C agent clean
	-$(MAKE) -C selftests clean
	rm -rf build

# make fuzz FUZZ_SECS=N: selftests/fuzz.sh in one VM, N seconds of
# structure-aware fuzzing against three brokers' sockets
# (selftests/fuzz_kafka.py) and, beside it, a fourth broker's netlink
# family (selftests/fuzz_genl), then the checks that they still serve.
# KREP_FUZZ_SEED=S draws the same inputs again. The console goes to
# build/fuzz/console.log; a failed run's reproducers (the last connections
# and netlink requests before it) to build/fuzz/repro-*. make check runs
# a 15 s pass of it (selftests/fuzz_short.sh).
FUZZ_SECS ?= 120
.PHONY: fuzz
fuzz: deps
	$(MAKE) KDIR="$(VM_KDIR)" all
	@mkdir -p build/fuzz
	@rm -f build/fuzz/repro-*
	KREP_FUZZ_SECS=$(FUZZ_SECS) $(VM) --timeout $$(($(FUZZ_SECS) + 900)) \
		--console build/fuzz/console.log -- selftests/fuzz.sh; \
	rc=$$?; python3 selftests/fuzz_kafka.py extract build/fuzz/console.log \
		build/fuzz; exit $$rc
