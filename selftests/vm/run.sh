#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh - run a command, or a shell, in a throw-away qemu VM on the host's
# Debian kernel, with the host's root file system as a read-only 9p lower
# layer under a tmpfs overlay.
#
#   host                               guest (qemu, KVM or TCG/qemu64)
#   ----                               -----
#   /  ------- 9p "hostroot", ro ----> /mnt/lower --+-- overlay --> /  (chroot)
#                          tmpfs upper /mnt/rw -----+
#   build/vm/run.XXXXXX -- 9p "krepvm", ro --> /run/krep-vm (vm.conf, cmd.sh)
#   --share DIR ---------- 9p "krepshare", rw -> DIR (the same path)
#   --disk FILE ---------- virtio-blk -------> /dev/vda (KREP_VM_DISK)
#   stdout, build/vm/console.log <---- ttyS0: console, command output,
#                                      "KREP-VM-EXIT=<status>"
#
# Usage: selftests/vm/run.sh [--timeout SECONDS] [--console FILE]
#                            [--disk FILE] [--share DIR] [--] CMD [ARG...]
#        selftests/vm/run.sh [--timeout SECONDS] [--console FILE]
#                            [--disk FILE] [--share DIR] --shell
#        selftests/vm/run.sh --print-kernel
#
# CMD runs with bash as root in the repo root (same absolute path as on the
# host), stdin /dev/null. With several words they are run as one command with
# exactly these arguments; a single word is a bash script ("make -C x && y").
# Exit status: CMD's status. A broken run exits non-zero with one line on
# stderr: kernel warning/oops/panic/... on the console (CMD's status, or 1 if
# that was 0), timeout (124), or no exit marker from the guest (125). Usage
# errors exit 2.
#
# The console is kept in FILE (default build/vm/console.log) once qemu has
# exited: VMs that run side by side each name their own.
# --disk FILE attaches FILE, a raw disk image (for instance one made with
# truncate and mkfs.ext4 on the host), as a virtio disk: the guest loads
# virtio_blk before CMD and sees it as /dev/vda (KREP_VM_DISK). The guest
# writes through to FILE (qemu's writeback cache is the host's page cache,
# and a guest flush is an fsync of FILE), so what reached the disk outlives
# the VM, also one that ends without a clean shutdown; a second VM can boot
# on the same FILE.
# --share DIR mounts the host directory DIR read-write at the same path in
# the guest (9p, no cache: a write is in DIR on the host when it returns),
# for files that must reach the host even if the VM then dies.
# --shell runs an interactive bash in the guest on this terminal (Ctrl-A X
# kills qemu); the VM powers off when the shell exits.
# --print-kernel prints the kernel version the VM would boot and exits.
#
# Environment:
#   KREP_VM_KERNEL   kernel version (6.1.0-NN-amd64) or path to a vmlinuz;
#                    default: newest /boot/vmlinuz-* with /lib/modules/<ver>,
#                    preferring one with headers installed
#   KREP_VM_MEM      guest memory in MiB (2048)
#   KREP_VM_SMP      guest CPUs (2)
#   KREP_VM_ACCEL    kvm, tcg or auto (auto: kvm when /dev/kvm is usable
#                    and the CPU shows vmx or svm)
#   KREP_VM_TCG      multi or single (default multi): under emulation, one
#                    host thread per guest CPU, or one for all of them
#                    taking turns (selftests/check.sh picks single when
#                    its VMs' CPUs outnumber the host's)
#   KREP_VM_TIMEOUT  default for --timeout (1500)
#   KREP_VM_APPEND   extra kernel command line
#   KREP_VM_LOGLEVEL console log level once booted (5: up to KERN_WARNING)
#   KREP_SHELL_INIT  with --shell: a command the shell runs before its prompt
#   KREP_VM_ENV      names of extra variables to pass into the guest
#                    (every KREP_* variable except KREP_VM_* is passed anyway)

