#!/usr/bin/env python3
"""Migration from the real CosId (Java) to cosid, against a real Redis: no duplicate, and id formats that agree.

Run by .ci/interop.sh, which builds what this needs. For each CosId line given (--java VERSION=BUILD_DIR):

1. a redis-server of its own on a free port of 127.0.0.1, in a temporary folder;
2. CosId instances, each a JVM of its own (tests/interop/cosid-java), take machine ids in namespace `order` through
   CosId's SpringRedisMachineIdDistributor and issue ids with CosId's MillisecondSnowflakeId: two stop normally
   (CosId's revert), two are killed with SIGKILL while issuing, and one started after a normal stop takes the
   reverted machine id and is killed too;
3. the negative control: cosid on the same slots of an unmigrated namespace (`not_before` 0), its host clock behind
   the old hosts' (libfaketime) so that its clock reads inside the span of CosId's ids: duplicates MUST be found,
   else the check is blind and the run fails;
4. `cosid migrate --from redis://... --old-namespace order` into namespace `order` of the same Redis, then cosid
   runtimes (`cosid next`) on the same slots with the same clock skew: 0 duplicates, every id at or past not_before;
5. formats both ways: cosid parses CosId's decimal, friendly (DefaultSnowflakeFriendlyId, JVM in UTC) and padded
   base-62 (Radix62IdConverter.PAD_START) forms to the same parts and renders the same text, and CosId's parsers
   read cosid's forms (`cosid next --format ...`, `cosid parse`) to the same parts.

Waits are for conditions with generous deadlines, never timed assertions. Exits non-zero on any failure.
"""

import argparse
import json
import os
import random
import shutil
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EPOCH_MS = 1577203200000  # CosId's epoch, and cosid's millis layout's
NAMESPACE = "order"
DEADLINE_S = 180  # for any one condition: the machine may be loaded
STOP_MS = 5000  # how long the instances that stop normally issue
GUARD_MS = 250  # CosId 2.x guard period of the instances (CosId's default is 1 minute)
SAFE_GUARD_MS = 10_000  # passed to cosid migrate --safe-guard: 40 guard periods
COSID_IDS = 200_000  # ids each cosid runtime issues
SAMPLES = 25  # ids of each side whose forms are compared


def log(msg):
    print(f"interop: {msg}", flush=True)


class Failed(Exception):
    pass


def wait_for(what, cond, deadline_s=DEADLINE_S):
    end = time.monotonic() + deadline_s
    while not cond():
        if time.monotonic() > end:
            raise Failed(f"timed out after {deadline_s} s waiting for {what}")
        time.sleep(0.05)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def now_ms():
    return time.time_ns() // 1_000_000


def parts(id_):
    return {"unix_ms": (id_ >> 22) + EPOCH_MS, "slot": (id_ >> 12) & 1023, "sequence": id_ & 4095}


