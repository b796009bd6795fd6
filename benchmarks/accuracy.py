"""Move accuracy on Pons' Connect-4 sets: positions with exact scores, batched searches
scored by whether their move keeps the result (`mcgs_jax.experiments.connect4_accuracy`,
`mcgs_jax.benchmarks.mcgs_vs_mcts`).
"""

import functools
import time
from typing import Callable

import jax
import jax.numpy as jnp
import mctx
import numpy as np

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.envs import connect4
from mcgs_jax.envs import pons
from mcgs_jax.learning import evaluation
from mcgs_jax.benchmarks.names import ENHANCEMENTS, EVAL_ENHANCEMENTS

FIELDS = ("set", "search", "sims", "positions", "preserving", "preserving_lo", "preserving_hi",
          "optimal", "optimal_lo", "optimal_hi", "ms_per_move", "batch", "nodes")

# Positions with exact scores: `mcgs_jax.envs.pons` (kept here under their old names).
Position = pons.Position
parse_columns_line = pons.parse_columns_line
load_set = pons.load_set
label = pons.label
load_positions = pons.load_positions
generate = pons.generate

# ------------------------------------------------------------------- searches


def search_config(search: str, sims: int) -> mcgs_jax.SearchConfig:
  """`backup[+enhancement...]` -> SearchConfig.

  Args:
    search: a backup mode, then enhancements joined by "+" (`ENHANCEMENTS`), e.g. "mcgs+solver".
    sims: simulations per search.

  Returns:
    The SearchConfig.
  """
  backup, *names = search.split("+")
  switches = {}
  for name in names:
    if name in EVAL_ENHANCEMENTS:
      continue
    if name not in ENHANCEMENTS:
      raise ValueError(f"unknown enhancement {name!r}; known: {sorted(ENHANCEMENTS)}")
    switches.update(ENHANCEMENTS[name])
  return mcgs_jax.SearchConfig(num_simulations=sims, backup=backup, **switches)


@functools.lru_cache(maxsize=None)
def _mcgs_search(search: str, sims: int) -> Callable:
  env = envs.make("connect4")
  config = search_config(search, sims)
  eval_fn = envs.rollout_eval(env)
  if "mix" in search.split("+"):
    eval_fn = envs.mixed_eval(envs.uniform_eval(env), eval_fn, 0.5)
  search = jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=eval_fn, config=config))

  def run(rng, states):
    out = search(None, rng, states)
    return out.action, out.stats.nodes_used

  return run


def _mctx_search(sims: int) -> Callable:
  env = envs.make("connect4")
  rollout = envs.rollout_eval(env)

  def recurrent_fn(params, rng, action, state):
    child = env.step(state, action)
    mover = state.current_player
    reward = jnp.take_along_axis(child.rewards, mover[:, None], axis=1)[:, 0]
    _, value = rollout(params, rng, child)
    logits = jnp.where(child.legal_action_mask, 0.0, -1e9)
    out = mctx.RecurrentFnOutput(reward=reward, discount=jnp.where(child.terminated, 0.0, -1.0),
                                 prior_logits=logits, value=jnp.where(child.terminated, 0.0, value))
    return out, child

  @jax.jit
  def search(rng, state):
    root_rng, search_rng = jax.random.split(rng)
    _, value = rollout(None, root_rng, state)
    root = mctx.RootFnOutput(prior_logits=jnp.zeros((state.ply.shape[0], 7)), value=value,
                             embedding=state)
    out = mctx.muzero_policy(None, search_rng, root, recurrent_fn, sims,
                             invalid_actions=~state.legal_action_mask, dirichlet_fraction=0.0)
    # The most visited move, as the mcgs_jax searches play.
    return jnp.argmax(out.search_tree.summary().visit_counts, axis=-1)

  return search


def run_batched(search: Callable, positions: list[Position], batch: int,
                seed: int) -> tuple[np.ndarray, float]:
  """Moves chosen for all positions, B games per call.

  Args:
    search: `(rng, states) -> actions` for a batch of `batch` states.
    positions: the positions to search.
    batch: games per call (the last chunk is padded).
    seed: the rng seed.

  Returns:
    (moves int[len(positions)], seconds per move with the compile excluded).
  """
  states = [connect4.from_moves(p.moves) for p in positions]
  # Pad the last chunk so that one compiled function serves every chunk.
  padded = states + [states[-1]] * (-len(states) % batch)
  chunks = [envs.stack(padded[i:i + batch]) for i in range(0, len(padded), batch)]
  rng = jax.random.PRNGKey(seed)
  jax.block_until_ready(search(rng, chunks[0]))  # compile
  moves, nodes, start = [], [], time.perf_counter()
  for i, chunk in enumerate(chunks):
    out = search(jax.random.fold_in(rng, i), chunk)
    # mcgs_jax searches also return the nodes each game stored.
    if isinstance(out, tuple):
      out, used = out
      nodes.append(np.asarray(used))
    moves.append(np.asarray(out))
  elapsed = time.perf_counter() - start
  moves = np.concatenate(moves)[:len(positions)]
  if nodes:
    return moves, elapsed / len(padded), float(np.concatenate(nodes)[:len(positions)].mean())
  return moves, elapsed / len(padded)


