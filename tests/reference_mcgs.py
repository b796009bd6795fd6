"""A plain-Python reference MCGS: dicts, floats, and the paper's Algorithms 1
and 2 written literally, with the sign convention of docs/algorithm.md
("Sign convention", "The correction": Q_phi = clip(N * (target - Q) + target)). Slow and obviously correct; the
JAX search must agree with it simulation by simulation.

Values are from the point of view of the player to move at a node; an edge's
value is reward + discount * V(child) (discount -1 when the opponent moves
next, 0 when the game ends).

backup="katago" is KataGo's graph search written the same way: no
corrections; a backup walks the path up, adds one visit to each edge and node,
and recomputes each node's value from its children,
Q(n) = (U(n) + sum_c N(n, c) Q(c)) / (1 + sum_c N(n, c)), Q(c) read off the
child (reward + discount * V(child)); selection reads Q(c) off the child too.
"""

import math

EXPAND, TERMINAL_EDGE, CORRECTION, DEPTH_LIMIT = "expand", "terminal", "correction", "depth"
SOLVED_EDGE, DEAD_END = "solved", "dead end"
WIN, LOSS, DRAW = "win", "loss", "draw"
EXACT = {WIN: 1.0, LOSS: -1.0, DRAW: 0.0}


def sign(x):
  return (x > 0) - (x < 0)


class Edge:
  def __init__(self):
    self.child = None       # Node, once expanded
    self.terminal = False
    self.n = 0
    self.q = 0.0
    self.reward = 0.0
    self.discount = 0.0


class Node:
  def __init__(self, state, key, prior, legal, value):
    self.state = state
    self.key = key
    self.prior = prior       # list of floats, 0 on illegal actions
    self.legal = legal       # list of bools
    self.nn_value = value
    self.visits = 1          # the node's own evaluation
    self.value_sum = value
    self.num_parents = 1
    self.edges = {a: Edge() for a, ok in enumerate(legal) if ok}
    self.solved = None       # WIN / LOSS / DRAW once proven (solver)
    self.end_in_ply = 0

  @property
  def value(self):
    return self.value_sum / self.visits


