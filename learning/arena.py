"""Games between agents: batched matches and round robins.

`play_games` advances all games of a match together, one ply per step of a
host loop: each agent acts once per ply on the games where it is to move
(padded to half the games, so a jitted agent compiles once per match size),
and a finished game is never shown to an agent again. Every opening is played
twice with the colours swapped, so neither agent profits from the side an
opening favours.

Openings are `opening_plies` uniformly random legal moves from the initial
position (distinct positions while enough exist; games the random moves
already ended are replaced), or positions given by the caller.
"""

import csv
import dataclasses
import functools
import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mcgs_jax.envs import base
from mcgs_jax.envs import exhaustive
from mcgs_jax.learning import agents as agents_lib


@dataclasses.dataclass(frozen=True, eq=False)
class MatchResult:
  """Per-game results of a match, from agent A's view (compared by identity:
  the fields are arrays).

  Game g and game g + G/2 start from the same opening, A playing player 0 in
  the first half and player 1 in the second.

  Attributes:
    scores: int32[G], +1 A won, 0 draw (or unfinished), -1 A lost.
    a_player: int32[G], the player id A plays.
    opening: int32[G], the opening of each game (each index twice).
    plies: int32[G], moves played after the opening until the end.
    unfinished: games still running after `max_game_length` plies (scored 0).
  """
  scores: np.ndarray
  a_player: np.ndarray
  opening: np.ndarray
  plies: np.ndarray
  unfinished: int

  @property
  def wins(self) -> int:
    """Games A won."""
    return int(np.sum(self.scores > 0))

  @property
  def draws(self) -> int:
    """Games drawn (unfinished games included)."""
    return int(np.sum(self.scores == 0))

  @property
  def losses(self) -> int:
    """Games A lost."""
    return int(np.sum(self.scores < 0))

  @property
  def mean_score(self) -> float:
    """Mean result for A in [-1, 1]."""
    return float(np.mean(self.scores))


@functools.lru_cache(maxsize=None)
def _jitted_step(env):
  return jax.jit(env.step)


@functools.partial(jax.jit, static_argnames=("env", "plies"))
def _random_play(env, rng, states, plies):
  def random_move(ply, states):
    action = base.random_legal_action(jax.random.fold_in(rng, ply), states.legal_action_mask)
    return env.step(states, action)

  # A loop: unrolled, XLA may fuse the chain of steps into kernels that
  # recompute it (see `selfplay.new_games`).
  return jax.lax.fori_loop(0, plies, random_move, states)


def random_openings(env: Any, rng: jax.Array, count: int, plies: int,
                    max_rounds: int = 20) -> Any:
  """`count` positions after `plies` uniformly random legal moves from the
  initial position, none of them finished. Distinct positions while the game
  has enough of them; else the distinct ones found, cycled.

  Args:
    env: the env.
    rng: a PRNG key.
    count: positions wanted (>= 1).
    plies: random moves from the initial position (>= 0).
    max_rounds: batches of 4 * count random games to draw at most.

  Returns:
    A batch of states [count].

  Raises:
    ValueError: if random play ends every game within `plies` moves.
  """
  if count < 1:
    raise ValueError(f"count must be >= 1, got {count}")
  if plies < 0:
    raise ValueError(f"plies must be >= 0, got {plies}")
  batch = 4 * count
  rounds, unique, seen = [], [], set()
  for round_index in range(max_rounds):
    round_rng = jax.random.fold_in(rng, round_index)
    states = _random_play(env, round_rng, env.init(round_rng, batch_size=batch), plies)
    states = jax.tree.map(np.asarray, states)
    rounds.append(states)
    found = len(unique)
    keys = exhaustive.key_ints(states.key).tolist()
    for i in np.flatnonzero(~states.terminated):
      if keys[i] not in seen:
        seen.add(keys[i])
        unique.append(round_index * batch + i)
    # Enough, or a whole round without a new position: the game has no more.
    if len(unique) >= count or (unique and len(unique) == found):
      break
  if not unique:
    raise ValueError(f"random play ended every game of {env.id} within {plies} plies")
  chosen = np.asarray([unique[i % len(unique)] for i in range(count)])
  pool = jax.tree.map(lambda *xs: np.concatenate(xs), *rounds)
  return jax.tree.map(lambda x: jnp.asarray(x[chosen]), pool)


