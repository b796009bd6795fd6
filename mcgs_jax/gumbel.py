"""Gumbel root search (`SearchConfig.root_policy == "gumbel"`).

Danihelka, Guez, Schrittwieser, Silver, "Policy improvement by planning with
Gumbel" (ICLR 2022), as `mctx.gumbel_muzero_policy` computes it with its
default Q transform (`mctx/_src/policies.py`, `action_selection.py`,
`seq_halving.py`, `qtransforms.qtransform_completed_by_mix_value`), on our
graph: the statistics of a node's actions are its edges' (N(s, a), Q(s, a)),
so in "mcgs" mode the Q of an edge into a transposition node is the edge's
own (corrected) Q.

For a node s with prior p (logits = log p on the legal actions), edge visits
N(a), edge values Q(a) and network value v:

  mixed value     v_mix = (v + sum_b N(b) * sum_{a: N(a)>0} p(a) Q(a) /
                          sum_{a: N(a)>0} p(a)) / (1 + sum_b N(b))
  completed Q     Qc(a) = Q(a) if N(a) > 0 else v_mix
  normalised      q(a)  = (Qc(a) - min_b Qc(b)) / max(max_b Qc(b) - min_b Qc(b), 1e-8)
                  (over all A entries: as in mctx, illegal actions take part
                  with v_mix)
  sigma           sigma(a) = (maxvisit_init + max_b N(b)) * value_scale * q(a)
  improved policy pi'(a) = softmax(logits + sigma) over the legal actions.

Root (per game, noise g(a) = gumbel_scale * Gumbel(0, 1) drawn once per
search): the considered actions are the top k = min(max_considered_actions,
#legal) of g + logits. Simulation i (i = the root's visits of this search)
visits, among the considered actions whose visits equal the sequential-
halving count c_i (`considered_visits`), the one with the highest
g + logits + sigma. Below the root, the deterministic selection
argmax_a pi'(a) - N(a) / (1 + sum_b N(b)) (the paper's section 5). After
the search the move is argmax g + logits + sigma over the actions with the
most visits (of this search) and `action_weights` is pi' at the root.
"""

import dataclasses
import math

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import graph as graph_lib

# The record's name in `Graph.enhancements`.
NAME = "gumbel"


@dataclasses.dataclass(frozen=True)
class Settings(config_lib.Fields):
  """The SearchConfig fields the Gumbel root reads, what its plug-ins are
  bound to (`rules.of`); every function here also takes the SearchConfig."""
  root_policy: str
  max_considered_actions: int
  gumbel_scale: float
  value_scale: float
  maxvisit_init: float
  num_simulations: int
  value_min: float


@chex.dataclass(frozen=True)
class GumbelState(graph_lib.EnhancementState):
  """The Gumbel root's state, per game [B, A] (one game: [A]).

  Attributes:
    noise: f32, the root's g, drawn once per search (`draw_noise`).
    base_visits: int32, the root's edge visits when this search started
      (nonzero on a re-rooted graph), which the sequential-halving schedule
      subtracts.
  """
  noise: chex.Array
  base_visits: chex.Array
  game_fields = ("noise", "base_visits")

  @classmethod
  def empty(cls, batch_size: int, capacity: int, num_actions: int) -> "GumbelState":
    """No noise, no visits: zeros [B, A] (no node axis).

    Args:
      batch_size: B.
      capacity: N.
      num_actions: A.

    Returns:
      The record.
    """
    del capacity
    shape = (batch_size, num_actions)
    return cls(noise=jnp.zeros(shape, jnp.float32), base_visits=jnp.zeros(shape, jnp.int32))

  def rerooted(self, graph: graph_lib.Graph) -> "GumbelState":
    """A new root's schedule counts from its visits now; its noise stays
    cleared (`reroot` draws fresh noise).

    Args:
      graph: the re-rooted Graph [B, N, A].

    Returns:
      The record, `base_visits` the new roots' edge visits.
    """
    return self.replace(base_visits=graph.edge_visits[:, 0])


