"""Coming from mctx: keep your `recurrent_fn`, add a key function.

An mctx-style `recurrent_fn` over pgx's connect_four with a flax network
inside it, as mctx users write it; the same random positions searched by
`mctx.muzero_policy` and by `mcgs_jax.search`, whose game model
`mcgs_jax.from_mctx` builds from that `recurrent_fn` and the project's key
helper (`PgxEnv.key_fn`, which keys pgx states as the project's own pgx games
do). Prints both searches' moves and root values, and what the graph merged.
About 30 seconds on 2 CPU cores.

  python examples/from_mctx.py
"""

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import mctx
import pgx

import mcgs_jax
from mcgs_jax.envs import pgx_env

POSITIONS, SIMULATIONS, OPENING_MOVES = 16, 128, 6
game = pgx.make("connect_four")


class Net(nn.Module):
  """A policy-value MLP on pgx's observation."""

  @nn.compact
  def __call__(self, observation):
    x = observation.reshape((observation.shape[0], -1)).astype(jnp.float32)
    x = nn.relu(nn.Dense(128)(x))
    return nn.Dense(7)(x), jnp.tanh(nn.Dense(1)(x)[:, 0])


@dataclasses.dataclass(frozen=True)
class RecurrentFn:
  """mctx's `recurrent_fn` for a pgx game: step, evaluate, reward, discount.

  A frozen dataclass, so it is hashable: mcgs_jax takes it as a static jit
  argument (mctx closes over it the same way).
  """
  net: Net

  def __call__(self, params, rng, action, state):
    del rng
    player = state.current_player
    state = jax.vmap(game.step)(state, action)
    logits, value = self.net.apply(params, state.observation)
    logits = jnp.where(state.legal_action_mask, logits, jnp.finfo(logits.dtype).min)
    reward = state.rewards[jnp.arange(action.shape[0]), player]
    value = jnp.where(state.terminated, 0.0, value)
    discount = jnp.where(state.terminated, 0.0, -1.0)
    return mctx.RecurrentFnOutput(reward=reward, discount=discount, prior_logits=logits,
                                  value=value), state


recurrent_fn = RecurrentFn(Net())
# The graph's game model: the same recurrent_fn, and pgx states keyed by
# position, player to move and ply (so no key repeats along a game).
model, model_eval = mcgs_jax.from_mctx(
    recurrent_fn, pgx_env.PgxEnv("connect_four").key_fn, num_actions=7,
    acyclic_keys=True, alternating_zero_sum=True)
config = mcgs_jax.SearchConfig(num_simulations=SIMULATIONS)


def random_positions(rng):
  """POSITIONS games after OPENING_MOVES random legal moves each."""
  init_rng, move_rng = jax.random.split(rng)
  state = jax.vmap(game.init)(jax.random.split(init_rng, POSITIONS))
  for key in jax.random.split(move_rng, OPENING_MOVES):
    logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
    state = jax.vmap(game.step)(state, jax.random.categorical(key, logits))
  return state


@jax.jit
def both_searches(params, rng, state):
  logits, value = recurrent_fn.net.apply(params, state.observation)
  root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=state)
  invalid = ~state.legal_action_mask
  theirs = mctx.muzero_policy(params, rng, root, recurrent_fn, SIMULATIONS,
                              invalid_actions=invalid)
  ours = mcgs_jax.search(params, rng, model.make_root(root, invalid_actions=invalid),
                         model, model_eval, config)
  return theirs, ours


def main():
  rng = jax.random.PRNGKey(0)
  state = random_positions(rng)
  params = recurrent_fn.net.init(rng, state.observation)
  theirs, ours = both_searches(params, jax.random.PRNGKey(1), state)
  print("mctx.muzero_policy moves:", theirs.action.tolist())
  print("mcgs_jax.search moves:   ", ours.action.tolist())
  same = float(jnp.mean(theirs.action == ours.action))
  print(f"same move in {100 * same:.0f}% of the {POSITIONS} positions")
  print(f"root value, mctx {float(theirs.search_tree.node_values[:, 0].mean()):+.3f}, "
        f"mcgs_jax {float(ours.root_value.mean()):+.3f} (means over the positions)")
  stats = ours.stats
  print(f"the graph: {float(stats.nodes_used.mean()):.1f} nodes per search for "
        f"{SIMULATIONS} simulations, {float(stats.transposition_hits.mean()):.1f} transpositions "
        "merged per search")


if __name__ == "__main__":
  main()
