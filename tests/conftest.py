"""Suite-wide fixtures.

Every compiled XLA:CPU executable keeps about 18 memory mappings alive while
jax's caches hold it. A pytest worker that runs hundreds of tests compiles
thousands of programs and reaches the kernel's limit on mappings per process
(`vm.max_map_count`, 65530 by default), after which the next compilation dies
with a segmentation fault inside XLA. After each test module, a worker that
holds more than half that many clears jax's caches, which keeps its mappings
bounded; below it the caches stay for the modules that follow.

The suite's programs are tiny and run for milliseconds, so compiling them is
most of its time. XLA's CPU backend compiles them at LLVM optimisation level
0 (`--xla_backend_optimization_level=0`) and without its fusion emitters
(`--xla_cpu_use_fusion_emitters=false`). From a clean clone on 2 idle cores
the first flag cut the suite's CPU time from 30 to 23 minutes and the second
to 15 (8 minutes of wall time), every test passing unchanged; the tests that
run longer programs (training a tic-tac-toe policy) got no slower.

Programs that several modules compile (the same search on the same shapes)
are compiled once per machine: jax's persistent compilation cache, in
`.jax_cache/` (git-ignored; about 90 MB per run of the suite on changed
code, delete it to start afresh). Its key covers the program, the compile
options and the jax version, so a changed program compiles anew. (Bounding
its size with `jax_compilation_cache_max_size` made the suite twice as slow
here, one run each: 35 against 18 minutes.) Subprocesses that tests start
(training runs, the two-device check) inherit it through the environment.
"""

import gc
import os

import jax
import pytest

from tests import compile_count

# Each flag unless XLA_FLAGS sets it already; subprocesses inherit them.
_COMPILE_FAST_FLAGS = {"xla_backend_optimization_level": "0",
                       "xla_cpu_use_fusion_emitters": "false"}
for _name, _value in _COMPILE_FAST_FLAGS.items():
  if _name not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --{_name}={_value}".strip()
_CACHE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".jax_cache")
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", _CACHE)
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
jax.config.update("jax_persistent_cache_min_compile_time_secs",
                  float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]))


# Clear once a worker holds this many mappings: half the kernel's default
# limit, so one more module's programs never reach it. Below it the caches
# stay, and a module that runs a program an earlier one traced (the same
# search on the same shapes) neither traces nor loads it again.
_MAPPINGS_BEFORE_CLEARING = 32_000


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
  yield
  mappings = compile_count.mapping_count()
  if mappings is None or mappings > _MAPPINGS_BEFORE_CLEARING:
    jax.clear_caches()
    gc.collect()


# `make test` runs `-n 2 --dist loadfile --no-loadscope-reorder`: xdist hands
# whole files to the two workers in collection order, each worker taking the
# next file when it is done. Handing out the longest files first keeps the
# last files short, so neither worker idles long at the end (longest-first
# scheduling). The longest files in one run of the suite on 2 cores, longest
# first; the other files follow in their usual order.
LONGEST_FILES = ("test_train.py", "test_examples.py", "test_pgx_env.py", "test_search.py", "test_selfplay.py",
                 "test_solver.py", "test_classic.py", "test_gumbel.py", "test_leaves.py",
                 "test_device_report.py", "test_alternating.py", "test_budget.py",
                 "test_exploration.py", "test_mcgs_vs_mcts.py", "test_reference_agreement.py",
                 "test_reuse.py")


def pytest_collection_modifyitems(items):
  rank = {name: i for i, name in enumerate(LONGEST_FILES)}
  # A stable sort: the tests of a file keep their order.
  items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FILES)))


@pytest.fixture(scope="session")
def wheel(tmp_path_factory):
  """The project's wheel, built once for all workers from a copy of the
  working tree's files (tracked, and untracked but not ignored), so nothing
  stale in the checkout's own build/ folder gets into it."""
  import filelock  # pylint: disable=g-import-not-at-top
  import shutil  # pylint: disable=g-import-not-at-top
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  shared = tmp_path_factory.getbasetemp().parent   # one folder for every xdist worker
  out = shared / "wheel"
  with filelock.FileLock(str(shared / "wheel.lock")):
    built = sorted(out.glob("mcgs_jax-*.whl"))
    if built:
      return built[0]
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=root, capture_output=True, check=True).stdout.decode().split("\0")
    source = shared / "wheel-source"
    for name in filter(None, files):
      if os.path.isfile(os.path.join(root, name)):
        os.makedirs(source / os.path.dirname(name), exist_ok=True)
        shutil.copy2(os.path.join(root, name), source / name)
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                             "--no-build-isolation", "-q", "-w", str(out), str(source)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return sorted(out.glob("mcgs_jax-*.whl"))[0]
