"""Policy-value networks, one functional API over them, their losses.

  make(name, env, **kwargs)                       'mlp' | 'resnet' | 'seresnet' | 'dual'
  init(network, rng, example_observation [B, ...]) -> variables
  apply(network, variables, observation, train=False) -> outputs
                                       (train=True: (outputs, new_variables))
  NetworkEval(network, env=None, head=None)       the search's eval_fn
  losses.alphazero_loss, losses.kl_illegal_loss, losses.make_optimizer

Networks: `MLP` (any observation, flattened; the one for flat Nim / HSR
vectors), `ResNet`, `SEResNet` and `DualHeadResNet` (board planes
[B, H, W, C]). See `mcgs_jax.networks.adapter` for the conventions.
"""

import os

from mcgs_jax.networks import losses
from mcgs_jax.networks.adapter import (HEADS, NETWORKS, MLPEval, NetworkEval, apply, has_two_heads, init,
                              make, mlp_eval, observation_shape)
from mcgs_jax.networks.losses import alphazero_loss, kl_illegal_loss, make_optimizer
from mcgs_jax.networks.mlp import MLP, init_params
from mcgs_jax.networks.resmlp import DualHeadResMLP, NetworkPair, ResMLP
from mcgs_jax.networks.resnet import DualHeadResNet, ResNet, SEResNet

# The shipped Connect-4 agent (config, weights, curves), package data.
PRETRAINED_CONNECT4 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pretrained",
                                   "connect4")

__all__ = [
    "DualHeadResMLP", "DualHeadResNet", "HEADS", "NetworkPair", "ResMLP", "MLP", "MLPEval", "NETWORKS", "NetworkEval", "PRETRAINED_CONNECT4", "ResNet", "SEResNet",
    "alphazero_loss", "apply", "has_two_heads", "init", "init_params", "kl_illegal_loss",
    "losses", "make", "make_optimizer", "mlp_eval", "observation_shape",
]
