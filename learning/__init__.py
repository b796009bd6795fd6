"""Learning on top of the search: self-play, replay, losses, training,
evaluation (ground truth, arena, Elo) and checkpoints."""
