"""The peer: pgx's AlphaZero example recipe (pgx 2.x, `examples/alphazero`),
written in this project's code: its config, self-play, update and a
resumable run (`mcgs-jax peer-recipe` is its command line, whose docstring
states the recipe and what differs from pgx's file)."""

import dataclasses
import functools
import json
import os
import time

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import optax
import pgx
import pgx.experimental

from mcgs_jax import networks
from mcgs_jax.learning import checkpoint as checkpoint_lib
from mcgs_jax.learning import config as config_lib
from mcgs_jax.learning import evaluation
from mcgs_jax.learning import loop
from mcgs_jax.learning import run_lock


@dataclasses.dataclass(frozen=True)
class PeerConfig:
  """pgx's `Config` fields (its names), scaled batch sizes, our network.

  Attributes:
    network_kwargs: our ResNet's attributes, as sorted pairs.
    selfplay_batch_size: games per iteration (pgx 1024).
    num_simulations: Gumbel MuZero simulations per move (pgx 32).
    max_num_steps: moves per game slot per iteration (pgx 256).
    training_batch_size: examples per update (pgx 4096).
    learning_rate: Adam's (pgx 1e-3).
    seed: the run's seed.
    eval_every: evaluate every this many iterations.
    eval_positions: positions per Pons set.
    eval_simulations: simulations of the evaluation search.
  """
  network_kwargs: tuple = (("channels", 32), ("num_blocks", 4))
  selfplay_batch_size: int = 256
  num_simulations: int = 32
  max_num_steps: int = 256
  training_batch_size: int = 1024
  learning_rate: float = 1e-3
  seed: int = 0
  eval_every: int = 1
  eval_positions: int = 100
  eval_simulations: int = 200

  def __post_init__(self):
    if (self.selfplay_batch_size * self.max_num_steps) % self.training_batch_size:
      raise ValueError("selfplay_batch_size * max_num_steps must be a multiple of "
                       "training_batch_size (one pass in whole minibatches)")

  def train_config(self) -> config_lib.TrainConfig:
    """Our TrainConfig of the same network and evaluation.

    Returns:
      The TrainConfig (for `load_agent` and
      `evaluation.ground_truth_figures`).
    """
    return config_lib.replace(
        config_lib.default_config("connect4"), network="resnet",
        network_kwargs=dict(self.network_kwargs),
        eval_search=dict(num_simulations=self.eval_simulations, root_policy="puct", solver=False),
        eval_positions=self.eval_positions, seed=self.seed)


QUICK = dict(selfplay_batch_size=8, max_num_steps=16, training_batch_size=32,
             num_simulations=8, eval_positions=4, eval_simulations=8,
             network_kwargs=(("channels", 8), ("num_blocks", 1)))

ENV = pgx.make("connect_four")


def _forward(network, variables, observation):
  return networks.apply(network, variables, observation.astype(jnp.float32))


def _recurrent_fn(network):
  """pgx's recurrent_fn: step the pgx state, evaluate, mask, reward, discount."""
  def recurrent_fn(variables, rng, action, state):
    del rng
    player = state.current_player
    state = jax.vmap(ENV.step)(state, action)
    logits, value = _forward(network, variables, state.observation)
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    logits = jnp.where(state.legal_action_mask, logits, jnp.finfo(logits.dtype).min)
    reward = state.rewards[jnp.arange(state.rewards.shape[0]), player]
    value = jnp.where(state.terminated, 0.0, value)
    discount = jnp.where(state.terminated, 0.0, -1.0 * jnp.ones_like(value))
    return mctx.RecurrentFnOutput(reward=reward, discount=discount, prior_logits=logits,
                                  value=value), state
  return recurrent_fn


