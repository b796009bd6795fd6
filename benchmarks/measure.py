"""What the benchmark commands share: timing with a compile warm-up, CSV and
markdown output, mctx's recurrent_fn over an env, device-event counts."""

import csv
import dataclasses
import glob
import math
import os
import time
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import mctx

from mcgs_jax import envs
from mcgs_jax.envs import evaluators
from mcgs_jax.networks import MLP, MLPEval, init_params


def time_calls(fn: Callable[[], Any], repeats: int, budget_s: float, with_cpu: bool = False):
  """Calls `fn` once to compile it (the warm-up, kept out of the median), then
  times up to `repeats` calls, stopping early once they have used `budget_s`.

  Args:
    fn: the call to time, no arguments.
    repeats: timed calls at most.
    budget_s: the timed calls stop once they have used this long.
    with_cpu: also record each timed call's process CPU time.

  Returns:
    (warm-up seconds, the warm-up's output, list of timed seconds), and the
    list of CPU seconds when `with_cpu`; the lists are empty when the
    warm-up alone exceeded `budget_s`.
  """
  start = time.perf_counter()
  output = jax.block_until_ready(fn())
  warmup = time.perf_counter() - start
  times, cpus = [], []
  if warmup <= budget_s:
    for _ in range(repeats):
      start, cpu_start = time.perf_counter(), time.process_time()
      jax.block_until_ready(fn())
      times.append(time.perf_counter() - start)
      cpus.append(time.process_time() - cpu_start)
      if sum(times) > budget_s:
        break
  return (warmup, output, times, cpus) if with_cpu else (warmup, output, times)


@dataclasses.dataclass(frozen=True)
class CompiledTiming:
  """What `compile_and_time` measured.

  Attributes:
    compile_s: seconds to trace, lower and compile (ahead of the first call).
    compiled: the compiled executable (`memory_analysis()` gives its sizes).
    first_call_s: seconds of the first call of the compiled executable.
    output: the first call's output.
    times: seconds of the timed calls (empty when the first call alone
      exceeded the budget).
  """
  compile_s: float
  compiled: Any
  first_call_s: float
  output: Any
  times: list


def compile_and_time(jitted: Any, args: Sequence[Any], repeats: int,
                     budget_s: float, compiler_options: dict | None = None) -> CompiledTiming:
  """Compiles `jitted` for `args` ahead of time, then times its calls.

  Unlike `time_calls` on the jitted function, the compile time is measured
  on its own rather than read off the first call.

  Args:
    jitted: a `jax.jit`-wrapped function.
    args: its positional arguments.
    repeats: timed calls at most (`time_calls`).
    budget_s: the timed calls stop once they have used this long.
    compiler_options: XLA options of this compile (e.g.
      {"xla_gpu_enable_command_buffer": "+WHILE"}); None: the defaults.

  Returns:
    CompiledTiming.
  """
  start = time.perf_counter()
  compiled = jitted.lower(*args).compile(compiler_options=compiler_options or None)
  compile_s = time.perf_counter() - start
  first_call_s, output, times = time_calls(lambda: compiled(*args), repeats, budget_s)
  return CompiledTiming(compile_s=compile_s, compiled=compiled, first_call_s=first_call_s,
                        output=output, times=times)


def with_compiler_options(jitted: Any, compiler_options: dict | None) -> Callable[..., Any]:
  """`jitted` compiled ahead of time with `compiler_options` at its first
  call (the arguments' shapes must stay those of the first call).

  Args:
    jitted: a `jax.jit`-wrapped function.
    compiler_options: XLA options; None or {}: `jitted` itself.

  Returns:
    A callable with `jitted`'s signature.
  """
  if not compiler_options:
    return jitted
  compiled = []

  def call(*args):
    if not compiled:
      compiled.append(jitted.lower(*args).compile(compiler_options=compiler_options))
    return compiled[0](*args)

  return call


def format_number(value: Any, spec: str) -> str:
  """A table cell: a number formatted, "-" for None or NaN.

  Args:
    value: the number (a string passes as it is).
    spec: a format spec, e.g. ".2f".

  Returns:
    The text (`str(value)` where the spec does not fit the value).
  """
  if isinstance(value, str):
    return value
  if value is None or (isinstance(value, float) and math.isnan(value)):
    return "-"
  try:
    return format(value, spec)
  except (TypeError, ValueError):  # e.g. a float where an int was expected
    return str(value)


def write_csv(path: str, rows: list[dict], fields: Sequence[str]):
  """Writes `rows` to `path` as CSV, creating its folder.

  Atomic: the rows go to a temporary file that then replaces `path`, so a
  command stopped midway leaves the old file whole.

  Args:
    path: the CSV file.
    rows: dicts with (at least) `fields`.
    fields: the columns, in order.
  """
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  tmp = path + ".tmp"
  with open(tmp, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(fields))
    writer.writeheader()
    writer.writerows(rows)
  os.replace(tmp, path)



def append_csv(path: str, rows: list[dict], fields) -> None:
  """Appends `rows` to the CSV at `path`, its header first where the file is
  new.

  Args:
    path: the CSV file (its folder is created).
    rows: dicts with the `fields`.
    fields: the columns.
  """
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  new = not os.path.exists(path)
  with open(path, "a", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(fields))
    if new:
      writer.writeheader()
    writer.writerows(rows)
    f.flush()
    os.fsync(f.fileno())

def markdown_table(rows: list[dict], fields: Sequence[str]) -> str:
  """`rows` as a Markdown table with one column per field.

  Args:
    rows: dicts with (at least) `fields`.
    fields: the columns, in order.

  Returns:
    The table's text.
  """
  lines = ["| " + " | ".join(fields) + " |", "|" + "---|" * len(fields)]
  lines += ["| " + " | ".join(str(r[f]) for f in fields) + " |" for r in rows]
  return "\n".join(lines)


