#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""report.py - turn the console output of bench/run.sh into tables.

Usage: bench/report.py CONSOLE_LOG OUTDIR

Reads the BENCH-* lines that bench/run.sh printed in the VM (the console
that selftests/vm/run.sh streams), and writes OUTDIR/results.md (markdown,
also printed) and OUTDIR/results.csv. Trial 0 is the warm-up and is left
out. Each figure is the median over the trials with its spread (min-max);
each ratio is computed within a trial (both sides measured in the same
boot, minutes apart at most) and the median of those per-trial ratios is
reported with their spread. Latency percentiles marked "pooled" come from
every sample of every trial together.

It also reads the LOGDIR-* lines of bench/logdir_ratio.sh (make bench
runs it after run.sh, in the same boot): krep acks=all in memory, with a
log directory (page cache) and with flush_messages=1, each mode's figures
over the rounds and its ratios to the in-memory mode's runs of the same
round. A log with only those lines gives only that section.

Exit status: 0, or 1 when the log holds no benchmark output at all.
"""
import csv
import os
import re
import statistics
import sys

COMMIT_RULE = {
    "krep acks=all": "all ISR replicas (3 of 3 while the ISR is full)",
    "krep acks=1": "leader only",
    "kafka": "all ISR replicas (acks=all, as above)",
    "kafka acks=1": "leader only",
    "redis": "all replicas (WAIT 2, 2 replicas)",
    "nats": "majority (JetStream R3: 2 of 3)",
    "etcd": "majority (Raft: 2 of 3)",
}
PEERS = [("redis", "wait2", "Redis 7 WAIT 2"),
         ("nats", "r3", "NATS JetStream R3"),
         ("etcd", "put", "etcd 3.4")]
KV = re.compile(r'(\w+)=("[^"]*"|\S+)')


def kv(s):
    return {k: v.strip('"') for k, v in KV.findall(s)}


def num(d, k):
    try:
        return float(d[k])
    except (KeyError, ValueError):
        return None


def parse(path):
    raw, pctl, notm, fails, info = [], {}, {}, [], {}
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\r\n")
            i = line.find("BENCH-")
            if i < 0:
                continue
            line = line[i:]
            tag, _, rest = line.partition(" ")
            if tag == "BENCH-RAW":
                d = kv(rest)
                d["trial"] = int(d.get("trial", -1))
                raw.append(d)
            elif tag == "BENCH-PCTL":
                d = kv(rest)
                pctl[(d.get("system"), d.get("case"))] = d
            elif tag == "BENCH-NOTMEASURED":
                m = re.match(r"system=(\S+) reason=(.*)", rest)
                if m:
                    notm[m.group(1)] = m.group(2)
            elif tag == "BENCH-FAIL":
                fails.append(rest)
            elif tag in ("BENCH-BEGIN", "BENCH-DONE", "BENCH-HOST"):
                info.update(kv(rest))
    return raw, pctl, notm, fails, info


LOGDIR_MODES = [("mem", "in memory (no log directory)"),
                ("pagecache", "log directory, page cache (default flush)"),
                ("flush1", "log directory, flush_messages=1")]


def parse_logdir(path):
    """LOGDIR-RAW runs as dicts, the LOGDIR-DISK line, LOGDIR-DONE seen"""
    runs, disk, done = [], {}, False
    with open(path, errors="replace") as f:
        for line in f:
            i = line.find("LOGDIR-")
            if i < 0:
                continue
            tag, _, rest = line[i:].rstrip("\r\n").partition(" ")
            if tag == "LOGDIR-RAW":
                d = kv(rest)
                d["round"] = int(d.get("round", -1))
                runs.append(d)
            elif tag == "LOGDIR-DISK":
                disk = kv(rest)
            elif tag == "LOGDIR-DONE":
                done = True
    return runs, disk, done


def logdir_section(ld, row):
    """the markdown lines of the log directory comparison"""
    runs, disk, done = ld
    md = ["## krep with a log directory (bench/logdir_ratio.sh)", ""]
    if not done:
        md.append("**bench/logdir_ratio.sh did not finish** (see its "
                  "\"logdir_ratio:\" line in the console): "
                  + ("the rounds below are partial." if runs
                     else "nothing measured."))
        md.append("")
    if not runs:
        row("logdir", "krep", "-", "not_measured", None,
            "logdir_ratio.sh printed no run")
        return md
    by = {}     # (mode, case) -> {round: dict}
    for d in runs:
        by.setdefault((d.get("mode"), d.get("case")), {})[d["round"]] = d
    cases = sorted({c for (_, c) in by}, key=lambda c: (c.startswith("if1"), c))
    rounds = sorted({d["round"] for d in runs})
    md.append(f"acks=all, 3 brokers, 1 partition, RF 3, {len(rounds)} rounds; "
              "each round runs every mode (in a rotated order), each on its "
              "own cluster or topic in one module load. The disk: "
              f"{disk.get('fs', '?')} on {disk.get('dev', '?')} "
              f"({disk.get('size_mib', '?')} MiB, {disk.get('backing', '?')}). "
              "Each cell: median over the rounds (min–max); ratios: median "
              "of the per-round ratios to the in-memory mode's run of the "
              "same round. VM CPU: busy CPU time of the whole VM (brokers, "
              "writeback, client) over the run, per record.")
    md.append("")
    md.append("| mode | case | records/s | MB/s | p50 µs | p99 µs | "
              "VM CPU µs/rec | records/s ÷ in memory | p50 ÷ in memory | "
              "p99 ÷ in memory |")
    md.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in cases:
        base = by.get(("mem", c), {})
        what = (f"{c.split('-')[1]} B records, batches"
                if c.startswith("batch") else
                f"{c.split('-')[1]} B, 1 in flight")
        for mode, name in LOGDIR_MODES:
            tr = by.get((mode, c), {})
            if not tr:
                continue
            cells = []
            for k in ("rec_per_s", "mb_per_s", "p50_us", "p99_us"):
                st = stats(num(d, k) for d in tr.values())
                cells.append(fmt_spread(st))
                row("logdir", name, c, k, st)
            st = stats(num(d, "vm_cpu_us") / num(d, "records")
                       for d in tr.values() if num(d, "vm_cpu_us") is not None
                       and num(d, "records"))
            cells.append(fmt_spread(st))
            row("logdir", name, c, "vm_cpu_us_per_rec", st)
            for k in ("rec_per_s", "p50_us", "p99_us"):
                if mode == "mem":
                    cells.append("1")
                    continue
                r = [num(tr[n], k) / num(base[n], k) for n in tr
                     if n in base and num(tr[n], k) is not None
                     and num(base[n], k)]
                st = stats(r)
                cells.append(fmt_spread(st))
                row("logdir", name, c, f"ratio_{k}_to_mem", st)
            md.append(f"| {name} | {what} | " + " | ".join(cells) + " |")
    md.append("")
    b = [c for c in cases if c.startswith("batch")]
    if b:
        tr, base = by.get(("pagecache", b[0]), {}), by.get(("mem", b[0]), {})
        st = stats([num(tr[n], "rec_per_s") / num(base[n], "rec_per_s")
                    for n in tr if n in base and num(base[n], "rec_per_s")])
        if st:
            md.append("Aim: the page cache at ≥ 0.8× the in-memory "
                      f"throughput (batches): {fmt(st[0])}, "
                      + ("met." if st[0] >= 0.8 else "not met."))
            md.append("")
    return md


def csv_row(section, system, case, metric, s, note=""):
    """a results.csv row: a figure's median, min, max and count"""
    if s is None:
        return [section, system, case, metric, "", "", "", 0, note]
    return [section, system, case, metric, f"{s[0]:.6g}", f"{s[1]:.6g}",
            f"{s[2]:.6g}", s[3], note]


