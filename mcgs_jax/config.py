"""Search hyperparameters: one frozen, hashable config (a static jit argument).

`SearchConfig` takes every field flat, as users construct it. Its fields fall
into five concerns, each a frozen dataclass that validates itself:
`BudgetConfig` (simulations, capacity, steps), `BackupConfig` (the mode and
the values it backs up), `ExplorationConfig` (selection below the move
choice: PUCT, noise, pruning, RAVE, expansion), `RootConfig` (PUCT or Gumbel
root, the move choice) and `SolverConfig`. `config.budget`, `config.root`, ...
read a config's groups; `SearchConfig.from_groups(...)` builds one from them.
"""

import dataclasses
import sys
import warnings

from mcgs_jax import field_spec
from mcgs_jax import modes
from mcgs_jax.field_spec import FLAG, count, number, one_of, share

# The built-in backup modes (`mcgs_jax.modes`); `modes.names()` also lists
# the ones registered later.
class CapacityWarning(UserWarning):
  """A node capacity far below what the budget needs (`max_nodes`)."""


def _outside_this_module() -> int:
  """The `stacklevel` of the first caller outside the configs' construction
  (this module and the `__init__` dataclasses write), for a warning that
  names the user's line."""
  frame, level = sys._getframe(2), 2   # pylint: disable=protected-access
  while frame is not None and frame.f_code.co_filename in (__file__, "<string>"):
    frame, level = frame.f_back, level + 1
  return level


BACKUP_MODES = modes.names()
PRUNING_MODES = ("off", "soft", "hard")
MOVE_CHOICES = ("visits", "lcb")
ROOT_POLICIES = ("puct", "gumbel")
EXPANSION_POLICIES = ("all", "visits", "probability")


# The valid values of every field (`field_spec`), checked before the groups'
# own checks of how fields combine; docs/configuration.md lists them.
FIELDS = {
    # Capacities and their defaults (num_simulations + 1 nodes, a table of
    # twice that, rounded up to a power of two) stay within int32.
    "num_simulations": count(0, high=2 ** 29),
    "backup": field_spec.Spec(str, note="a mode of `mcgs_jax.modes`: " + ", ".join(
        repr(m) for m in BACKUP_MODES) + " or one registered later"),
    "c_init": number(0.0),
    "c_base": number(0.0, low_open=True),
    "q_init": number(note="within [value_min, value_max]"),
    "q_eps": number(0.0),
    "value_min": number(),
    "value_max": number(note="> value_min"),
    "max_nodes": count(1, high=2 ** 29, optional=True),
    "table_size": count(1, high=2 ** 30, optional=True, power_of_two=True),
    "max_probes": count(1),
    "max_depth": count(1),
    "node_temperature": number(0.0, low_open=True),
    "dirichlet_fraction": share(),
    "dirichlet_alpha": number(0.0, low_open=True),
    "visit_temperature": number(0.0),
    "q_value_weight": number(0.0),
    "q_veto_delta": number(0.0),
    "solver": FLAG,
    "solver_bounds": FLAG,
    "max_nn_evals": count(1, optional=True),
    "leaves_per_step": count(1),
    "eps_greedy": share(),
    "eps_constraint": share(),
    "free_retries": count(0),
    "progressive_pruning": one_of(*PRUNING_MODES),
    "pruning_r_d": number(0.0),
    "pruning_min_visits": count(1),
    "pruning_max_visits_per_move": count(0),
    "move_choice": one_of(*MOVE_CHOICES),
    "lcb_z": number(0.0),
    "lcb_min_visit_fraction": share(),
    "min_root_visit_fraction": share(high_open=True),
    "root_policy": one_of(*ROOT_POLICIES),
    "max_considered_actions": count(1),
    "gumbel_scale": number(0.0),
    "value_scale": number(0.0, low_open=True),
    "maxvisit_init": number(0.0),
    "rave": FLAG,
    "rave_b": number(0.0),
    "expansion_policy": one_of(*EXPANSION_POLICIES),
    "expansion_threshold": number(0.0, low_open=True, note="a count >= 1 with "
                                  "expansion_policy 'visits', in (0, 1] with 'probability'"),
    "depth_i": count(0, high=2),
    "backup_window": count(0),
    "eps_decay": share(low_open=True),
    "check_evaluator": FLAG,
}


