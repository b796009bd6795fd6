"""The package as a user installs it: the wheel in a fresh virtual environment,
beside PyPI's own `envs` and `networks` packages, used from outside the
repository (an example, and `mcgs-jax train` for one iteration)."""

import os
import pathlib
import subprocess
import sys
import sysconfig
import textwrap
import venv

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# PyPI's packages of the generic names the project's folders have (pinned,
# so the test checks the same neighbours every time).
NEIGHBOURS = ("envs==1.4", "networks==0.3.7")


def _run(argv, cwd, env, timeout=300):
  result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
  assert result.returncode == 0, (argv, result.stdout[-2000:], result.stderr[-3000:])
  return result.stdout


@pytest.fixture(scope="module")
def user_env(tmp_path_factory, wheel):
  """A fresh venv holding the wheel and PyPI's envs and networks; jax and the
  other dependencies come from this interpreter's site-packages, appended to
  its path (a plain path entry: no editable finder of the checkout)."""
  base = tmp_path_factory.mktemp("user")
  home = base / "venv"
  venv.create(home, with_pip=False)
  python = home / "bin" / "python"
  site = pathlib.Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                                "['purelib'])"], cwd=base, env=os.environ).strip())
  (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
  pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps"]
  try:
    _run(pip + list(NEIGHBOURS), cwd=base, env=os.environ)
  except AssertionError as error:
    if "Could not find a version" in str(error) or "No matching distribution" in str(error) or (
        "Failed to establish a new connection" in str(error)):
      pytest.skip(f"PyPI is not reachable for {NEIGHBOURS}")
    raise
  _run(pip + [str(wheel)], cwd=base, env=os.environ)
  work = base / "work"   # a user's project folder, far from the checkout
  work.mkdir()
  env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
  env.update(JAX_PLATFORMS="cpu", PATH=f"{home / 'bin'}:{env.get('PATH', '')}")
  return python, work, env, site


def test_only_mcgs_jax_lands_beside_the_neighbours(user_env):
  python, work, env, site = user_env
  tops = sorted(p.name for p in site.iterdir()
                if not p.name.endswith((".dist-info", ".pth")) and p.name != "__pycache__")
  assert tops == ["envs", "mcgs_jax", "networks"], tops
  script = textwrap.dedent(f"""
      import importlib.metadata
      import envs, networks                      # PyPI's
      import mcgs_jax
      from mcgs_jax import envs as our_envs, networks as our_networks
      assert envs.__file__.startswith({str(site)!r}), envs.__file__
      assert not hasattr(envs, "make") and hasattr(our_envs, "make")
      assert our_envs.__file__.startswith({str(site)!r} + "/mcgs_jax/"), our_envs.__file__
      assert hasattr(our_networks, "NetworkEval")
      assert mcgs_jax.__version__ == importlib.metadata.version("mcgs_jax")
      print("ok", mcgs_jax.__version__)
      """)
  assert _run([str(python), "-c", script], cwd=work, env=env).startswith("ok")
  license_files = list(site.glob("mcgs_jax-*.dist-info/licenses/LICENSE"))
  assert license_files and "Apache License" in license_files[0].read_text()


def test_an_example_and_a_training_iteration_run_outside_the_repository(user_env):
  python, work, env, _ = user_env
  example = work / "own_training_loop.py"
  example.write_text((ROOT / "examples" / "own_training_loop.py").read_text())
  out = _run([str(python), str(example)], cwd=work, env=env)
  assert "policy on the empty board" in out
  command = pathlib.Path(python).parent / "mcgs-jax"
  assert command.exists()
  _run([str(command), "train", "--env", "tictactoe", "--out", "run", "--iterations", "1"],
       cwd=work, env=env)
  assert (work / "run" / "metrics.csv").read_text().count("\n") == 2   # header and one row
  assert (work / "run" / "agent.msgpack").exists()