class ReferenceMCGS:
  """`transition(state, action) -> (child_state, key, reward, discount,
  terminal, legal)` and `evaluate(state, key, legal) -> (prior, value)`."""

  def __init__(self, transition, evaluate, root_state, root_key, root_legal, *,
               backup="mcgs", c_init=2.5, c_base=19652.0, q_init=-1.0, q_eps=0.01,
               value_min=-1.0, value_max=1.0, max_depth=64, solver=False):
    self.transition = transition
    self.evaluate = evaluate
    self.backup_mode = backup
    self.c_init, self.c_base, self.q_init, self.q_eps = c_init, c_base, q_init, q_eps
    self.value_min, self.value_max, self.max_depth = value_min, value_max, max_depth
    self.solver = solver
    self.table = {}          # key -> Node (mcgs, tt_cache)
    self.nn_evals = 1
    prior, value = evaluate(root_state, root_key, root_legal)
    self.root = Node(root_state, root_key, prior, root_legal, value)
    self.root.num_parents = 0
    self.nodes = [self.root]
    if backup != "tree":
      self.table[root_key] = self.root

  # Algorithm 1 plus PUCT (eq. 3, 4, 6).
  def select_action(self, node):
    total = sum(e.n for e in node.edges.values())
    c = math.log((total + self.c_base + 1.0) / self.c_base) + self.c_init
    best, best_score = None, -math.inf
    for a in sorted(node.edges):
      e = node.edges[a]
      if self.solver and self.outcome(e)[0] == -1:
        continue   # proven loss: pruned
      q = (self.edge_value(e) if self.backup_mode == "katago" else e.q) if e.n > 0 else self.q_init
      score = q + c * node.prior[a] * math.sqrt(total + 1.0) / (1.0 + e.n)
      if score > best_score:
        best, best_score = a, score
    return best

  def allowed(self, node):
    return [a for a in sorted(node.edges)
            if not (self.solver and self.outcome(node.edges[a])[0] == -1)]

  def most_visited(self, node):
    """The most visited allowed move, higher prior breaking ties."""
    best, best_score = None, -math.inf
    for a in self.allowed(node):
      score = node.edges[a].n + 0.5 * node.prior[a]
      if score > best_score:
        best, best_score = a, score
    return best

  def proven_child(self, edge):
    return self.solver and edge.child is not None and edge.child.solved is not None

  def branch_depth(self, wanted):
    """Epsilon-greedy: how far the most visited line goes, at most `wanted`
    plies, through stored unproven nodes."""
    node, depth = self.root, 0
    while depth < wanted:
      a = self.most_visited(node)
      if a is None:
        break
      edge = node.edges[a]
      if edge.child is None or self.proven_child(edge):
        break
      node, depth = edge.child, depth + 1
    return depth

  def explore_action(self, node, puct_action, draw):
    """Epsilon-greedy branch move: `draw(candidates: list of bool [A]) -> a`
    picks uniformly among the tried moves and the untried one of highest
    prior."""
    allowed = self.allowed(node)
    untried = [a for a in allowed if node.edges[a].n == 0]
    candidates = [False] * len(node.legal)
    for a in allowed:
      candidates[a] = node.edges[a].n > 0
    if untried:
      candidates[max(untried, key=lambda a: (node.prior[a], -a))] = True
    a = draw(candidates)
    return puct_action if self.proven_child(node.edges[a]) else a

  def clip(self, v):
    return max(self.value_min, min(v, self.value_max))

  def simulate(self, explore=None):
    """One simulation; returns (list of actions on the path, kind), or
    ([], None) when the root is proven.

    `explore`: None, or (wanted depth, draw) for an epsilon-greedy trajectory
    (paper, "Random Exploration"): follow the most visited line down to the
    branch node (at most `wanted` plies), play `explore_action` there, PUCT
    below; the backup stops at the branch node (disconnected)."""
    if self.solver and self.root.solved is not None:
      return [], None
    branch = None if explore is None else self.branch_depth(explore[0])
    node = self.root
    trajectory = []
    while True:
      a = self.select_action(node)
      if a is None:   # every move proven lost (found out from another parent)
        prev, prev_a = trajectory[-1]
        edge = prev.edges[prev_a]
        value, kind = edge.reward + edge.discount * node.value, DEAD_END
        break
      following = branch is not None and len(trajectory) < branch
      if following:
        a = self.most_visited(node)
      elif branch is not None and len(trajectory) == branch:
        a = self.explore_action(node, a, explore[1])
      trajectory.append((node, a))
      edge = node.edges[a]
      if edge.terminal:
        value, kind = edge.reward, TERMINAL_EDGE
        break
      if edge.child is None:
        value, kind = self.expand(node, a, edge), EXPAND
        break
      child = edge.child
      if self.solver and child.solved is not None:
        value, kind = edge.reward + edge.discount * EXACT[child.solved], SOLVED_EDGE
        break
      target = edge.reward + edge.discount * child.value
      if self.backup_mode == "mcgs" and child.num_parents > 1 and not following:
        q_delta = edge.q - target
        if abs(q_delta) > self.q_eps:
          value, kind = self.clip(edge.n * (target - edge.q) + target), CORRECTION
          break
      if len(trajectory) >= self.max_depth:
        value, kind = target, DEPTH_LIMIT
        break
      node = child
    self.backpropagate(trajectory, value, start=branch or 0)
    return [a for _, a in trajectory], kind

  def expand(self, node, a, edge):
    state, key, reward, discount, terminal, legal = self.transition(node.state, a)
    edge.reward, edge.discount = reward, discount
    if terminal:
      edge.terminal = True
      edge.discount = 0.0
      return reward
    existing = self.table.get(key)
    if existing is not None and self.backup_mode in ("mcgs", "katago"):
      edge.child = existing
      existing.num_parents += 1
      return reward + discount * existing.value
    if existing is not None and self.backup_mode == "tt_cache":
      prior, value = existing.prior, existing.nn_value
    else:
      prior, value = self.evaluate(state, key, legal)
      self.nn_evals += 1
    child = Node(state, key, prior, legal, value)
    self.nodes.append(child)
    if existing is None and self.backup_mode != "tree":
      self.table[key] = child
    edge.child = child
    return reward + discount * value

  # Algorithm 3, recomputed from all moves (see mcgs_jax/solver.py).
  def outcome(self, edge):
    """(+1 win / -1 loss / 0 draw for the mover, plies to the end), or
    (None, None) when not proven."""
    if edge.terminal:
      return sign(edge.reward), 1
    if edge.child is not None and edge.child.solved is not None:
      return (sign(edge.reward + edge.discount * EXACT[edge.child.solved]),
              edge.child.end_in_ply + 1)
    return None, None

  def examine(self, node):
    if node.solved is not None or not node.edges:
      return
    results = [self.outcome(e) for e in node.edges.values()]
    wins = [end for o, end in results if o == 1]
    if wins:
      node.solved, node.end_in_ply = WIN, min(wins)
      return
    if any(o is None for o, _ in results):
      return
    draws = [end for o, end in results if o == 0]
    if draws:
      node.solved, node.end_in_ply = DRAW, min(draws)
    else:
      node.solved, node.end_in_ply = LOSS, max(end for _, end in results)

  def edge_value(self, edge):
    """katago: an edge's value read off its child (exact when proven)."""
    if edge.terminal:
      return edge.reward
    if edge.child is None:
      return edge.q
    child = edge.child
    v = EXACT[child.solved] if self.solver and child.solved is not None else child.value
    return edge.reward + edge.discount * v

  def backpropagate_katago(self, trajectory, value):
    last, last_a = trajectory[-1]
    last.edges[last_a].q = value   # kept where the edge leads to no node
    for node, a in reversed(trajectory):
      node.edges[a].n += 1
      node.visits += 1
      total, weighted = 0, 0.0
      for e in node.edges.values():
        if e.n:
          e.q = self.edge_value(e)
          total += e.n
          weighted += e.n * e.q
      node.value_sum = (node.nn_value + weighted) / (1 + total) * node.visits

  # Algorithm 2.
  def backpropagate(self, trajectory, value, start=0):
    """`value` is what the last edge of the trajectory receives; edges above
    `start` are left alone."""
    if self.solver:
      last, last_a = trajectory[-1]
      below = last.edges[last_a].child
      for node in ([below] if below is not None else []) + [n for n, _ in reversed(trajectory)]:
        self.examine(node)
      if below is not None and below.solved is not None:
        edge = last.edges[last_a]
        value = edge.reward + edge.discount * EXACT[below.solved]
    if self.backup_mode == "katago":
      self.backpropagate_katago(trajectory, value)
      return
    q_target = None   # V*(s') of the transposition node just updated
    for i in reversed(range(start, len(trajectory))):
      node, a = trajectory[i]
      edge = node.edges[a]
      if i < len(trajectory) - 1:
        below = trajectory[i + 1][0]
        if self.solver and below.solved is not None:
          value = edge.reward + edge.discount * EXACT[below.solved]
        elif q_target is not None:
          target = edge.reward + edge.discount * q_target
          value = self.clip(edge.n * (target - edge.q) + target) if edge.n > 0 else target
        else:
          value = edge.reward + edge.discount * value
      edge.q = (edge.q * edge.n + value) / (edge.n + 1)
      edge.n += 1
      node.value_sum += value
      node.visits += 1
      q_target = node.value if self.backup_mode == "mcgs" and node.num_parents > 1 else None

  def advance(self, action):
    """Re-roots at the root's child by `action`: keeps the nodes reachable
    from it with their statistics, recounts parents, restarts the counters."""
    root = self.root.edges[action].child
    kept, stack = {id(root): root}, [root]
    while stack:
      for edge in stack.pop().edges.values():
        if edge.child is not None and id(edge.child) not in kept:
          kept[id(edge.child)] = edge.child
          stack.append(edge.child)
    self.nodes = [n for n in self.nodes if id(n) in kept]
    for n in self.nodes:
      n.num_parents = 0
    for n in self.nodes:
      for edge in n.edges.values():
        if edge.child is not None:
          edge.child.num_parents += 1
    self.root = root
    if self.backup_mode != "tree":
      self.table = {}
      for n in self.nodes:
        self.table.setdefault(n.key, n)
    self.nn_evals = 0