def _check_ints(group) -> None:
  """Every field of the group against `FIELDS`: a float or bool count would
  fail much later, inside jit, as a shape error; refused at construction."""
  field_spec.check_fields("SearchConfig", group, FIELDS)


class Fields:
  """Base of a frozen dataclass holding some of `SearchConfig`'s fields, under
  their names: a config group, or the few settings a phase or an enhancement
  reads (`selection.Settings`, `gumbel.Settings`, ...)."""

  @classmethod
  def of(cls, config: "SearchConfig"):
    """These fields read off `config` (or off any object that has them).

    Args:
      config: SearchConfig.

    Returns:
      An instance of the class.
    """
    return cls(**{field.name: getattr(config, field.name) for field in dataclasses.fields(cls)})


class _Group(Fields):
  """A concern's fields of `SearchConfig`, validated on construction."""


@dataclasses.dataclass(frozen=True)
class BudgetConfig(_Group):
  """How much a search may do, and the memory it has for it."""
  num_simulations: int = 800
  max_nodes: int | None = None
  table_size: int | None = None
  max_probes: int = 16
  max_depth: int = 64
  max_nn_evals: int | None = None
  free_retries: int = 8
  leaves_per_step: int = 1

  def __post_init__(self):
    _check_ints(self)
    if self.num_simulations < 0:
      raise ValueError(f"num_simulations must be >= 0, got {self.num_simulations}")
    if self.max_nodes is not None and self.max_nodes < 1:
      raise ValueError(f"max_nodes must be >= 1 (the root), got {self.max_nodes}")
    if self.table_size is not None and (self.table_size < 1 or
                                        self.table_size & (self.table_size - 1)):
      raise ValueError(f"table_size must be a power of two, got {self.table_size}")
    if self.max_probes < 1 or self.max_depth < 1:
      raise ValueError("max_probes and max_depth must be >= 1")
    if self.max_nn_evals is not None and self.max_nn_evals < 1:
      raise ValueError(f"max_nn_evals must be >= 1 (the root), got {self.max_nn_evals}")
    if self.leaves_per_step < 1:
      raise ValueError(f"leaves_per_step must be >= 1, got {self.leaves_per_step}")
    if self.leaves_per_step > 1 and self.max_nn_evals is not None:
      raise ValueError("max_nn_evals (free retries) is not supported with leaves_per_step > 1")
    if self.free_retries < 0:
      raise ValueError(f"free_retries must be >= 0, got {self.free_retries}")
    # Nodes the budget can ask for: one per simulation, or per evaluation
    # with an evaluation budget. Less than half that room: most simulations
    # overflow (counted, never fatal), which is rarely what was meant.
    needed = self.num_simulations if self.max_nn_evals is None else min(
        self.num_simulations, self.max_nn_evals)
    if self.max_nodes is not None and self.max_nodes - 1 < needed // 2:
      warnings.warn(
          f"max_nodes={self.max_nodes} leaves room for {self.max_nodes - 1} new nodes for "
          f"{needed} simulations: most will find the node arrays full (counted in "
          "stats.node_overflows); give max_nodes >= num_simulations + 1 (2-4x with graph reuse)",
          CapacityWarning, stacklevel=_outside_this_module())


@dataclasses.dataclass(frozen=True)
class BackupConfig(_Group):
  """What a simulation's value updates, and how."""
  backup: str = "mcgs"
  q_eps: float = 0.01
  value_min: float = -1.0
  value_max: float = 1.0
  backup_window: int = 0
  check_evaluator: bool = False

  def __post_init__(self):
    _check_ints(self)
    modes.get(self.backup)   # a ValueError naming the known modes
    if self.value_min >= self.value_max:
      raise ValueError("value_min must be < value_max")
    if self.backup_window < 0:
      raise ValueError(f"backup_window must be >= 0 (0: the whole path), got {self.backup_window}")


