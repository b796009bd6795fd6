"""The policy-value networks, their functional API and eval_fn adapter."""

import dataclasses
import functools

import flax
import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax import networks
from mcgs_jax.envs import connect4
from mcgs_jax.networks import MLP, MLPEval, init_params, mlp_eval
from mcgs_jax.networks import resnet

ENV = connect4.Connect4()
PGX = pgx.make("connect_four")
EVAL_FN = mlp_eval(7, (32, 16))
MOVES = "4453327"  # a mid-game position, player 1 to move


@pytest.fixture(scope="module")
def params():
  return init_params(EVAL_FN.network, jax.random.key(1), jnp.zeros((1, 6, 7, 2)))


def test_shapes_and_value_range(params):
  kernels = [p["kernel"].shape for p in params["params"].values()]
  assert sorted(kernels) == sorted([(84, 32), (32, 16), (16, 7), (16, 1)])
  # Large inputs push the value head towards saturation.
  obs = jax.random.normal(jax.random.key(2), (5, 6, 7, 2)) * 50.0
  logits, value = EVAL_FN.network.apply(params, obs)
  assert logits.shape == (5, 7) and logits.dtype == jnp.float32
  assert value.shape == (5,) and value.dtype == jnp.float32
  assert np.all(np.abs(np.asarray(value)) <= 1.0)


def test_eval_fn_is_hashable_and_applies_to_states(params):
  assert hash(EVAL_FN) == hash(mlp_eval(7, [32, 16]))
  assert EVAL_FN == MLPEval(MLP(7, (32, 16)))
  assert EVAL_FN != mlp_eval(7, (64, 16))
  assert EVAL_FN.num_actions == 7
  state = ENV.init(jax.random.key(0), batch_size=3)
  logits, value = EVAL_FN(params, jax.random.key(3), state)
  assert logits.shape == (3, 7) and value.shape == (3,)
  # Identical initial positions evaluate identically.
  np.testing.assert_array_equal(logits[0], logits[2])


def test_same_output_on_ours_and_pgx_observation(params):
  ours = connect4.from_moves(MOVES)
  theirs = PGX.init(jax.random.key(4))
  step = jax.jit(PGX.step)
  for ch in MOVES:
    theirs = step(theirs, int(ch) - 1)
  np.testing.assert_array_equal(ours.observation, theirs.observation)
  ours_out = EVAL_FN(params, None, jax.tree.map(lambda x: x[None], ours))
  theirs_out = EVAL_FN.network.apply(params, theirs.observation[None])
  for a, b in zip(ours_out, theirs_out):
    np.testing.assert_array_equal(a, b)


def test_eval_fn_inside_search(params):
  config = mcgs_jax.SearchConfig(num_simulations=16)
  search = jax.jit(mcgs_jax.search, static_argnames=("env", "eval_fn", "config"))
  state = ENV.init(jax.random.key(0), batch_size=2)
  out = search(params, jax.random.key(5), state, env=ENV, eval_fn=EVAL_FN, config=config)
  assert out.action.shape == (2,)
  np.testing.assert_array_equal(out.visit_counts.sum(-1), [16, 16])
  np.testing.assert_array_equal(out.stats.simulations, [16, 16])
  assert np.all(np.asarray(out.stats.nn_evals) >= 1)
  assert np.all(np.asarray(out.stats.nan_evals) == 0)
  assert np.all(np.abs(np.asarray(out.root_value)) <= 1.0)
  # Deterministic network, same root: both games search identically.
  np.testing.assert_array_equal(out.visit_counts[0], out.visit_counts[1])




# ----------------------------------------------------------------------------
# The residual networks, the functional API and the adapter.
#
# Every test uses the TINY configurations below: one channel count and one
# head width, so the layers share a few shapes and each initialiser compiles
# once for the whole file.

TINY = {"mlp": dict(hidden_sizes=(16,)),
        "resnet": dict(num_blocks=2, channels=8, value_hidden=8),
        "seresnet": dict(num_blocks=1, channels=8, value_hidden=8, se_ratio=4),
        "resnet_nobn": dict(num_blocks=2, channels=8, value_hidden=8, batch_norm=False),
        "dual": dict(num_blocks=2, channels=8, small_head_after=1, value_hidden=8,
                     small_value_hidden=4)}
