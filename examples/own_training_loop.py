"""Your own AlphaZero loop around mcgs_jax, in one file.

A flax network and its `eval_fn`, self-play with the search inside `jax.jit`
and `lax.scan`, and an optax step that fits the network's policy to the
search's `action_weights` and its value to the games' outcomes. Tic-tac-toe,
30 iterations of 64 games: about half a minute on 2 CPU cores.

  python examples/own_training_loop.py
"""

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

import mcgs_jax
from mcgs_jax import envs

GAMES, SIMULATIONS, ITERATIONS, UPDATES = 64, 32, 30, 8


class Net(nn.Module):
  """A policy-value MLP: prior logits [B, A] and a value in [-1, 1] [B]."""
  num_actions: int

  @nn.compact
  def __call__(self, observation):
    x = observation.reshape((observation.shape[0], -1)).astype(jnp.float32)
    x = nn.relu(nn.Dense(64)(x))
    x = nn.relu(nn.Dense(64)(x))
    return nn.Dense(self.num_actions)(x), jnp.tanh(nn.Dense(1)(x)[:, 0])


@dataclasses.dataclass(frozen=True)
class NetEval:
  """The search's evaluator. Hashable: jit takes it as a static argument."""
  net: Net

  def __call__(self, params, rng, state):
    del rng
    return self.net.apply(params, state.observation)   # value for the player to move


env = envs.make("tictactoe")
eval_fn = NetEval(Net(env.num_actions))
# Root noise and moves drawn from the visit counts, so that self-play explores.
config = mcgs_jax.SearchConfig(num_simulations=SIMULATIONS, dirichlet_fraction=0.25,
                               visit_temperature=1.0)
optimizer = optax.adam(1e-3)


@jax.jit
def self_play(params, rng):
  """GAMES games played to the end, one search per move, in one lax.scan.

  Returns [T * GAMES] observations, policy targets, value targets (the
  outcome for the player to move) and a mask of the positions before the end.
  """
  init_rng, scan_rng = jax.random.split(rng)

  def move(state, rng):
    out = mcgs_jax.search(params, rng, state, env, eval_fn, config)
    record = (state.observation, out.action_weights, state.current_player, ~state.terminated)
    return env.step(state, out.action), record   # a finished game stays as it is

  final, (observation, policy, player, live) = jax.lax.scan(
      move, env.init(init_rng, batch_size=GAMES),
      jax.random.split(scan_rng, env.max_game_length))
  outcome = jnp.where(player == 0, final.rewards[:, 0], final.rewards[:, 1])
  flat = lambda x: x.reshape((-1,) + x.shape[2:])
  return flat(observation), flat(policy), flat(outcome), flat(live)


def loss_fn(params, observation, policy, outcome, live):
  logits, value = eval_fn.net.apply(params, observation)
  per_position = optax.softmax_cross_entropy(logits, policy) + (value - outcome) ** 2
  return jnp.sum(per_position * live) / jnp.maximum(jnp.sum(live), 1)


@jax.jit
def train_step(params, opt_state, batch):
  loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
  updates, opt_state = optimizer.update(grads, opt_state)
  return optax.apply_updates(params, updates), opt_state, loss


def main():
  rng = jax.random.PRNGKey(0)
  params = eval_fn.net.init(rng, env.init(rng, batch_size=1).observation)
  opt_state = optimizer.init(params)
  for iteration in range(ITERATIONS):
    batch = self_play(params, jax.random.fold_in(rng, iteration))
    for _ in range(UPDATES):
      params, opt_state, loss = train_step(params, opt_state, batch)
    print(f"iteration {iteration}: {int(batch[3].sum())} positions, loss {float(loss):.3f}")
  logits, value = eval_fn.net.apply(params, env.init(rng, batch_size=1).observation)
  print("policy on the empty board:", " ".join(f"{p:.2f}" for p in jax.nn.softmax(logits[0])))
  print(f"its value: {float(value[0]):+.2f} (tic-tac-toe is a draw)")


if __name__ == "__main__":
  main()