set -eu -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd -P)
vmdir=$repo/build/vm
prog=${0##*/}

# Kernel messages (they carry a "[ seconds.micros]" prefix on the console)
# that fail the run: selftests/kernel-bad.ere, one pattern a line.
KERNEL_BAD=$(paste -sd'|' "$here/../kernel-bad.ere") || exit 125

usage() {
	sed -n '/^# Usage:/,/^# Environment:/{/^# Environment:/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit "${1:-2}"
}

die() {
	echo "$prog: $*" >&2
	exit 125
}

timeout_s=${KREP_VM_TIMEOUT:-1500}
console=$vmdir/console.log
shell=0
print_kernel=0
disk=
share=
while [ $# -gt 0 ]; do
	case $1 in
	--timeout) [ $# -ge 2 ] || usage; timeout_s=$2; shift 2 ;;
	--timeout=*) timeout_s=${1#*=}; shift ;;
	--console) [ $# -ge 2 ] || usage; console=$2; shift 2 ;;
	--console=*) console=${1#*=}; shift ;;
	--disk) [ $# -ge 2 ] || usage; disk=$2; shift 2 ;;
	--disk=*) disk=${1#*=}; shift ;;
	--share) [ $# -ge 2 ] || usage; share=$2; shift 2 ;;
	--share=*) share=${1#*=}; shift ;;
	--shell) shell=1; shift ;;
	--print-kernel) print_kernel=1; shift ;;
	-h|--help) usage 0 ;;
	--) shift; break ;;
	-*) echo "$prog: unknown option $1" >&2; usage ;;
	*) break ;;
	esac
done
case $timeout_s in
''|*[!0-9]*|0) echo "$prog: --timeout wants a positive number of seconds" >&2; exit 2 ;;
esac
if [ -n "$disk" ]; then
	[ -f "$disk" ] && [ -r "$disk" ] && [ -w "$disk" ] ||
		{ echo "$prog: --disk $disk: not a readable and writable file" >&2; exit 2; }
	disk=$(realpath "$disk")
fi
if [ -n "$share" ]; then
	[ -d "$share" ] && [ -w "$share" ] ||
		{ echo "$prog: --share $share: not a writable directory" >&2; exit 2; }
	share=$(realpath "$share")
	case $share in
	/|*,*|*:*|*\'*) echo "$prog: --share $share: not /, and without ',', ':' or quotes" >&2; exit 2 ;;
	esac
fi
if [ "$print_kernel" = 0 ]; then
	if [ "$shell" = 1 ] && [ $# -gt 0 ]; then
		echo "$prog: --shell takes no command" >&2
		exit 2
	fi
	if [ "$shell" = 0 ] && [ $# -eq 0 ]; then
		echo "$prog: no command given" >&2
		usage
	fi
fi

# The kernel: KREP_VM_KERNEL, else the newest one whose modules are
# installed, preferring one whose headers are installed too (the module under
# test is built against them).
pick_kernel() {
	local f v best=
	if [ -n "${KREP_VM_KERNEL:-}" ]; then
		if [ -f "$KREP_VM_KERNEL" ]; then
			kernel=$KREP_VM_KERNEL
			kver=$(basename "$kernel")
			kver=${kver#vmlinuz-}
		else
			kver=$KREP_VM_KERNEL
			kernel=/boot/vmlinuz-$kver
		fi
		[ -f "$kernel" ] || die "KREP_VM_KERNEL: no kernel $kernel"
		[ -d "/lib/modules/$kver" ] || die "KREP_VM_KERNEL: no /lib/modules/$kver"
		return
	fi
	while read -r f; do
		v=${f#/boot/vmlinuz-}
		[ -f "/lib/modules/$v/modules.dep" ] || continue
		[ -n "$best" ] || best=$v
		if [ -e "/lib/modules/$v/build/Makefile" ] ||
		   [ -e "/usr/src/linux-headers-$v/Makefile" ]; then
			best=$v
			break
		fi
	done < <(find /boot -maxdepth 1 -name 'vmlinuz-*' | sort -V -r)
	[ -n "$best" ] || die "no /boot/vmlinuz-* with matching /lib/modules (run scripts/deps.sh)"
	kver=$best
	kernel=/boot/vmlinuz-$kver
}

pick_kernel
if [ "$print_kernel" = 1 ]; then
	echo "$kver"
	exit 0
fi
[ -r "$kernel" ] || die "cannot read $kernel (run as root, or point KREP_VM_KERNEL at a readable copy)"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found (run scripts/deps.sh)"

loglevel=${KREP_VM_LOGLEVEL:-5}
case $loglevel in
[1-8]) ;;
*) echo "$prog: KREP_VM_LOGLEVEL must be 1..8" >&2; exit 2 ;;
esac
mem=${KREP_VM_MEM:-2048}
smp=${KREP_VM_SMP:-2}
accel=${KREP_VM_ACCEL:-auto}
# KVM only where the CPU shows its virtualization extensions too: some
# hosts (nested guests) have a /dev/kvm whose VMs hang in the boot loader.
if [ "$accel" = auto ]; then
	accel=tcg
	if [ -c /dev/kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ] &&
	   grep -qwE 'vmx|svm' /proc/cpuinfo; then
		accel=kvm
	fi
fi
case $accel in
kvm) accel_args=(-accel kvm -cpu host) ;;
# The default CPU model (qemu64): "-cpu max" makes rep movsb ~30x slower.
tcg) accel_args=(-accel "tcg,thread=${KREP_VM_TCG:-multi}") ;;
*) echo "$prog: KREP_VM_ACCEL must be kvm, tcg or auto" >&2; exit 2 ;;
esac
case ${KREP_VM_TCG:-multi} in
multi|single) ;;
*) echo "$prog: KREP_VM_TCG must be multi or single" >&2; exit 2 ;;
esac

