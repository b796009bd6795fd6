"""The names a training run's settings take, readable without jax: the
command lines check their arguments against these before the library loads."""

from mcgs_jax import modes

# Searches of two evaluators (`mcgs_jax.dual`): they need a two-head network.
TWO_SEARCHES = ("dual", "mpv")
# Backup modes not offered for training: "katago" came after the training
# settings and no training run or test has covered it (the experiments
# compare it at play time only).
UNTRAINED_MODES = ("katago",)
SEARCHES = tuple(m for m in modes.names() if m not in UNTRAINED_MODES) + TWO_SEARCHES

# `mcgs-jax peer-recipe`'s flags: a `learning.peer.PeerConfig` field -> (type, help).
PEER_FLAGS = {
    "selfplay_batch_size": (int, "games per iteration (pgx 1024)"),
    "num_simulations": (int, "Gumbel MuZero simulations per move (pgx 32)"),
    "max_num_steps": (int, "moves per game slot per iteration (pgx 256)"),
    "training_batch_size": (int, "examples per update (pgx 4096)"),
    "learning_rate": (float, "Adam's (pgx 1e-3)"),
    "seed": (int, "the run's seed"),
    "eval_every": (int, "evaluate every this many iterations"),
    "eval_positions": (int, "positions per Pons set of the evaluation"),
    "eval_simulations": (int, "simulations of the evaluation search"),
}

# The `mcgs-jax` command's subcommands (mcgs_jax.experiments.<name>, hyphens for
# underscores) -> what each does, in the order `mcgs-jax --help` lists them.
COMMANDS = {
    "demo": "one Connect-4 search from the empty board, the graph next to a plain tree",
    "train": "AlphaZero training with the graph search (rerun to resume)",
    "play": "a game in the terminal against a trained agent (default: the shipped one)",
    "arena": "Elo ladder of a training run's snapshots against fixed baselines",
    "race": "two training runs side by side: error curves, final figures, a match",
    "peer-recipe": "pgx's AlphaZero example recipe in this project's code (the peer)",
    "connect4-accuracy": "move accuracy of searches on Connect-4 positions with exact scores",
    "mcgs-vs-mcts": "MCGS against MCTS: Elo at equal evaluations and at equal time",
    "dual-mcts": "the Dual MCTS paper's table: AlphaZero, MPV-MCTS and Dual MCTS trained",
    "graph-vs-tree": "the same recipe trained with the graph and with the tree, at equal CPU",
    "fault-sweep": "training runs hit by faults at random points, and what survived",
    "bad-inputs": "bad input tried as a user would, and what the terminal shows",
    "bench-search": "search speed and memory against mctx on Connect-4",
    "bench-selfplay": "self-play speed against the same loop on mctx",
    "bench-envs": "Connect-4 env throughput against pgx",
    "bench-phases": "where a search's time goes, and its distance from the network floor",
    "bench-graph-tax": "what the graph costs over the tree, in searches and self-play",
    "bench-compare": "the hot paths of the working tree against a base commit",
    "device-report": "the accelerator report: search, self-play, memory, phases, training",
    "device-session": "one lent accelerator, one command: the report, then training",
    "loop-copies": "copies XLA inserts inside a compiled search's loops",
}
