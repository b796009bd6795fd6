"""The project carries its data and installs as one package: Pons' sets ship
inside `mcgs_jax.envs`, the wheel holds `mcgs_jax` alone (with the data, the
shipped agent and the license), and the wheel's files with nothing beside
them evaluate Connect-4."""

import os
import pathlib
import subprocess
import sys
import zipfile

from mcgs_jax.envs import pons

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDERS = ("mcgs_jax", "envs", "networks", "learning", "benchmarks", "experiments")


def test_every_pons_file_is_inside_the_package():
  assert pons.DATA_DIR.is_relative_to(ROOT / "envs")
  for name in pons.SETS:
    assert len(pons.read_scores(name)) == 1000
    assert len(pons.read_columns(name)) == 1000


def test_no_project_file_reads_a_folder_beside_the_project():
  suffixes = {".py", ".toml", ".cfg", ""}
  offenders = []
  for top in FOLDERS + ("tests", "examples", "Makefile", "pyproject.toml"):
    for path in [ROOT / top] if (ROOT / top).is_file() else (ROOT / top).rglob("*"):
      if path.is_file() and path.suffix in suffixes and path != pathlib.Path(__file__):
        if "../shared" in path.read_text(errors="ignore"):
          offenders.append(str(path.relative_to(ROOT)))
  assert not offenders, offenders


def test_the_wheel_installs_one_package_with_its_data_and_license(wheel):
  names = set(zipfile.ZipFile(wheel).namelist())
  tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
  assert tops == {"mcgs_jax"}, sorted(tops)
  for name in pons.SETS:
    assert f"mcgs_jax/envs/data/connect4/Test_{name}" in names
    assert f"mcgs_jax/envs/data/connect4/Test_{name}_columns" in names
  assert "mcgs_jax/networks/pretrained/connect4/agent.msgpack" in names
  assert "mcgs_jax/py.typed" in names
  assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names), sorted(names)[-8:]
  for package in ("envs", "networks", "learning", "benchmarks", "experiments"):
    assert f"mcgs_jax/{package}/__init__.py" in names


def test_the_wheel_alone_evaluates_connect4(wheel, tmp_path):
  # The wheel's files in an empty folder: no checkout, no ../shared beside
  # them, and that folder, not the checkout, on the path.
  zipfile.ZipFile(wheel).extractall(tmp_path)
  script = (
      "import jax\n"
      "from mcgs_jax import envs\n"
      "from mcgs_jax.envs import pons\n"
      "from mcgs_jax.learning import agents, ground_truth\n"
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