@dataclasses.dataclass(frozen=True)
class ExplorationConfig(_Group):
  """How a descent chooses its edges below the root's move choice: PUCT, the
  priors, the noise, and the enhancements that change or restrict the
  choice (epsilon-greedy, constraint-first, pruning, RAVE, expansion)."""
  c_init: float = 2.5
  c_base: float = 19652.0
  q_init: float = -1.0
  node_temperature: float = 1.0
  dirichlet_fraction: float = 0.0
  dirichlet_alpha: float = 0.3
  eps_greedy: float = 0.0
  eps_constraint: float = 0.0
  eps_decay: float = 1.0
  min_root_visit_fraction: float = 0.0
  progressive_pruning: str = "off"
  pruning_r_d: float = 1.0
  pruning_min_visits: int = 100
  pruning_max_visits_per_move: int = 10000
  rave: bool = False
  rave_b: float = 0.1
  expansion_policy: str = "all"
  expansion_threshold: float = 1.0

  def __post_init__(self):
    _check_ints(self)
    if not self.node_temperature > 0:
      raise ValueError(f"node_temperature must be > 0, got {self.node_temperature}")
    if not 0 <= self.dirichlet_fraction <= 1 or not self.dirichlet_alpha > 0:
      raise ValueError("dirichlet_fraction must be in [0, 1] and dirichlet_alpha > 0")
    if not (0 <= self.eps_greedy <= 1 and 0 <= self.eps_constraint <= 1):
      raise ValueError("eps_greedy and eps_constraint must be in [0, 1]")
    if not 0 < self.eps_decay <= 1:
      raise ValueError(f"eps_decay must be in (0, 1], got {self.eps_decay}")
    if not 0 <= self.min_root_visit_fraction < 1:
      raise ValueError("min_root_visit_fraction must be in [0, 1), got "
                       f"{self.min_root_visit_fraction}")
    if self.progressive_pruning not in PRUNING_MODES:
      raise ValueError(f"progressive_pruning must be one of {PRUNING_MODES}, "
                       f"got {self.progressive_pruning!r}")
    if not self.pruning_r_d >= 0:
      raise ValueError(f"pruning_r_d must be >= 0, got {self.pruning_r_d}")
    if self.pruning_min_visits < 1:
      raise ValueError(f"pruning_min_visits must be >= 1, got {self.pruning_min_visits}")
    if self.pruning_max_visits_per_move < 0:
      raise ValueError("pruning_max_visits_per_move must be >= 0, got "
                       f"{self.pruning_max_visits_per_move}")
    if not self.rave_b >= 0:
      raise ValueError(f"rave_b must be >= 0, got {self.rave_b}")
    if self.expansion_policy not in EXPANSION_POLICIES:
      raise ValueError(f"expansion_policy must be one of {EXPANSION_POLICIES}, "
                       f"got {self.expansion_policy!r}")
    if self.expansion_policy == "visits" and not self.expansion_threshold >= 1:
      raise ValueError("expansion_threshold must be >= 1 (a visit count) with "
                       f"expansion_policy='visits', got {self.expansion_threshold}")
    if self.expansion_policy == "probability" and not 0 < self.expansion_threshold <= 1:
      raise ValueError("expansion_threshold must be in (0, 1] (a probability) with "
                       f"expansion_policy='probability', got {self.expansion_threshold}")


@dataclasses.dataclass(frozen=True)
class RootConfig(_Group):
  """The root: PUCT or the Gumbel root search, and how the move and the
  policy target are read off it."""
  root_policy: str = "puct"
  max_considered_actions: int = 16
  gumbel_scale: float = 1.0
  value_scale: float = 0.1
  maxvisit_init: float = 50.0
  visit_temperature: float = 0.0
  q_value_weight: float = 0.0
  q_veto_delta: float = 0.0
  move_choice: str = "visits"
  lcb_z: float = 1.96
  lcb_min_visit_fraction: float = 0.1
  depth_i: int = 0

  def __post_init__(self):
    _check_ints(self)
    if not (self.q_value_weight >= 0 and self.q_veto_delta >= 0):
      raise ValueError("q_value_weight and q_veto_delta must be >= 0")
    if not self.visit_temperature >= 0:
      raise ValueError(f"visit_temperature must be >= 0, got {self.visit_temperature}")
    if self.move_choice not in MOVE_CHOICES:
      raise ValueError(f"move_choice must be one of {MOVE_CHOICES}, got {self.move_choice!r}")
    if not self.lcb_z >= 0 or not 0 <= self.lcb_min_visit_fraction <= 1:
      raise ValueError("lcb_z must be >= 0 and lcb_min_visit_fraction in [0, 1], got "
                       f"{self.lcb_z}, {self.lcb_min_visit_fraction}")
    if self.move_choice == "lcb" and self.visit_temperature > 0:
      raise ValueError("move_choice='lcb' picks the move deterministically: it excludes "
                       "visit_temperature > 0")
    if self.root_policy not in ROOT_POLICIES:
      raise ValueError(f"root_policy must be one of {ROOT_POLICIES}, got {self.root_policy!r}")
    if self.max_considered_actions < 1:
      raise ValueError(f"max_considered_actions must be >= 1, got {self.max_considered_actions}")
    if not self.gumbel_scale >= 0:
      raise ValueError(f"gumbel_scale must be >= 0, got {self.gumbel_scale}")
    if not (self.value_scale > 0 and self.maxvisit_init >= 0):
      raise ValueError("value_scale must be > 0 and maxvisit_init >= 0, got "
                       f"{self.value_scale} and {self.maxvisit_init}")
    if self.root_policy == "gumbel" and (self.visit_temperature > 0 or self.q_value_weight > 0
                                         or self.q_veto_delta > 0):
      raise ValueError("root_policy='gumbel' chooses its move from the improved policy: "
                       "visit_temperature, q_value_weight and q_veto_delta must be 0")
    if self.depth_i not in (0, 1, 2):
      raise ValueError(f"depth_i must be 0 (off), 1 or 2, got {self.depth_i}")
    if self.depth_i and self.visit_temperature > 0:
      raise ValueError("depth_i chooses the move by minimax; it cannot be combined with "
                       "visit_temperature > 0 (a drawn move)")