def stats(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    return (statistics.median(vals), min(vals), max(vals), len(vals))


def fmt(v, digits=None):
    if v is None:
        return "-"
    if digits is None:
        a = abs(v)
        digits = 0 if a >= 100 else 1 if a >= 10 else 2 if a >= 1 else 3
    return f"{v:,.{digits}f}"


def fmt_spread(s, digits=None):
    if s is None:
        return "-"
    med, lo, hi, n = s
    if n == 1:
        return fmt(med, digits)
    return f"{fmt(med, digits)} ({fmt(lo, digits)}–{fmt(hi, digits)})"


def case_parts(case):
    """p1-if1-acksall-100 -> (1, '1', 'acksall', 100)"""
    m = re.match(r"p(\d+)-if(\w+?)-(\w+)-(\d+)$", case)
    if not m:
        return None
    return int(m.group(1)), m.group(2), m.group(3), int(m.group(4))


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    raw, pctl, notm, fails, info = parse(sys.argv[1])
    ld = parse_logdir(sys.argv[1])
    outdir = sys.argv[2]
    if not raw and not notm and not ld[0] and not ld[1]:
        print(f"report.py: no benchmark output in {sys.argv[1]}", file=sys.stderr)
        return 1
    if not raw and not notm:
        rows = []
        return write(outdir, logdir_section(
            ld, lambda *a: rows.append(csv_row(*a))), rows)
    trials = sorted({d["trial"] for d in raw if d["trial"] > 0})
    runs = {}   # (system, case) -> {trial: dict}
    for d in raw:
        if d["trial"] > 0:
            runs.setdefault((d["system"], d["case"]), {})[d["trial"]] = d
    inflight = info.get("inflight", "N")
    many = info.get("inflight_many", "M")
    bbytes = info.get("batch_bytes", "?")
    bkib = (f"{int(bbytes) // 1024} KiB" if bbytes.isdigit()
            and int(bbytes) % 1024 == 0 else f"{bbytes} B")

    def series(system, case, key, fn=None):
        out = {}
        for t, d in runs.get((system, case), {}).items():
            v = fn(d) if fn else num(d, key)
            if v is not None:
                out[t] = v
        return out

    def per_rec(key, rec_key="records"):
        def f(d):
            a, r = num(d, key), num(d, rec_key)
            return a / r if a is not None and r else None
        return f

    def per_round(d):
        r, n = num(d, "krep_records"), num(d, "fetch_resps")
        return 2 * r / n if r is not None and n else None

    md, rows = [], []

    def row(*a):
        rows.append(csv_row(*a))

    md.append("# krep benchmark")
    md.append("")
    host = ""
    if "loadavg" in info:
        host = (f" The host ({info.get('nproc', '?')} cores) had a load "
                f"average of {info['loadavg']} when the VM started: other "
                "work on the host slows the VM and widens the spreads.")
    md.append(f"{len(trials)} trials after a warm-up, systems interleaved "
              f"(a different order each trial); kernel {info.get('kernel', '?')}, "
              f"{info.get('cpus', '?')} vCPUs ({info.get('cpu', '?')}) in "
              f"qemu, clocksource {info.get('clocksource', '?')}; run time "
              f"{info.get('seconds', '?')} s in the VM. "
              "Each cell: median over the trials (min–max). Compare systems "
              "only within one run: under emulation, absolute numbers move "
              "up to 3× from boot to boot." + host)
    md.append("")

    # ---- calibration
    md.append("## Calibration (same veth/bridge path, broker 1 → broker 2 namespace)")
    md.append("")
    md.append("| measure | p50 µs | p99 µs | p99.9 µs (pooled) | MB/s |")
    md.append("| --- | --- | --- | --- | --- |")
    pp50 = series("calib", "pingpong-1024", "p50_us")
    pp99 = series("calib", "pingpong-1024", "p99_us")
    pool = pctl.get(("calib", "pingpong"), {})
    p999 = (f"{fmt(float(pool['p999_us']))} (n={pool.get('n', 0)})"
            if "p999_us" in pool else "-")
    md.append(f"| TCP ping-pong, 1 KiB | {fmt_spread(stats(pp50.values()))} | "
              f"{fmt_spread(stats(pp99.values()))} | {p999} | - |")
    row("calibration", "tcp", "pingpong-1024", "p50_us", stats(pp50.values()))
    row("calibration", "tcp", "pingpong-1024", "p99_us", stats(pp99.values()))
    iperf = {}
    for size in (100, 1024):
        iperf[size] = series("calib", f"iperf3-{size}", "mb_per_s")
        md.append(f"| iperf3 TCP stream, {size} B writes | - | - | - | "
                  f"{fmt_spread(stats(iperf[size].values()))} |")
        row("calibration", "iperf3", f"stream-{size}", "mb_per_s",
            stats(iperf[size].values()))
    md.append("")
    idle = []
    for system, name in (("calib", "none (calibration)"), ("krep", "krep"),
                         ("kafka", "krep (Kafka port)"),
                         ("redis", "Redis"), ("nats", "NATS"), ("etcd", "etcd")):
        st = stats(series(system, "idle", "busy_pct").values())
        if st:
            idle.append(f"{name} {fmt_spread(st, 0)}")
            row("idle", name, "idle", "vm_busy_pct", st,
                "1 s before the block, other systems stopped")
    if idle:
        md.append("VM CPU busy (%) while a system idles, its servers alone "
                  "running (1 s before each of its blocks): "
                  + "; ".join(idle) + ".")
        md.append("")

    # ---- systems
    md.append("## Systems")
    md.append("")
    md.append(f"In flight: 1 = one synchronous writer; {inflight} = {inflight} "
              "writers, each with its own connection and one request "
              f"outstanding ({many} for krep's deepest run). One record per "
              f"request, but in the batched runs ({inflight} × a batch): each "
              f"request one batch of {bkib} of payload, Kafka's default "
              "batch.size (krep: one RecordBatch; Redis: the SETs pipelined, "
              "then WAIT); latency is then the batch's. Commit latency: the "
              "request's round trip (for krep acks=all: produce → HW passes "
              "the record); p99.9 pooled over all trials' samples. CPU: busy "
              "time of the whole VM (servers, kernel, client) per record. "
              "Copied: payload bytes krep copied per record, summed over "
              "the three brokers (KREP_A_STATS). Records per round: "
              "records the leader's FETCH responses carried, each "
              "follower's counted (records × 2 ÷ fetch_responses): one "
              "round is one response and the follower's next FETCH.")
    md.append("")
    md.append("| system | commits on | partitions | in flight | size B | "
              "records/s | MB/s | p50 µs | p99 µs | p99.9 µs pooled (n) | "
              "VM CPU µs/rec | copied B/rec | zero-copy B/rec | "
              "records per round |")
    md.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | "
              "--- | --- | --- | --- |")

    def sys_rows(system, label_of, infl_of=None):
        order = ["1", "N", "M", "B", "B1"]
        cases = sorted({c for (s, c) in runs if s == system and case_parts(c)},
                       key=lambda c: (case_parts(c)[3], case_parts(c)[2],
                                      case_parts(c)[0],
                                      order.index(case_parts(c)[1])
                                      if case_parts(c)[1] in order else 9))
        for c in cases:
            parts, infl, mode, size = case_parts(c)
            label, rule = label_of(mode)
            if infl_of:
                infl = infl_of(infl)
            elif infl == "B":
                b = [num(d, "batch") for d in runs[(system, c)].values()]
                b = [v for v in b if v]
                infl = f"{inflight} × {int(b[0]) if b else '?'} records"
            rps = stats(series(system, c, "rec_per_s").values())
            mbs = stats(series(system, c, "mb_per_s").values())
            p50 = stats(series(system, c, "p50_us").values())
            p99 = stats(series(system, c, "p99_us").values())
            cpu = stats(series(system, c, None, per_rec("vm_cpu_us")).values())
            cp = stats(series(system, c, None, per_rec("copy_bytes", "krep_records")).values())
            zc = stats(series(system, c, None, per_rec("zc_bytes", "krep_records")).values())
            rr = stats(series(system, c, None, per_round).values())
            pool = pctl.get((system, c), {})
            p999 = (f"{fmt(float(pool['p999_us']))} (n={pool.get('n', 0)})"
                    if pool and "p999_us" in pool else "-")
            md.append(f"| {label} | {rule} | {parts} | "
                      f"{ {'N': inflight, 'M': many}.get(infl, infl)} | {size} | "
                      f"{fmt_spread(rps)} | {fmt_spread(mbs)} | {fmt_spread(p50)} | "
                      f"{fmt_spread(p99)} | {p999} | {fmt_spread(cpu)} | "
                      f"{fmt_spread(cp, 0) if cp else '-'} | "
                      f"{fmt_spread(zc, 0) if zc else '-'} | "
                      f"{fmt_spread(rr) if rr else '-'} |")
            for metric, s in (("rec_per_s", rps), ("mb_per_s", mbs),
                              ("p50_us", p50), ("p99_us", p99),
                              ("vm_cpu_us_per_rec", cpu),
                              ("copied_bytes_per_rec", cp),
                              ("zerocopy_bytes_per_rec", zc),
                              ("records_per_round", rr)):
                if s is not None:
                    row("system", label, c, metric, s, rule)
            if pool:
                for k in ("p50_us", "p99_us", "p999_us"):
                    v = float(pool[k])
                    row("system", label, c, f"pooled_{k}",
                        (v, v, v, len(trials)), f"n={pool.get('n')}")

    def krep_label(mode):
        k = "krep acks=all" if mode == "acksall" else "krep acks=1"
        return k, COMMIT_RULE[k]

    sys_rows("krep", krep_label)
    def kafka_label(mode):
        if mode == "acksall":
            return ("krep acks=all, Kafka port (librdkafka)",
                    COMMIT_RULE["kafka"])
        return "krep acks=1, Kafka port (librdkafka)", COMMIT_RULE["kafka acks=1"]

    def kafka_infl(infl):
        return {"1": "1",
                "N": f"{inflight} producers",
                "B": f"{inflight} producers × {bkib} batches",
                "B1": f"1 producer, {bkib} batches"}.get(infl, infl)
    if "kafka" in notm:
        md.append(f"| {kafka_label('acksall')[0]} | - | - | - | - | not measured: "
                  f"{notm['kafka']} | | | | | | | | |")
    else:
        sys_rows("kafka", kafka_label, kafka_infl)
    for system, _, name in PEERS:
        if system in notm:
            md.append(f"| {name} | {COMMIT_RULE[system]} | - | - | - | "
                      f"not measured: {notm[system]} | | | | | | | | |")
            row("system", name, "-", "not_measured", None, notm[system])
        else:
            sys_rows(system, lambda mode, n=name, s=system: (n, COMMIT_RULE[s]))
    if "krep" in notm:
        md.append(f"| krep | - | - | - | - | not measured: {notm['krep']} "
                  "| | | | | | | | |")
    isr = [num(d, "isr_min") for (s, c), tr in runs.items()
           if s in ("krep", "kafka") and not c.startswith("consume")
           for d in tr.values() if num(d, "isr_min") is not None
           and num(d, "isr_min") >= 0]
    md.append("")
    if not isr:
        md.append("krep's ISR after the runs: unknown.")
    elif all(v == 3 for v in isr):
        md.append("krep's ISR was full (3 of 3) after every run: acks=all "
                  "committed on all replicas.")
    elif isr:
        md.append(f"**krep's ISR shrank during a trial** (smallest ISR seen "
                  f"after a run: {min(isr):.0f}): acks=all then committed on "
                  "fewer than all replicas.")
    md.append("")

    # ---- the Kafka port beside netlink
    if any(s == "kafka" for (s, c) in runs):
        md.append("## krep: the Kafka port beside netlink (1 partition)")
        md.append("")
        md.append("The same brokers and topic, in the same trial: netlink "
                  "(krep_load, prebuilt requests over local generic netlink) "
                  "and the Kafka port (kafka_load: librdkafka over TCP, one "
                  "connection per producer; batched: batch.size "
                  f"{bbytes}, linger.ms 5). Kafka ÷ netlink is the median "
                  "of the per-trial ratios of records/s. Client CPU: the "
                  "load generator's own CPU time per record (for netlink it "
                  "includes the kernel's produce work, done in its system "
                  "calls). Copied: payload bytes copied per record over the "
                  "three brokers. The last row of each size sends the "
                  "netlink writers' own batches (krep_load --kafka: one "
                  "Produce v7 request in flight per connection) through "
                  "the Kafka port: only the transport differs, without "
                  "librdkafka's own CPU time.")
        md.append("")
        md.append("| size B | acks | Kafka port | netlink | Kafka records/s | "
                  "netlink records/s | Kafka ÷ netlink | Kafka p50 µs | "
                  "netlink p50 µs | Kafka client CPU µs/rec | netlink client "
                  "CPU µs/rec | Kafka copied B/rec | netlink copied B/rec | "
                  "Kafka records per round | netlink records per round |")
        md.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | "
                  "--- | --- | --- | --- | --- | --- |")
        for size in (100, 1024):
            for shape, acks, kw, nw in (
                    ("p1-if1", "all", "1 producer, 1 record in flight",
                     "1 writer, 1 record"),
                    ("p1-ifN", "all", f"{inflight} producers, 1 record each",
                     f"{inflight} writers, 1 record each"),
                    ("p1-ifB", "all", f"{inflight} producers, {bkib} batches",
                     f"{inflight} writers, {bkib} batches"),
                    ("p1-ifB1", "all", f"1 producer, {bkib} batches",
                     f"{inflight} writers, {bkib} batches"),
                    ("p1-ifB1", "1", f"1 producer, {bkib} batches",
                     f"{inflight} writers, {bkib} batches"),
                    ("raw-ifB", "all", f"{inflight} krep_load writers, "
                     f"{bkib} batches (Produce v7)",
                     f"{inflight} writers, {bkib} batches")):
                kc = f"{shape}-acks{acks}-{size}"
                nc = ("p1-ifB" if shape in ("p1-ifB1", "raw-ifB")
                      else shape) + f"-acks{acks}-{size}"
                if not runs.get(("kafka", kc)):
                    continue
                krps = series("kafka", kc, "rec_per_s")
                nrps = series("krep", nc, "rec_per_s")
                rr = stats([krps[t] / nrps[t] for t in krps
                            if t in nrps and nrps[t]])
                cells = [fmt_spread(stats(krps.values())),
                         fmt_spread(stats(nrps.values())), fmt_spread(rr)]
                for sysn, cc, key, fn, dg in (
                        ("kafka", kc, "p50_us", None, None),
                        ("krep", nc, "p50_us", None, None),
                        ("kafka", kc, None, per_rec("client_cpu_us"), None),
                        ("krep", nc, None, per_rec("client_cpu_us"), None),
                        ("kafka", kc, None, per_rec("copy_bytes", "krep_records"), 0),
                        ("krep", nc, None, per_rec("copy_bytes", "krep_records"), 0),
                        ("kafka", kc, None, per_round, None),
                        ("krep", nc, None, per_round, None)):
                    cells.append(fmt_spread(stats(
                        series(sysn, cc, key, fn).values()), dg))
                md.append(f"| {size} | {acks} | {kw} | {nw} | "
                          + " | ".join(cells) + " |")
                st = stats(series("kafka", kc, None,
                                  per_rec("client_cpu_us")).values())
                if st:
                    row("system", "krep Kafka port", kc,
                        "client_cpu_us_per_rec", st, "librdkafka")
        md.append("")

    # ---- the Kafka consumer
    ccases = sorted({c for (s, c) in runs if s == "kafka"
                     and c.startswith("consume-")},
                    key=lambda c: int(c.split("-")[1]))
    if ccases:
        md.append("### krep's Kafka consumer (librdkafka, one partition, "
                  "no group)")
        md.append("")
        md.append("It reads back every record the Kafka port's runs of "
                  "that size just wrote, from the partition's leader. "
                  "Copied: payload bytes the brokers copied per record read "
                  "(every socket read counts, the consumer's Fetch requests "
                  "too; a copy of the records would be about their size); "
                  "zero-copy: log bytes sent from the log's pages by "
                  "reference, per record read.")
        md.append("")
        md.append("| size B | records read | records/s | MB/s | "
                  "VM CPU µs/rec | client CPU µs/rec | copied B/rec | "
                  "zero-copy B/rec | out of order or missing |")
        md.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for c in ccases:
            size = c.split("-")[1]
            rd = stats(series("kafka", c, "records").values())
            rps = stats(series("kafka", c, "rec_per_s").values())
            mbs = stats(series("kafka", c, "mb_per_s").values())
            cpu = stats(series("kafka", c, None, per_rec("vm_cpu_us")).values())
            ccpu = stats(series("kafka", c, None,
                                per_rec("client_cpu_us")).values())
            cp = stats(series("kafka", c, None, per_rec("copy_bytes")).values())
            zc = stats(series("kafka", c, None, per_rec("zc_bytes")).values())
            gaps = sum(num(d, "gaps") or 0
                       for d in runs[("kafka", c)].values())
            md.append(f"| {size} | {fmt_spread(rd, 0)} | {fmt_spread(rps)} | "
                      f"{fmt_spread(mbs)} | {fmt_spread(cpu)} | "
                      f"{fmt_spread(ccpu)} | {fmt_spread(cp, 1)} | "
                      f"{fmt_spread(zc, 0)} | {gaps:.0f} |")
            for metric, st in (("records", rd), ("rec_per_s", rps),
                               ("mb_per_s", mbs), ("vm_cpu_us_per_rec", cpu),
                               ("client_cpu_us_per_rec", ccpu),
                               ("copied_bytes_per_rec", cp),
                               ("zerocopy_bytes_per_rec", zc)):
                if st is not None:
                    row("system", "krep Kafka consumer", c, metric, st,
                        "librdkafka simple consumer, no group")
        md.append("")

    # ---- ratios
    md.append("## Ratios (median of per-trial ratios, min–max)")
    md.append("")
    md.append("| ratio | size B | median (min–max) | trials |")
    md.append("| --- | --- | --- | --- |")

    def ratio(name, size, a, b, note=""):
        r = [a[t] / b[t] for t in a if t in b and b[t]]
        s = stats(r)
        md.append(f"| {name} | {size} | {fmt_spread(s)} | {s[3] if s else 0} |")
        row("ratio", "krep", name, f"ratio_{size}", s, note)

    for size in (100, 1024):
        ratio("krep commit p50 (acks=all, 1 in flight) ÷ TCP ping-pong p50",
              size, series("krep", f"p1-if1-acksall-{size}", "p50_us"), pp50)
    for size in (100, 1024):
        ratio(f"krep acks=all MB/s ({inflight} in flight, 1 partition) ÷ iperf3 MB/s",
              size, series("krep", f"p1-ifN-acksall-{size}", "mb_per_s"),
              iperf[size])
        ratio(f"krep acks=all MB/s ({inflight} in flight, 4 partitions) ÷ iperf3 MB/s",
              size, series("krep", f"p4-ifN-acksall-{size}", "mb_per_s"),
              iperf[size])
        ratio(f"krep acks=all MB/s ({inflight} in flight, {bkib} batches) ÷ iperf3 MB/s",
              size, series("krep", f"p1-ifB-acksall-{size}", "mb_per_s"),
              iperf[size])
    batched = f"{inflight} in flight, {bkib} batches"
    for size in (100, 1024):
        for shape, what in (("p1-if1", "1 in flight"),
                            ("p1-ifN", f"{inflight} in flight"),
                            ("p1-ifM", f"{many} in flight"),
                            ("p4-ifN", f"{inflight} in flight, 4 partitions"),
                            ("p1-ifB", batched)):
            ratio(f"krep acks=all ÷ acks=1 records/s ({what})", size,
                  series("krep", f"{shape}-acksall-{size}", "rec_per_s"),
                  series("krep", f"{shape}-acks1-{size}", "rec_per_s"))
    # acks=1 returns before the followers have the records; on one VM the
    # followers' share of the CPUs is spent after the run. Counting the
    # time until HW reached LEO (drain_secs) gives the rate the cluster
    # took the records in, replication included.
    for size in (100, 1024):
        for shape, what in (("p1-ifN", f"{inflight} in flight"),
                            ("p1-ifM", f"{many} in flight"),
                            ("p4-ifN", f"{inflight} in flight, 4 partitions"),
                            ("p1-ifB", batched)):
            ratio(f"krep acks=all ÷ acks=1 records/s, acks=1 counted until its followers caught up ({what})",
                  size,
                  series("krep", f"{shape}-acksall-{size}", "rec_per_s"),
                  series("krep", f"{shape}-acks1-{size}", "replicated_rec_per_s"))
    kruns = any(s == "kafka" for (s, c) in runs)
    kp = "krep Kafka port"
    if kruns:
        for size in (100, 1024):
            for shape, what in (("p1-if1", "1 in flight"),
                                ("p1-ifN", f"{inflight} in flight: "
                                 f"{inflight} producers ÷ {inflight} writers"),
                                ("p1-ifB", f"{batched}: {inflight} "
                                 f"producers ÷ {inflight} writers"),
                                ("p1-ifB1", f"{bkib} batches: 1 producer ÷ "
                                 f"{inflight} writers"),
                                ("raw-ifB", f"{batched}: the netlink "
                                 f"writers' batches over TCP, {inflight} "
                                 f"÷ {inflight} writers")):
                nl = "p1-ifB" if shape in ("p1-ifB1", "raw-ifB") else shape
                ratio(f"{kp} ÷ netlink, acks=all records/s ({what})", size,
                      series("kafka", f"{shape}-acksall-{size}", "rec_per_s"),
                      series("krep", f"{nl}-acksall-{size}", "rec_per_s"))
        for size in (100, 1024):
            ratio(f"{kp} acks=all ÷ acks=1 records/s (1 producer, {bkib} "
                  "batches)", size,
                  series("kafka", f"p1-ifB1-acksall-{size}", "rec_per_s"),
                  series("kafka", f"p1-ifB1-acks1-{size}", "rec_per_s"))
            ratio(f"{kp} acks=all ÷ acks=1 records/s, acks=1 counted until "
                  f"its followers caught up (1 producer, {bkib} batches)",
                  size,
                  series("kafka", f"p1-ifB1-acksall-{size}", "rec_per_s"),
                  series("kafka", f"p1-ifB1-acks1-{size}",
                         "replicated_rec_per_s"))
        for size in (100, 1024):
            ratio(f"{kp} ÷ netlink, commit p50 (acks=all, 1 in flight; "
                  "< 1 is faster)", size,
                  series("kafka", f"p1-if1-acksall-{size}", "p50_us"),
                  series("krep", f"p1-if1-acksall-{size}", "p50_us"))
            ratio(f"{kp} commit p50 (acks=all, 1 in flight) ÷ TCP "
                  "ping-pong p50", size,
                  series("kafka", f"p1-if1-acksall-{size}", "p50_us"), pp50)
    for system, mode, name in PEERS:
        if system in notm:
            md.append(f"| krep ÷ {name} | - | not measured: {notm[system]} | 0 |")
            continue
        for size in (100, 1024):
            for shape, what in (("p1-if1", "1 in flight"),
                                ("p1-ifN", f"{inflight} in flight"),
                                ("p1-ifB", batched)):
                if shape == "p1-ifB" and not runs.get((system, f"{shape}-{mode}-{size}")):
                    continue    # its client sends one record per request
                ratio(f"krep acks=all ÷ {name} records/s ({what})", size,
                      series("krep", f"{shape}-acksall-{size}", "rec_per_s"),
                      series(system, f"{shape}-{mode}-{size}", "rec_per_s"))
            for q in ("p50", "p99"):
                ratio(f"krep acks=all ÷ {name} commit {q} (1 in flight; < 1 is faster)",
                      size, series("krep", f"p1-if1-acksall-{size}", f"{q}_us"),
                      series(system, f"p1-if1-{mode}-{size}", f"{q}_us"))
            if not kruns:
                continue
            # like for like: krep's client over TCP too
            for shape, what in (("p1-if1", "1 in flight"),
                                ("p1-ifN", f"{inflight} in flight"),
                                ("p1-ifB", batched)):
                if not runs.get((system, f"{shape}-{mode}-{size}")):
                    continue
                ratio(f"{kp} ÷ {name} records/s ({what})", size,
                      series("kafka", f"{shape}-acksall-{size}", "rec_per_s"),
                      series(system, f"{shape}-{mode}-{size}", "rec_per_s"))
            for q in ("p50", "p99"):
                ratio(f"{kp} ÷ {name} commit {q} (1 in flight; < 1 is faster)",
                      size, series("kafka", f"p1-if1-acksall-{size}", f"{q}_us"),
                      series(system, f"p1-if1-{mode}-{size}", f"{q}_us"))
    md.append("")
    md.append("Commit rules differ: Redis WAIT 2 and krep acks=all (full ISR) "
              "wait for every replica; NATS JetStream R3 and etcd wait for a "
              "majority (2 of 3), so one slow replica does not hold them up.")
    md.append("")
    if fails:
        md.append(f"## Failed runs ({len(fails)})")
        md.append("")
        for f in fails[:20]:
            md.append(f"- `{f[:200]}`")
        md.append("")
    if notm:
        md.append("## Not measured")
        md.append("")
        for s, why in notm.items():
            md.append(f"- {s}: {why}")
        md.append("")

    if ld[0] or ld[1]:
        md += logdir_section(ld, row)
    return write(outdir, md, rows)


def write(outdir, md, rows):
    os.makedirs(outdir, exist_ok=True)
    text = "\n".join(md)
    with open(os.path.join(outdir, "results.md"), "w") as f:
        f.write(text)
    with open(os.path.join(outdir, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["section", "system", "case", "metric", "median", "min",
                    "max", "trials", "note"])
        w.writerows(rows)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