def with_noise(graph: graph_lib.Graph, noise: chex.Array) -> graph_lib.Graph:
  """`graph` with its roots' Gumbel noise replaced.

  Args:
    graph: Graph [B, N, A] of a Gumbel search.
    noise: f32[B, A].

  Returns:
    The Graph.
  """
  return graph_lib.with_state(graph, NAME, graph.enhancements[NAME].replace(noise=noise))


# mctx's floor on g + logits + sigma: an action whose prior underflowed to 0
# can still be the only considered one.
_LOW_LOGIT = -1e9


def considered_visits(max_considered: int, num_simulations: int) -> tuple[int, ...]:
  """The sequential-halving schedule.

  mctx `seq_halving.get_sequence_of_considered_visits`, Karnin et al. 2013.
  Entry i is the visit count that the action of simulation i must have: the
  m = max_considered actions get ceil-shared visits in log2(m) rounds, the
  number of actions halving (to at least 2) after each round, each round
  giving every remaining action max(1, floor(S / (ceil(log2 m) * m_round)))
  visits.

  Args:
    max_considered: m, the actions considered at the start.
    num_simulations: S, the length of the schedule.

  Returns:
    A tuple of `num_simulations` ints.
  """
  if max_considered <= 1:
    return tuple(range(num_simulations))
  log2max = int(math.ceil(math.log2(max_considered)))
  sequence, visits, num_considered = [], [0] * max_considered, max_considered
  while len(sequence) < num_simulations:
    extra = max(1, int(num_simulations / (log2max * num_considered)))
    for _ in range(extra):
      sequence.extend(visits[:num_considered])
      for i in range(num_considered):
        visits[i] += 1
    num_considered = max(2, num_considered // 2)
  return tuple(sequence[:num_simulations])


def considered_visits_table(max_considered: int, num_simulations: int) -> jnp.ndarray:
  """The schedules for every number of considered actions.

  Args:
    max_considered: the largest number of considered actions.
    num_simulations: S, the length of each schedule.

  Returns:
    int32[max_considered + 1, max(S, 1)]: row k is the schedule for k
    considered actions.
  """
  columns = max(num_simulations, 1)
  return jnp.array([considered_visits(k, columns) for k in range(max_considered + 1)],
                   jnp.int32)


def draw_noise(rng: chex.PRNGKey, legal: chex.Array,
               config: config_lib.SearchConfig) -> chex.Array:
  """The root's Gumbel noise.

  Args:
    rng: a PRNG key.
    legal: bool[B, A], the roots' legal actions.
    config: reads `root_policy`, `gumbel_scale`.

  Returns:
    f32[B, A]: gumbel_scale * Gumbel(0, 1) on the legal actions, 0 elsewhere
    (and everywhere unless root_policy is "gumbel").
  """
  if config.root_policy != "gumbel" or config.gumbel_scale == 0:
    return jnp.zeros(legal.shape, jnp.float32)
  noise = config.gumbel_scale * jax.random.gumbel(rng, legal.shape, jnp.float32)
  return jnp.where(legal, noise, 0.0)


def _logits(prior, legal):
  """log p on the legal actions (floored at the smallest normal), -inf elsewhere."""
  return jnp.where(legal, jnp.log(jnp.maximum(prior, jnp.finfo(jnp.float32).tiny)), -jnp.inf)


def completed_qvalues(visits: chex.Array, q: chex.Array, prior: chex.Array,
                      raw_value: chex.Array, config: config_lib.SearchConfig) -> chex.Array:
  """sigma(completed Q) of one node (mctx `qtransform_completed_by_mix_value`
  with rescale_values and use_mixed_value on); see the module docstring.

  Args:
    visits: f32[A] N(a).
    q: f32[A] Q(a) for the node's mover (read where N(a) > 0).
    prior: f32[A] p(a), 0 on illegal actions.
    raw_value: f32, the node's network value v.
    config: reads value_scale, maxvisit_init.

  Returns:
    f32[A] sigma(a).
  """
  visited = visits > 0
  total = visits.sum()
  prior = jnp.maximum(prior, jnp.finfo(jnp.float32).tiny)
  visited_prior = jnp.where(visited, prior, 0.0).sum()
  weighted_q = jnp.where(visited, prior * q / jnp.where(visited, visited_prior, 1.0), 0.0).sum()
  mixed = (raw_value + total * weighted_q) / (total + 1.0)
  completed = jnp.where(visited, q, mixed)
  low, high = completed.min(), completed.max()
  normalised = (completed - low) / jnp.maximum(high - low, 1e-8)
  return (config.maxvisit_init + visits.max()) * config.value_scale * normalised


def _edge_stats(rows: graph_lib.EdgeRows, config: config_lib.SearchConfig):
  """(N f32[A], Q f32[A]) of a node's edges (`graph.edge_rows`), pending
  leaves counted as visits that lost (value_min), as in
  `selection.puct_scores`."""
  visits = rows.visits.astype(jnp.float32)
  q = rows.q
  if rows.pending is not None:
    pending = rows.pending.astype(jnp.float32)
    q = jnp.where(pending > 0, (q * visits + pending * config.value_min)
                  / jnp.maximum(visits + pending, 1.0), q)
    visits = visits + pending
  return visits, q


def interior_scores(graph: graph_lib.Graph, node: chex.Array, allowed: chex.Array,
                    config: config_lib.SearchConfig,
                    virtual_visits: chex.Array | None = None,
                    rows: graph_lib.EdgeRows | None = None) -> chex.Array:
  """pi'(a) - N(a) / (1 + sum_b N(b)) for every action of `node` of ONE game
  (mctx `gumbel_muzero_interior_action_selection`); -inf where not allowed.

  Args:
    graph: ONE game's graph.
    node: int32 node index.
    allowed: bool[A] legal (and not solver-pruned) actions.
    config: SearchConfig.
    virtual_visits: optional int32[N, A] pending leaves (`leaves_per_step`).
    rows: `graph.edge_rows(graph, node, virtual_visits)` where already
      read; None reads them.

  Returns:
    f32[A].
  """
  if rows is None:
    rows = graph_lib.edge_rows(graph, node, virtual_visits)
  visits, q = _edge_stats(rows, config)
  prior = rows.prior
  sigma = completed_qvalues(visits, q, prior, graph.nn_value[node], config)
  improved = jax.nn.softmax(jnp.where(allowed, _logits(prior, allowed) + sigma, -jnp.inf))
  scores = improved - visits / (1.0 + visits.sum())
  # A node without allowed actions has NaN scores: all masked here.
  return jnp.where(allowed, scores, -jnp.inf)


def considered_mask(gumbel: chex.Array, logits: chex.Array, allowed: chex.Array,
                    config: config_lib.SearchConfig) -> chex.Array:
  """The actions a Gumbel root search considers (ONE game).

  The top min(max_considered_actions, #allowed) allowed actions by
  g + logits (ties: the lower index, as mctx's argmax).

  Args:
    gumbel: f32[A], the root's Gumbel noise.
    logits: f32[A], the root's log prior.
    allowed: bool[A], the actions that may be chosen.
    config: reads `max_considered_actions`.

  Returns:
    bool[A].
  """
  num_actions = logits.shape[-1]
  if config.max_considered_actions >= num_actions:
    # The top k of all A actions are all of them (and `top_k`, run at every
    # simulation's root, is one of the dearer kernels of a descent on a CPU).
    return allowed
  k = config.max_considered_actions
  _, top = jax.lax.top_k(jnp.where(allowed, gumbel + logits, -jnp.inf), k)
  return jnp.zeros(num_actions, bool).at[top].set(True) & allowed


def root_scores(graph: graph_lib.Graph, allowed: chex.Array, config: config_lib.SearchConfig,
                virtual_visits: chex.Array | None = None,
                rows: graph_lib.EdgeRows | None = None) -> chex.Array:
  """Sequential halving with Gumbel at the root of ONE game (mctx
  `gumbel_muzero_root_action_selection`): g + logits + sigma on the
  considered actions whose visits of this search equal the schedule's count,
  -inf elsewhere; the argmax is the simulation's root action.

  Where no considered action has the scheduled count (the root's visits left
  the schedule: an exploration trajectory through the root, a considered move
  pruned by the solver), the considered actions with the fewest visits of
  this search are eligible.

  Args:
    graph: ONE game's graph.
    allowed: bool[A] legal (and not solver-pruned) root actions.
    config: SearchConfig.
    virtual_visits: optional int32[N, A] pending leaves: each counts as a
      visit (the next leaf of a step takes the next entry of the schedule).
    rows: the root's `graph.edge_rows` where already read; None reads them.

  Returns:
    f32[A].
  """
  if rows is None:
    rows = graph_lib.edge_rows(graph, 0, virtual_visits)
  visits, q = _edge_stats(rows, config)
  prior = rows.prior
  sigma = completed_qvalues(visits, q, prior, graph.nn_value[0], config)
  logits = _logits(prior, allowed)
  own = graph.enhancements[NAME]
  gumbel = own.noise
  considered = considered_mask(gumbel, logits, allowed, config)
  search_visits = visits - own.base_visits.astype(jnp.float32)
  table = considered_visits_table(min(config.max_considered_actions, logits.shape[-1]),
                                  config.num_simulations)
  index = jnp.clip(search_visits.sum().astype(jnp.int32), 0, table.shape[1] - 1)
  wanted = table[considered.sum(), index].astype(jnp.float32)
  eligible = considered & (search_visits == wanted)
  fewest = jnp.where(considered, search_visits, jnp.inf).min()
  eligible = jnp.where(jnp.any(eligible), eligible, considered & (search_visits == fewest))
  top = jnp.max(jnp.where(allowed, logits, -jnp.inf))
  score = jnp.maximum(_LOW_LOGIT, gumbel + logits - jnp.where(jnp.isfinite(top), top, 0.0)
                      + sigma)
  return jnp.where(eligible, score, -jnp.inf)


def root_decision(graph: graph_lib.Graph, allowed: chex.Array,
                  config: config_lib.SearchConfig):
  """The move and the improved policy at the roots of B games (mctx
  `gumbel_muzero_policy` after its search).

  Args:
    graph: Graph [B, N, A].
    allowed: bool[B, A] legal (and not solver-pruned) root actions.
    config: SearchConfig.

  Returns:
    (action int32[B]: argmax g + logits + sigma over the allowed actions with
     the most visits of this search; action_weights f32[B, A]: pi' =
     softmax(logits + sigma) over the allowed actions, 0 elsewhere).
  """
  visits = graph.edge_visits[:, 0].astype(jnp.float32)
  prior = graph.prior[:, 0]
  sigma = jax.vmap(completed_qvalues, in_axes=(0, 0, 0, 0, None))(
      visits, graph.edge_q[:, 0], prior, graph.nn_value[:, 0], config)
  logits = _logits(prior, allowed)
  own = graph.enhancements[NAME]
  search_visits = jnp.where(allowed, visits - own.base_visits, -1.0)
  most = search_visits.max(axis=-1, keepdims=True)
  top = jnp.max(logits, axis=-1, keepdims=True)
  score = jnp.maximum(_LOW_LOGIT, own.noise + logits
                      - jnp.where(jnp.isfinite(top), top, 0.0) + sigma)
  score = jnp.where(allowed & (search_visits == most), score, -jnp.inf)
  action = jnp.argmax(score, axis=-1).astype(jnp.int32)
  improved = jax.nn.softmax(jnp.where(allowed, logits + sigma, -jnp.inf), axis=-1)
  weights = jnp.where(allowed & jnp.any(allowed, axis=-1, keepdims=True), improved, 0.0)
  return action, weights
