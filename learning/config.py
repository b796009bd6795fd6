"""The training run's settings: one frozen dataclass, defaults per env.

`mcgs_jax.experiments.train` reads them in this order: the env's defaults
(`default_config`), then a JSON config file (`--config FILE`, an object whose
keys are field names), then the command-line options. The resolved config is
written to `DIR/config.json` and a resumed run must agree with it.
"""

import dataclasses
import difflib
import json
from typing import Any

import mcgs_jax
from mcgs_jax import networks
from mcgs_jax import config as search_config_lib
from mcgs_jax import dual
from mcgs_jax import field_spec
from mcgs_jax.field_spec import FLAG, count, number, one_of, share
from mcgs_jax.learning import names
from mcgs_jax.learning import selfplay
from mcgs_jax.learning import trainer

NETWORK_NAMES = tuple(networks.NETWORKS) + ("pair",)

# The valid values of every field (`mcgs_jax.field_spec`), checked at
# construction before any use; docs/configuration.md lists them.
SEARCH_KINDS = (mcgs_jax.SearchConfig, dual.DualConfig)
FIELDS = {
    "env": field_spec.Spec(str, note="an env id of `mcgs_jax.envs.make`"),
    "network": one_of(*NETWORK_NAMES),
    "network_kwargs": field_spec.Spec(tuple, note="the network's keyword arguments"),
    "search": field_spec.Spec(SEARCH_KINDS, note="self-play's search; a JSON object in files"),
    "eval_search": field_spec.Spec(SEARCH_KINDS,
                                   note="evaluation's search; a JSON object in files"),
    "fast_simulations": count(0, note="<= the search's num_simulations"),
    "full_search_prob": share(),
    "games": count(1),
    "moves_per_iteration": count(1),
    "reuse_graph": FLAG,
    "node_factor": number(1.0),
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
    "eval_positions": count(1),
    "arena_games": count(0),
    "arena_simulations": count(1),
    "baseline_simulations": count(1),
    "warm_start_steps": count(0),
    "warm_start_positions": count(1),
    "seed": count(0),
    "keep_checkpoints": count(1),
    "checkpoint_every": count(1),
}

# The flat search fields TrainConfig held before it held its two searches.
# Configs written with them (run folders, checkpoints, `--config` files)
# still load: `migrate` turns them into `search` and `eval_search`; the
# command line's --search, --simulations and --root-policy speak them too.
LEGACY_FIELDS = {
    "search": one_of(*names.SEARCHES),
    "simulations": count(1),
    "root_policy": one_of(*search_config_lib.ROOT_POLICIES),
    "gumbel_considered": count(1),
    "solver": FLAG,
    "c_init": number(0.0),
    "dirichlet_fraction": share(),
    "dirichlet_alpha": number(0.0, low_open=True),
    "eval_simulations": count(1),
    "eval_root_policy": one_of(*search_config_lib.ROOT_POLICIES),
    "eval_solver": FLAG,
    "dual_backup": one_of("tree", "mcgs"),
    "small_simulations": count(1),
    "large_simulations": count(1),
    "backup_window": count(0),
    "eps_greedy": share(),
    "eps_decay": share(low_open=True),
    "value_mix": share(),
    "dual_rounds": count(1),
}
LEGACY_DEFAULTS = dict(
    search="mcgs", simulations=32, root_policy="puct", gumbel_considered=16, solver=False,
    c_init=2.5, dirichlet_fraction=0.25, dirichlet_alpha=0.5, eval_simulations=64,
    eval_root_policy="puct", eval_solver=False, dual_backup="mcgs", small_simulations=50,
    large_simulations=35, backup_window=0, eps_greedy=0.0, eps_decay=1.0, value_mix=0.5,
    dual_rounds=1)


