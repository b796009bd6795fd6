"""Search hyperparameters: one frozen, hashable config (a static jit argument)."""

import dataclasses

BACKUP_MODES = ("mcgs", "tree", "tt_cache")
EXPANSION_POLICIES = ("all", "visits", "probability")


@dataclasses.dataclass(frozen=True)
class SearchConfig:
  """Hyperparameters of `mcgs_jax.search`.

  Attributes:
    num_simulations: simulations per search (each ends with one backup).
    backup: "mcgs" (the graph with corrected backpropagation), "tree" (plain
      AlphaZero MCTS, no transpositions) or "tt_cache" (a tree whose network
      results are reused from a transposition table).
    c_init, c_base: exploration schedule c(s) = log((n + c_base + 1) / c_base)
      + c_init, n = sum_b N(s, b).
    q_init: Q of unvisited edges in selection (-1: pessimistic first play).
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
  max_nn_evals: int | None = None
  leaves_per_step: int = 1
  eps_greedy: float = 0.0
  eps_constraint: float = 0.0
  free_retries: int = 8
  rave: bool = False
  rave_b: float = 0.1
  expansion_policy: str = "all"
  expansion_threshold: float = 1.0
  depth_i: int = 0

  def __post_init__(self):
    if self.backup not in BACKUP_MODES:
      raise ValueError(f"backup must be one of {BACKUP_MODES}, got {self.backup!r}")
    if self.num_simulations < 0:
      raise ValueError(f"num_simulations must be >= 0, got {self.num_simulations}")
    if self.max_nodes is not None and self.max_nodes < 1:
      raise ValueError(f"max_nodes must be >= 1 (the root), got {self.max_nodes}")
    if self.table_size is not None and (self.table_size < 1 or
                                        self.table_size & (self.table_size - 1)):
      raise ValueError(f"table_size must be a power of two, got {self.table_size}")
    if self.max_probes < 1 or self.max_depth < 1:
      raise ValueError("max_probes and max_depth must be >= 1")
    if self.value_min >= self.value_max:
      raise ValueError("value_min must be < value_max")
    if not self.node_temperature > 0:
      raise ValueError(f"node_temperature must be > 0, got {self.node_temperature}")
    if not 0 <= self.dirichlet_fraction <= 1 or not self.dirichlet_alpha > 0:
      raise ValueError("dirichlet_fraction must be in [0, 1] and dirichlet_alpha > 0")
    if not (self.q_value_weight >= 0 and self.q_veto_delta >= 0):
      raise ValueError("q_value_weight and q_veto_delta must be >= 0")
    if self.max_nn_evals is not None and self.max_nn_evals < 1:
      raise ValueError(f"max_nn_evals must be >= 1 (the root), got {self.max_nn_evals}")
    if not (0 <= self.eps_greedy <= 1 and 0 <= self.eps_constraint <= 1):
      raise ValueError("eps_greedy and eps_constraint must be in [0, 1]")
    if self.leaves_per_step < 1:
      raise ValueError(f"leaves_per_step must be >= 1, got {self.leaves_per_step}")
    if self.leaves_per_step > 1 and self.max_nn_evals is not None:
      raise ValueError("max_nn_evals (free retries) is not supported with leaves_per_step > 1")
    if self.free_retries < 0:
      raise ValueError(f"free_retries must be >= 0, got {self.free_retries}")
    if not self.visit_temperature >= 0:
      raise ValueError(f"visit_temperature must be >= 0, got {self.visit_temperature}")
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
    if self.depth_i not in (0, 1, 2):
      raise ValueError(f"depth_i must be 0 (off), 1 or 2, got {self.depth_i}")
    if self.depth_i and self.visit_temperature > 0:
      raise ValueError("depth_i chooses the move by minimax; it cannot be combined with "
                       "visit_temperature > 0 (a drawn move)")

  @property
  def node_capacity(self) -> int:
    return self.max_nodes if self.max_nodes is not None else self.num_simulations + 1

  @property
  def table_capacity(self) -> int:
    if self.table_size is not None:
      return self.table_size
    size = 1
    while size < 2 * self.node_capacity:
      size *= 2
    return size

  @property
  def defers_expansion(self) -> bool:
    """New positions may be evaluated without being stored (expansion_policy)."""
    return self.expansion_policy != "all"

  @property
  def uses_table(self) -> bool:
    """Nodes are indexed by key in a hash table (every mode but `tree`)."""
    return self.backup in ("mcgs", "tt_cache")

  @property
  def links_transpositions(self) -> bool:
    """A new edge whose key is known links to the existing node (a graph)."""
    return self.backup == "mcgs"

  @property
  def corrects_transpositions(self) -> bool:
    """Diverged transpositions end a simulation with a correction (Alg. 2)."""
    return self.backup == "mcgs"

  @property
  def caches_evaluations(self) -> bool:
    """A known key's network result is copied into a new tree node."""
    return self.backup == "tt_cache"

  @property
  def stops_early(self) -> bool:
    """Games may stop before `num_simulations` (a proven root, an evaluation
    budget, or the last step of `leaves_per_step` leaves)."""
    return self.solver or self.max_nn_evals is not None or self.leaves_per_step > 1
