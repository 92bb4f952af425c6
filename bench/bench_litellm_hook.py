"""What reasonwire's LiteLLM hook costs a LiteLLM proxy: throughput of the real LiteLLM proxy
alone and of the same proxy with the hook loaded, against the same local upstream, in the
same run, and the ratio (issue 28's bar: hooked >= 0.9x alone).

The upstream, policy module, key and LiteLLM config are ``bench_gateway.py``'s. Every proxy
(one worker each) stays up for the whole run and takes wrk rounds (all at once by default, one
wrk each; ``--alternate``: alone, hooked, alone...), so load from other processes on a shared
machine falls on each alike; the figure per proxy is the median of its rounds and the ratio
is the median of the per-round ratios. ``--hook-src DIR`` (repeatable) loads the hook from
another checkout's ``src`` (a before/after pair in one run: ``--hook-src ../main/src
--hook-src src``); by default this checkout's. JSON and streamed completions are measured
apart (``--stream`` adds the streamed rounds). Needs wrk and the LiteLLM venv (``make
lane-litellm``); without them it prints why and stops.

    .venv/bin/python bench/bench_litellm_hook.py [--rounds 5] [--seconds 5] [--conns 8]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench_gateway import (
    DEFAULT_LITELLM,
    LITELLM_CONFIG,
    LITELLM_HOOK,
    MODEL,
    POLICY,
    PY,
    ROOT,
    UPSTREAM,
    _forwarded_rows,
    bench_token,
    free_port,
    litellm_proxy,
    stop,
    wait_ready,
)

MASTER = "sk-bench-master-not-real"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its threads so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk_start(
    url: str, headers: dict[str, str], stream: bool, args: argparse.Namespace, name: str
) -> subprocess.Popen[str]:
    """One wrk run against ``url``, started (see :func:`wrk_result`)."""
    body: dict[str, object] = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    if stream:
        body["stream"] = True
    lua = Path(args.tmp) / f"{name}-{'stream' if stream else 'json'}.lua"
    hdr = "".join(f'wrk.headers["{k}"] = "{v}"\n' for k, v in headers.items())
    lua.write_text(
        f'wrk.method = "POST"\nwrk.body = {json.dumps(json.dumps(body))}\n'
        f'wrk.headers["Content-Type"] = "application/json"\n{hdr}'
    )
    cmd = ["wrk", "-t1", f"-c{args.conns}", f"-d{args.seconds}s", "--timeout", "30s"]
    return subprocess.Popen(
        [*cmd, "-s", str(lua), url + "/v1/chat/completions"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wrk_result(proc: subprocess.Popen[str], url: str) -> tuple[float, int]:
    """req/s and requests of a wrk run; raises when wrk saw a non-2xx answer or a socket
    error."""
    out, _ = proc.communicate()
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    n = re.search(r"(\d+) requests in", out)
    if "Non-2xx" in out or "Socket errors" in out or not m or not n:
        raise RuntimeError(f"wrk against {url} saw errors:\n{out}")
    return float(m.group(1)), int(n.group(1))


def measure(
    servers: list[tuple[str, str, dict[str, str], Path | None, int]],
    stream: bool,
    args: argparse.Namespace,
) -> None:
    """wrk rounds over ``servers`` (the first is LiteLLM alone): each one's median req/s
    and CPU milliseconds per request (its process's CPU time over the round / requests
    answered), and each hooked proxy's ratios to the first, median of the per-round ratios.
    By default every proxy is loaded at once in a round (one wrk each): they share the
    machine's load at the same moments, and their req/s split the CPU they get by what each
    request costs; ``--alternate`` runs them one after another instead."""
    kind = "streamed" if stream else "JSON"
    rates: list[list[float]] = [[] for _ in servers]
    cpus: list[list[float]] = [[] for _ in servers]
    for r in range(args.rounds):
        order = list(range(len(servers)))
        if r % 2:
            order.reverse()  # alternate who goes first
        groups = [[i] for i in order] if args.alternate else [order]
        for group in groups:
            c0 = {i: cpu_seconds(servers[i][4]) for i in group}
            procs = {
                i: wrk_start(servers[i][1], servers[i][2], stream, args, str(i)) for i in group
            }
            done = {i: wrk_result(procs[i], servers[i][1]) for i in group}
            for i in group:
                rate, n = done[i]
                rates[i].append(rate)
                cpus[i].append((cpu_seconds(servers[i][4]) - c0[i]) * 1000 / n)
        line = "  ".join(
            f"{x[-1]:6.1f} ({c[-1]:5.2f} ms)" for x, c in zip(rates, cpus, strict=True)
        )
        print(f"  {kind} round {r + 1}: req/s (cpu/req) {line}  load {os.getloadavg()[0]:.2f}")
    print(f"\n{kind} completions, wrk {args.conns} conns x {args.seconds}s, {args.rounds} rounds:")
    for (name, *_), xs, cs in zip(servers, rates, cpus, strict=True):
        print(
            f"  {name:55s} median {statistics.median(xs):7.1f} req/s, "
            f"{statistics.median(cs):6.2f} ms cpu/req"
        )
    for (name, _, _, db, _), xs, cs in zip(servers[1:], rates[1:], cpus[1:], strict=True):
        per_round = [h / a for h, a in zip(xs, rates[0], strict=True)]
        per_cpu = [a / h for h, a in zip(cs, cpus[0], strict=True)]
        ratio, cpu_ratio = statistics.median(per_round), statistics.median(per_cpu)
        print(
            f"  {name} / alone: throughput {ratio:.3f}x (rounds "
            f"{', '.join(f'{x:.2f}' for x in per_round)}); bar >= 0.9x: "
            f"{'ok' if ratio >= 0.9 else 'MISSED'}"
        )
        print(
            f"    cpu per request, alone / hooked: {cpu_ratio:.3f}x (rounds "
            f"{', '.join(f'{x:.2f}' for x in per_cpu)})"
        )
        if db is not None and not _forwarded_rows(db):
            print("    the hook wrote no forwarded evidence: figure not counted")


def interleaved(
    servers: list[tuple[str, str, dict[str, str], Path | None, int]],
    stream: bool,
    args: argparse.Namespace,
) -> None:
    """``--requests`` sequential requests per proxy, one to each in turn (the first of each
    turn rotating): every proxy serves at the same moments, so the machine's load falls on
    each alike, request by request. Per proxy: the median time to the whole answer and the
    CPU milliseconds per request of its process over the run; each hooked proxy's ratios to
    the first (alone / hooked: the share of LiteLLM-alone's sequential throughput, and of its
    CPU cost per request)."""
    kind = "streamed" if stream else "JSON"
    body: dict[str, object] = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    if stream:
        body["stream"] = True
    data = json.dumps(body).encode()
    clients = [httpx.Client(base_url=url, timeout=60) for _, url, *_ in servers]
    times: list[list[float]] = [[] for _ in servers]
    try:

        def one(i: int) -> float:
            headers = {"content-type": "application/json", **servers[i][2]}
            t0 = time.perf_counter()
            r = clients[i].post("/v1/chat/completions", content=data, headers=headers)
            spent = time.perf_counter() - t0
            if r.status_code != 200:
                raise RuntimeError(f"{servers[i][0]} answered {r.status_code}: {r.text[:300]}")
            return spent

        for _ in range(args.warmup):
            for i in range(len(servers)):
                one(i)
        c0 = [cpu_seconds(pid) for *_, pid in servers]
        for k in range(args.requests):
            for j in range(len(servers)):
                i = (k + j) % len(servers)
                times[i].append(one(i))
        cpu = [
            (cpu_seconds(pid) - c) * 1000 / args.requests
            for (*_, pid), c in zip(servers, c0, strict=True)
        ]
    finally:
        for c in clients:
            c.close()
    print(f"\n{kind} completions, {args.requests} sequential requests each, interleaved:")
    for (name, *_), ts, c in zip(servers, times, cpu, strict=True):
        print(f"  {name:55s} median {statistics.median(ts) * 1000:7.2f} ms, {c:6.2f} ms cpu/req")
    base_t, base_c = statistics.median(times[0]), cpu[0]
    for (name, *_), ts, c in zip(servers[1:], times[1:], cpu[1:], strict=True):
        ratio = base_t / statistics.median(ts)
        verdict = "ok" if ratio >= 0.9 else "MISSED"
        print(
            f"  {name} / alone: sequential throughput {ratio:.3f}x (bar >= 0.9x: {verdict}); "
            f"cpu per request {base_c / c:.3f}x"
        )
    print(f"  load average: {os.getloadavg()[0]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=1000, help="interleaved, per proxy")
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3, help="wrk rounds (0: none)")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--stream", action="store_true", help="also measure streamed completions")
    ap.add_argument("--alternate", action="store_true", help="one proxy at a time per round")
    ap.add_argument("--litellm", default=str(DEFAULT_LITELLM))
    ap.add_argument("--hook-src", action="append", default=[], help="a checkout's src dir")
    args = ap.parse_args()
    exe = Path(args.litellm).expanduser()
    if shutil.which("wrk") is None or not exe.exists():
        print(f"skipped: needs wrk on PATH and LiteLLM at {exe} (make lane-litellm)")
        return
    srcs = [Path(s).resolve() for s in args.hook_src] or [ROOT / "src"]
    tmp = Path(tempfile.mkdtemp(prefix="rw-bench-hook-"))
    args.tmp = str(tmp)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        port = free_port()
        (tmp / "up.py").write_text(UPSTREAM)
        procs.append(subprocess.Popen([PY, str(tmp / "up.py"), str(port)]))
        upstream = f"http://127.0.0.1:{port}"
        wait_ready(upstream, procs[-1])
        sys.path.insert(0, str(srcs[-1]))
        from reasonwire.govern.binding import KeyRing

        ring = KeyRing.generate("bench")
        ring.save_dir(tmp / "keys")
        (tmp / "keys" / "bench.key.pem").unlink()  # the hook holds the public key only
        (tmp / "bench_policy.py").write_text(POLICY)
        token = bench_token(ring)
        alone_h = {"Authorization": f"Bearer {MASTER}"}
        hooked_h = alone_h | {
            "x-reasonwire-binding": token,
            "x-reasonwire-conversation": "bench-conv",
        }
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        env |= {
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_TELEMETRY": "False",
            "LITELLM_MASTER_KEY": MASTER,
            "LITELLM_LOG": "ERROR",
        }
        cfg = LITELLM_CONFIG.format(upstream=upstream + "/v1")
        servers: list[tuple[str, str, dict[str, str], Path | None, int]] = []
        # The same sys.path for every proxy: LiteLLM looks up modules it lacks on every
        # request (a stat per path entry), so a longer path alone costs ~0.5 ms a request.
        alone_env = env | {"PYTHONPATH": os.pathsep.join([str(tmp), str(srcs[0])])}
        proc, url = litellm_proxy(exe, tmp, "alone", cfg, alone_env, alone_h)
        procs.append(proc)
        servers.append(("LiteLLM alone", url, alone_h, None, proc.pid))
        for i, src in enumerate(srcs):
            db = tmp / f"ev-{i}.sqlite"
            hooked_env = env | {
                "PYTHONPATH": os.pathsep.join([str(tmp), str(src)]),
                "BENCH_UPSTREAM": upstream + "/v1",
                "REASONWIRE_POLICY": "bench_policy",
                "REASONWIRE_KEYS": str(tmp / "keys"),
                "REASONWIRE_EVIDENCE": str(db),
            }
            conf = cfg + LITELLM_HOOK
            proc, url = litellm_proxy(exe, tmp, f"hooked-{i}", conf, hooked_env, hooked_h)
            procs.append(proc)
            servers.append((f"LiteLLM + hook ({src})", url, hooked_h, db, proc.pid))
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        for stream in [False, True] if args.stream else [False]:
            interleaved(servers, stream, args)
            if args.rounds:
                measure(servers, stream, args)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        stop(procs)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
