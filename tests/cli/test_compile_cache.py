"""The compile cache of `g2pl run` and `g2plc` (g2pl/compile_cache.py): a hit runs the same code without
the compiler, every input of the generated text changes the key, and nothing it did not write itself
(tampered bytes, another owner, loose permissions, links) is ever executed.

Each test has its own cache directory (G2PL_CACHE_DIR), never the user's.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from cli_util import ROOT, call, mpi_available

import g2pl
from g2pl import compile_cache as CC
from g2pl.cli import g2pl_main, g2plc_main
from g2pl.errors import G2PLError

BFS = ROOT / "programs" / "bfs.g2pl"
TWO = """// two procedures
first(k: int) { x = { k | v <- V }; return x; }
second(s: vid) { d = { (id == s) ? 1 : 0 | v <- V }; return d; }
"""
EDGES = "1 2\n2 3\n3 4\n4 5\n5 6\n6 7\n7 8\n8 9\n9 10\n10 1\n"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv(CC.ENV_DIR, str(d))
    monkeypatch.delenv(CC.ENV_OFF, raising=False)
    return d


def entries(d: Path) -> list[Path]:
    return sorted(d.glob("*" + CC.SUFFIX)) if d.is_dir() else []


def program(tmp_path: Path, text: str, name: str = "p.g2pl") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


# ---- hits and misses


def test_a_miss_compiles_and_stores_a_hit_needs_no_compiler(cache: Path) -> None:
    first = CC.compile_program(BFS)
    assert type(first) is g2pl.Program and len(entries(cache)) == 1
    second = CC.compile_program(BFS)
    assert isinstance(second, CC.CachedProgram)
    assert second.python() == first.python() == g2pl.compile(BFS).python()
    assert second.procedures == first.procedures and second.file == first.file == str(BFS)
    assert [(n, t.kind, t.elem) for n, t in second.params()] == [(n, t.kind, t.elem) for n, t in first.params()]
    assert second._whole is None  # nothing compiled yet
    assert second.plan_text() == first.plan_text()  # the compiler's views are compiled on demand, the same


def test_the_cached_text_is_what_the_compiler_writes(cache: Path, tmp_path: Path) -> None:
    two = program(tmp_path, TWO)
    for path, opt, disable in ((BFS, 2, ()), (BFS, 0, ()), (ROOT / "programs" / "pagerank.g2pl", 1, ()),
                               (ROOT / "programs" / "sssp.g2pl", 2, ("prune", "pack")), (two, 2, ())):
        fresh = g2pl.compile(Path(path), opt=opt, disable=disable)
        CC.compile_program(path, opt=opt, disable=disable)
        hit = CC.compile_program(path, opt=opt, disable=disable)
        assert isinstance(hit, CC.CachedProgram), path
        for name in fresh.procedures:
            assert hit.python(name) == fresh.python(name)


def test_results_are_the_same_from_the_cache(cache: Path) -> None:
    graph = g2pl.load_graph("kron:6", seed=3)
    fresh = CC.compile_program(BFS).run(graph, args={"root": int(graph.ids[0])})
    hit = CC.compile_program(BFS)
    assert isinstance(hit, CC.CachedProgram)
    again = hit.run(graph, args={"root": int(graph.ids[0])})
    assert again.values == fresh.values
    with pytest.raises(G2PLError, match="expected a vertex ID"):  # the cached parameter types check arguments
        hit.run(graph, args={"root": "x"})


def test_a_cached_program_resumes_a_fresh_ones_checkpoint(cache: Path, tmp_path: Path) -> None:
    """A checkpoint is tied to the program's text, entry, -O and disabled passes: the cached program has them all."""
    graph = g2pl.load_graph("kron:6", seed=3)
    args = {"root": int(graph.ids[0])}
    fresh = CC.compile_program(BFS)
    ref = fresh.run(graph, args=args, checkpoint=str(tmp_path / "ck"), checkpoint_every=1)
    hit = CC.compile_program(BFS)
    assert isinstance(hit, CC.CachedProgram) and hit.source == fresh.source
    assert hit.run(graph, args=args, resume=str(tmp_path / "ck")).values == ref.values