def searches_from_legacy(flat: dict) -> tuple[Any, Any]:
  """The self-play and evaluation searches of the flat fields (`LEGACY_FIELDS`).

  The rules the flat fields always had: self-play searches with root noise
  (Dirichlet for 'puct', Gumbel for 'gumbel') and epsilon-greedy;
  evaluation with `eval_root_policy`, no noise, the solver where either
  flag asks for it; both check the network's outputs. A 'dual' or 'mpv'
  search is a `DualConfig` of b_S and b_L simulations, each search's node
  capacity its budget + 1.

  Args:
    flat: every field of `LEGACY_FIELDS`.

  Returns:
    (search, eval_search): SearchConfigs (node capacity None: `node_factor`
    sets it) or DualConfigs.
  """
  def one(noise: bool):
    if flat["search"] in names.TWO_SEARCHES:
      def part(simulations):
        return mcgs_jax.SearchConfig(
            num_simulations=simulations, backup=flat["dual_backup"], c_init=flat["c_init"],
            max_nodes=simulations + 1,
            dirichlet_fraction=flat["dirichlet_fraction"] if noise else 0.0,
            dirichlet_alpha=flat["dirichlet_alpha"], backup_window=flat["backup_window"],
            eps_greedy=flat["eps_greedy"] if noise else 0.0, eps_decay=flat["eps_decay"],
            check_evaluator=True)
      return dual.DualConfig(small=part(flat["small_simulations"]),
                             large=part(flat["large_simulations"]),
                             value_mix=flat["value_mix"], rounds=flat["dual_rounds"])
    root_policy = flat["root_policy"] if noise else flat["eval_root_policy"]
    gumbel = root_policy == "gumbel"
    return mcgs_jax.SearchConfig(
        num_simulations=flat["simulations"] if noise else flat["eval_simulations"],
        backup=flat["search"], solver=flat["solver"] or (flat["eval_solver"] and not noise),
        c_init=flat["c_init"],
        dirichlet_fraction=flat["dirichlet_fraction"] if noise and not gumbel else 0.0,
        dirichlet_alpha=flat["dirichlet_alpha"], backup_window=flat["backup_window"],
        eps_greedy=flat["eps_greedy"] if noise else 0.0, eps_decay=flat["eps_decay"],
        root_policy=root_policy, max_considered_actions=flat["gumbel_considered"],
        gumbel_scale=1.0 if noise else 0.0, check_evaluator=True)

  return one(noise=True), one(noise=False)


def legacy_view(search: Any, eval_search: Any) -> dict:
  """The flat fields (`LEGACY_FIELDS`) that `searches_from_legacy` turns
  into these two searches, as far as they say them (the rest: defaults).

  Args:
    search: the self-play search (SearchConfig or DualConfig).
    eval_search: the evaluation search.

  Returns:
    A dict of every `LEGACY_FIELDS` name.
  """
  flat = dict(LEGACY_DEFAULTS)
  if isinstance(search, dual.DualConfig):
    small = search.small
    flat.update(search="dual", dual_backup=small.backup, small_simulations=small.num_simulations,
                large_simulations=search.large.num_simulations, value_mix=search.value_mix,
                dual_rounds=search.rounds)
  else:
    small = search
    flat.update(search=search.backup, simulations=search.num_simulations,
                root_policy=search.root_policy, gumbel_considered=search.max_considered_actions,
                solver=search.solver)
  flat.update(c_init=small.c_init, dirichlet_alpha=small.dirichlet_alpha,
              backup_window=small.backup_window, eps_greedy=small.eps_greedy,
              eps_decay=small.eps_decay)
  if small.root_policy == "puct":   # Gumbel roots take no Dirichlet noise
    flat["dirichlet_fraction"] = small.dirichlet_fraction
  if not isinstance(eval_search, dual.DualConfig):
    flat.update(eval_simulations=eval_search.num_simulations,
                eval_root_policy=eval_search.root_policy, eval_solver=eval_search.solver)
  return flat