@dataclasses.dataclass(frozen=True)
class SolverConfig(_Group):
  """The terminal solver."""
  solver: bool = False
  solver_bounds: bool = False

  def __post_init__(self):
    _check_ints(self)
    if self.solver_bounds and not self.solver:
      raise ValueError("solver_bounds needs solver=True")


# In the order their checks run.
GROUPS = (BudgetConfig, BackupConfig, ExplorationConfig, RootConfig, SolverConfig)


def _resolved(config) -> dict:
  """The attributes a SearchConfig derives from its fields (see its
  docstring), by name."""
  mode = modes.get(config.backup)
  node_capacity = config.max_nodes if config.max_nodes is not None else config.num_simulations + 1
  table_capacity = config.table_size
  if table_capacity is None:
    table_capacity = 1
    while table_capacity < 2 * node_capacity:
      table_capacity *= 2
  stops_early = bool(config.solver or config.max_nn_evals is not None
                     or config.leaves_per_step > 1)
  # Every capability switch of the mode, whatever switches BackupMode has.
  capabilities = {field.name: getattr(mode, field.name) for field in dataclasses.fields(mode)
                  if field.name not in ("name", "description")}
  return dict(
      mode=mode, **capabilities, node_capacity=node_capacity, table_capacity=table_capacity,
      defers_expansion=config.expansion_policy != "all",
      hard_pruning=config.progressive_pruning == "hard", stops_early=stops_early,
      plain_descent=(not stops_early and config.root_policy == "puct"
                     and config.expansion_policy == "all"))