@functools.partial(jax.jit, static_argnames=("network", "config"))
def selfplay(variables, rng, *, network, config: PeerConfig):
  """One iteration's games: samples [T * B] (obs, policy, value, mask)."""
  batch = config.selfplay_batch_size

  def step(state, key):
    search_key, reset_key = jax.random.split(key)
    observation = state.observation
    logits, value = _forward(network, variables, observation)
    root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=state)
    out = mctx.gumbel_muzero_policy(
        params=variables, rng_key=search_key, root=root, recurrent_fn=_recurrent_fn(network),
        num_simulations=config.num_simulations, invalid_actions=~state.legal_action_mask,
        qtransform=mctx.qtransform_completed_by_mix_value, gumbel_scale=1.0)
    actor = state.current_player
    keys = jax.random.split(reset_key, batch)
    state = jax.vmap(pgx.experimental.auto_reset(ENV.step, ENV.init))(state, out.action, keys)
    discount = jnp.where(state.terminated, 0.0, -1.0 * jnp.ones_like(value))
    return state, dict(obs=observation, policy=out.action_weights,
                       reward=state.rewards[jnp.arange(batch), actor],
                       terminated=state.terminated, discount=discount)

  init_key, scan_key = jax.random.split(rng)
  state = jax.vmap(ENV.init)(jax.random.split(init_key, batch))
  _, data = jax.lax.scan(step, state, jax.random.split(scan_key, config.max_num_steps))
  # A move whose game did not end within the scan has no value target.
  mask = jnp.cumsum(data["terminated"][::-1], axis=0)[::-1] >= 1

  def back(carry, t):
    value = data["reward"][t] + data["discount"][t] * carry
    return value, value

  _, values = jax.lax.scan(back, jnp.zeros(batch), jnp.arange(config.max_num_steps),
                           reverse=True)
  flat = lambda x: x.reshape((-1,) + x.shape[2:])
  return dict(obs=flat(data["obs"]), policy=flat(data["policy"]), value=flat(values),
              mask=flat(mask).astype(jnp.float32))


@functools.partial(jax.jit, static_argnames=("network", "optimizer"))
def update(variables, opt_state, minibatch, *, network, optimizer):
  """One Adam step on pgx's loss."""
  def loss_fn(params):
    (logits, value), new_variables = networks.apply(
        network, {**variables, "params": params}, minibatch["obs"].astype(jnp.float32),
        train=True)
    policy_loss = jnp.mean(optax.softmax_cross_entropy(logits, minibatch["policy"]))
    value_loss = jnp.mean(optax.l2_loss(value, minibatch["value"]) * minibatch["mask"])
    return policy_loss + value_loss, (new_variables, policy_loss, value_loss)

  grads, (new_variables, policy_loss, value_loss) = jax.grad(loss_fn, has_aux=True)(
      variables["params"])
  updates, opt_state = optimizer.update(grads, opt_state)
  params = optax.apply_updates(variables["params"], updates)
  return {**new_variables, "params": params}, opt_state, policy_loss, value_loss


