"""The training run's settings: one frozen dataclass, defaults per env.

`experiments.train` reads them in this order: the env's defaults
(`default_config`), then a JSON config file (`--config FILE`, an object whose
keys are field names), then the command-line options. The resolved config is
written to `DIR/config.json` and a resumed run must agree with it.
"""

import dataclasses
import difflib
import json
from typing import Any

import mcgs_jax
import networks
from mcgs_jax import config as search_config_lib
from mcgs_jax import dual
from mcgs_jax import field_spec
from mcgs_jax import modes
from mcgs_jax.field_spec import FLAG, count, number, one_of, share
from learning import selfplay
from learning import trainer

# Searches of two evaluators (`mcgs_jax.dual`): they need a two-head network.
TWO_SEARCHES = ("dual", "mpv")
# Backup modes not offered for training: "katago" came after the training
# settings and no training run or test has covered it (the experiments
# compare it at play time only).
UNTRAINED_MODES = ("katago",)
SEARCHES = tuple(m for m in modes.names() if m not in UNTRAINED_MODES) + TWO_SEARCHES
NETWORK_NAMES = tuple(networks.NETWORKS) + ("pair",)

# The valid values of every field (`mcgs_jax.field_spec`), checked at
# construction before any use; docs/configuration.md lists them.
FIELDS = {
    "env": field_spec.Spec(str, note="an env id of `envs.make`"),
    "network": one_of(*NETWORK_NAMES),
    "network_kwargs": field_spec.Spec(tuple, note="the network's keyword arguments"),
    "search": one_of(*SEARCHES),
    "simulations": count(1),
    "root_policy": one_of(*search_config_lib.ROOT_POLICIES),
    "gumbel_considered": count(1),
    "fast_simulations": count(0, note="<= simulations"),
    "full_search_prob": share(),
    "games": count(1),
    "moves_per_iteration": count(1),
    "reuse_graph": FLAG,
    "node_factor": number(1.0),
    "solver": FLAG,
    "c_init": number(0.0),
    "dirichlet_fraction": share(),
    "dirichlet_alpha": number(0.0, low_open=True),
    "temperature_moves": count(0),
    "outcome_weight": share(),
    "value_lambda": share(),
    "opening_plies": count(0),
    "replay_capacity": count(1),
    "batch_size": count(1),
    "updates_per_iteration": count(1),
    "min_replay": count(0),
    "learning_rate": number(0.0, low_open=True),
    "decay_updates": count(0),
    "weight_decay": number(0.0),
    "optimizer": one_of("adam", "sgd"),
    "loss": one_of(*trainer.LOSSES),
    "opponent_policy_weight": number(0.0),
    "ema_decay": share(high_open=True),
    "augment": FLAG,
    "overlap": FLAG,
    "eval_every": count(0),
    "eval_every_s": number(0.0),
    "eval_simulations": count(1),
    "eval_root_policy": one_of(*search_config_lib.ROOT_POLICIES),
    "eval_solver": FLAG,
    "eval_positions": count(1),
    "arena_games": count(0),
    "arena_simulations": count(1),
    "baseline_simulations": count(1),
    "warm_start_steps": count(0),
    "warm_start_positions": count(1),
    "seed": count(0),
    "keep_checkpoints": count(1),
    "checkpoint_every": count(1),
    "dual_backup": one_of("tree", "mcgs"),
    "small_simulations": count(1),
    "large_simulations": count(1),
    "backup_window": count(0),
    "eps_greedy": share(),
    "eps_decay": share(low_open=True),
    "value_mix": share(),
    "dual_rounds": count(1),
}


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  """Every setting of a training run.

  Attributes:
    env: env id (`envs.make`).
    network: 'mlp', 'resnet', 'seresnet' or 'dual' (`networks.make`).
    network_kwargs: the network's other attributes, as sorted (name, value)
      pairs (a dict in JSON).
    search: 'mcgs', 'tree' or 'tt_cache' (`SearchConfig.backup`), or 'dual'
      / 'mpv' (`mcgs_jax.dual`: a small and a large search; the network
      must have two heads: 'dual', 'dual_mlp' or 'pair').
    simulations: simulations per move in self-play.
    root_policy: 'puct' (the move drawn from the visit counts, which are the
      policy target) or 'gumbel' (Gumbel root search, Danihelka et al. 2022:
      the move is the search's sequential-halving choice and the policy
      target the improved policy; no Dirichlet noise); any `search`.
    gumbel_considered: 'gumbel': root actions considered
      (`SearchConfig.max_considered_actions`).
    fast_simulations, full_search_prob: playout cap randomization
      (`SelfPlayConfig.fast_simulations`); 0: off.
    games: B, games played in parallel (a multiple of the device count).
    moves_per_iteration: moves per game per iteration of self-play.
    reuse_graph: keep the played child's subgraph between moves.
    node_factor: node capacity = node_factor * (simulations + 1) (reuse needs
      room for the kept subgraph).
    solver: the terminal solver in self-play searches.
    c_init: PUCT exploration constant.
    dirichlet_fraction, dirichlet_alpha: root noise in self-play.
    temperature_moves: moves drawn from the visit distribution (T = 1) at the
      start of each game; argmax afterwards.
    opening_plies: new self-play games start after 0..opening_plies random
      moves (`SelfPlayConfig.opening_plies`).
    outcome_weight: value target = w * outcome + (1 - w) * search value
      (`SelfPlayConfig.outcome_weight`).
    value_lambda: the outcome in that target is the lambda-return of the
      search values (`SelfPlayConfig.value_lambda`); 1: the game's outcome.
    replay_capacity: examples kept.
    batch_size: examples per update (a multiple of the device count).
    updates_per_iteration: optimizer steps per iteration.
    min_replay: no update before the buffer holds this many examples.
    learning_rate, weight_decay, optimizer ('adam' | 'sgd'), loss
      ('alphazero' | 'kl'): the optimisation.
    decay_updates: with > 0 the learning rate follows a cosine from
      `learning_rate` down to a tenth of it over this many updates, then
      stays there; 0 keeps it constant.
    opponent_policy_weight: with > 0 (network 'resnet' only), the ResNet
      gets a third head trained to predict the policy target of the next
      position, the opponent's reply (KataGo's auxiliary policy target), with
      this weight in the loss (KataGo: 0.15); the search never reads it.
      0 (default): off.
    ema_decay: with > 0, self-play, evaluation and the saved agent use an
      exponential moving average of the trained network's variables,
      updated once per iteration: ema <- d * ema + (1 - d) * variables with
      d = min(ema_decay, (1 + k) / (10 + k)) after the k-th iteration (the
      ramp keeps the first iterations from playing with the random
      initial network for long). Training continues from the raw
      variables. Averaging the weights, as KataGo does with its exported
      networks, removes the optimizer's step noise without lowering the
      learning rate. 0 (default): off.
    augment: random symmetry per sampled example (where the env has them).
    overlap: self-play and the optimizer steps of an iteration run at the
      same time, in two threads (two CPU cores, or one accelerator kept busy
      while the host waits on the other): iteration k plays with the network
      of iteration k - 1 and trains on the replay buffer as it stood before
      iteration k's positions were added, which are trained on from
      iteration k + 1. Deterministic and resumable like the sequential loop.
    eval_every: evaluate every this many iterations (0: never).
    eval_every_s: also evaluate at the first iteration whose `cpu_s` (the
      process's CPU seconds of self-play and training, which unlike `wall_s`
      do not grow when other processes share the cores) passes each multiple
      of this many seconds (0: off), and once early, at the first
      iteration past `learning.loop.FIRST_EVAL_S` (60) CPU seconds; runs
      whose iterations differ in cost then get their curves at the same
      compute.
    eval_simulations: simulations of the searched-move evaluation.
    eval_root_policy: the root policy of evaluation and arena searches
      ('puct' or 'gumbel' without noise), whatever self-play used, so runs
      of either are measured by the same search.
    eval_solver: the terminal solver in the evaluation and arena searches
      (whatever `solver` is for self-play).
    eval_positions: positions per Pons set (Connect-4 only).
    arena_games: games per arena pairing at evaluation (0: no arena).
    arena_simulations: simulations per move of the trained agent in the arena.
    baseline_simulations: simulations of the random-rollout MCGS baseline.
    warm_start_steps: supervised steps on exactly labelled positions before
      self-play (0: from scratch).
    warm_start_positions: labelled positions for the warm start.
    seed: the run's seed.
    keep_checkpoints: checkpoints kept on disk.
    checkpoint_every: write the orbax checkpoint (state, replay buffer
      included) at the first iteration, every this many iterations and when
      the run stops; metrics.csv and agent.msgpack are still written every
      iteration. 1 (default): every iteration. On a GPU an iteration's
      checkpoint costs about as much as the iteration; a kill then repeats
      up to `checkpoint_every - 1` iterations on resume (same results).
    dual_backup: 'dual' / 'mpv': the backup of both searches ('tree' or
      'mcgs').
    small_simulations, large_simulations: 'dual' / 'mpv': b_S and b_L.
    backup_window, eps_greedy, eps_decay: SearchConfig's switches, in every
      self-play search (0, 0, 1: off).
    value_mix: 'dual' / 'mpv': `DualConfig.value_mix`.
    dual_rounds: 'dual' / 'mpv': `DualConfig.rounds`.
  """
  env: str = "tictactoe"
  network: str = "mlp"
  network_kwargs: tuple = ()
  search: str = "mcgs"
  simulations: int = 32
  root_policy: str = "puct"
  gumbel_considered: int = 16
  fast_simulations: int = 0
  full_search_prob: float = 0.25
  games: int = 64
  moves_per_iteration: int = 9
  reuse_graph: bool = True
  node_factor: float = 2.0
  solver: bool = False
  c_init: float = 2.5
  dirichlet_fraction: float = 0.25
  dirichlet_alpha: float = 0.5
  temperature_moves: int = 4
  outcome_weight: float = 1.0
  value_lambda: float = 1.0
  opening_plies: int = 0
  replay_capacity: int = 20_000
  batch_size: int = 256
  updates_per_iteration: int = 16
  min_replay: int = 256
  learning_rate: float = 1e-3
  decay_updates: int = 0
  weight_decay: float = 1e-4
  optimizer: str = "adam"
  loss: str = "alphazero"
  opponent_policy_weight: float = 0.0
  ema_decay: float = 0.0
  augment: bool = True
  overlap: bool = False
  eval_every: int = 5
  eval_every_s: float = 0.0
  eval_simulations: int = 64
  eval_root_policy: str = "puct"
  eval_solver: bool = False
  eval_positions: int = 100
  arena_games: int = 0
  arena_simulations: int = 64
  baseline_simulations: int = 800
  warm_start_steps: int = 0
  warm_start_positions: int = 2000
  seed: int = 0
  keep_checkpoints: int = 2
  checkpoint_every: int = 1
  dual_backup: str = "mcgs"
  small_simulations: int = 50
  large_simulations: int = 35
  backup_window: int = 0
  eps_greedy: float = 0.0
  eps_decay: float = 1.0
  value_mix: float = 0.5
  dual_rounds: int = 1

  def __post_init__(self):
    # Every field's type and range first (`FIELDS`), then how they combine.
    field_spec.check_fields("TrainConfig", self, FIELDS)
    trainer.LossConfig(kind=self.loss, opponent_policy_weight=self.opponent_policy_weight)
    if self.opponent_policy_weight > 0 and self.network != "resnet":
      raise ValueError(f"opponent_policy_weight needs network='resnet', got {self.network!r}")
    if self.search in TWO_SEARCHES and (self.root_policy != "puct" or self.fast_simulations):
      raise ValueError(f"search={self.search!r} supports root_policy='puct' without "
                       "fast_simulations only")
    if self.fast_simulations > self.simulations:
      raise ValueError(f"fast_simulations must be in [0, simulations], got "
                       f"{self.fast_simulations}")
    if self.search in TWO_SEARCHES and self.network not in ("dual", "dual_mlp", "pair"):
      raise ValueError(f"search={self.search!r} needs a two-head network ('dual', 'dual_mlp' "
                       f"or 'pair'), got network={self.network!r}")

  def search_config(self, simulations: int | None = None, noise: bool = True
                    ) -> mcgs_jax.SearchConfig:
    """The search of self-play (with root noise) or of evaluation.

    Self-play searches with `root_policy` (Dirichlet noise for 'puct',
    Gumbel noise for 'gumbel'). Evaluation searches use `eval_root_policy`
    without noise, and the solver when `eval_solver`. Both check the
    network's outputs (`SearchConfig.check_evaluator`).

    Args:
      simulations: simulations per move; None: `self.simulations`.
      noise: self-play (Dirichlet root noise) or evaluation (none).

    Returns:
      The SearchConfig.
    """
    if self.search in TWO_SEARCHES:
      return self.dual_config(noise)
    simulations = self.simulations if simulations is None else simulations
    root_policy = self.root_policy if noise else self.eval_root_policy
    gumbel = root_policy == "gumbel"
    return mcgs_jax.SearchConfig(
        num_simulations=simulations, backup=self.search,
        solver=self.solver or (self.eval_solver and not noise),
        c_init=self.c_init, max_nodes=int(self.node_factor * (simulations + 1)),
        dirichlet_fraction=self.dirichlet_fraction if noise and not gumbel else 0.0,
        dirichlet_alpha=self.dirichlet_alpha, backup_window=self.backup_window,
        eps_greedy=self.eps_greedy if noise else 0.0, eps_decay=self.eps_decay,
        root_policy=root_policy, max_considered_actions=self.gumbel_considered,
        gumbel_scale=1.0 if noise else 0.0, check_evaluator=True)

  def dual_config(self, noise: bool = True):
    """The `mcgs_jax.dual.DualConfig` of a 'dual' or 'mpv' run.

    Self-play searches get root noise and epsilon-greedy; evaluation searches
    get neither and keep the budgets b_S and b_L.

    Args:
      noise: self-play (True) or evaluation (False).

    Returns:
      The DualConfig of the small and the large search.
    """
    def one(simulations):
      return mcgs_jax.SearchConfig(
          num_simulations=simulations, backup=self.dual_backup, c_init=self.c_init,
          max_nodes=simulations + 1,
          dirichlet_fraction=self.dirichlet_fraction if noise else 0.0,
          dirichlet_alpha=self.dirichlet_alpha, backup_window=self.backup_window,
          eps_greedy=self.eps_greedy if noise else 0.0, eps_decay=self.eps_decay,
          check_evaluator=True)

    return dual.DualConfig(small=one(self.small_simulations), large=one(self.large_simulations),
                           value_mix=self.value_mix, rounds=self.dual_rounds)

  def selfplay_config(self) -> selfplay.SelfPlayConfig:
    """The self-play settings of this run.

    Returns:
      SelfPlayConfig with the self-play search (`search_config()`).
    """
    # A dual search keeps no graph between moves (two graphs, two networks).
    reuse = self.reuse_graph and self.search not in TWO_SEARCHES
    return selfplay.SelfPlayConfig(search=self.search_config(), reuse_graph=reuse,
                                   temperature=1.0, temperature_moves=self.temperature_moves,
                                   final_temperature=0.0,
                                   outcome_weight=self.outcome_weight,
                                   value_lambda=self.value_lambda,
                                   opening_plies=self.opening_plies,
                                   fast_simulations=self.fast_simulations,
                                   full_search_prob=self.full_search_prob,
                                   opponent_policy=self.opponent_policy_weight > 0)

  def network_options(self) -> dict[str, Any]:
    """The network's keyword arguments for `networks.make`.

    Returns:
      A dict (stored as sorted pairs, so the config stays hashable).
    """
    options = dict(self.network_kwargs)
    if self.opponent_policy_weight > 0:
      options["opponent_policy"] = True
    return options

  def to_json(self) -> dict:
    """The config as a JSON-serialisable dict (tuples become lists).

    Returns:
      A dict of every field.
    """
    data = dataclasses.asdict(self)
    data["network_kwargs"] = {k: list(v) if isinstance(v, tuple) else v
                              for k, v in self.network_kwargs}
    return data

  @classmethod
  def from_json(cls, data: dict) -> "TrainConfig":
    """The config from a dict of fields (`to_json`'s output, or a subset).

    Args:
      data: field name -> value; missing fields take the defaults.

    Returns:
      The TrainConfig.

    Raises:
      ValueError: unknown field names, or values `__post_init__` refuses.
    """
    return replace(cls(), **data)