BN_EPS = 1e-5
BN_MOMENTUM = 0.9


def _observations(game, batch_size, seed):
  """Random bool planes shaped like the game's observation (not positions:
  the networks must not care)."""
  shape = networks.observation_shape(envs.make(game))
  return np.random.default_rng(seed).random((batch_size,) + shape) < 0.4


@functools.cache
def _tiny(name, game):
  """(network, variables) of the TINY `name` network for `game`.

  The variables have `mcgs_jax.networks.init`'s structure (from its shapes alone) and
  numpy random values: BatchNorm's scale, bias and averages all differ from
  their initial 1, 0, 0, 1 so they all matter, variances stay positive, and
  kernels have fan-in variance. No initialiser runs: on a busy CPU each one
  compiles for seconds.
  """
  network = networks.make(name.removesuffix("_nobn"), envs.make(game), **TINY[name])
  shapes = jax.eval_shape(lambda rng: networks.init(network, rng, _observations(game, 1, 0)),
                          jax.random.key(0))
  rng = np.random.default_rng(1)

  def draw(path, leaf):
    noise = 0.3 * rng.standard_normal(leaf.shape)
    kind = path[-1].key
    if kind == "kernel":
      value = rng.standard_normal(leaf.shape) / np.sqrt(np.prod(leaf.shape[:-1]))
    else:
      value = {"var": 0.5 + np.abs(noise), "scale": 1.0 + noise}.get(kind, noise)
    return jnp.asarray(value, jnp.float32)

  return network, jax.tree.map_with_path(draw, shapes)


def test_init_builds_batch_norm_variables_at_identity():
  network, tiny = _tiny("resnet", "tictactoe")
  variables = networks.init(network, jax.random.key(0), _observations("tictactoe", 1, 0))
  assert jax.tree.map(jnp.shape, variables) == jax.tree.map(jnp.shape, tiny)
  stem = variables["params"]["stem_bn"], variables["batch_stats"]["stem_bn"]
  np.testing.assert_array_equal(stem[0]["scale"], np.ones(8))
  np.testing.assert_array_equal(stem[0]["bias"], np.zeros(8))
  np.testing.assert_array_equal(stem[1]["mean"], np.zeros(8))
  np.testing.assert_array_equal(stem[1]["var"], np.ones(8))
  assert np.std(variables["params"]["block_0"]["conv_1"]["kernel"]) > 0.01
  again = networks.init(network, jax.random.key(0), _observations("tictactoe", 5, 1))
  jax.tree.map(np.testing.assert_array_equal, again, variables)


# A numpy forward pass written from the architecture's definition.

def _np_conv(x, kernel):
  """'SAME' cross-correlation: x [B, H, W, C], kernel [k, k, C, O]."""
  k = kernel.shape[0]
  pad = k // 2
  xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
  height, width = x.shape[1:3]
  out = np.zeros(x.shape[:3] + (kernel.shape[-1],))
  for i in range(k):
    for j in range(k):
      out += np.einsum("bhwc,co->bhwo", xp[:, i:i + height, j:j + width], kernel[i, j])
  return out


def _np_bn(x, params, stats, train):
  if train:
    mean, var = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
  else:
    mean, var = stats["mean"], stats["var"]
  return (x - mean) / np.sqrt(var + BN_EPS) * params["scale"] + params["bias"]


def _np_dense(x, params):
  return x @ params["kernel"] + params["bias"]


def _relu(x):
  return np.maximum(x, 0.0)


def _np_conv_bn(x, params, stats, conv, bn, train):
  if bn not in params:   # batch_norm=False: a biased convolution
    return _np_conv(x, params[conv]["kernel"]) + params[conv]["bias"]
  return _np_bn(_np_conv(x, params[conv]["kernel"]), params[bn], stats[bn], train)


def _np_head(x, params, stats, train):
  batch = x.shape[0]
  policy = _relu(_np_conv_bn(x, params, stats, "policy_conv", "policy_bn", train))
  logits = _np_dense(policy.reshape(batch, -1), params["policy"])
  value = _relu(_np_conv_bn(x, params, stats, "value_conv", "value_bn", train))
  value = _relu(_np_dense(value.reshape(batch, -1), params["value_hidden"]))
  return logits, np.tanh(_np_dense(value, params["value"]))[:, 0]


