"""The backup modes: what `SearchConfig(backup=NAME)` makes the search do.

A mode is a name and five capability switches (`BackupMode`); the engine
reads only the switches (through `SearchConfig`'s properties of the same
names), never the name. `MODES` is the one registry every list of modes
reads: the four built-in modes, in the order `mcgs`, `tree`, `tt_cache`,
`katago`, and any mode a user adds with `register`:

  mode = modes.BackupMode("mcgs_copy", "mcgs under another name",
                          uses_table=True, links_transpositions=True,
                          corrects_transpositions=True)
  modes.register(mode)
  config = mcgs_jax.SearchConfig(backup="mcgs_copy")
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class BackupMode:
  """One backup mode: its name and what it makes the engine do.

  Attributes:
    name: the `SearchConfig.backup` value that selects the mode.
    description: one line for users.
    uses_table: each game keeps a hash table from position key to node: the
      root and every new node whose key is not yet known are indexed, and
      each expansion looks its child's key up; a known key costs no network
      call (it is linked or its result copied). False: no table, no lookups
      (`tree`).
    links_transpositions: a new edge whose child's key is known points to the
      existing node instead of storing a new one, so the nodes form a graph
      (a node has several parents); unless the model's keys are acyclic,
      descents mark their path so that a link closing a cycle stores a
      fresh, evaluated node instead. Needs `uses_table`.
    corrects_transpositions: a descent along an edge into a node with
      several parents whose Q no longer matches |Q(s, a) - (r + discount
      V(child))| <= `q_eps` stops there without a network call, and the
      backup passes up the correction that pulls the edge's Q onto the
      node's value (paper Alg. 1-2). Needs `links_transpositions` (only
      links give a node several parents).
    caches_evaluations: a new edge whose child's key is known stores a new
      tree node with the known node's network result (prior and value)
      copied from it, without a network call (`stats.tt_cache_hits`). Needs
      `uses_table`; a known key is either linked or copied, not both.
    recomputes_values: the backup recomputes each path node's value from its
      own evaluation and its children's current values (KataGo), Q(n) =
      (U(n) + sum_a N(n, a) Q(n, a)) / (1 + sum_a N(n, a)), instead of a
      running mean, and selection (and progressive pruning) read an edge's Q
      off its child's current value.
  """
  name: str
  description: str
  uses_table: bool = False
  links_transpositions: bool = False
  corrects_transpositions: bool = False
  caches_evaluations: bool = False
  recomputes_values: bool = False

  def __post_init__(self):
    if not isinstance(self.name, str) or not self.name:
      raise ValueError(f"BackupMode.name must be a non-empty string, got {self.name!r}")
    problems = []
    if self.links_transpositions and not self.uses_table:
      problems.append("links_transpositions needs uses_table (links are found by key)")
    if self.caches_evaluations and not self.uses_table:
      problems.append("caches_evaluations needs uses_table (results are found by key)")
    if self.uses_table and not (self.links_transpositions or self.caches_evaluations):
      problems.append("uses_table needs links_transpositions or caches_evaluations (a known "
                      "key skips the network call, so its node must be linked or copied)")
    if self.links_transpositions and self.caches_evaluations:
      problems.append("links_transpositions and caches_evaluations exclude each other (a "
                      "known key is linked or copied, not both)")
    if self.corrects_transpositions and not self.links_transpositions:
      problems.append("corrects_transpositions needs links_transpositions (only links give "
                      "a node several parents)")
    if problems:
      raise ValueError(f"inconsistent backup mode {self.name!r}: " + "; ".join(problems))


MCGS = BackupMode(
    "mcgs", "the graph with corrected backpropagation (paper Alg. 1-2)",
    uses_table=True, links_transpositions=True, corrects_transpositions=True)
TREE = BackupMode("tree", "plain AlphaZero MCTS: a tree, no transpositions")
TT_CACHE = BackupMode(
    "tt_cache", "a tree whose network results are reused from a transposition table",
    uses_table=True, caches_evaluations=True)
KATAGO = BackupMode(
    "katago", "KataGo's graph search: each node's value recomputed from its children",
    uses_table=True, links_transpositions=True, recomputes_values=True)

# name -> BackupMode, the built-in modes first.
MODES = {mode.name: mode for mode in (MCGS, TREE, TT_CACHE, KATAGO)}


def names() -> tuple[str, ...]:
  """The registered modes' names, built-in ones first.

  Returns:
    tuple of str, in registration order.
  """
  return tuple(MODES)


def get(name: str) -> BackupMode:
  """The mode registered under `name`.

  Args:
    name: a mode's name (`SearchConfig.backup`).

  Returns:
    The BackupMode.

  Raises:
    ValueError: no mode has this name; the message lists the known ones.
  """
  mode = MODES.get(name) if isinstance(name, str) else None
  if mode is None:
    raise ValueError(f"unknown backup mode {name!r}; known: {', '.join(names())} "
                     f"(mcgs_jax.modes.register adds one)")
  return mode


def register(mode: BackupMode) -> BackupMode:
  """Adds a mode to the registry, so `SearchConfig(backup=mode.name)` selects it.

  Args:
    mode: a BackupMode whose name no registered mode has.

  Returns:
    `mode`.

  Raises:
    ValueError: the name is taken.
    TypeError: `mode` is not a BackupMode.
  """
  if not isinstance(mode, BackupMode):
    raise TypeError(f"register takes a BackupMode, got {type(mode).__name__}")
  if mode.name in MODES:
    raise ValueError(f"backup mode {mode.name!r} is already registered")
  MODES[mode.name] = mode
  return mode
