"""Run with XLA_FLAGS=--xla_force_host_platform_device_count=2 (see
test_multidevice.py): the 2-device update equals the 1-device update on the
same data, and data-parallel training iterations run, the second without
compiling anything."""

import sys
import tempfile

import jax
import numpy as np

from mcgs_jax.learning import checkpoint
from mcgs_jax.learning import loop
from mcgs_jax.learning import config as config_lib
from mcgs_jax.learning import replay
from mcgs_jax.learning import trainer
from tests import compile_count


def main():
  assert jax.device_count() == 2, jax.devices()
  config = config_lib.replace(
      config_lib.default_config("tictactoe"), network="resnet",
      network_kwargs={"num_blocks": 1, "channels": 8}, games=4, simulations=4,
      moves_per_iteration=9, batch_size=8, min_replay=8, updates_per_iteration=2,
      replay_capacity=128, eval_every=0)
  # A whole data-parallel iteration: self-play sharded over the games.
  with tempfile.TemporaryDirectory() as directory:
    run = loop.Run(directory, config)
    assert run.mesh is not None
    row = run.step()
    with compile_count.compilations() as compiles:
      row = run.step()
    # The second iteration reuses the first one's compiled self-play and
    # update: its inputs are placed as the first call returned them.
    assert not compiles, compiles
    buffer = jax.device_get(run.state["buffer"])
    run.close()
  assert row["devices"] == 2 and row["positions_total"] > 0, row
  # The 2-device update equals the 1-device update on the same (real
  # self-play) examples.
  env, network, _ = checkpoint.build_network(config)
  variables = checkpoint.init_variables(network, env, jax.random.PRNGKey(0))
  optimizer = loop._optimizer(config.learning_rate, config.weight_decay, config.optimizer)  # pylint: disable=protected-access
  opt_state = optimizer.init(variables["params"])
  batch, weights = replay.sample(buffer, jax.random.PRNGKey(3), 8)
  loss_config = trainer.LossConfig()
  results = []
  for mesh in (None, trainer.make_mesh()):
    step = jax.jit(lambda v, o, b, w, mesh=mesh: trainer.update(
        v, o, b, w, network=network, optimizer=optimizer, loss_config=loss_config, mesh=mesh))
    b, w = trainer.shard_batch((batch, weights), mesh)
    v, o = trainer.replicate((variables, opt_state), mesh)
    new_v, _, metrics = step(v, o, b, w)
    if mesh is not None:
      # The batch really was split over both devices.
      assert len(b.observation.sharding.device_set) == 2
    results.append((jax.device_get(new_v), jax.device_get(metrics)))
  for x, y in zip(jax.tree.leaves(results[0]), jax.tree.leaves(results[1]), strict=True):
    np.testing.assert_allclose(x, y, rtol=2e-5, atol=2e-6)
  moved = max(float(np.max(np.abs(a - b))) for a, b in zip(
      jax.tree.leaves(results[0][0]["params"]), jax.tree.leaves(variables["params"])))
  assert moved > 1e-6, moved
  print("multidevice ok", row["loss"])


if __name__ == "__main__":
  sys.exit(main())
