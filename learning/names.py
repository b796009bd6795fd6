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