@dataclasses.dataclass(frozen=True)
class SearchConfig:
  """Hyperparameters of `mcgs_jax.search`.

  Attributes:
    num_simulations: simulations per search (each ends with one backup).
    backup: the name of a backup mode of `mcgs_jax.modes`: "mcgs" (the
      graph with corrected backpropagation), "tree" (plain AlphaZero MCTS, no
      transpositions), "tt_cache" (a tree whose network results are reused
      from a transposition table), "katago" (KataGo's graph search: one node
      per key, each path node's value recomputed from its children, Q(n) =
      (U(n) + sum_c N(n, c) Q(c)) / (1 + sum_c N(n, c))), or one added with
      `modes.register`.
    c_init, c_base: exploration schedule c(s) = log((n + c_base + 1) / c_base)
      + c_init, n = sum_b N(s, b).
    q_init: Q of unvisited edges in selection. The default -1 counts an untried
      move as a loss (the paper's pessimistic first-play urgency), so visits
      concentrate on the prior's favourites; mctx starts them at the parent's
      value instead, and 0 is neutral.
    q_eps: a transposition whose value differs from the edge's Q by more than
      this ends the simulation with a correction (no network call).
    value_min, value_max: bounds of the backed-up correction value.
    max_nodes: node capacity per game; default num_simulations + 1, enough
      for any search. Smaller saves memory; overflow is counted, not fatal.
    table_size: hash-table slots per game (a power of two); default the
      smallest power of two >= 2 * max_nodes.
    max_probes: slots inspected per lookup (linear probing); a key that finds
      no free slot within them is not indexed (counted as table overflow).
    max_depth: longest selection path; deeper paths stop and back up the
      current estimate (counted as depth overflow).
    node_temperature: every node's prior becomes p^(1/T), renormalised over
      the legal actions (softmax of logits / T); 1.0 (default) leaves it.
    dirichlet_fraction, dirichlet_alpha: the root prior becomes
      (1 - f) p + f Dir(alpha) over the legal actions (AlphaZero's
      exploration noise for self-play); f = 0 (default) is off.
    visit_temperature: the played move `SearchOutput.action` is drawn with
      probability proportional to pi(a)^(1/T) (pi: the root policy, the
      visit distribution unless the Q switches change it); 0 (default)
      takes the argmax.
    q_value_weight: Q-value move selection (paper eq. 13-15): boosts the
      second most visited move by weight * Q_delta * pi(best) when its Q is
      higher; 0 (default) is off, the paper uses 2.0.
    q_veto_delta: the second most visited move swaps weights with the most
      visited one when its Q is higher by more than this; 0 (default) is off.
    solver: terminal solver (Exact-win-MCTS 2.0, paper Alg. 3): proves nodes
      WIN/LOSS/DRAW from terminal transitions, prunes proven-losing moves,
      stops a game's search once its root is proven and then plays the
      shortest win (longest loss). Needs outcomes given by the sign of the
      terminal reward and no rewards before the end.
    solver_bounds: score-bounded solver (Cazenave & Saffidine 2010, needs
      `solver`): every node also keeps a pessimistic and an optimistic bound
      on its value in {-1, 0, +1}, max over its moves of the children's
      negated (swapped) bounds; a node is proven when they meet, so draws
      get proven without every move below being proven, and selection
      prunes the moves whose optimistic value is at most the node's
      pessimistic bound. False (default): Exact-win only.
    max_nn_evals: evaluation budget per game (the root's evaluation
      included): a game stops once it has made this many network calls, and
      a simulation that ends without one (terminal, correction, link, cached
      result, proven node) backs up and selects again inside the same step,
      up to `free_retries` times, so each batched `eval_fn` call is spent on
      new leaves. `num_simulations` stays the cap on simulations (and steps).
      None (default): budget by simulations only.
    free_retries: extra selections per step for free simulations (with
      `max_nn_evals`).
    leaves_per_step: leaves selected per game per step, with virtual loss
      (the reference engine uses 16), so few games still fill a network
      batch of L * B; 1 (default) is the plain one-leaf step.
    eps_greedy: probability of an epsilon-greedy trajectory with a
      disconnected backup (see `selection`); 0 (default) is off, the paper
      uses 0.01-0.05.
    eps_constraint: probability of a constraint-first trajectory: at the
      branch node the untried `priority` move of highest prior is expanded
      (games supply `priority`; Connect-4: immediate wins and blocks); 0
      (default) is off, the paper uses 0.01.
    progressive_pruning: "off" (default), "soft" or "hard" (Bouzy's
      progressive pruning, see `pruning`): at a node with at least
      `pruning_min_visits` visits on two moves and at most
      `pruning_max_visits_per_move` * #legal visits, a move whose interval
      [Q - r_d s, Q + r_d s] lies wholly below another move's is left out of
      selection; "soft" only while that holds, "hard" for good.
    pruning_r_d: r_d, the interval's half-width in standard errors.
    pruning_min_visits: visits a move needs before it can be pruned or prune.
    pruning_max_visits_per_move: no new pruning at a node whose visits exceed
      this times its number of legal moves.
    move_choice: "visits" (default: the most visited move, or a draw with
      `visit_temperature`) or "lcb": the root move of highest lower
      confidence bound Q - lcb_z * s / sqrt(N) among the moves with at
      least `lcb_min_visit_fraction` of the most visited move's visits.
    lcb_z, lcb_min_visit_fraction: see `move_choice`.
    min_root_visit_fraction: MantisShrimp's minimum root visits: a root move
      with fewer than this fraction of `num_simulations` visits is selected
      first (the highest prior first); 0 (default) is off, MantisShrimp
      uses 0.005 (4 of 800).
    root_policy: "puct" (default: PUCT everywhere, the move from the visit
      counts) or "gumbel" (Gumbel root search, Danihelka et al. 2022, as
      `mctx.gumbel_muzero_policy`; see `mcgs_jax.gumbel`): Gumbel top-k
      considered root actions, sequential halving over the simulation budget
      at the root, the deterministic selection argmax pi'(a) - N(a) / (1 +
      sum_b N(b)) below it, the move argmax g + logits + sigma(completed Q)
      among the most visited considered actions, and `action_weights` the
      improved policy pi' = softmax(logits + sigma(completed Q)).
    max_considered_actions: gumbel: root actions considered (top-k of
      g + logits, k = min(this, #legal)).
    gumbel_scale: gumbel: the root noise is gumbel_scale * Gumbel(0, 1) per
      action, drawn once per search (`init`, `reroot`); 0 is deterministic.
    value_scale, maxvisit_init: gumbel: sigma(q) = (maxvisit_init + max_b
      N(b)) * value_scale * q for the min-max normalised completed Q (mctx's
      `qtransform_completed_by_mix_value` defaults 0.1 and 50).
    rave: AMAF statistics per node (`rave.py`): selection uses
      (1 - beta) Q + beta Q_amaf, beta = N_amaf / (N + N_amaf + 4 b^2 N N_amaf)
      (Silver's RAVE). Only meaningful where an action means the same move
      at every depth (Connect-4 columns, Nim moves). False (default) is off.
    rave_b: the RAVE bias b above (set empirically).
    expansion_policy: when a new position reached by a simulation is stored
      as a node (`expansion_policy.py`): "all" (default: always), "visits"
      (once its edge has been reached `expansion_threshold` times),
      "probability" (once max(P(s, a), (N(s, a) + 1) / (n(s) + 1)) >=
      `expansion_threshold`). A position not stored is still evaluated and
      its value backed up through the edge.
    expansion_threshold: the threshold of `expansion_policy` (a count >= 1
      for "visits", a probability in (0, 1] for "probability").
    depth_i: the played move is the minimax over the stored graph to depth
      i (1 or 2) of the node values (`depth_i.py`), instead of the most
      visited move; `action_weights` stay the visit policy. 0 (default) off.
    backup_window: sliding-window backup (Dual MCTS): a simulation updates
      only the last w edges of its path (and their parent nodes), the w
      nearest the leaf; the edges above keep their statistics, so PUCT
      there keeps choosing the move it chose when they last changed.
      0 (default) updates the whole path.
    check_evaluator: every `eval_fn` output is checked: a value that is not
      finite or lies outside [value_min, value_max], a NaN / +inf prior
      logit on a legal action, or -inf on every legal action, stops the
      search with an `EvaluatorError` naming the field, its shape and the
      value (raised from the host, inside jax's runtime error); so does a
      root that is not terminal yet has no legal move (`RootError`; outside
      jit that is refused whatever this says). False (default): such outputs
      are replaced (NaN, or no usable logit: uniform prior, value 0) and
      counted in `stats.nan_evals`, out-of-range values are used as they
      are. Training, the arena and the command-line tools turn it on.
    eps_decay: decay of the epsilon-greedy probability over a search: the
      t-th simulation (t = simulations so far) explores with probability
      eps_greedy * eps_decay^t (Dual MCTS's decay term for the exploration
      the sliding window takes away). 1.0 (default) keeps eps_greedy.

  The fields are grouped by concern (`BudgetConfig`, `BackupConfig`,
  `ExplorationConfig`, `RootConfig`, `SolverConfig`), each group checking
  its own values on construction.

  Resolved from the fields on construction (attributes, not fields):
    mode: the `modes.BackupMode` named by `backup`; its switches
      `uses_table` (nodes indexed by key in a hash table), `links_transpositions`
      (a known key links to the existing node: a graph),
      `corrects_transpositions` (diverged transpositions end a simulation
      with a correction, Alg. 2), `caches_evaluations` (a known key's network
      result is copied into a new tree node), `recomputes_values` (each path
      node's value recomputed from its children's, an edge's Q read off its
      child: katago) are attributes too.
    node_capacity: N, nodes per game: `max_nodes`, or `num_simulations + 1`.
    table_capacity: hash-table slots per game: `table_size`, or the least
      power of two >= 2 N.
    defers_expansion: new positions may be evaluated without being stored
      (`expansion_policy` other than "all").
    hard_pruning: progressive pruning keeps a pruned-edge mask in the graph.
    stops_early: games may stop before `num_simulations` (a proven root, an
      evaluation budget, or the last step of `leaves_per_step` leaves).
    plain_descent: every simulation runs (not `stops_early`) with a PUCT
      root and stores its leaf: what a Dual / MPV search's two searches need.

  Raises:
    ValueError: on construction, for a value out of range or an unknown mode
      string, and for switches that cannot be combined (the groups' checks).
    TypeError: a count (an int field) given as a float or a bool.
  """
  num_simulations: int = 800
  backup: str = "mcgs"
  c_init: float = 2.5
  c_base: float = 19652.0
  q_init: float = -1.0
  q_eps: float = 0.01
  value_min: float = -1.0
  value_max: float = 1.0
  max_nodes: int | None = None
  table_size: int | None = None
  max_probes: int = 16
  max_depth: int = 64
  node_temperature: float = 1.0
  dirichlet_fraction: float = 0.0
  dirichlet_alpha: float = 0.3
  visit_temperature: float = 0.0
  q_value_weight: float = 0.0
  q_veto_delta: float = 0.0
  solver: bool = False
  solver_bounds: bool = False
  max_nn_evals: int | None = None
  leaves_per_step: int = 1
  eps_greedy: float = 0.0
  eps_constraint: float = 0.0
  free_retries: int = 8
  progressive_pruning: str = "off"
  pruning_r_d: float = 1.0
  pruning_min_visits: int = 100
  pruning_max_visits_per_move: int = 10000
  move_choice: str = "visits"
  lcb_z: float = 1.96
  lcb_min_visit_fraction: float = 0.1
  min_root_visit_fraction: float = 0.0
  root_policy: str = "puct"
  max_considered_actions: int = 16
  gumbel_scale: float = 1.0
  value_scale: float = 0.1
  maxvisit_init: float = 50.0
  rave: bool = False
  rave_b: float = 0.1
  expansion_policy: str = "all"
  expansion_threshold: float = 1.0
  depth_i: int = 0
  backup_window: int = 0
  eps_decay: float = 1.0
  check_evaluator: bool = False

  def __post_init__(self):
    # Each group validates its own fields; the groups are disjoint and
    # together hold every field (tests/test_config_groups.py).
    for group in GROUPS:
      group.of(self)
    if not self.value_min <= self.q_init <= self.value_max:
      raise ValueError(f"SearchConfig.q_init must lie in [value_min, value_max] = "
                       f"[{self.value_min}, {self.value_max}], got {self.q_init}")
    # What follows from the fields is resolved once, here: a search being
    # traced reads plain attributes, no code of this module. They are no
    # fields (equality and hashing stay the fields').
    for name, value in _resolved(self).items():
      object.__setattr__(self, name, value)

  @property
  def budget(self) -> BudgetConfig:
    """The budget and memory fields (`BudgetConfig`)."""
    return BudgetConfig.of(self)

  @property
  def backup_config(self) -> BackupConfig:
    """The backup fields (`BackupConfig`; `backup` is the mode's name)."""
    return BackupConfig.of(self)

  @property
  def exploration(self) -> ExplorationConfig:
    """The selection fields below the move choice (`ExplorationConfig`)."""
    return ExplorationConfig.of(self)

  @property
  def root(self) -> RootConfig:
    """The root policy and move-choice fields (`RootConfig`)."""
    return RootConfig.of(self)

  @property
  def solver_config(self) -> SolverConfig:
    """The solver fields (`SolverConfig`; `solver` is its switch)."""
    return SolverConfig.of(self)

  @classmethod
  def from_groups(cls, *groups: _Group, **fields) -> "SearchConfig":
    """A SearchConfig from group objects and single fields.

    E.g. `SearchConfig.from_groups(BudgetConfig(64), RootConfig(root_policy=
    "gumbel"), backup="tree")`.

    Args:
      *groups: any of `BudgetConfig`, `BackupConfig`, `ExplorationConfig`,
        `RootConfig`, `SolverConfig`; the groups not given keep their
        defaults.
      **fields: single fields, which win over their group's.

    Returns:
      The SearchConfig (validated).
    """
    merged = {}
    for group in groups:
      merged.update(dataclasses.asdict(group))
    return cls(**{**merged, **fields})