class Redis:
    def __init__(self, folder):
        self.port = free_port()
        self.folder = folder
        self.proc = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(folder),
             "--appendonly", "yes", "--appendfsync", "always", "--maxmemory-policy", "noeviction", "--save", "",
             "--protected-mode", "yes"],
            stdout=open(folder / "redis.log", "w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        wait_for("redis-server to answer", self.ping)

    def url(self):
        return f"redis://127.0.0.1:{self.port}/0"

    def ping(self):
        if self.proc.poll() is not None:
            raise Failed(f"redis-server exited ({self.proc.returncode}); see {self.folder / 'redis.log'}")
        return self.cli("PING").strip() == "PONG"

    def cli(self, *args):
        r = subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True)
        return r.stdout

    def hgetall(self, key):
        lines = self.cli("HGETALL", key).splitlines()
        return dict(zip(lines[0::2], lines[1::2]))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Instance:
    """One CosId JVM issuing ids."""

    def __init__(self, java, folder, redis, name, run_ms):
        self.name = name
        self.out = folder / f"{name}.ids"
        self.ending = "running"
        cmd = ["java", "-Duser.timezone=UTC", "-Xss512k", "-XX:TieredStopAtLevel=1", "-cp", java.classpath,
               "cosid.interop.Main", "issue", "--redis-port", str(redis.port), "--namespace", NAMESPACE,
               "--instance", name, "--out", str(self.out), "--run-ms", str(run_ms), "--guard-ms", str(GUARD_MS)]
        self.proc = subprocess.Popen(cmd, stdout=open(folder / f"{name}.log", "w"), stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    def marker(self, suffix):
        return Path(str(self.out) + suffix)

    def ready(self):
        if self.proc.poll() is not None and not self.marker(".ready").exists():
            raise Failed(f"CosId instance {self.name} exited ({self.proc.returncode}) before issuing; see its log")
        return self.marker(".ready").exists()

    def machine(self):
        return int(self.marker(".ready").read_text().strip())

    def stopped_normally(self):
        if self.proc.poll() is None:
            return False
        if self.proc.returncode != 0 or not self.marker(".done").exists():
            raise Failed(f"CosId instance {self.name} failed ({self.proc.returncode}); see its log")
        self.ending = "stopped normally (revert)"
        return True

    def kill(self):
        if self.proc.poll() is not None:
            raise Failed(f"CosId instance {self.name} ended ({self.proc.returncode}) before its SIGKILL")
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.ending = "SIGKILL while issuing"

    def ids(self):
        # A SIGKILL can cut the last line short: only whole lines count.
        text = self.out.read_text()
        lines = text.split("\n")
        return [int(x) for x in lines[:-1] if x]


class Java:
    def __init__(self, version, build):
        self.version = version
        self.classpath = f"{build}/classes:{build}/lib/*"

    def parse(self, lines):
        """CosId's parsers over "FORM TEXT" lines: {(form, text): fields or error}."""
        r = subprocess.run(["java", "-Duser.timezone=UTC", "-cp", self.classpath, "cosid.interop.Main", "parse"],
                           input="\n".join(lines) + "\n", capture_output=True, text=True)
        if r.returncode != 0:
            raise Failed(f"CosId {self.version} parse failed: {r.stderr}")
        out = {}
        for line in r.stdout.splitlines():
            f = line.split("\t")
            if f[2] == "ERROR":
                out[(f[0], f[1])] = {"error": f[3]}
            else:
                out[(f[0], f[1])] = {"decimal": int(f[2]), "unix_ms": int(f[3]), "slot": int(f[4]),
                                     "sequence": int(f[5]), "friendly": f[6], "base62": f[7], "unpadded": f[8]}
        return out


class Cli:
    def __init__(self, path, redis):
        self.path = path
        self.redis = redis

    def env(self, namespace=NAMESPACE, slot=None):
        env = {k: v for k, v in os.environ.items() if not k.startswith("COSID_")}
        env.update(COSID_STORE=self.redis.url(), COSID_NAMESPACE=namespace, COSID_MAX_WAIT="120s",
                   COSID_ACQUIRE_TIMEOUT="120s")
        if slot is not None:
            env["COSID_PREFERRED_SLOT"] = str(slot)
        return env

    def run(self, *args, check=True, **kw):
        r = subprocess.run([self.path, *args], capture_output=True, text=True, **kw)
        if check and r.returncode != 0:
            raise Failed(f"cosid {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
        return r

    def parse(self, form, text):
        r = self.run("parse", "--as", form, "--json", "--", text, check=False,
                     env={k: v for k, v in os.environ.items() if not k.startswith("COSID_")})
        if r.returncode != 0:
            return {"error": r.stderr.strip()}
        j = json.loads(r.stdout)
        return {"decimal": int(j["decimal"]), "unix_ms": j["unix_ms"], "slot": j["slot"], "sequence": j["sequence"],
                "friendly": j["friendly"], "base62": j["base62"]}

    def issue_on_slots(self, folder, tag, namespace, slots, mid_ms):
        """`cosid next -n COSID_IDS` on each slot at once, each with its clock reading about mid_ms at start."""
        procs = {}
        for slot in slots:
            out = folder / f"cosid-{tag}-slot{slot}.ids"
            skew = max(0, now_ms() - mid_ms)
            # The new host's wall clock runs `skew` ms behind the old hosts'; its monotonic clock is untouched.
            cmd = ["faketime", "--exclude-monotonic", "-f", f"-{skew / 1000:.3f}s", self.path, "next", "-n",
                   str(COSID_IDS)]
            procs[slot] = (out, subprocess.Popen(cmd, stdout=open(out, "w"), stderr=subprocess.PIPE, text=True,
                                                 env=self.env(namespace, slot)), skew)
        result = {}
        for slot, (out, p, skew) in procs.items():
            _, err = p.communicate()
            if p.returncode != 0:
                raise Failed(f"cosid next on slot {slot} ({tag}) exited {p.returncode}: {err.strip()}")
            ids = [int(x) for x in out.read_text().split()]
            result[slot] = (ids, skew)
        return result


def duplicates(java_ids, cosid_ids):
    return len(set(java_ids) & set(cosid_ids))


def compare(label, expected, got, keys):
    bad = [k for k in keys if expected.get(k) != got.get(k)]
    if bad:
        return f"{label}: expected {expected}, got {got} (differ in {bad})"
    return None


def formats(java, cli, java_ids, cosid_ids, folder):
    """Both directions; returns (checks passed, mismatches)."""
    rng = random.Random(12)
    problems = []
    notes = set()
    checks = 0
    fields = ["decimal", "unix_ms", "slot", "sequence"]
    # Edge ids: sequence 0, the last slot and sequence, a whole second, the last millisecond of the 41-bit span.
    edges = [(1 << 22) | 1, ((1 << 41) - 1) << 22 | 1023 << 12 | 4095,
             (1764547200000 - EPOCH_MS) << 22 | 1023 << 12, (1735689599999 - EPOCH_MS) << 22 | 7 << 12 | 1]

    # CosId -> cosid: CosId renders its ids; cosid reads every form to the same parts and renders the same text.
    sample = sorted(set(rng.sample(java_ids, min(SAMPLES, len(java_ids))) + [java_ids[0], java_ids[-1]] + edges))
    cosid_view = java.parse([f"decimal {i}" for i in sample])
    for i in sample:
        c = cosid_view[("decimal", str(i))]
        if "error" in c:
            problems.append(f"CosId cannot render its own id {i}: {c['error']}")
            continue
        if compare("", {**parts(i), "decimal": i}, c, fields):
            problems.append(f"CosId's parts of {i} differ from the layout's: {c}")
        for form in ("decimal", "friendly", "base62"):
            text = str(i) if form == "decimal" else c[form]
            got = cli.parse(form, text)
            checks += 1
            p = compare(f"cosid parse --as {form} {text} (CosId's)", c, got, fields + ["friendly", "base62"])
            if p:
                problems.append(p)
        # CosId's unpadded base-62 (Radix62IdConverter.INSTANCE) is shorter than 11 characters for ids below
        # 62^10: cosid reads only the canonical, padded form (DESIGN 6), so it must refuse, not misread, those.
        if len(c["unpadded"]) < 11:
            got = cli.parse("base62", c["unpadded"])
            checks += 1
            if "error" not in got:
                problems.append(f"cosid read CosId's unpadded base-62 {c['unpadded']} as {got}")
            else:
                notes.add("CosId's unpadded base-62 (Radix62IdConverter.INSTANCE) is refused by cosid: it reads the"
                          " padded 11-character form only")

    # cosid -> CosId: cosid renders (next --format, parse); CosId's parsers read each form to the same parts.
    sample = sorted(set(rng.sample(cosid_ids, min(SAMPLES, len(cosid_ids))) + [cosid_ids[0], cosid_ids[-1]]))
    lines = []
    mine = {}
    for i in sample:
        c = cli.parse("decimal", str(i))
        if "error" in c:
            problems.append(f"cosid cannot parse its own id {i}: {c['error']}")
            continue
        for form in ("decimal", "friendly", "base62"):
            text = str(i) if form == "decimal" else c[form]
            lines.append(f"{form} {text}")
            mine[(form, text)] = c
    for form, path in (("friendly", folder / "next-friendly.txt"), ("base62", folder / "next-base62.txt")):
        for text in path.read_text().split():
            c = cli.parse(form, text)
            if "error" in c:
                problems.append(f"cosid cannot parse its own {form} id {text}: {c['error']}")
                continue
            lines.append(f"{form} {text}")
            mine[(form, text)] = c
    theirs = java.parse(lines)
    for key, c in mine.items():
        checks += 1
        j = theirs.get(key, {"error": "no answer"})
        p = compare(f"CosId {java.version} parsing cosid's {key[0]} {key[1]}", c, j,
                    fields + ["friendly", "base62"])
        if p:
            problems.append(p)
    return checks, problems, sorted(notes)


def scenario(java, cli_path, out_root):
    folder = Path(tempfile.mkdtemp(prefix=f"cosid-{java.version}-", dir=out_root))
    log(f"== CosId {java.version}: folder {folder}")
    redis = Redis(folder)
    cli = Cli(cli_path, redis)
    instances = []
    passed = False
    try:
        # 1. The old deployment.
        for name, run_ms in (("stop-a", STOP_MS), ("stop-b", STOP_MS), ("crash-a", 3_600_000),
                             ("crash-b", 3_600_000)):
            instances.append(Instance(java, folder, redis, name, run_ms))
        for inst in instances:
            wait_for(f"CosId instance {inst.name} to issue", inst.ready)
        stop_a = instances[0]
        wait_for("stop-a to stop normally", stop_a.stopped_normally)
        # Started after a normal stop: takes the reverted machine id, as a restarted pod would.
        restarted = Instance(java, folder, redis, "restarted", 3_600_000)
        instances.append(restarted)
        wait_for("restarted to issue", restarted.ready)
        wait_for("stop-b to stop normally", instances[1].stopped_normally)
        # Every timestamp CosId recorded at a normal stop is now in the past. The instances still running issue on
        # for longer than the safe-guard: only what CosId recorded for them (2.x: its guard's stamps; 1.x: `|0`)
        # can cover their last ids, so a migration that misread those records would repeat ids below.
        stops_recorded = now_ms()
        wait_for("the running instances to issue past the safe-guard",
                 lambda: now_ms() > stops_recorded + SAFE_GUARD_MS + 2000)
        for inst in instances:
            if inst.ending == "running":
                inst.kill()
        killed_at = now_ms()

        java_ids = []
        by_slot = {}
        for inst in instances:
            ids = inst.ids()
            java_ids.extend(ids)
            by_slot.setdefault(inst.machine(), []).extend(ids)
            log(f"CosId {java.version} {inst.name:9} machine {inst.machine():4}  {len(ids):7} ids  {inst.ending}")
        java_dups = len(java_ids) - len(set(java_ids))
        if java_dups:
            raise Failed(f"CosId's own instances repeated {java_dups} ids (the old deployment itself is broken)")
        slots = sorted(by_slot)
        first_ms = min(parts(i)["unix_ms"] for i in java_ids)
        last_ms = max(parts(i)["unix_ms"] for i in java_ids)
        mid_ms = (first_ms + last_ms) // 2
        itc = redis.hgetall(f"cosid:{{{NAMESPACE}}}:itc_idx")
        revert = redis.hgetall(f"cosid:{{{NAMESPACE}}}:revert")
        log(f"CosId {java.version} left in Redis: itc_idx {itc}, revert {revert}")
        log(f"CosId {java.version} ids span {first_ms}..{last_ms} (last id {killed_at - last_ms} ms before the kill)")

        # 2. Negative control: cosid on the same slots with no not_before, its clock inside CosId's span.
        neg = cli.issue_on_slots(folder, "unmigrated", NAMESPACE + "-unmigrated", slots, mid_ms)
        neg_dups = duplicates(java_ids, [i for ids, _ in neg.values() for i in ids])
        skews = sorted(s for _, s in neg.values())
        log(f"negative control (no migrate, clock {skews[0]}..{skews[-1]} ms behind): {neg_dups} duplicates")
        if neg_dups == 0:
            raise Failed("the negative control found no duplicate: this check could not see one")

        # 3. Migrate, then cosid on the same namespace and slots, with the same skew.
        base = ["migrate", "--from", redis.url(), "--old-namespace", NAMESPACE, "--safe-guard",
                f"{SAFE_GUARD_MS}ms"]
        dry = cli.run(*base, "--dry-run", env=cli.env(), check=False)
        print(dry.stdout + dry.stderr, end="", flush=True)
        zero = sorted(name for name, v in itc.items() if v.endswith("|0"))
        accepted_zero = False
        r = cli.run(*base, env=cli.env(), check=False)
        if zero:
            # CosId 1.x's `machineId|0`: the instance's last timestamp is unknown, not 1970. migrate must refuse
            # and name it; the operator then says when the old deployment stopped (here: after the SIGKILLs).
            if r.returncode == 0:
                # Go on as an operator would, to show what the acceptance costs; the run fails below.
                accepted_zero = True
                log(f"cosid migrate ACCEPTED the `|0` stamps of {zero} (read as 1970)")
            else:
                unnamed = [name for name in zero if name not in r.stderr]
                if unnamed:
                    raise Failed(f"cosid migrate refused without naming instance(s) {unnamed}: {r.stderr.strip()}")
                log(f"cosid migrate refused the `|0` stamps of {zero}, as it must (exit {r.returncode}); "
                    f"again with --not-before {killed_at} (the kills)")
                r = cli.run(*base, "--not-before", str(killed_at), env=cli.env(), check=False)
        print(r.stdout, end="", flush=True)
        if r.returncode != 0:
            raise Failed(f"cosid migrate exited {r.returncode}: {r.stderr.strip()}")
        raised = re.search(r"raised not_before of namespace .* to (\d+)", r.stdout)
        if not raised:
            raise Failed(f"cosid migrate did not say what it raised not_before to: {r.stdout!r}")
        not_before = int(raised.group(1))
        pos = cli.issue_on_slots(folder, "migrated", NAMESPACE, slots, mid_ms)
        cosid_ids = [i for ids, _ in pos.values() for i in ids]
        for slot, (ids, skew) in pos.items():
            got = {parts(i)["slot"] for i in ids}
            if got != {slot}:
                raise Failed(f"cosid runtime meant for slot {slot} issued on slots {sorted(got)}")
            early = [i for i in ids if parts(i)["unix_ms"] < not_before]
            if early:
                raise Failed(f"{len(early)} cosid ids on slot {slot} before not_before {not_before}: {early[:3]}")
        pos_dups = duplicates(java_ids, cosid_ids)
        cosid_dups = len(cosid_ids) - len(set(cosid_ids))
        if accepted_zero:
            raise Failed(f"cosid migrate accepted CosId's `|0` stamps of {zero} as 1970, and cosid then repeated "
                         f"{pos_dups} of CosId's ids")
        log(f"after migrate (not_before {not_before}, clock behind by up to {max(s for _, s in pos.values())} ms): "
            f"{len(cosid_ids)} cosid ids on slots {slots}, {pos_dups} duplicates with CosId, {cosid_dups} among cosid")
        if pos_dups or cosid_dups:
            raise Failed(f"{pos_dups + cosid_dups} duplicate ids after migrate")

        # 4. Formats, both ways.
        for form in ("friendly", "base62"):
            out = cli.run("next", "-n", "5", "--format", form, env=cli.env()).stdout
            (folder / f"next-{form}.txt").write_text(out)
        checks, problems, notes = formats(java, cli, java_ids, cosid_ids, folder)
        for n in notes:
            log(f"format note: {n}")
        for p in problems:
            log(f"FORMAT MISMATCH: {p}")
        if problems:
            raise Failed(f"{len(problems)} of {checks} format checks disagree")
        log(f"formats: {checks} checks agree both ways (decimal, friendly in UTC, padded base-62)")
        summary = {"java_ids": len(java_ids), "cosid_ids": len(cosid_ids), "negative": neg_dups,
                   "duplicates": pos_dups, "formats": checks}
        passed = True
        return summary
    finally:
        for inst in instances:
            if inst.proc.poll() is None:
                inst.proc.kill()
                inst.proc.wait()
        redis.stop()
        # A passed run's ids (some 40 MB) are not kept; a failed run's folder is, for a look.
        if passed and not os.environ.get("COSID_INTEROP_KEEP"):
            shutil.rmtree(folder, ignore_errors=True)
        else:
            log(f"kept {folder}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True, help="the cosid binary, built with the redis feature")
    ap.add_argument("--java", action="append", required=True, metavar="VERSION=BUILD_DIR",
                    help="a CosId line and its build folder (target/cosid-VERSION)")
    ap.add_argument("--out", default=os.environ.get("TMPDIR", "/tmp"), help="where the run folders go")
    args = ap.parse_args()
    results = {}
    failed = 0
    for spec in args.java:
        version, build = spec.split("=", 1)
        try:
            results[version] = scenario(Java(version, build), args.cli, args.out)
        except Failed as e:
            log(f"FAILED for CosId {version}: {e}")
            failed += 1
    log("== summary")
    for version, s in results.items():
        log(f"CosId {version}: {s['java_ids']} CosId ids, {s['cosid_ids']} cosid ids, duplicates {s['duplicates']}"
            f" (negative control: {s['negative']} caught), {s['formats']} format checks agreed")
    print(f"interop: {len(results)} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