def run_openspiel(positions: list[Position], sims: int, seed: int) -> tuple[np.ndarray, float]:
  """OpenSpiel's MCTS bot (random rollouts) on each position, one at a time.

  Args:
    positions: the positions to search.
    sims: simulations per search.
    seed: the bots' seed (position i uses seed + i).

  Returns:
    (moves int[len(positions)], seconds per move).
  """
  import pyspiel  # pylint: disable=g-import-not-at-top  (optional dependency)
  game = pyspiel.load_game("connect_four")
  moves, elapsed = [], 0.0
  for i, position in enumerate(positions):
    bot = pyspiel.MCTSBot(game, pyspiel.RandomRolloutEvaluator(1, seed + i), 2.0, sims, 1000, True,
                          seed + i, False)
    state = game.new_initial_state()
    for ch in position.moves:
      state.apply_action(int(ch) - 1)
    start = time.perf_counter()
    moves.append(bot.step(state))
    elapsed += time.perf_counter() - start
  return np.array(moves), elapsed / len(positions)


def choose_moves(search: str, positions: list[Position], sims: int, batch: int,
                 seed: int) -> tuple[np.ndarray, float, float | None]:
  """The moves of one search on every position.

  Args:
    search: "openspiel", "mctx" or one of ours (`search_config`).
    positions: the positions to search.
    sims: simulations per search.
    batch: games per call.
    seed: the rng seed.

  Returns:
    (moves, seconds per move, mean nodes stored per search; None for the
    external searches).
  """
  if search == "openspiel":
    return run_openspiel(positions, sims, seed) + (None,)
  if search == "mctx":
    return run_batched(_mctx_search(sims), positions, batch, seed) + (None,)
  return run_batched(_mcgs_search(search, sims), positions, batch, seed)


def score_moves(positions: list[Position], moves: np.ndarray) -> dict:
  """How many moves keep the exact result and how many are optimal.

  Args:
    positions: the positions searched.
    moves: int[len(positions)], the move chosen in each.

  Returns:
    A dict of `positions`, `preserving` and `optimal` fractions with their
    95% Wilson intervals (`*_lo`, `*_hi`).
  """
  n = len(positions)
  preserving = sum(p.preserves(int(m)) for p, m in zip(positions, moves))
  optimal = sum(p.is_optimal(int(m)) for p, m in zip(positions, moves))
  p_lo, p_hi = evaluation.wilson_interval(preserving, n)
  o_lo, o_hi = evaluation.wilson_interval(optimal, n)
  return dict(positions=n, preserving=round(preserving / n, 4), preserving_lo=round(p_lo, 4),
              preserving_hi=round(p_hi, 4), optimal=round(optimal / n, 4),
              optimal_lo=round(o_lo, 4), optimal_hi=round(o_hi, 4))


def format_table(rows: list[dict]) -> str:
  """A markdown table of accuracy rows.

  Args:
    rows: rows of `FIELDS`.

  Returns:
    The table.
  """
  lines = [
      "| set | search | sims | n | outcome-preserving [95% CI] | optimal [95% CI] | ms/move "
      "| nodes |", "|---|---|---|---|---|---|---|---|"
  ]
  for r in rows:
    batch = f" (B={r['batch']})" if r["batch"] > 1 else ""
    lines.append(f"| {r['set']} | {r['search']} | {r['sims']} | {r['positions']} | "
                 f"{100 * r['preserving']:.1f}% [{100 * r['preserving_lo']:.1f}, "
                 f"{100 * r['preserving_hi']:.1f}] | {100 * r['optimal']:.1f}% "
                 f"[{100 * r['optimal_lo']:.1f}, {100 * r['optimal_hi']:.1f}] | "
                 f"{r['ms_per_move']:.2f}{batch} | {r.get('nodes', '')} |")
  return "\n".join(lines)
