"""The project carries its data: Pons' sets ship inside `envs`, a copy of the
packages with no folder beside it evaluates Connect-4, and the wheel holds
the files."""

import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

from envs import pons

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("mcgs_jax", "envs", "networks", "learning")


def test_every_pons_file_is_inside_the_package():
  assert pons.DATA_DIR.is_relative_to(ROOT / "envs")
  for name in pons.SETS:
    assert len(pons.read_scores(name)) == 1000
    assert len(pons.read_columns(name)) == 1000


def test_no_project_file_reads_a_folder_beside_the_project():
  suffixes = {".py", ".toml", ".cfg", ""}
  offenders = []
  for top in PACKAGES + ("experiments", "tests", "Makefile", "pyproject.toml"):
    for path in [ROOT / top] if (ROOT / top).is_file() else (ROOT / top).rglob("*"):
      if path.is_file() and path.suffix in suffixes and path != pathlib.Path(__file__):
        if "../shared" in path.read_text(errors="ignore"):
          offenders.append(str(path.relative_to(ROOT)))
  assert not offenders, offenders


def test_a_copy_of_the_packages_alone_evaluates_connect4(tmp_path):
  # The packages copied into an empty folder: nothing beside them, no
  # ../shared, and the copy, not the checkout, on the path.
  for package in PACKAGES:
    shutil.copytree(ROOT / package, tmp_path / package,
                    ignore=shutil.ignore_patterns("__pycache__", "pretrained"))
  script = (
      "import jax, envs\n"
      "from envs import pons\n"
      "from learning import agents, ground_truth\n"
      "assert str(pons.DATA_DIR).startswith(%r), pons.DATA_DIR\n"
      "figures = ground_truth.evaluate(envs.make('connect4'), agents.RandomAgent(),\n"
      "                                jax.random.key(0), c4_sets=('L3_R1', 'L1_R3'),\n"
      "                                positions_per_set=20, chunk_size=20)\n"
      "print(sorted(figures))\n" % str(tmp_path))
  env = {**os.environ, "PYTHONPATH": str(tmp_path), "JAX_PLATFORMS": "cpu"}
  result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.strip() == "['c4_error_L1_R3', 'c4_error_L3_R1']"


def test_the_wheel_holds_the_data(tmp_path):
  result = subprocess.run(
      [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
       "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  wheel, = tmp_path.glob("mcgs_jax-*.whl")
  names = set(zipfile.ZipFile(wheel).namelist())
  for name in pons.SETS:
    assert f"envs/data/connect4/Test_{name}" in names
    assert f"envs/data/connect4/Test_{name}_columns" in names
  assert "networks/pretrained/connect4/agent.msgpack" in names


def _tracked_files():
  try:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True,
                           timeout=60).stdout.decode().split("\0")
  except (OSError, subprocess.CalledProcessError):
    return None
  return [name for name in names if name]


def test_no_run_state_in_git_and_the_tree_is_small():
  tracked = _tracked_files()
  if tracked is None:
    return   # an installed package: no repository to look at
  assert not [n for n in tracked if n.startswith("runs/")]
  # An orbax checkpoint (state and replay buffer) is a folder of steps.
  assert not [n for n in tracked if "/checkpoints/" in n]
  size = sum((ROOT / n).stat().st_size for n in tracked if (ROOT / n).exists())
  assert size <= 25 * 2 ** 20, f"{size / 2 ** 20:.1f} MiB tracked"


def test_training_runs_are_ignored_and_docs_records_are_not():
  if _tracked_files() is None:
    return
  def ignored(path):
    return subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT).returncode == 0
  # `make train ENV=<id>` and `make train-connect4` write under runs/.
  assert ignored("runs/connect4/checkpoints/1/state")
  assert ignored("runs/connect4_recipe/metrics.csv")
  assert not ignored("docs/learning/runs/connect4_v3/metrics.csv")