def _frozen_kwargs(kwargs):
  """A mapping as sorted pairs (hashable); anything else as it is, for the
  field's check to refuse."""
  if not isinstance(kwargs, dict):
    return kwargs
  return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in kwargs.items()))


def replace(config: TrainConfig, **changes) -> TrainConfig:
  """`config` with `changes`.

  Args:
    config: the TrainConfig.
    **changes: field name -> new value (`network_kwargs` may be a dict).

  Returns:
    The new TrainConfig.

  Raises:
    ValueError: unknown field names (named in the message), or values
      `__post_init__` refuses.
  """
  known = [f.name for f in dataclasses.fields(TrainConfig)]
  unknown = sorted(set(changes) - set(known))
  if unknown:
    hints = []
    for name in unknown:
      close = difflib.get_close_matches(name, known, n=1)
      hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise ValueError(f"unknown config field{'s' if len(unknown) > 1 else ''} "
                     f"{', '.join(hints)}; docs/configuration.md lists them")
  if "network_kwargs" in changes:
    changes["network_kwargs"] = _frozen_kwargs(changes["network_kwargs"])
  return dataclasses.replace(config, **changes)


# Defaults per env: small, fast settings that reach the README's targets on
# two CPU cores. Anything not listed takes TrainConfig's defaults.
_DEFAULTS = {
    "tictactoe": dict(network="mlp", network_kwargs={"hidden_sizes": [128, 128]},
                      simulations=64, games=128, moves_per_iteration=9,
                      temperature_moves=9, opening_plies=4, batch_size=256,
                      updates_per_iteration=32, replay_capacity=40_000,
                      decay_updates=19200, eval_every=10),
    # docs/learning/diagnosis.md: Gumbel self-play with 32 simulations,
    # value targets half outcome and half search value, and games opening
    # with 0-8 random moves; self-play and updates overlapped on the two
    # cores; a residual MLP (4x256), whose evaluations cost a tenth of the
    # 4x32 ResNet's on a CPU, so a run sees ten times the games; a cosine
    # decay over 550k updates (a 3-hour run makes ~630k), and a checkpoint
    # every 100 of its short iterations (`make train-connect4`).
    "connect4": dict(network="resmlp", network_kwargs={"num_layers": 4, "width": 256},
                     root_policy="gumbel", simulations=32, games=128, moves_per_iteration=14,
                     temperature_moves=8, opening_plies=8, outcome_weight=0.5,
                     batch_size=256, updates_per_iteration=32, replay_capacity=100_000,
                     min_replay=4096, learning_rate=1e-3, decay_updates=550_000,
                     overlap=True, eval_every=0, eval_every_s=900.0, eval_simulations=200,
                     eval_positions=100, dirichlet_alpha=0.5, node_factor=3.0,
                     checkpoint_every=100),
    "nim": dict(network="mlp", network_kwargs={"hidden_sizes": [128, 128]},
                simulations=64, games=128, moves_per_iteration=16, temperature_moves=16,
                opening_plies=4, updates_per_iteration=32, replay_capacity=40_000,
                decay_updates=9600, eval_every=10),
    "nim:3,20": dict(network="mlp", network_kwargs={"hidden_sizes": [64, 64]},
                     simulations=32, games=64, moves_per_iteration=10, temperature_moves=4),
    "hsr:4,4,16": dict(network="mlp", network_kwargs={"hidden_sizes": [128, 128]},
                       simulations=64, games=128, moves_per_iteration=8, temperature_moves=8,
                       opening_plies=4, updates_per_iteration=32, replay_capacity=40_000,
                       decay_updates=9600, eval_every=10),
}