mkdir -p "$vmdir"
initrd=$("$here/mkinitrd.sh" --outdir "$vmdir" "$kver") || die "building the initramfs failed"

rundir=$(mktemp -d "$vmdir/run.XXXXXX")
log=$rundir/console.log

# shellcheck disable=SC2317 # called from the EXIT trap
cleanup() {
	local pid

	set +e
	pid=$(cat "$rundir/qemu.pid" 2>/dev/null)
	if [ -n "$pid" ] && grep -qs qemu "/proc/$pid/comm"; then
		kill "$pid" 2>/dev/null
	fi
	wait 2>/dev/null # for the console pipeline to drain into the log
	[ -f "$log" ] && mv -f "$log" "$console"
	rm -rf "$rundir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Quote for busybox sh (vm.conf is sourced by /init).
shq() {
	local s=${1//\'/\'\\\'\'}
	printf "'%s'" "$s"
}

{
	echo "KREP_VM_MODE=$(shq "$([ "$shell" = 1 ] && echo shell || echo cmd)")"
	echo "KREP_VM_REPO=$(shq "$repo")"
	echo "KREP_VM_LOGLEVEL=$(shq "$loglevel")"
	echo "KREP_VM_SHARE=$(shq "$share")"
} >"$rundir/vm.conf"

# The guest side: bash in the chroot, fresh environment.
{
	echo "# generated by selftests/vm/run.sh"
	echo "export PATH=/usr/sbin:/sbin:/usr/bin:/bin:/usr/local/sbin:/usr/local/bin"
	echo "export HOME=/root KREP_VM=1"
	# A program started under LANG=C.UTF-8 opens its locale's dozen
	# files, each a 9p walk, open and clunk: 100 starts of seq took
	# 4.4 s, and 2.2 s under LANG=C. The shell keeps UTF-8 for its
	# line editing; Python takes C.UTF-8 by itself (PEP 538).
	if [ "$shell" = 1 ]; then
		echo "export LANG=C.UTF-8"
		printf 'export TERM=%q\n' "${TERM:-linux}"
	else
		echo "export LANG=C"
		echo "export TERM=dumb"
	fi
	for v in $(compgen -e | grep -E '^KREP_' | grep -vE '^KREP_VM(_|$)') ${KREP_VM_ENV:-}; do
		[[ $v =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
		if [ -n "${!v+x}" ]; then printf 'export %s=%q\n' "$v" "${!v}"; fi
	done
	printf 'cd -- %q || exit 125\n' "$repo"
	if [ -n "$disk" ]; then
		# virtio_blk probes the disk as it loads: /dev/vda is there after
		echo "modprobe virtio_blk && [ -b /dev/vda ] ||"
		echo "	{ echo 'KREP-VM-ERROR: no /dev/vda for --disk'; exit 125; }"
		echo "export KREP_VM_DISK=/dev/vda"
	fi
	if [ "$shell" = 1 ]; then
		if [ -t 0 ] && size=$(stty size 2>/dev/null) && [ "${size% *}" != 0 ]; then
			printf 'stty rows %d cols %d\n' "${size% *}" "${size#* }"
		fi
		echo "exec bash --rcfile /run/krep-vm/bashrc -i"
	elif [ $# -eq 1 ]; then
		printf '%s\n' "$1"
	else
		printf '%q ' "$@"
		echo
	fi
} >"$rundir/cmd.sh"
cat >"$rundir/bashrc" <<'EOF'
PS1='krep-vm:\w\$ '
alias ls='ls --color=auto'
# KREP_SHELL_INIT: a command the shell runs first (make demo STEP=N)
if [ -n "${KREP_SHELL_INIT:-}" ]; then eval "$KREP_SHELL_INIT"; fi
EOF

# slub_debug=FZP: sanity checks, red zones and poisoning catch a
# use-after-free, overflow or double free. Without U (each allocation's
# and free's stack saved): under emulation that made every exec about a
# third slower. KREP_VM_APPEND="slub_debug=FZPU" brings the stacks back
# for a report that needs them (the last slub_debug= counts).
append="console=ttyS0 quiet panic=-1 panic_on_warn=1 oops=panic slub_debug=FZP"
append+=" printk.devkmsg=on log_buf_len=4M"
# no_timer_check: under emulation on a busy host the IO-APIC timer test at
# boot can miss its ticks and panic ("IO-APIC + timer doesn't work!")
append+=" no_timer_check"
# norandmaps: every process maps its program and libraries at the same
# addresses. The emulator keys the code it has translated by virtual
# address, so with randomized maps each new process translated ld.so and
# libc afresh: a start of seq, ip or krepctl took 75-115 ms of guest CPU,
# and about 48 ms without (the suites start some 11,000 processes).
append+=" norandmaps"
# tsc=reliable: the emulator's TSC is the host's (constant, the same on
# every guest CPU), but qemu64's CPUID does not say it is invariant, so
# the kernel left it out and timekept with the emulated HPET: every
# clock_gettime() a system call reading a device (0.84 us against
# 0.06 us through the vDSO). Go's scheduler, Node, librdkafka and the
# kernel's timers read the clock all the time: four suites in one VM
# took 15 % less guest CPU with it (kafka.sh 41 % -> 29 %), guest time
# keeping pace with the host's all along (make check's three VMs: within
# the noise). KREP_VM_APPEND=tsc=unstable goes back to the HPET.
append+=" tsc=reliable"
append+=${KREP_VM_APPEND:+ $KREP_VM_APPEND}

qemu=(qemu-system-x86_64 -name krep-vm -nodefaults -machine q35
	"${accel_args[@]}" -smp "$smp" -m "$mem"
	-kernel "$kernel" -initrd "$initrd" -append "$append"
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=${rundir//,/,,},mount_tag=krepvm,security_model=none,readonly=on,multidevs=remap"
	-nic none -no-reboot -display none -pidfile "$rundir/qemu.pid")
if [ -n "$disk" ]; then
	qemu+=(-drive "file=${disk//,/,,},format=raw,if=none,id=krepdisk,cache=writeback"
	       -device virtio-blk-pci,drive=krepdisk)
fi
if [ -n "$share" ]; then
	qemu+=(-virtfs "local,path=$share,mount_tag=krepshare,security_model=none,multidevs=remap")
fi

if [ "$shell" = 1 ]; then
	# Keep a copy of the session; the exit marker gives the shell's status.
	set +e
	"${qemu[@]}" -serial mon:stdio | tee -p "$log"
	rc=${PIPESTATUS[0]}
	set -e
	[ "$rc" = 0 ] || die "qemu exited with status $rc"
	marker=$(tr -d '\r' <"$log" | grep -aoE 'KREP-VM-EXIT=[0-9]+' | tail -n1 || true)
	[ -n "$marker" ] || die "no exit marker from the guest"
	exit "${marker#KREP-VM-EXIT=}"
fi

# Stream the console (without the tty's CRs) to stdout and the log.
# In the background so that a signal to this script runs the traps at once
# (they kill qemu) instead of after the pipeline.
start=$SECONDS
{
	timeout --foreground -k 10 "$timeout_s" "${qemu[@]}" -monitor none -serial stdio </dev/null
	echo $? >"$rundir/qemu.rc"
} | sed -u 's/\r$//' | tee -p "$log" &
wait $! || true
qemu_rc=$(cat "$rundir/qemu.rc" 2>/dev/null || echo 255)
elapsed=$((SECONDS - start))

bad=$(grep -aE -m1 "\[ *[0-9]+\.[0-9]+\] .*($KERNEL_BAD)" "$log" || true)
vmerr=$(grep -a -m1 'KREP-VM-ERROR:' "$log" || true)
marker=$(grep -aoE 'KREP-VM-EXIT=[0-9]+' "$log" | tail -n1 || true)
rc=${marker#KREP-VM-EXIT=}

if [ -n "$bad" ]; then
	echo "$prog: FAIL: kernel problem on the console: ${bad#"${bad%%[![:space:]]*}"} (see ${console#"$repo"/})" >&2
	[ -n "$rc" ] && [ "$rc" != 0 ] && exit "$rc"
	[ "$qemu_rc" = 124 ] || [ "$qemu_rc" = 137 ] && exit 124
	exit 1
fi
if [ "$qemu_rc" = 124 ] || [ "$qemu_rc" = 137 ]; then
	echo "$prog: FAIL: timeout after ${timeout_s}s (see ${console#"$repo"/})" >&2
	exit 124
fi
if [ -n "$vmerr" ]; then
	echo "$prog: FAIL: VM set-up failed: ${vmerr#*KREP-VM-ERROR: }" >&2
	exit 125
fi
if [ -z "$marker" ]; then
	echo "$prog: FAIL: no exit marker from the guest (qemu exited with status $qemu_rc after ${elapsed}s)" >&2
	exit 125
fi
exit "$rc"