_DEFAULT_SEARCH, _DEFAULT_EVAL_SEARCH = searches_from_legacy(LEGACY_DEFAULTS)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  """Every setting of a training run.

  Attributes:
    env: env id (`mcgs_jax.envs.make`).
    network: 'mlp', 'resnet', 'seresnet' or 'dual' (`mcgs_jax.networks.make`).
    network_kwargs: the network's other attributes, as sorted (name, value)
      pairs (a dict in JSON).
    search: self-play's search: a `mcgs_jax.SearchConfig` (every one of its
      fields: backup mode, root policy 'puct' or 'gumbel', root noise,
      solver, ...) or a `mcgs_jax.dual.DualConfig` (Dual MCTS / MPV-MCTS: a
      small and a large search; the network must have two heads: 'dual',
      'dual_mlp' or 'pair'). Where its `max_nodes` is None the node capacity
      is `node_factor * (num_simulations + 1)`. With root policy 'puct' the
      move is drawn from the visit counts, which are the policy target; with
      'gumbel' (Danihelka et al. 2022) the move is the search's
      sequential-halving choice and the policy target the improved policy.
      In JSON an object of the config's fields, {"kind": "dual", "small":
      {...}, "large": {...}, ...} for a DualConfig; given as a change
      (`replace`, a `--config` file) an object holds only the fields that
      change. Older configs' flat fields (`LEGACY_FIELDS`) still load
      (`migrate`).
    eval_search: the search of the evaluation and the arena, of the same
      kind as `search` (the defaults: no root noise, `gumbel_scale` 0).
    fast_simulations, full_search_prob: playout cap randomization
      (`SelfPlayConfig.fast_simulations`); 0: off.
    games: B, games played in parallel (a multiple of the device count).
    moves_per_iteration: moves per game per iteration of self-play.
    reuse_graph: keep the played child's subgraph between moves.
    node_factor: node capacity of a search whose `max_nodes` is None =
      node_factor * (num_simulations + 1) (reuse needs room for the kept
      subgraph).
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
    learning_rate, weight_decay, optimizer, loss: the optimisation
      (optimizer 'adam' or 'sgd', loss 'alphazero' or 'kl').
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
      iteration past `mcgs_jax.learning.loop.FIRST_EVAL_S` (60) CPU seconds; runs
      whose iterations differ in cost then get their curves at the same
      compute.
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
  """
  env: str = "tictactoe"
  network: str = "mlp"
  network_kwargs: tuple = ()
  search: Any = _DEFAULT_SEARCH
  eval_search: Any = _DEFAULT_EVAL_SEARCH
  fast_simulations: int = 0
  full_search_prob: float = 0.25
  games: int = 64
  moves_per_iteration: int = 9
  reuse_graph: bool = True
  node_factor: float = 2.0
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
  eval_positions: int = 100
  arena_games: int = 0
  arena_simulations: int = 64
  baseline_simulations: int = 800
  warm_start_steps: int = 0
  warm_start_positions: int = 2000
  seed: int = 0
  keep_checkpoints: int = 2
  checkpoint_every: int = 1

  def __post_init__(self):
    # Every field's type and range first (`FIELDS`), then how they combine.
    field_spec.check_fields("TrainConfig", self, FIELDS)
    trainer.LossConfig(kind=self.loss, opponent_policy_weight=self.opponent_policy_weight)
    if self.opponent_policy_weight > 0 and self.network != "resnet":
      raise ValueError(f"opponent_policy_weight needs network='resnet', got {self.network!r}")
    two_searches = self.two_searches
    if two_searches != isinstance(self.eval_search, dual.DualConfig):
      raise ValueError("search and eval_search must be of the same kind (both SearchConfigs or "
                       "both DualConfigs: they run the same network)")
    if two_searches and self.fast_simulations:
      raise ValueError("a DualConfig search supports fast_simulations=0 only")
    if not two_searches and self.fast_simulations > self.search.num_simulations:
      raise ValueError(f"fast_simulations must be in [0, search.num_simulations], got "
                       f"{self.fast_simulations}")
    if two_searches and self.network not in ("dual", "dual_mlp", "pair"):
      raise ValueError(f"a DualConfig search needs a two-head network ('dual', 'dual_mlp' "
                       f"or 'pair'), got network={self.network!r}")

  @property
  def two_searches(self) -> bool:
    """Whether the searches are DualConfigs (a two-head network)."""
    return isinstance(self.search, dual.DualConfig)

  def search_config(self, simulations: int | None = None, noise: bool = True) -> Any:
    """The search of self-play (`search`) or of evaluation (`eval_search`).

    A SearchConfig whose `max_nodes` is None gets `node_factor *
    (num_simulations + 1)` nodes.

    Args:
      simulations: simulations per move instead of the search's own (a
        SearchConfig only); None: its own.
      noise: self-play's search (True) or evaluation's (False).

    Returns:
      The SearchConfig, or the DualConfig as it is.
    """
    search = self.search if noise else self.eval_search
    if isinstance(search, dual.DualConfig):
      return search
    if simulations is not None:
      search = dataclasses.replace(search, num_simulations=simulations)
    if search.max_nodes is None:
      search = dataclasses.replace(
          search, max_nodes=int(self.node_factor * (search.num_simulations + 1)))
    return search

  def selfplay_config(self) -> selfplay.SelfPlayConfig:
    """The self-play settings of this run.

    Returns:
      SelfPlayConfig with the self-play search (`search_config()`).
    """
    # A dual search keeps no graph between moves (two graphs, two networks).
    reuse = self.reuse_graph and not self.two_searches
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
    """The network's keyword arguments for `mcgs_jax.networks.make`.

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
      A dict of every field; the searches as objects of every field
      (`search_to_json`).
    """
    data = dataclasses.asdict(self)
    data["network_kwargs"] = {k: list(v) if isinstance(v, tuple) else v
                              for k, v in self.network_kwargs}
    data["search"] = search_to_json(self.search)
    data["eval_search"] = search_to_json(self.eval_search)
    return data

  @classmethod
  def from_json(cls, data: dict) -> "TrainConfig":
    """The config from a dict of fields (`to_json`'s output, or a subset).

    Args:
      data: field name -> value; missing fields take the defaults. Older
        configs' flat search fields are read too (`migrate`).

    Returns:
      The TrainConfig.

    Raises:
      ValueError: unknown field names, or values `__post_init__` refuses.
    """
    return replace(cls(), **data)