def play_games(env: Any, agent_a: agents_lib.Agent, agent_b: agents_lib.Agent,
               rng: jax.Array, num_games: int | None = None, opening_plies: int = 2,
               openings: Any = None) -> MatchResult:
  """A match of batched games between two agents, both colours per opening.

  Args:
    env: a two-player env.
    agent_a: agent A, whose view the result takes.
    agent_b: agent B (may be the same object as A).
    rng: a PRNG key.
    num_games: games in all, even (each opening is played twice); may be
      left out when `openings` are given (then it is 2 * their number).
    opening_plies: random moves of the generated openings.
    openings: a batch of non-terminated start positions [N] to use instead
      of random ones.

  Returns:
    MatchResult; `scores` is the sign of A's total reward, so +1 win, 0
    draw, -1 loss in the games here (rewards only at the end).

  Raises:
    ValueError: on an odd or too small `num_games`, a count that does not
      match `openings`, or a terminated opening.
  """
  opening_rng, play_rng = jax.random.split(rng)
  if openings is None:
    if num_games is None or num_games < 2 or num_games % 2:
      raise ValueError(f"num_games must be even and >= 2 (each opening is played with both "
                       f"colours), got {num_games}")
    openings = random_openings(env, opening_rng, num_games // 2, opening_plies)
  else:
    if base.batch_ndim(openings) != 1:
      raise ValueError(f"openings must be a batch of states [N], got `ply` of shape "
                       f"{np.shape(openings.ply)}")
    if num_games is not None and num_games != 2 * len(openings.ply):
      raise ValueError(f"num_games={num_games} does not match the {len(openings.ply)} openings "
                       "given (each is played twice)")
    if np.any(np.asarray(openings.terminated)):
      raise ValueError("an opening is already finished: openings must be running games")
  half = len(openings.ply)
  num_games = 2 * half
  states = jax.tree.map(lambda x: jnp.concatenate([jnp.asarray(x)] * 2), openings)
  a_player = np.repeat(np.arange(2, dtype=np.int32), half)
  game_index = np.arange(num_games)
  totals = np.zeros(num_games, np.float64)
  plies = np.zeros(num_games, np.int32)
  step = _jitted_step(env)
  for ply in range(env.max_game_length):
    host = jax.tree.map(np.asarray, states)
    running = ~host.terminated
    if not running.any():
      break
    a_to_move = host.current_player == a_player
    actions = np.zeros(num_games, np.int32)
    ply_rng = jax.random.fold_in(play_rng, ply)
    for side, (agent, to_move) in enumerate(((agent_a, a_to_move), (agent_b, ~a_to_move))):
      games = np.flatnonzero(running & to_move)
      if games.size:
        # Usually half of the games: the padded size stays `half`.
        movers = jax.tree.map(lambda x, games=games: x[games], host)
        actions[games] = agents_lib.act_in_chunks(agent, jax.random.fold_in(ply_rng, side),
                                                  movers, chunk_size=half)
    states = step(states, jnp.asarray(actions))
    rewards = np.asarray(states.rewards)[game_index, a_player]
    totals += np.where(running, rewards, 0.0)
    plies += running
  unfinished = ~np.asarray(states.terminated)
  return MatchResult(scores=np.sign(np.where(unfinished, 0.0, totals)).astype(np.int32),
                     a_player=a_player, opening=np.tile(np.arange(half, dtype=np.int32), 2),
                     plies=plies, unfinished=int(unfinished.sum()))


def round_robin(env: Any, agents: list[agents_lib.Agent], rng: jax.Array,
                games_per_pair: int, opening_plies: int = 2) -> list[tuple[int, int, float]]:
  """Every pair of agents plays a match (`play_games`) on the same openings.

  Args:
    env: a two-player env.
    agents: two or more agents.
    rng: a PRNG key.
    games_per_pair: games per pair, even.
    opening_plies: random moves of the openings.

  Returns:
    Game records (i, j, score) with i < j the agents' indices and score
    agent i's result: 1 win, 0.5 draw, 0 loss (the input of `mcgs_jax.learning.elo`).

  Raises:
    ValueError: fewer than 2 agents, or an odd or too small
      `games_per_pair`.
  """
  if len(agents) < 2:
    raise ValueError(f"a round robin needs at least 2 agents, got {len(agents)}")
  if games_per_pair < 2 or games_per_pair % 2:
    raise ValueError(f"games_per_pair must be even and >= 2, got {games_per_pair}")
  opening_rng, play_rng = jax.random.split(rng)
  openings = random_openings(env, opening_rng, games_per_pair // 2, opening_plies)
  records = []
  pairs = [(i, j) for i in range(len(agents)) for j in range(i + 1, len(agents))]
  for pair_index, (i, j) in enumerate(pairs):
    result = play_games(env, agents[i], agents[j], jax.random.fold_in(play_rng, pair_index),
                        openings=openings)
    records.extend((i, j, (float(s) + 1.0) / 2.0) for s in result.scores)
  return records


# A match's games on disk: one row per game, appended as it ends, so an
# interrupted match resumes where it stopped.
GAME_FIELDS = ("a", "b", "game", "score")


def read_games(path: str) -> list[dict]:
  """The games recorded in `path` (none where it does not exist).

  Args:
    path: a CSV with `GAME_FIELDS`.

  Returns:
    list of dicts: a, b (the players' names), game (int), score (float, a's).

  Raises:
    ValueError: a file that is not such a CSV (another header, a value that
      is not a number), naming the file and the line.
  """
  if not os.path.exists(path):
    return []
  with open(path, newline="") as f:
    reader = csv.DictReader(f)
    missing = [name for name in GAME_FIELDS if name not in (reader.fieldnames or ())]
    if missing:
      raise ValueError(f"{path} is not a games file: its header lacks {', '.join(missing)} "
                       f"(expected {','.join(GAME_FIELDS)}); move it aside to start anew")
    games = []
    for line, row in enumerate(reader, start=2):
      try:
        games.append(dict(row, game=int(row["game"]), score=float(row["score"])))
      except (TypeError, ValueError):
        raise ValueError(f"{path}, line {line}: game {row.get('game')!r} and score "
                         f"{row.get('score')!r} are not numbers") from None
  return games


def append_games(path: str, rows: list[dict]) -> None:
  """Adds `rows` to `path`, each game once, in one atomic replace.

  A game (a, b, game) already recorded is not written again, and the file is
  rewritten whole under a temporary name, synced and renamed, so a reader
  (or a crash) sees it before or after the games, never half of them.

  Args:
    path: the CSV.
    rows: dicts with `GAME_FIELDS`.
  """
  games = read_games(path)
  recorded = {(g["a"], g["b"], g["game"]) for g in games}
  games += [row for row in rows if (row["a"], row["b"], int(row["game"])) not in recorded]
  tmp = path + ".tmp"
  with open(tmp, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=GAME_FIELDS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(games)
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, path)


def play_missing_pairs(env: Any, players: dict, pairs, rng: jax.Array, games: int, path: str, *,
                       opening_plies: int = 2) -> list[dict]:
  """Plays each pair's match not yet recorded in `path`, appending its games.

  Every pair plays on the same openings (one `rng`), so an interrupted
  round resumes with the pairs it had not finished, each as it would have
  been played.

  Args:
    env: a two-player env.
    players: agents by name.
    pairs: (a, b) names; a pair with a name missing from `players` is
      skipped.
    rng: a PRNG key.
    games: games per pair, even.
    path: the games CSV (`GAME_FIELDS`, a's score in [0, 1]).
    opening_plies: random moves of the openings.

  Returns:
    Every game recorded in `path` (`read_games`).
  """
  done = {(game["a"], game["b"]) for game in read_games(path)}
  for a, b in pairs:
    if (a, b) in done or a not in players or b not in players:
      continue
    result = play_games(env, players[a], players[b], rng, games, opening_plies=opening_plies)
    append_games(path, [dict(a=a, b=b, game=g, score=(float(s) + 1) / 2)
                        for g, s in enumerate(result.scores)])
    print(f"{a} vs {b}: {result.wins}-{result.draws}-{result.losses} (wins-draws-losses of {a})",
          flush=True)
  return read_games(path)