def _np_block(x, params, stats, train, se):
  y = _relu(_np_conv_bn(x, params, stats, "conv_1", "bn_1", train))
  y = _np_conv_bn(y, params, stats, "conv_2", "bn_2", train)
  if se:
    squeezed = _relu(_np_dense(y.mean(axis=(1, 2)), params["se"]["squeeze"]))
    gate, bias = np.split(_np_dense(squeezed, params["se"]["excite"]), 2, axis=-1)
    y = y / (1.0 + np.exp(-gate[:, None, None, :])) + bias[:, None, None, :]
  return _relu(x + y)


def _np_resnet(variables, observation, train, se=False):
  """ResNet / SEResNet forward pass in float64 numpy."""
  params = jax.tree.map(lambda a: np.asarray(a, np.float64), variables["params"])
  stats = jax.tree.map(lambda a: np.asarray(a, np.float64), variables.get("batch_stats"))
  if stats is None:
    stats = {name: {} for name in params}
  x = np.asarray(observation, np.float64)
  x = _relu(_np_conv_bn(x, params, stats, "stem_conv", "stem_bn", train))
  num_blocks = len([name for name in params if name.startswith("block_")])
  for i in range(num_blocks):
    x = _np_block(x, params[f"block_{i}"], stats[f"block_{i}"], train, se)
  return _np_head(x, params["head"], stats["head"], train)


@pytest.mark.parametrize("name", ["mlp", "resnet", "seresnet", "dual", "resnet_nobn"])
@pytest.mark.parametrize("game", ["connect4", "tictactoe"])
def test_every_network_shapes_and_value_range(name, game):
  network, variables = _tiny(name, game)
  assert set(variables) == ({"params"} if name in ("mlp", "resnet_nobn")
                            else {"params", "batch_stats"})
  num_actions = envs.make(game).num_actions
  assert network.num_actions == num_actions
  outputs = networks.apply(network, variables, _observations(game, 2, seed=3))
  heads = outputs if networks.has_two_heads(network) else (outputs,)
  assert len(heads) == (2 if name == "dual" else 1)
  for logits, value in heads:
    assert logits.shape == (2, num_actions) and logits.dtype == jnp.float32
    assert value.shape == (2,) and value.dtype == jnp.float32
    assert np.all(np.abs(np.asarray(value)) <= 1.0)
    assert np.all(np.isfinite(np.asarray(logits)))


def test_layer_shapes_follow_the_architecture():
  params = _tiny("resnet", "connect4")[1]["params"]
  assert sorted(params) == ["block_0", "block_1", "head", "stem_bn", "stem_conv"]
  assert params["stem_conv"]["kernel"].shape == (3, 3, 2, 8)
  assert params["block_1"]["conv_2"]["kernel"].shape == (3, 3, 8, 8)
  head = params["head"]
  assert head["policy_conv"]["kernel"].shape == (1, 1, 8, 2)
  assert head["policy"]["kernel"].shape == (6 * 7 * 2, 7)
  assert head["value_conv"]["kernel"].shape == (1, 1, 8, 1)
  assert head["value_hidden"]["kernel"].shape == (6 * 7, 8)
  assert head["value"]["kernel"].shape == (8, 1)
  # Squeeze to channels // se_ratio = 2 units, excite to a gate and a bias per channel.
  se = _tiny("seresnet", "connect4")[1]["params"]["block_0"]["se"]
  assert se["squeeze"]["kernel"].shape == (8, 2)
  assert se["excite"]["kernel"].shape == (2, 16)