# Iterations a run trains for when `--iterations` is not given.
_ITERATIONS = {"tictactoe": 600, "connect4": 100_000, "nim": 300, "nim:3,20": 100,
               "hsr:4,4,16": 300}


def default_iterations(env_id: str) -> int:
  """Iterations a run trains for when `--iterations` is not given.

  Args:
    env_id: the env id.

  Returns:
    int (100 for envs without a default).
  """
  return _ITERATIONS.get(env_id, 100)


def default_config(env_id: str) -> TrainConfig:
  """The defaults for `env_id` (TrainConfig's own for envs not listed).

  Args:
    env_id: the env id, e.g. "connect4".

  Returns:
    The TrainConfig.
  """
  return replace(TrainConfig(), env=env_id, **_DEFAULTS.get(env_id, {}))


def load_json(path: str) -> dict:
  """The TrainConfig fields stored in a JSON file.

  Args:
    path: the file.

  Returns:
    A dict of fields (pass it to `TrainConfig.from_json` or `replace`).

  Raises:
    ValueError: the file is not valid JSON or not a JSON object.
  """
  with open(path) as f:
    try:
      data = json.load(f)
    except json.JSONDecodeError as error:
      raise ValueError(f"config file {path} is not valid JSON: {error}") from None
  if not isinstance(data, dict):
    raise ValueError(f"config file {path} must hold a JSON object of TrainConfig fields")
  return data


