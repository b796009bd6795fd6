"""Bad input, tried as a user would: each case runs a real `mcgs-jax` command
(or a few lines of the library) in a fresh folder, and the outcome is read
off the terminal: the exit code, how many lines stderr holds, whether a
traceback shows, and the first line. `mcgs-jax bad-inputs` prints the table
of docs/reliability.md from these.
"""

import dataclasses
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Callable

ROOT = pathlib.Path(__file__).resolve().parents[1]
PRETRAINED = ROOT / "networks" / "pretrained" / "connect4"
FIELDS = ("kind", "case", "exit_code", "stderr_lines", "traceback", "left_behind", "seconds",
          "first_line")
# The kind of the cases that call the library: they raise, and the row shows
# the exception's line (the command lines' rows show their first line).
LIBRARY = "search call"
TINY = dict(games=8, moves_per_iteration=5, batch_size=16, min_replay=16, eval_every=0,
            search={"num_simulations": 4})


@dataclasses.dataclass(frozen=True)
class Case:
  """One bad input.

  Attributes:
    kind: its class (command line, config file, run folder, data file,
      network, search call).
    name: what is wrong, in words.
    prepare: `prepare(folder) -> argv` writes what the case needs into a
      fresh folder and returns the command: `mcgs-jax` arguments, or
      ["python", CODE] for library lines.
    run_folder: the folder (inside `folder`) whose state must not change,
      or None.
  """
  kind: str
  name: str
  prepare: Callable[[pathlib.Path], list[str]]
  run_folder: str | None = None


def _config(folder: pathlib.Path, data, name="config.json") -> str:
  path = folder / name
  path.write_text(data if isinstance(data, str) else json.dumps(data))
  return str(path)


def _train(folder, *extra, config=None):
  argv = ["train", "--env", "tictactoe", "--out", str(folder / "run")]
  if config is not None:
    argv += ["--config", _config(folder, config)]
  return argv + list(extra)


def _copy_agent(folder: pathlib.Path) -> pathlib.Path:
  run = folder / "run"
  shutil.copytree(PRETRAINED, run, ignore=shutil.ignore_patterns("plots", "metrics.csv"))
  return run


def _nan_agent(folder):
  run = _copy_agent(folder)
  code = ("import jax, jax.numpy as jnp\n"
          "from mcgs_jax.learning import checkpoint\n"
          f"env, eval_fn, params = checkpoint.load_agent({str(run)!r})\n"
          f"checkpoint.write_variables({str(run / 'agent.msgpack')!r}, "
          "jax.tree.map(lambda x: jnp.full_like(x, jnp.nan), params))\n")
  subprocess.run([sys.executable, "-c", code], check=True, timeout=300,
                 env={**os.environ, "JAX_PLATFORMS": "cpu"})
  return ["play", "--agent", str(run), "--simulations", "4", "--first", "agent"]


def _foreign_games(folder):
  run = _copy_agent(folder)
  (run / "snapshots").mkdir()
  shutil.copy(run / "agent.msgpack", run / "snapshots" / "iteration_000001.msgpack")
  (run / "arena").mkdir()
  (run / "arena" / "games.csv").write_text("player,elo\nx,3\n")
  return ["arena", "--run", str(run), "--games", "2", "--simulations", "2"]


def _held(folder):
  run = folder / "run"
  run.mkdir()
  holder = subprocess.Popen(
      [sys.executable, "-c", "import sys, time\nfrom mcgs_jax.learning import run_lock\n"
       f"lock = run_lock.acquire({str(run)!r})\nprint('held', flush=True)\ntime.sleep(600)\n"],
      stdout=subprocess.PIPE, text=True)
  holder.stdout.readline()
  _HOLDERS.append(holder)
  return _train(folder)


_HOLDERS: list[subprocess.Popen] = []


def _read_only(folder):
  target = folder / "ro"
  target.mkdir()
  mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro", "none", str(target)],
                           capture_output=True).returncode == 0
  if not mounted:
    raise RuntimeError("a read-only file system cannot be mounted here")
  _MOUNTS.append(target)
  return ["train", "--env", "tictactoe", "--out", str(target / "run")]


_MOUNTS: list[pathlib.Path] = []


def _python(code: str):
  return lambda folder: ["python", "import jax, jax.numpy as jnp, mcgs_jax, mctx\n"
                         "from mcgs_jax import envs\n" + code]