@pytest.mark.parametrize("name", ["resnet", "seresnet", "resnet_nobn"])
@pytest.mark.parametrize("train", [False, True])
def test_resnet_matches_numpy_forward_pass(name, train):
  network, variables = _tiny(name, "tictactoe")
  observation = _observations("tictactoe", 3, seed=5)
  if train:
    (logits, value), _ = networks.apply(network, variables, observation, train=True)
  else:
    logits, value = networks.apply(network, variables, observation)
  want_logits, want_value = _np_resnet(variables, observation, train, se=name == "seresnet")
  if name == "resnet_nobn":
    names = {name for path in flax.traverse_util.flatten_dict(variables["params"])
             for name in path}
    assert not any(name.endswith("_bn") or name.startswith("bn_") for name in names)
    assert variables["params"]["block_0"]["conv_1"]["bias"].shape == (8,)
  np.testing.assert_allclose(logits, want_logits, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(value, want_value, rtol=1e-4, atol=1e-4)


def test_batch_norm_train_updates_running_averages_and_eval_does_not():
  network, variables = _tiny("resnet", "tictactoe")
  observation = _observations("tictactoe", 4, seed=7)
  _, new_variables = networks.apply(network, variables, observation, train=True)
  assert new_variables["params"] is variables["params"]
  # stem: average <- momentum * average + (1 - momentum) * batch statistic of the conv output.
  stem = _np_conv(observation.astype(np.float64),
                  np.asarray(variables["params"]["stem_conv"]["kernel"], np.float64))
  old = variables["batch_stats"]["stem_bn"]
  new = new_variables["batch_stats"]["stem_bn"]
  np.testing.assert_allclose(
      new["mean"], BN_MOMENTUM * np.asarray(old["mean"]) + (1 - BN_MOMENTUM) * stem.mean((0, 1, 2)),
      rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(
      new["var"], BN_MOMENTUM * np.asarray(old["var"]) + (1 - BN_MOMENTUM) * stem.var((0, 1, 2)),
      rtol=1e-4, atol=1e-6)
  for a, b in zip(jax.tree.leaves(variables["batch_stats"]),
                  jax.tree.leaves(new_variables["batch_stats"])):
    assert not np.allclose(a, b)
  # Inference reads the averages and leaves them as they were.
  _, unchanged = network.apply(variables, observation, train=False, mutable=["batch_stats"])
  jax.tree.map(np.testing.assert_array_equal, unchanged["batch_stats"],
               variables["batch_stats"])


def test_mlp_train_mode_returns_variables_unchanged():
  network, variables = _tiny("mlp", "tictactoe")
  observation = _observations("tictactoe", 2, seed=8)
  outputs, new_variables = networks.apply(network, variables, observation, train=True)
  assert new_variables is variables
  jax.tree.map(np.testing.assert_array_equal, outputs,
               networks.apply(network, variables, observation))


def test_dual_head_small_only_is_the_small_head_of_the_full_call():
  network, variables = _tiny("dual", "connect4")
  observation = _observations("connect4", 2, seed=9)
  (small_logits, small_value), (large_logits, _) = networks.apply(network, variables, observation)
  alone_logits, alone_value = networks.apply(network, variables, observation, small_only=True)
  np.testing.assert_allclose(alone_logits, small_logits, rtol=1e-6, atol=1e-6)
  np.testing.assert_allclose(alone_value, small_value, rtol=1e-6, atol=1e-6)
  assert not np.allclose(small_logits, large_logits)
  # The small head sees only block 0: changing block 1 changes the large head only.
  params = variables["params"]
  moved = {**variables, "params": {**params, "block_1": jax.tree.map(lambda p: p + 1.0,
                                                                     params["block_1"])}}
  (small_moved, _), (large_moved, _) = networks.apply(network, moved, observation)
  np.testing.assert_array_equal(small_moved, small_logits)
  assert not np.allclose(large_moved, large_logits)
  # Training the small head alone updates only the averages under it.
  _, trained = networks.apply(network, variables, observation, train=True, small_only=True)
  for part, changed in (("stem_bn", True), ("block_0", True), ("small_head", True),
                        ("block_1", False), ("large_head", False)):
    same = jax.tree.leaves(jax.tree.map(np.array_equal, trained["batch_stats"][part],
                                        variables["batch_stats"][part]))
    assert not any(same) if changed else all(same), part
  # The cheaper head: a narrower value layer.
  assert params["small_head"]["value_hidden"]["kernel"].shape == (6 * 7, 4)
  assert params["large_head"]["value_hidden"]["kernel"].shape == (6 * 7, 8)


def test_dual_head_rejects_small_head_beyond_the_trunk():
  network = resnet.DualHeadResNet(7, num_blocks=1, channels=8, small_head_after=2)
  with pytest.raises(ValueError, match="small_head_after"):
    network.init(jax.random.key(0), jnp.zeros((1, 6, 7, 2)))


@pytest.mark.parametrize("module", [resnet.ResNet, resnet.SEResNet, resnet.DualHeadResNet])
def test_conv_networks_refuse_flat_and_unbatched_input(module):
  network = module(3, num_blocks=2, channels=8)
  with pytest.raises(ValueError, match="flat observation.*MLP"):
    network.init(jax.random.key(0), jnp.zeros((2, 15)))
  with pytest.raises(ValueError, match="batch of board planes"):
    network.init(jax.random.key(0), jnp.zeros((6, 7, 2)))


def test_make_picks_num_actions_and_refuses_conv_nets_on_flat_observations():
  assert networks.make("resnet", envs.make("tictactoe")).num_actions == 9
  assert networks.make("mlp", envs.make("hsr:4,4,16")).num_actions == 15
  mlp = networks.make("mlp", envs.make("nim"), hidden_sizes=[32, 16])
  assert mlp.hidden_sizes == (32, 16) and hash(mlp) == hash(MLP(28, (32, 16)))
  for flat in ("nim", "nim:3,20", "hsr:4,4,16"):
    for name in ("resnet", "seresnet", "dual"):
      with pytest.raises(ValueError, match="use 'mlp'"):
        networks.make(name, envs.make(flat))
  with pytest.raises(ValueError, match="unknown network"):
    networks.make("transformer", envs.make("connect4"))


def test_network_eval_is_hashable_and_checks_its_head():
  c4 = envs.make("connect4")
  dual = networks.make("dual", c4, **TINY["dual"])
  small = networks.NetworkEval(dual, c4, "small")
  same = networks.NetworkEval(networks.make("dual", envs.make("connect4"), **TINY["dual"]),
                              envs.make("connect4"), "small")
  assert small == same and hash(small) == hash(same)
  assert small != networks.NetworkEval(dual, c4, "large")
  assert small != networks.NetworkEval(dual, None, "small")
  assert small != dataclasses.replace(small, network=dataclasses.replace(dual, channels=16))
  assert small.num_actions == 7
  assert networks.MLPEval is networks.NetworkEval
  with pytest.raises(ValueError, match="one head"):
    networks.NetworkEval(networks.make("resnet", c4), head="small")
  with pytest.raises(ValueError, match="head must be one of"):
    networks.NetworkEval(dual, head="medium")


def test_network_eval_selects_the_dual_heads():
  env = envs.make("connect4")
  network, variables = _tiny("dual", "connect4")
  state = env.init(jax.random.key(0), batch_size=2)
  small, large = networks.apply(network, variables, env.observe(state))
  for head, want in ((None, large), ("large", large), ("small", small)):
    got = networks.NetworkEval(network, env, head)(variables, None, state)
    for a, b in zip(got, want):
      np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_network_eval_inside_search_reads_env_observe():
  # HSR states have no `observation` field: the adapter must call env.observe.
  env = envs.make("hsr:2,2,4")
  network, variables = _tiny("mlp", "hsr:2,2,4")
  state = env.init(jax.random.key(0), batch_size=2)
  eval_fn = networks.NetworkEval(network, env)
  config = mcgs_jax.SearchConfig(num_simulations=4)
  search = jax.jit(mcgs_jax.search, static_argnames=("env", "eval_fn", "config"))
  out = search(variables, jax.random.key(2), state, env=env, eval_fn=eval_fn, config=config)
  np.testing.assert_array_equal(out.visit_counts.sum(-1), [4, 4])
  np.testing.assert_array_equal(out.stats.simulations, [4, 4])
  assert np.all(np.asarray(out.stats.nn_evals) >= 1)
  assert np.all(np.asarray(out.stats.nan_evals) == 0)
  assert np.all(np.abs(np.asarray(out.root_value)) <= 1.0)
  assert not np.any(np.asarray(out.visit_counts)[~np.asarray(state.legal_action_mask)])
  # Same network, same root: both games search identically.
  np.testing.assert_array_equal(out.visit_counts[0], out.visit_counts[1])
