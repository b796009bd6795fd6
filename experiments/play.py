"""Play against a trained agent in the terminal.

  mcgs-jax play                                   # the shipped Connect-4 agent
  mcgs-jax play --agent runs/ttt --simulations 64 --first agent

Moves are typed as numbers: Connect-4 columns 1-7, tic-tac-toe cells 1-9
(row by row from the top left), other games the action index + 1. The agent
searches `--simulations` simulations per move with its network (MCGS) and
shows its value estimate. Type q to quit.
"""

from __future__ import annotations

import argparse
import sys

import mcgs_jax
from mcgs_jax import envs
from mcgs_jax.learning import cli

# The library and jax, loaded on first use: after the arguments are checked.
jax = cli.lazy("jax")
np = cli.lazy("numpy")
checkpoint = cli.lazy("mcgs_jax.learning.checkpoint")
networks = cli.lazy("mcgs_jax.networks")



def render(env, state) -> str:
  """A board for Connect-4 and tic-tac-toe, the legal moves otherwise."""
  single = jax.tree.map(lambda x: x[0], state)
  if isinstance(env, envs.connect4.Connect4):
    return envs.connect4.render(single)
  if isinstance(env, envs.tictactoe.TicTacToe):
    return envs.tictactoe.render(single) + "\n(cells 1-9 row by row)"
  legal = np.flatnonzero(np.asarray(single.legal_action_mask)) + 1
  return f"{env.id}: legal moves {legal.tolist()}"


def ask_move(env, state, read=input) -> int | None:
  """The human's action (0-based), or None to quit (q, or the end of the
  input); asks again on bad input."""
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


def main(argv=None, read=input):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--agent", help="a training run's folder (default: the shipped Connect-4 agent)")
  parser.add_argument("--simulations", type=int, default=200)
  parser.add_argument("--first", choices=("human", "agent"), default="human")
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(argv)

  env, eval_fn, params = checkpoint.load_agent(args.agent or networks.PRETRAINED_CONNECT4)
  config = mcgs_jax.SearchConfig(num_simulations=args.simulations,
                                 max_nodes=2 * (args.simulations + 1), check_evaluator=True)
  search = jax.jit(mcgs_jax.search, static_argnames=("env", "eval_fn", "config"))
  step = jax.jit(env.step)
  state = env.init(jax.random.PRNGKey(args.seed), batch_size=1)
  human = 0 if args.first == "human" else 1
  rng = jax.random.PRNGKey(args.seed)
  print(f"{env.id}: you are player {human} ({'X' if human == 0 else 'O'}), "
        f"the agent searches {args.simulations} simulations per move\n")
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


if __name__ == "__main__":
  sys.exit(cli.main(main))