CONFIGURATION_DOC = "docs/configuration.md"


def configuration_markdown() -> str:
  """docs/configuration.md: the valid values of every `SearchConfig` and
  `TrainConfig` field (`FIELDS`, `mcgs_jax.config.FIELDS`), as checked at
  construction. Rewrite the page with `write_configuration_doc()`.

  Returns:
    The page's text.
  """
  return "\n".join([
      "# Configuration: the valid values of every field",
      "",
      "`mcgs_jax.SearchConfig` and `learning.config.TrainConfig` check every field when they are",
      "constructed: a value of the wrong type (a count given as a float, a flag as a number, a",
      "number as a string) raises `TypeError`, one out of range `ValueError`, each in one line that",
      "names the field, its valid values and the value given. A `--config` file of",
      "`experiments.train` is a JSON object of `TrainConfig` fields; an unknown field name is refused",
      "with the nearest known one. The fields' meanings are in the classes' docstrings;",
      "combinations some fields exclude are checked after these ranges (e.g. `solver_bounds` needs",
      "`solver`, `q_init` lies within [`value_min`, `value_max`]).",
      "",
      "This page is generated from the code (`learning.config.write_configuration_doc()`); a test",
      "keeps it equal to it.",
      "",
      "## SearchConfig",
      "",
      field_spec.markdown_table(search_config_lib.FIELDS, mcgs_jax.SearchConfig()),
      "",
      "## TrainConfig",
      "",
      "Defaults of the class; each env's defaults (`default_config`) override some of them.",
      "",
      field_spec.markdown_table(FIELDS, TrainConfig()),
      "",
  ])


def write_configuration_doc(path: str = CONFIGURATION_DOC) -> None:
  """Writes `configuration_markdown()` to `path`.

  Args:
    path: the page (default docs/configuration.md).
  """
  with open(path, "w") as f:
    f.write(configuration_markdown())