def mctx_recurrent_fn(env, eval_fn):
  """mctx's `recurrent_fn` with `env` (pgx's `connect_four`, or any env with
  its fields) as the model and `eval_fn` as the network, as in pgx's
  AlphaZero example: illegal moves masked, the mover's reward, discount -1
  (0 once the game ended).

  Args:
    env: the env (pgx state fields).
    eval_fn: `(params, rng, state [B]) -> (logits [B, A], value [B])`.

  Returns:
    `recurrent_fn(params, rng, action [B], state [B]) -> (RecurrentFnOutput, state)`.
  """
  def recurrent_fn(params, rng, action, state):
    del rng
    mover = state.current_player
    state = jax.vmap(env.step)(state, action)
    logits, value = eval_fn(params, None, state)
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    logits = jnp.where(state.legal_action_mask, logits, jnp.finfo(jnp.float32).min)
    reward = state.rewards[jnp.arange(state.rewards.shape[0]), mover]
    value = jnp.where(state.terminated, 0.0, value)
    discount = jnp.where(state.terminated, 0.0, -1.0)
    return mctx.RecurrentFnOutput(reward=reward, discount=discount, prior_logits=logits,
                                  value=value), state

  return recurrent_fn


def profiled_game(game: str, batch: int):
  """The game, starting states, params and evaluator the engine profiles use.

  Args:
    game: "connect4" (the MLP(128, 128), random weights) or a Nim env id
      (`mcgs_jax.envs.evaluators.NoisyNimEval`, no params).
    batch: B.

  Returns:
    (env, state [B], params, eval_fn).
  """
  state_rng = jax.random.PRNGKey(0)
  env = envs.make(game)
  state = env.init(state_rng, batch_size=batch)
  if game == "connect4":
    network = MLP(num_actions=env.num_actions, hidden_sizes=(128, 128))
    return env, state, init_params(network, state_rng, state.observation), MLPEval(network)
  return env, state, None, evaluators.NoisyNimEval(env)


def evaluator_name(game: str) -> str:
  """How `profiled_game` evaluates `game`, for table headers.

  Args:
    game: as in `profiled_game`.

  Returns:
    e.g. "MLP(128, 128)".
  """
  return "MLP(128, 128)" if game == "connect4" else "noisy evaluator"


def evaluation_budget(evals: int | None) -> dict:
  """`SearchConfig` switches of a search of at most `evals` evaluations.

  Args:
    evals: the evaluations; None: no budget.

  Returns:
    dict with `max_nn_evals` and the node capacity it can fill (`max_nodes`).
  """
  return dict(max_nn_evals=evals, max_nodes=None if evals is None else evals + 1)


@dataclasses.dataclass(frozen=True)
class DeviceEvents:
  """What the device did during one traced call (`trace_device_events`).

  Attributes:
    kernels: kernel launches on the accelerator's streams.
    copies: memory copies (host to device, device to host, device to
      device) on them; a dynamic while loop copies its predicate back to the
      host once per iteration.
    sets: memsets.
    device_ms: the summed durations of those events.
    planes: accelerator planes found in the trace (0 on a CPU: no counts).
  """
  kernels: int
  copies: int
  sets: int
  device_ms: float
  planes: int


def count_device_events(profile: Any) -> DeviceEvents:
  """Counts the events on the accelerator planes of a `jax.profiler`
  trace.

  A plane is an accelerator's when its name starts with "/device:" and it
  is not a CPU's; its stream lines ("Stream #...") hold one event per
  kernel, copy or memset (the lines XLA derives from them, such as "XLA
  Ops", are left out so nothing counts twice; a plane without stream lines
  counts all its lines).

  Args:
    profile: a `jax.profiler.ProfileData`.

  Returns:
    DeviceEvents.
  """
  kernels = copies = sets = planes = 0
  device_ns = 0.0
  for plane in profile.planes:
    if not plane.name.startswith("/device:") or "CPU" in plane.name.upper():
      continue
    planes += 1
    lines = list(plane.lines)
    streams = [line for line in lines if line.name.startswith("Stream")] or lines
    for line in streams:
      for event in line.events:
        name = event.name.lower()
        if "memcpy" in name:
          copies += 1
        elif "memset" in name:
          sets += 1
        else:
          kernels += 1
        device_ns += event.duration_ns
  return DeviceEvents(kernels=kernels, copies=copies, sets=sets, device_ms=device_ns / 1e6,
                      planes=planes)


def trace_device_events(fn: Callable[..., Any], args: Callable[[], Sequence[Any]],
                        directory: str) -> DeviceEvents:
  """Runs `fn(*args())` once under `jax.profiler.trace` (after a warm-up
  call, so no compilation is traced) and counts its device events.

  Args:
    fn: a jitted or compiled function.
    args: gives its arguments (called before each call, outside the trace).
    directory: where the trace is written (a fresh folder).

  Returns:
    DeviceEvents (all zero where the trace has no accelerator plane).
  """
  jax.block_until_ready(fn(*args()))
  call_args = jax.block_until_ready(args())
  with jax.profiler.trace(directory):
    jax.block_until_ready(fn(*call_args))
  paths = sorted(glob.glob(os.path.join(directory, "**", "*.xplane.pb"), recursive=True),
                 key=os.path.getmtime)
  if not paths:
    return DeviceEvents(kernels=0, copies=0, sets=0, device_ms=0.0, planes=0)
  return count_device_events(jax.profiler.ProfileData.from_file(paths[-1]))
