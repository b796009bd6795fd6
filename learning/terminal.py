"""A game between a human at the terminal and an agent (`mcgs-jax play`).

`play` loads a trained agent, searches its moves with MCGS and asks the
human's moves through `read` (typed as numbers: Connect-4 columns 1-7,
tic-tac-toe cells 1-9 row by row from the top left, other games the action
index + 1; q quits).
"""

from __future__ import annotations

from typing import Callable

import jax
import numpy as np

import mcgs_jax
from mcgs_jax import envs
from mcgs_jax import networks
from mcgs_jax.learning import checkpoint


def render(env, state) -> str:
  """A board for Connect-4 and tic-tac-toe, the legal moves otherwise.

  Args:
    env: the env.
    state: a batch of one state.

  Returns:
    The text.
  """
  single = jax.tree.map(lambda x: x[0], state)
  if isinstance(env, envs.connect4.Connect4):
    return envs.connect4.render(single)
  if isinstance(env, envs.tictactoe.TicTacToe):
    return envs.tictactoe.render(single) + "\n(cells 1-9 row by row)"
  legal = np.flatnonzero(np.asarray(single.legal_action_mask)) + 1
  return f"{env.id}: legal moves {legal.tolist()}"


def ask_move(env, state, read: Callable[[str], str] = input) -> int | None:
  """The human's move; asks again on bad input.

  Args:
    env: the env.
    state: a batch of one state.
    read: asks for a line (`input`).

  Returns:
    The action (0-based), or None to quit (q, or the end of the input).
  """
  legal = np.asarray(state.legal_action_mask[0])
  while True:
    try:
      text = read(f"your move (1-{env.num_actions}, q quits): ").strip().lower()
    except EOFError:   # the input ended (Ctrl-D, a piped file): as q
      print()
      return None
    if text in ("q", "quit", "exit"):
      return None
    if text.isdigit() and 1 <= int(text) <= env.num_actions and legal[int(text) - 1]:
      return int(text) - 1
    print(f"  {text!r} is not a legal move; legal: {(np.flatnonzero(legal) + 1).tolist()}")


def play(agent: str | None = None, simulations: int = 200, first: str = "human",
         seed: int = 0, read: Callable[[str], str] = input) -> None:
  """One game to its end, or until the human quits.

  Args:
    agent: a training run's folder (None: the shipped Connect-4 agent).
    simulations: the agent's simulations per move.
    first: "human" or "agent".
    seed: the game's and the search's seed.
    read: asks for the human's lines (`input`).

  Raises:
    FileNotFoundError: `agent` holds no trained agent.
  """
  env, eval_fn, params = checkpoint.load_agent(agent or networks.PRETRAINED_CONNECT4)
  config = mcgs_jax.SearchConfig(num_simulations=simulations,
                                 max_nodes=2 * (simulations + 1), check_evaluator=True)
  search = jax.jit(mcgs_jax.search, static_argnames=("env", "eval_fn", "config"))
  step = jax.jit(env.step)
  state = env.init(jax.random.PRNGKey(seed), batch_size=1)
  human = 0 if first == "human" else 1
  rng = jax.random.PRNGKey(seed)
  print(f"{env.id}: you are player {human} ({'X' if human == 0 else 'O'}), "
        f"the agent searches {simulations} simulations per move\n")
  while not bool(state.terminated[0]):
    print(render(env, state))
    if int(state.current_player[0]) == human:
      action = ask_move(env, state, read)
      if action is None:
        print("bye")
        return
    else:
      rng, key = jax.random.split(rng)
      out = search(params, key, state, env, eval_fn, config)
      action = int(out.action[0])
      print(f"agent plays {action + 1} (its value {float(out.root_value[0]):+.2f})")
    state = step(state, np.asarray([action], np.int32))
  print(render(env, state))
  # The last move's rewards decide the game.
  rewards = np.asarray(state.rewards[0])
  if rewards[human] > 0:
    print("you win")
  elif rewards[human] < 0:
    print("the agent wins")
  else:
    print("draw")