_STUCK_ROOT = """def step(params, rng, action, e):
  out = mctx.RecurrentFnOutput(reward=jnp.zeros(4), discount=-jnp.ones(4),
                               prior_logits=jnp.zeros((4, 3)), value=jnp.zeros(4))
  return out, e + 1
def key(e):
  return jnp.stack([e.astype(jnp.uint32)] * 2, axis=-1)
model, eval_fn = mcgs_jax.from_mctx(step, key, num_actions=3)
roots = model.make_root(mctx.RootFnOutput(prior_logits=jnp.zeros((4, 3)), value=jnp.zeros(4),
    embedding=jnp.arange(4)), invalid_actions=jnp.zeros((4, 3), bool).at[2].set(True))
mcgs_jax.search(None, jax.random.PRNGKey(0), roots, model, eval_fn,
                mcgs_jax.SearchConfig(num_simulations=4))
"""
_MINUS_INF = """env = envs.make("tictactoe")
minus_inf = lambda p, r, s: (jnp.full((4, 9), -jnp.inf), jnp.zeros(4))
out = mcgs_jax.search(None, jax.random.PRNGKey(0), env.init(jax.random.PRNGKey(0), batch_size=4),
                      env, minus_inf, mcgs_jax.SearchConfig(num_simulations=8, check_evaluator=True))
jax.block_until_ready(out)
"""
_RAGGED = """env = envs.make("tictactoe")
state = env.init(jax.random.PRNGKey(0), batch_size=4)
mcgs_jax.search(None, jax.random.PRNGKey(0), state.replace(mask=state.mask[:3]), env,
                envs.uniform_eval(env), mcgs_jax.SearchConfig(num_simulations=4))
"""

CASES = (
    Case("command line", "a misspelt command (trian)", lambda f: ["trian"]),
    Case("command line", "an unknown env id (conect4)",
         lambda f: ["train", "--env", "conect4", "--out", str(f / "run")], "run"),
    Case("command line", "a misspelt flag (--simulatons)",
         lambda f: _train(f, "--simulatons", "4"), "run"),
    Case("command line", "a flag out of range (--games 0)", lambda f: _train(f, "--games", "0"),
         "run"),
    Case("config file", "an unknown field (simulatons)",
         lambda f: _train(f, config=dict(simulatons=4)), "run"),
    Case("config file", "a field of the wrong type (games: \"many\")",
         lambda f: _train(f, config=dict(games="many")), "run"),
    Case("config file", "a value out of range (learning_rate: -1)",
         lambda f: _train(f, config=dict(learning_rate=-1.0)), "run"),
    Case("config file", "an int past int32 (games: 2^40)",
         lambda f: _train(f, config=dict(games=2 ** 40)), "run"),
    Case("config file", "a seed of 2^70", lambda f: _train(f, config=dict(seed=2 ** 70)), "run"),
    Case("config file", "200,000 unknown fields",
         lambda f: _train(f, config={f"key{i}": i for i in range(200_000)}), "run"),
    Case("config file", "nested 100,000 deep", lambda f: _train(f, config="[" * 100_000
                                                                 + "]" * 100_000), "run"),
    Case("config file", "not JSON (binary)", lambda f: _train(f, config="\x00\xff{"), "run"),
    Case("config file", "missing", lambda f: _train(f, "--config", str(f / "none.json")), "run"),
    Case("config file", "a field given as a flag too (games)",
         lambda f: _train(f, "--games", "4", "--iterations", "1", config=dict(TINY, games=8))),
    Case("run folder", "--out is a regular file",
         lambda f: (f / "run").write_text("x") and _train(f)),
    Case("run folder", "checkpoints/ is a dangling symlink",
         lambda f: ((f / "run").mkdir(), (f / "run" / "checkpoints").symlink_to("/nonexistent"),
                    _train(f))[-1], "run"),
    Case("run folder", "on a read-only file system", _read_only),
    Case("run folder", "held by another process", _held, "run"),
    Case("run folder", "sizes the device cannot allocate (replay_capacity 2e9)",
         lambda f: _train(f, "--iterations", "1", config=dict(TINY, replay_capacity=2 * 10 ** 9)),
         "run"),
    Case("run folder", "arena on a missing run", lambda f: ["arena", "--run", str(f / "none")]),
    Case("data file", "an arena games file with another header", _foreign_games),
    Case("data file", "an agent folder whose config.json is a list",
         lambda f: (_copy_agent(f), _config(f / "run", [1, 2]),
                    ["play", "--agent", str(f / "run")])[-1]),
    Case("network", "NaN weights (play)", _nan_agent),
    Case("network", "a diverging run (learning_rate 1e30)",
         lambda f: _train(f, "--iterations", "8", config=dict(
             TINY, learning_rate=1e30, optimizer="sgd", weight_decay=0.0, min_replay=40))),
    Case("search call", "a non-terminal root with no legal move", _python(_STUCK_ROOT)),
    Case("search call", "-inf on every legal logit (check_evaluator)", _python(_MINUS_INF)),
    Case("search call", "a ragged batch", _python(_RAGGED)),
    Case("search call", "num_simulations = 2^31",
         _python("mcgs_jax.SearchConfig(num_simulations=2 ** 31)")),
    Case("search call", "max_nodes = 1 for 800 simulations",
         _python("mcgs_jax.SearchConfig(max_nodes=1, num_simulations=800)")),
    Case("optional package", "connect4-accuracy without OpenSpiel",
         lambda f: ["connect4-accuracy", "--limit", "1", "--sims", "8", "--sets", "L3_R1",
                    "--csv", str(f / "acc.csv")]),
)


