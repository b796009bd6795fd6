"""Gumbel self-play with a replay buffer and an optax update, from the library's pieces.

Connect-4 with a small MLP: every move a Gumbel MCGS search (sequential
halving at the root, the improved policy as target; Danihelka et al. 2022),
the graph kept between moves, finished games' positions added to a replay
buffer on device, and Adam steps on batches sampled from it. At the end the
network's raw policy plays the 1000 positions of Pons' easiest Connect-4 set,
beside a random player. About a minute on 2 CPU cores.

  python examples/gumbel_selfplay.py
"""

import jax
import optax

import mcgs_jax
from mcgs_jax import envs
from mcgs_jax import networks
from mcgs_jax.learning import agents
from mcgs_jax.learning import ground_truth
from mcgs_jax.learning import replay
from mcgs_jax.learning import selfplay
from mcgs_jax.learning import trainer

GAMES, MOVES_PER_ITERATION, ITERATIONS = 64, 8, 300
SIMULATIONS, BATCH, UPDATES = 16, 256, 8

env = envs.make("connect4")
network = networks.make("mlp", env, hidden_sizes=(128, 128))
eval_fn = networks.NetworkEval(network)
config = selfplay.SelfPlayConfig(
    search=mcgs_jax.SearchConfig(
        num_simulations=SIMULATIONS, root_policy="gumbel", max_considered_actions=7,
        # Kept nodes take capacity the next search needs: 4x the simulations.
        max_nodes=4 * SIMULATIONS),
    reuse_graph=True, temperature=1.0, temperature_moves=8, opening_plies=4)
optimizer = optax.adam(1e-3)
loss_config = trainer.LossConfig(kind="alphazero")


@jax.jit
def iteration(variables, opt_state, games, buffer, rng):
  """Self-play moves in every game, their finished positions into the buffer, updates."""
  play_rng, sample_rng = jax.random.split(rng)
  games, examples, valid, stats = selfplay.play(variables, play_rng, games, env, eval_fn, config,
                                                num_moves=MOVES_PER_ITERATION)
  buffer = replay.add(buffer, examples, valid)

  def update(carry, rng):
    variables, opt_state = carry
    batch, weights = replay.sample(buffer, rng, BATCH)
    batch = replay.augment(env, jax.random.fold_in(rng, 1), batch)   # the mirror image
    variables, opt_state, metrics = trainer.update(
        variables, opt_state, batch, weights, network=network, optimizer=optimizer,
        loss_config=loss_config)
    return (variables, opt_state), metrics["loss"]

  (variables, opt_state), losses = jax.lax.scan(
      update, (variables, opt_state), jax.random.split(sample_rng, UPDATES))
  return variables, opt_state, games, buffer, losses[-1], stats.games_finished


def main():
  rng = jax.random.PRNGKey(0)
  games = selfplay.init(rng, env, GAMES, config.opening_plies)
  variables = networks.init(network, rng, env.init(rng, batch_size=1).observation)
  opt_state = optimizer.init(variables["params"])
  buffer = replay.init(selfplay.example_like(env), capacity=20_000)
  for i in range(ITERATIONS):
    variables, opt_state, games, buffer, loss, finished = iteration(
        variables, opt_state, games, buffer, jax.random.fold_in(rng, i))
    if i % 50 == 0 or i == ITERATIONS - 1:
      print(f"iteration {i}: {int(finished)} games finished, {int(buffer.size)} positions "
            f"in the buffer, loss {float(loss):.3f}")
  # The raw policy against Pons' exact scores (a move is an error when it
  # changes the position's win/draw/loss outcome).
  for agent in (agents.PolicyAgent(eval_fn=eval_fn, params=variables), agents.RandomAgent()):
    figures = ground_truth.evaluate(env, agent, rng, c4_sets=("L3_R1",), positions_per_set=1000)
    print(f"{agent.name} errs on {100 * figures['c4_error_L3_R1']:.1f}% of End-Easy's 1000 positions")


if __name__ == "__main__":
  main()