def search_to_json(search: Any) -> dict:
  """A search config as a JSON object of every field.

  Args:
    search: a SearchConfig or a DualConfig.

  Returns:
    The SearchConfig's fields, or {"kind": "dual", "small": {...},
    "large": {...}, "value_mix": ..., "rounds": ...}.
  """
  if isinstance(search, dual.DualConfig):
    return dict(kind="dual", small=search_to_json(search.small),
                large=search_to_json(search.large), value_mix=search.value_mix,
                rounds=search.rounds)
  return dataclasses.asdict(search)


# Unknown names an error lists, each with its nearest known name; the rest are
# counted (a file of many stray keys is answered at once, in one line).
_NAMED_UNKNOWN = 3


def _unknown_names(owner: str, names, known) -> None:
  """Refuses names not in `known`, the first few each with the nearest known one."""
  unknown = sorted(set(names) - set(known), key=str)
  if unknown:
    hints = []
    for name in unknown[:_NAMED_UNKNOWN]:
      close = difflib.get_close_matches(str(name)[:100], known, n=1)
      hints.append(f"{str(name)[:100]!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    more = len(unknown) - _NAMED_UNKNOWN
    rest = f" and {more} more" if more > 0 else ""
    raise ValueError(f"unknown {owner} field{'s' if len(unknown) > 1 else ''} "
                     f"{', '.join(hints)}{rest}; docs/configuration.md lists them")


def search_from_json(data: Any, base: Any, name: str = "search") -> Any:
  """A search config from its JSON object, changing `base`.

  Args:
    data: a SearchConfig or DualConfig (returned as it is), or a dict of
      the fields that differ from `base` (`search_to_json`'s output holds
      them all): {"kind": "dual", ...} for a DualConfig. A dict of another
      kind than `base` starts from that kind's defaults.
    base: the SearchConfig or DualConfig it changes.
    name: the TrainConfig field, for the messages.

  Returns:
    The SearchConfig or DualConfig; anything else as it is (the field's
    check refuses it).

  Raises:
    ValueError: unknown field names or kind, or values the configs refuse.
  """
  if not isinstance(data, dict):
    return data
  data = dict(data)
  kind = data.pop("kind", "search")
  if kind not in ("search", "dual"):
    raise ValueError(f"TrainConfig.{name}'s kind must be 'search' or 'dual', got {kind!r}")
  if kind == "dual":
    base = base if isinstance(base, dual.DualConfig) else dual.DualConfig()
    _unknown_names(f"{name} (DualConfig)", data, [f.name for f in dataclasses.fields(base)])
    for part in ("small", "large"):
      if part in data:
        data[part] = search_from_json(data[part], getattr(base, part), f"{name}.{part}")
    return dataclasses.replace(base, **data)
  base = base if isinstance(base, mcgs_jax.SearchConfig) else mcgs_jax.SearchConfig()
  _unknown_names(f"{name} (SearchConfig)", data, [f.name for f in dataclasses.fields(base)])
  return dataclasses.replace(base, **data)


def migrate(config: TrainConfig, changes: dict) -> dict:
  """Turns older configs' flat search fields into `search` and `eval_search`.

  TrainConfig once held its searches as flat fields (`LEGACY_FIELDS`:
  `search` as a backup name, `simulations`, `root_policy`, `eval_simulations`,
  ...). Given among `changes`, they change `config`'s searches by the rules
  they always had (`searches_from_legacy`); the searches' other fields stay
  as they are in `config` where the kind of search stays the same.

  Args:
    config: the config the changes apply to.
    changes: field name -> new value, old names among them or not.

  Returns:
    The changes in today's fields (a new dict).

  Raises:
    TypeError, ValueError: an old field's value out of its range (the
      message it always had), or old and new search fields together.
  """
  is_legacy = lambda name, value: name in LEGACY_FIELDS and (name != "search"
                                                              or isinstance(value, str))
  legacy = {k: v for k, v in changes.items() if is_legacy(k, v)}
  if not legacy:
    return dict(changes)
  changes = {k: v for k, v in changes.items() if k not in legacy}
  for name, value in legacy.items():
    field_spec.check("TrainConfig", name, value, LEGACY_FIELDS[name])
  if "search" in changes or "eval_search" in changes:
    raise ValueError(f"give the searches as `search` and `eval_search` or by the older flat "
                     f"fields ({', '.join(sorted(legacy))}), not both")
  flat = legacy_view(config.search, config.eval_search) | legacy
  for name, (new, old) in zip(("search", "eval_search"),
                              zip(searches_from_legacy(flat), (config.search, config.eval_search))):
    if isinstance(new, mcgs_jax.SearchConfig) and isinstance(old, mcgs_jax.SearchConfig):
      new = dataclasses.replace(old, **{f: getattr(new, f) for f in _LEGACY_SEARCH_FIELDS})
    changes[name] = new
  return changes


# The SearchConfig fields that `searches_from_legacy` sets.
_LEGACY_SEARCH_FIELDS = ("num_simulations", "backup", "solver", "c_init", "dirichlet_fraction",
                         "dirichlet_alpha", "backup_window", "eps_greedy", "eps_decay",
                         "root_policy", "max_considered_actions", "gumbel_scale",
                         "check_evaluator", "max_nodes")


def differences(config: TrainConfig, other: TrainConfig) -> list[str]:
  """The fields where two configs differ, the searches' by their own
  fields (e.g. `search.num_simulations`).

  Args:
    config, other: the TrainConfigs.

  Returns:
    The dotted field names, sorted.
  """
  def flat(data, prefix=""):
    items = {}
    for key, value in data.items():
      if isinstance(value, dict) and key != "network_kwargs":
        items.update(flat(value, f"{prefix}{key}."))
      else:
        items[prefix + key] = value
    return items

  mine, theirs = flat(config.to_json()), flat(other.to_json())
  return sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))


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
    **changes: field name -> new value (`network_kwargs` may be a dict; the
      searches JSON objects of the fields that change, `search_from_json`;
      older configs' flat search fields go through `migrate`).

  Returns:
    The new TrainConfig.

  Raises:
    ValueError: unknown field names (named in the message), or values
      `__post_init__` refuses.
  """
  changes = migrate(config, changes)
  _unknown_names("config", changes,
                 [f.name for f in dataclasses.fields(TrainConfig)] + list(LEGACY_FIELDS))
  if "network_kwargs" in changes:
    changes["network_kwargs"] = _frozen_kwargs(changes["network_kwargs"])
  for name in ("search", "eval_search"):
    if name in changes:
      changes[name] = search_from_json(changes[name], getattr(config, name), name)
  return dataclasses.replace(config, **changes)


# Defaults per env: small, fast settings that reach the README's targets on
# two CPU cores. Anything not listed takes TrainConfig's defaults.
_DEFAULTS = {
    "tictactoe": dict(network="mlp", network_kwargs={"hidden_sizes": [128, 128]},
                      search=dict(num_simulations=64), games=128, moves_per_iteration=9,
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
                     search=dict(root_policy="gumbel", dirichlet_fraction=0.0),
                     eval_search=dict(num_simulations=200), games=128, moves_per_iteration=14,
                     temperature_moves=8, opening_plies=8, outcome_weight=0.5,
                     batch_size=256, updates_per_iteration=32, replay_capacity=100_000,
                     min_replay=4096, learning_rate=1e-3, decay_updates=550_000,
                     overlap=True, eval_every=0, eval_every_s=900.0, eval_positions=100,
                     node_factor=3.0,
                     checkpoint_every=100),
    "nim": dict(network="mlp", network_kwargs={"hidden_sizes": [128, 128]},
                search=dict(num_simulations=64), games=128, moves_per_iteration=16,
                temperature_moves=16,
                opening_plies=4, updates_per_iteration=32, replay_capacity=40_000,
                decay_updates=9600, eval_every=10),
    "nim:3,20": dict(network="mlp", network_kwargs={"hidden_sizes": [64, 64]},
                     games=64, moves_per_iteration=10, temperature_moves=4),
    "hsr:4,4,16": dict(network="mlp", network_kwargs={"hidden_sizes": [128, 128]},
                       search=dict(num_simulations=64), games=128, moves_per_iteration=8,
                       temperature_moves=8,
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
    ValueError: the file is not valid JSON (or nested past Python's
      recursion limit) or not a JSON object.
  """
  with open(path, "rb") as f:
    try:
      data = json.loads(f.read())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
      raise ValueError(f"config file {path} is not valid JSON: {error}") from None
    except RecursionError:
      raise ValueError(f"config file {path} is nested too deeply to be a config "
                       "(TrainConfig's fields nest two levels)") from None
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
      "`mcgs_jax.SearchConfig` and `mcgs_jax.learning.config.TrainConfig` check every field when they are",
      "constructed: a value of the wrong type (a count given as a float, a flag as a number, a",
      "number as a string) raises `TypeError`, one out of range `ValueError`, each in one line that",
      "names the field, its valid values and the value given. A `--config` file of",
      "`mcgs_jax.experiments.train` is a JSON object of `TrainConfig` fields; an unknown field name is refused",
      "with the nearest known one. The fields' meanings are in the classes' docstrings;",
      "combinations some fields exclude are checked after these ranges (e.g. `solver_bounds` needs",
      "`solver`, `q_init` lies within [`value_min`, `value_max`]).",
      "",
      "This page is generated from the code (`mcgs_jax.learning.config.write_configuration_doc()`); a test",
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
      field_spec.markdown_table(FIELDS, TrainConfig(), show=_short),
      "",
      "The two searches are configs of their own: `search` (self-play's) and `eval_search` (the",
      "evaluation's and the arena's) each hold a `SearchConfig` (every field above) or a",
      "`mcgs_jax.dual.DualConfig` (Dual MCTS / MPV-MCTS: `small` and `large` SearchConfigs,",
      "`value_mix`, `rounds`; the network must have two heads); the two are of the same kind. A",
      "`--config` file gives them as JSON objects of the fields that change, e.g.",
      "`{\"search\": {\"num_simulations\": 64, \"root_policy\": \"gumbel\"}}`, or",
      "`{\"search\": {\"kind\": \"dual\", \"small\": {...}, \"large\": {...}}}`; a run's",
      "config.json holds every field. A search whose `max_nodes` is None gets `node_factor *",
      "(num_simulations + 1)` nodes.",
      "",
      "### Older configs' flat search fields",
      "",
      "Configs written before the searches were nested (run folders, checkpoints, `--config`",
      "files) held these flat fields; they still load (`mcgs_jax.learning.config.migrate`, by the rules",
      "they always had: self-play with root noise, evaluation without, the solver where either",
      "flag asks), and `mcgs_jax.experiments.train`'s `--search`, `--simulations` and `--root-policy` set",
      "them.",
      "",
      field_spec.markdown_table(LEGACY_FIELDS, LEGACY_DEFAULTS),
      "",
  ])


def _short(value: Any) -> str:
  """A default as the docs show it: a search config by the fields it sets."""
  if isinstance(value, mcgs_jax.SearchConfig):
    changed = [f"{f.name}={getattr(value, f.name)!r}" for f in dataclasses.fields(value)
               if getattr(value, f.name) != f.default]
    return f"SearchConfig({', '.join(changed)})"
  return repr(value)


def write_configuration_doc(path: str = CONFIGURATION_DOC) -> None:
  """Writes `configuration_markdown()` to `path`.

  Args:
    path: the page (default docs/configuration.md).
  """
  with open(path, "w") as f:
    f.write(configuration_markdown())