class PeerRun:
  """A resumable run of the recipe in `directory`."""

  def __init__(self, directory: str, config: PeerConfig):
    self.directory, self.config = directory, config
    self._lock = run_lock.acquire(directory)   # one run per folder, until close
    self.train_config = config.train_config()
    self.env, self.network, self.eval_fn = checkpoint_lib.build_network(self.train_config)
    self.optimizer = optax.adam(learning_rate=config.learning_rate)
    os.makedirs(directory, exist_ok=True)
    self._write_config()
    self.checkpoints = checkpoint_lib.Checkpointer(os.path.join(directory, "checkpoints"))
    template = self.initial_state()
    step = self.checkpoints.latest_step()
    if step is None:
      self.state, self.rows = template, []
    else:
      self.state, meta = self.checkpoints.restore(step, template)
      if meta.get("peer_config") != to_json(config):
        raise checkpoint_lib.CheckpointError(
            f"{directory} was started with another peer config: use a new --out")
      self.rows = meta["rows"]
      # The CSV may hold a row whose checkpoint never completed.
      loop.write_metrics(os.path.join(directory, loop.METRICS), self.rows)

  def _write_config(self):
    for name, data in (("peer_config.json", to_json(self.config)),
                       (checkpoint_lib.CONFIG, self.train_config.to_json())):
      path = os.path.join(self.directory, name)
      if os.path.exists(path):
        with open(path) as f:
          if json.load(f) != data:
            raise checkpoint_lib.CheckpointError(
                f"{path} holds another config than this run's: use a new --out")
        continue
      with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=2)
      os.replace(path + ".tmp", path)

  def initial_state(self) -> dict:
    """The state of iteration 0 (also the template a checkpoint restores into).

    Returns:
      dict: iteration, rng, variables, opt_state, wall_s, cpu_s, frames.
    """
    rng = jax.random.PRNGKey(self.config.seed)
    variables = checkpoint_lib.init_variables(self.network, self.env, jax.random.fold_in(rng, 0))
    return dict(iteration=jnp.int32(0), rng=rng, variables=variables,
                opt_state=self.optimizer.init(variables["params"]), wall_s=jnp.float32(0.0),
                cpu_s=jnp.float32(0.0), frames=jnp.int32(0))

  def step(self) -> dict:
    """One iteration: self-play, one pass of updates, the evaluation when it
    is due, then the checkpoint, metrics.csv and agent.msgpack.

    Returns:
      The iteration's metrics row.
    """
    config, state = self.config, self.state
    iteration = int(state["iteration"]) + 1
    rng = jax.random.fold_in(state["rng"], iteration)
    play_rng, shuffle_rng, eval_rng = jax.random.split(rng, 3)
    start, cpu_start = time.perf_counter(), time.process_time()
    samples = selfplay(state["variables"], play_rng, network=self.network, config=config)
    jax.block_until_ready(samples)
    selfplay_s = time.perf_counter() - start
    count = samples["value"].shape[0]
    order = jax.random.permutation(shuffle_rng, count)
    num_updates = count // config.training_batch_size
    minibatches = jax.tree.map(
        lambda x: x[order].reshape((num_updates, config.training_batch_size) + x.shape[1:]),
        samples)
    variables, opt_state = state["variables"], state["opt_state"]
    policy_losses, value_losses = [], []
    for i in range(num_updates):
      variables, opt_state, policy_loss, value_loss = update(
          variables, opt_state, jax.tree.map(lambda x, i=i: x[i], minibatches),
          network=self.network, optimizer=self.optimizer)
      policy_losses.append(policy_loss)
      value_losses.append(value_loss)
    jax.block_until_ready(variables)
    wall_s = float(state["wall_s"]) + time.perf_counter() - start
    cpu_s = float(state["cpu_s"]) + time.process_time() - cpu_start
    self.state = dict(iteration=jnp.int32(iteration), rng=state["rng"], variables=variables,
                      opt_state=opt_state, wall_s=jnp.float32(wall_s),
                      cpu_s=jnp.float32(cpu_s), frames=state["frames"] + count)
    row = dict(agent="peer", iteration=iteration, wall_s=wall_s, cpu_s=cpu_s,
               frames=int(self.state["frames"]), selfplay_s=selfplay_s,
               policy_loss=float(np.mean(policy_losses)),
               value_loss=float(np.mean(value_losses)),
               nn_evals_total=float(self.state["frames"]) * (config.num_simulations + 1))
    if iteration % config.eval_every == 0:
      start = time.perf_counter()
      row.update(evaluation.ground_truth_figures(
          self.env, self.eval_fn, jax.device_get(variables), eval_rng, self.train_config))
      row["eval_s"] = time.perf_counter() - start
    self.rows = self.rows + [{k: float(f"{v:.6g}") if isinstance(v, float) else v
                              for k, v in row.items()}]
    self.checkpoints.save(iteration, self.state, dict(peer_config=to_json(config),
                                                      rows=self.rows))
    loop.write_metrics(os.path.join(self.directory, loop.METRICS), self.rows)
    checkpoint_lib.write_variables(os.path.join(self.directory, checkpoint_lib.AGENT),
                                   self.state["variables"])
    return self.rows[-1]

  def close(self):
    """Waits for the checkpoints and releases the run folder."""
    try:
      self.checkpoints.close()
    finally:
      self._lock.release()


def to_json(config: PeerConfig) -> dict:
  """The config as JSON data (network_kwargs as an object).

  Args:
    config: the PeerConfig.

  Returns:
    dict of its fields.
  """
  data = dataclasses.asdict(config)
  data["network_kwargs"] = dict(config.network_kwargs)
  return data
