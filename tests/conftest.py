"""Make the repository root importable (`import g2pl`) however pytest is started, and the shared test
helpers in this folder (`cli_util`, `oracles`, `program_args`, `fuzzgen`) from every test folder.

`G2PL_TEST_TIMEOUT_EACH=SECONDS` (opt-in) gives every test that long: a test still running then fails
(SIGALRM raises in its Python code); one stuck where the alarm cannot interrupt it (inside a C call,
a CUDA synchronization) makes pytest exit with every thread's traceback 15 seconds later, so a hung
test costs its step one test's time, not the step; a SIGTERM (the step's own timeout) prints them too.
"""

import faulthandler
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest

_ROOT = str(Path(__file__).resolve().parent.parent)
_TESTS = Path(__file__).resolve().parent
# a few test modules share helpers by module name (`from test_mpi import HAVE_MPI`): every test file
# name is unique across the folders, so each folder is importable from the others
_FOLDERS = sorted(str(d) for d in _TESTS.iterdir() if d.is_dir() and any(d.glob("test_*.py")))
for _path in (*_FOLDERS, str(_TESTS), _ROOT):
    if _path not in sys.path:
        sys.path.insert(0, _path)

# The compile cache of `g2pl run`/`g2plc` (g2pl/compile_cache.py) lives in a folder of this test run,
# never the user's: every run starts without entries and the processes the tests start inherit it.
_CACHE_DIR = tempfile.mkdtemp(prefix="g2pl-test-cache-")
os.environ["G2PL_CACHE_DIR"] = _CACHE_DIR
os.environ.pop("G2PL_NO_CACHE", None)

#: Seconds between a test's soft timeout (it fails) and the hard one (the process exits).
HARD_TIMEOUT_GRACE = 15.0


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE_DIR, ignore_errors=True)


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/fixtures/passes/*/*.golden from the current output (review the diff)")


def _timeout_each() -> float:
    """G2PL_TEST_TIMEOUT_EACH in seconds; 0 (off) when unset or not a positive number."""
    try:
        t = float(os.environ.get("G2PL_TEST_TIMEOUT_EACH", "") or 0)
    except ValueError:
        return 0.0
    return t if t > 0 else 0.0


def _stderr_fd(config) -> int:
    """A descriptor of the real stderr: pytest captures fd 2 while a test runs."""
    try:
        from _pytest.faulthandler import fault_handler_stderr_fd_key

        return config.stash[fault_handler_stderr_fd_key]
    except Exception:  # another pytest version, or its faulthandler plugin disabled
        return sys.__stderr__.fileno() if sys.__stderr__ is not None else 2


@pytest.hookimpl(trylast=True)  # after pytest's faulthandler plugin has its copy of stderr
def pytest_configure(config):
    if _timeout_each() and hasattr(signal, "SIGTERM"):  # killed from outside (a step's timeout): say where
        faulthandler.register(signal.SIGTERM, file=_stderr_fd(config), chain=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    limit = _timeout_each()
    if not limit or not hasattr(signal, "SIGALRM"):
        yield
        return

    def expired(signum, frame):
        pytest.fail(f"timed out after {limit:g} s (G2PL_TEST_TIMEOUT_EACH)")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, limit)
    faulthandler.dump_traceback_later(limit + HARD_TIMEOUT_GRACE, exit=True, file=_stderr_fd(item.config))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, old)
