"""Shared benchmark helpers: timing with a compile warm-up, CSV output."""

import csv
import dataclasses
import os
import time
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import mctx

import envs
from envs import evaluators
from networks import MLP, MLPEval, init_params


def time_calls(fn: Callable[[], Any], repeats: int, budget_s: float):
  """Calls `fn` once to compile it (the warm-up, kept out of the median), then
  times up to `repeats` calls, stopping early once they have used `budget_s`.

  Returns:
    (warm-up seconds, the warm-up's output, list of timed seconds); the list
    is empty when the warm-up alone exceeded `budget_s`.
  """
  start = time.perf_counter()
  output = jax.block_until_ready(fn())
  warmup = time.perf_counter() - start
  if warmup > budget_s:
    return warmup, output, []
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn())
    times.append(time.perf_counter() - start)
    if sum(times) > budget_s:
      break
  return warmup, output, times


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
                     budget_s: float) -> CompiledTiming:
  """Compiles `jitted` for `args` ahead of time, then times its calls.

  Unlike `time_calls` on the jitted function, the compile time is measured
  on its own rather than read off the first call.

  Args:
    jitted: a `jax.jit`-wrapped function.
    args: its positional arguments.
    repeats: timed calls at most (`time_calls`).
    budget_s: the timed calls stop once they have used this long.

  Returns:
    CompiledTiming.
  """
  start = time.perf_counter()
  compiled = jitted.lower(*args).compile()
  compile_s = time.perf_counter() - start
  first_call_s, output, times = time_calls(lambda: compiled(*args), repeats, budget_s)
  return CompiledTiming(compile_s=compile_s, compiled=compiled, first_call_s=first_call_s,
                        output=output, times=times)


def write_csv(path: str, rows: list[dict], fields: Sequence[str]):
  """Writes `rows` (dicts with `fields`) to `path`, creating its folder."""
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  with open(path, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(fields))
    writer.writeheader()
    writer.writerows(rows)


def markdown_table(rows: list[dict], fields: Sequence[str]) -> str:
  """`rows` as a Markdown table with one column per field."""
  lines = ["| " + " | ".join(fields) + " |", "|" + "---|" * len(fields)]
  lines += ["| " + " | ".join(str(r[f]) for f in fields) + " |" for r in rows]
  return "\n".join(lines)


def mctx_recurrent_fn(env, eval_fn):
  """mctx's `recurrent_fn` with `env` (pgx's `connect_four`, or any env with
  its fields) as the model and `eval_fn` as the network, as in pgx's
  AlphaZero example: illegal moves masked, the mover's reward, discount -1
  (0 once the game ended)."""
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
      (`envs.evaluators.NoisyNimEval`, no params).
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
  """How `profiled_game` evaluates `game`, for table headers."""
  return "MLP(128, 128)" if game == "connect4" else "noisy evaluator"


def evaluation_budget(evals: int | None) -> dict:
  """`SearchConfig` switches of a search of at most `evals` evaluations
  (None: no budget): `max_nn_evals`, and the node capacity it can fill."""
  return dict(max_nn_evals=evals, max_nodes=None if evals is None else evals + 1)