def test_show_plan_on_a_hit(cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = tmp_path / "g.txt"
    graph.write_text(EDGES)
    argv = ["run", BFS, "--graph", graph, "--arg", "root=1", "--show-plan"]
    outs = [re.sub(r"\d+\.\d+ s$", "T s", call(g2pl_main, argv, capsys)[1], flags=re.M) for _ in range(2)]
    assert outs[0] == outs[1] and "plan: " in outs[0] and len(entries(cache)) == 1


def test_every_procedure_of_a_program_is_in_its_one_entry(cache: Path, tmp_path: Path) -> None:
    two = program(tmp_path, TWO)
    CC.compile_program(two)
    hit = CC.compile_program(two)
    assert isinstance(hit, CC.CachedProgram) and hit.procedures == ["first", "second"]
    assert [t.elem for _, t in hit.params("second")] == ["vid"]
    with pytest.raises(G2PLError, match="choose one with --entry"):
        hit.entry_name()
    assert len(entries(cache)) == 1


def _run_importing(*args: str, env: dict[str, str]) -> tuple[str, set[str]]:
    """stdout of `python -X importtime -m g2pl ARGS` and the modules it imported."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "g2pl", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    modules = {m.group(1) for m in re.finditer(r"^import time:.*\|\s*(\S+)$", proc.stderr, re.M)}
    return re.sub(r"\d+\.\d+ s$", "T s", proc.stdout, flags=re.M), modules


def test_a_repeated_run_imports_no_compiler(cache: Path, tmp_path: Path) -> None:
    graph = tmp_path / "g.txt"
    graph.write_text(EDGES)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = ("run", str(BFS), "--graph", str(graph), "--arg", "root=1")
    cold, cold_mods = _run_importing(*args, env=env)
    warm, warm_mods = _run_importing(*args, env=env)
    assert "lark" in cold_mods and "g2pl.compiler.parser" in cold_mods
    heavy = {"lark", "jinja2", "scipy", "g2pl.compiler.parser", "g2pl.compiler.codegen", "g2pl.compiler.ir",
             "g2pl.compiler.pipeline", "mpi4py", "cupy", "networkx", "rich", "matplotlib"}
    assert not heavy & warm_mods, heavy & warm_mods
    assert warm == cold and "Level (vertex graph of int) = {1: 0, 2: 1" in warm


@pytest.mark.skipif(not mpi_available(), reason="mpi4py/mpiexec not installed (pip install '.[mpi]')")
def test_every_rank_of_np_uses_it(cache: Path, tmp_path: Path) -> None:
    graph = tmp_path / "g.txt"
    graph.write_text(EDGES)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "g2pl", "run", str(BFS), "--graph", str(graph), "--arg", "root=1", "--np", "2"]
    outs = []
    for _ in range(2):  # the ranks miss together, then hit together
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        outs.append(re.sub(r"\d+\.\d+ s$", "T s", proc.stdout, flags=re.M))
        assert len(entries(cache)) == 1 and not [p for p in cache.iterdir() if p.name.startswith(".tmp-")]
    assert outs[0] == outs[1] and "2 ranks" in outs[0]


# ---- the key


def test_the_key_changes_with_every_input_of_the_generated_text(monkeypatch: pytest.MonkeyPatch) -> None:
    text = BFS.read_text()
    base = CC.cache_key(text, "bfs.g2pl", 2, ())
    assert CC.cache_key(text, "bfs.g2pl", 2, ()) == base
    others = {CC.cache_key(text + " ", "bfs.g2pl", 2, ()),
              CC.cache_key(text, "other.g2pl", 2, ()),  # the module's docstring names the file
              CC.cache_key(text, "bfs.g2pl", 1, ()),
              CC.cache_key(text, "bfs.g2pl", 2, ("prune",)),
              CC.cache_key(text, "bfs.g2pl", 2, ("pack",))}
    assert base not in others and len(others) == 5
    CC.compiler_fingerprint.cache_clear()
    monkeypatch.setattr(g2pl, "__version__", "99.0")
    assert CC.cache_key(text, "bfs.g2pl", 2, ()) != base
    monkeypatch.undo()
    CC.compiler_fingerprint.cache_clear()
    assert CC.cache_key(text, "bfs.g2pl", 2, ()) == base
    files = CC._compiler_files()
    assert {"compiler/codegen.py", "compiler/parser.py", "grammar/g2pl.lark", "templates/module.py.j2"} <= \
        {name for name, _ in files}
    changed = [(n, d + b"\n# edited" if n == "compiler/codegen.py" else d) for n, d in files]
    monkeypatch.setattr(CC, "_compiler_files", lambda: changed)
    CC.compiler_fingerprint.cache_clear()
    try:
        assert CC.cache_key(text, "bfs.g2pl", 2, ()) != base  # an edited compiler never reads older entries
    finally:
        CC.compiler_fingerprint.cache_clear()


def test_options_and_edits_miss(cache: Path, tmp_path: Path) -> None:
    p = program(tmp_path, BFS.read_text())
    CC.compile_program(p)
    assert isinstance(CC.compile_program(p), CC.CachedProgram)
    assert type(CC.compile_program(p, opt=0)) is g2pl.Program
    assert type(CC.compile_program(p, disable=("prune",))) is g2pl.Program
    p.write_text(BFS.read_text().replace("d = 0;", "d = 0; "))
    assert type(CC.compile_program(p)) is g2pl.Program
    assert len(entries(cache)) == 4


# ---- errors, turning it off


def test_compile_errors_are_never_stored(cache: Path, tmp_path: Path) -> None:
    bad = program(tmp_path, "f() { return y; }")
    for _ in range(2):
        with pytest.raises(G2PLError) as err:
            CC.compile_program(bad)
    assert "y" in str(err.value) and entries(cache) == []
    with pytest.raises(G2PLError, match="no such program file"):
        CC.compile_program(tmp_path / "missing.g2pl")


def test_no_cache_flag_and_variable(cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = tmp_path / "g.txt"
    graph.write_text(EDGES)
    rc, out, _ = call(g2pl_main, ["run", BFS, "--graph", graph, "--arg", "root=1", "--quiet", "--no-cache"], capsys)
    assert rc == 0 and not cache.exists()
    os.environ[CC.ENV_OFF] = "1"
    try:
        assert type(CC.compile_program(BFS)) is g2pl.Program and not cache.exists()
    finally:
        del os.environ[CC.ENV_OFF]
    rc, _, _ = call(g2pl_main, ["run", BFS, "--graph", graph, "--arg", "root=1", "--quiet"], capsys)
    assert rc == 0 and len(entries(cache)) == 1


def test_no_home_means_no_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in (CC.ENV_DIR, "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(var, raising=False)
    assert CC.cache_dir() is None
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # not absolute: ignored, as the XDG rules say
    monkeypatch.setenv("HOME", str(tmp_path))
    assert CC.cache_dir() == tmp_path / ".cache" / "g2pl"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert CC.cache_dir() == tmp_path / "xdg" / "g2pl"


def test_g2plc_uses_it_for_modules_only(cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out1, out2 = tmp_path / "a.py", tmp_path / "b.py"
    assert call(g2plc_main, [BFS, "-o", out1], capsys)[0] == 0
    assert len(entries(cache)) == 1
    assert call(g2plc_main, [BFS, "-o", out2], capsys)[0] == 0
    assert out1.read_text() == out2.read_text() == g2pl.compile(BFS).python()
    rc, plan, _ = call(g2plc_main, [BFS, "--emit", "plan"], capsys)
    assert rc == 0 and plan.startswith("plan for procedure `bfs`")


# ---- safety


def _hit(path: Path = BFS) -> bool:
    return isinstance(CC.compile_program(path), CC.CachedProgram)


def test_a_changed_byte_is_refused_and_rewritten(cache: Path) -> None:
    CC.compile_program(BFS)
    (entry,) = entries(cache)
    good = entry.read_bytes()
    evil = good.replace(b"def run(rt, args):", b"def run(rt, args):\\n    raise SystemExit(66)", 1)
    assert evil != good
    entry.write_bytes(evil)
    prog = CC.compile_program(BFS)
    assert type(prog) is g2pl.Program and "SystemExit" not in prog.python()
    assert entry.read_bytes() == good and _hit()  # rewritten by the compile


def test_an_entry_signed_with_another_secret_is_refused(cache: Path) -> None:
    CC.compile_program(BFS)
    secret = cache / CC.SECRET
    secret.write_bytes(os.urandom(32))
    assert not _hit()
    assert _hit()


def test_an_entry_moved_to_another_key_is_refused(cache: Path, tmp_path: Path) -> None:
    other = program(tmp_path, BFS.read_text() + "\n")
    CC.compile_program(BFS)
    (entry,) = entries(cache)
    key = CC.cache_key(other.read_text(), str(other), 2, ())
    (cache / (key + CC.SUFFIX)).write_bytes(entry.read_bytes())
    os.chmod(cache / (key + CC.SUFFIX), 0o600)
    assert not _hit(other)


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_an_entry_others_may_write_is_refused(cache: Path, mode: int) -> None:
    CC.compile_program(BFS)
    (entry,) = entries(cache)
    os.chmod(entry, mode)
    assert not _hit()
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600 and _hit()  # replaced by a new one


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o722])
def test_a_directory_others_may_write_is_refused(cache: Path, mode: int, capsys: pytest.CaptureFixture[str]) -> None:
    CC.compile_program(BFS)
    os.chmod(cache, mode)
    warned: list[str] = []
    assert type(CC.compile_program(BFS, warn=warned.append)) is g2pl.Program
    assert warned == [f"not using the compile cache {cache}: it is writable by group or others"]
    before = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    CC.compile_program(ROOT / "programs" / "cc.g2pl")
    assert {p.name: p.stat().st_mtime_ns for p in cache.iterdir()} == before  # nothing stored either


def test_the_command_warns_once_and_runs(cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache.mkdir(mode=0o700)
    os.chmod(cache, 0o777)
    graph = tmp_path / "g.txt"
    graph.write_text(EDGES)
    rc, out, err = call(g2pl_main, ["run", BFS, "--graph", graph, "--arg", "root=1"], capsys)
    assert rc == 0 and "Level (vertex graph of int)" in out
    assert err.count("g2pl: warning: not using the compile cache") == 1


def test_a_secret_others_may_read_is_refused(cache: Path) -> None:
    CC.compile_program(BFS)
    os.chmod(cache / CC.SECRET, 0o640)
    warned: list[str] = []
    assert type(CC.compile_program(BFS, warn=warned.append)) is g2pl.Program
    assert warned == [f"not using the compile cache {cache}: its secret file is readable by group or others"]


def test_links_are_not_followed(cache: Path, tmp_path: Path) -> None:
    CC.compile_program(BFS)
    (entry,) = entries(cache)
    elsewhere = tmp_path / "elsewhere"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)  # the right bytes, but reached through a link
    assert not _hit() and not entry.is_symlink()


def test_a_cache_path_that_is_a_file_means_no_cache(cache: Path) -> None:
    cache.write_text("not a directory")
    assert type(CC.compile_program(BFS)) is g2pl.Program
    assert cache.read_text() == "not a directory"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_files_of_another_user_are_refused(cache: Path) -> None:
    CC.compile_program(BFS)
    (entry,) = entries(cache)
    os.chown(entry, 4242, 4242)
    assert not _hit()  # refused, and replaced by this user's
    assert entry.stat().st_uid == os.geteuid() and _hit()
    os.chown(cache, 4242, 4242)
    warned: list[str] = []
    assert type(CC.compile_program(BFS, warn=warned.append)) is g2pl.Program
    assert "owned by user 4242" in warned[0]


def test_a_new_directory_and_secret_are_private(cache: Path) -> None:
    CC.compile_program(BFS)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert stat.S_IMODE((cache / CC.SECRET).stat().st_mode) == 0o600
    assert len((cache / CC.SECRET).read_bytes()) == 32
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in entries(cache))


# ---- many writers, bounded size


def _compile_in_child(args: tuple[str, str]) -> str:
    os.environ[CC.ENV_DIR] = args[1]
    return CC.compile_program(args[0]).python()


def test_concurrent_writers(cache: Path, tmp_path: Path) -> None:
    """Processes that miss together (the ranks of `--np N`) each store the same entry; none reads a torn one."""
    progs = [str(BFS), str(ROOT / "programs" / "cc.g2pl")] * 4
    with ProcessPoolExecutor(4) as pool:
        texts = list(pool.map(_compile_in_child, [(p, str(cache)) for p in progs]))
    assert texts == [g2pl.compile(Path(p)).python() for p in progs]
    assert len(entries(cache)) == 2 and not [p for p in cache.iterdir() if p.name.startswith(".tmp-")]
    assert _hit() and _hit(ROOT / "programs" / "cc.g2pl")


def test_least_recently_used_entries_are_evicted(cache: Path) -> None:
    store = CC.Store(cache)
    for i in range(6):
        store.put(f"{i:064x}", json.dumps({"n": i}).encode())
        os.utime(cache / f"{i:064x}{CC.SUFFIX}", (1000 + i, 1000 + i))
    assert store.get(f"{0:064x}") is not None  # used now: the newest
    store.evict(max_entries=3)
    assert sorted(p.name[:64] for p in entries(cache)) == [f"{i:064x}" for i in (0, 4, 5)]
    store.evict(max_bytes=1)
    assert entries(cache) == []
    store.close()