def _snapshot(path: pathlib.Path):
  if not path.exists():
    return None
  if path.is_symlink() or path.is_file():
    return ("link" if path.is_symlink() else "file",)
  return tuple(sorted(str(p.relative_to(path)) for p in path.rglob("*")))


def run_case(case: Case, timeout: float = 300.0) -> dict:
  """Runs one case in a fresh folder and reads its outcome.

  Args:
    case: the Case.
    timeout: seconds before the command is given up.

  Returns:
    A row of `FIELDS`.
  """
  folder = pathlib.Path(tempfile.mkdtemp(prefix="bad-input-"))
  env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT)}
  try:
    try:
      argv = case.prepare(folder)
    except RuntimeError as error:
      return dict(kind=case.kind, case=case.name, exit_code="", stderr_lines="", traceback="",
                  left_behind="", seconds="", first_line=f"not run: {error}")
    before = _snapshot(folder / case.run_folder) if case.run_folder else None
    command = ([sys.executable, "-c", argv[1]] if argv[0] == "python" else
               [sys.executable, "-m", "mcgs_jax.experiments"] + argv)
    start = time.perf_counter()
    result = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True,
                            timeout=timeout, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    after = _snapshot(folder / case.run_folder) if case.run_folder else None
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    # A library call raises: what its caller sees is the exception's line
    # (the check's own, inside jax's runtime error where a jitted check raised).
    raised = [l for l in lines if re.match(r"[\w.]*(Error|Warning): ", l)
              and not l.startswith("jax.errors.")]
    shown = (raised or lines)[-1] if argv[0] == "python" and lines else lines[0] if lines else ""
    shown = shown.replace(str(folder), "DIR")   # the case's own temporary folder
    return dict(kind=case.kind, case=case.name, exit_code=result.returncode,
                stderr_lines=len(lines), traceback="Traceback" in result.stderr,
                left_behind="" if case.run_folder is None else after != before,
                seconds=round(seconds, 1), first_line=shown)
  finally:
    for holder in _HOLDERS:
      holder.kill()
    _HOLDERS.clear()
    for mount in _MOUNTS:
      subprocess.run(["umount", str(mount)], capture_output=True)
    _MOUNTS.clear()
    shutil.rmtree(folder, ignore_errors=True)


def markdown(rows: list[dict]) -> str:
  """The table of docs/reliability.md.

  Args:
    rows: `run_case` rows.

  Returns:
    The Markdown table.
  """
  lines = ["| kind | bad input | exit | stderr lines | traceback | folder changed | what the user "
           "sees (a command's first line; a library call's exception) |",
           "|---|---|---|---|---|---|---|"]
  for r in rows:
    shown = r["first_line"].replace("|", "\\|")
    if len(shown) > 160:
      shown = shown[:157] + "..."
    lines.append(f"| {r['kind']} | {r['case']} | {r['exit_code']} | {r['stderr_lines']} | "
                 f"{'yes' if r['traceback'] is True else 'no' if r['traceback'] is False else ''}"
                 f" | {'yes' if r['left_behind'] is True else 'no' if r['left_behind'] is False else '-'}"
                 f" | {shown} |")
  return "\n".join(lines)
