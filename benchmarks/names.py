"""The benchmarks' contestants, sizes and enhancement names, readable without
jax: the command lines build their options from these before the library
loads. Each benchmark module takes its own from here."""

from mcgs_jax import modes

# mcgs_jax.benchmarks.search_speed (`mcgs-jax bench-search`).
SEARCH_CONTESTANTS = ("mctx", "mcgs", "tree")
# mctx on our env instead of pgx's: separates the cost of the env from the
# cost of the search. Not run unless asked for.
SEARCH_EXTRA_CONTESTANTS = ("mctx-ours",)
SEARCH_FULL_BATCH = (1, 64, 1024)
SEARCH_FULL_SIMS = (64, 256, 800)
SEARCH_QUICK_BATCH = (1, 64)
SEARCH_QUICK_SIMS = (64, 256)
MAX_OPENING_PLIES = 6  # no Connect-4 game ends within 6 plies

# mcgs_jax.benchmarks.selfplay_speed (`mcgs-jax bench-selfplay`).
SELFPLAY_CONTESTANTS = ("mctx", "mctx-gumbel", "mcgs", "tree", "mcgs-noreuse", "mcgs-gumbel")
SELFPLAY_EXTRA_CONTESTANTS = ("tree-noreuse", "tree-gumbel", "mcgs-gumbel-noreuse",
                              "tree-gumbel-noreuse")
SELFPLAY_FULL = dict(batch=256, simulations=64, moves=8)
SELFPLAY_QUICK = dict(batch=64, simulations=16, moves=4)


def selfplay_sizes(quick: bool, **given: int | None) -> dict:
  """The self-play benchmark's batch, simulations and moves.

  Args:
    quick: `--quick`'s sizes as the defaults (else the full ones).
    **given: batch, simulations, moves as given (None: the default).

  Returns:
    dict name -> int, every size.
  """
  defaults = SELFPLAY_QUICK if quick else SELFPLAY_FULL
  return {name: value if given.get(name) is None else given[name]
          for name, value in defaults.items()}

# mcgs_jax.benchmarks.kernel_phases (`mcgs-jax bench-graph-tax --profile`,
# `--sources PHASE`): the search's phases in the order a simulation runs them,
# then what runs between moves.
KERNEL_PHASES = ("descent", "lookup", "transition", "network", "expansion", "backup",
                 "reroot", "other")

# mcgs_jax.benchmarks.accuracy (`mcgs-jax connect4-accuracy`).
ACCURACY_DEFAULT_SETS = ("L3_R1", "L2_R1", "L1_R1")
# The backup modes but tt_cache, which is not one of this benchmark's
# contestants (it still runs as --searches tt_cache), then the external
# references.
ACCURACY_SEARCHES = tuple(m for m in modes.names() if m != "tt_cache") + ("mctx", "openspiel")
# SearchConfig switches per enhancement name, at the paper's settings.
ENHANCEMENTS = {
    "solver": dict(solver=True),
    "qvalue": dict(q_value_weight=2.0),
    "epsgreedy": dict(eps_greedy=0.05),
    "constraint": dict(eps_constraint=0.01),
}
ENHANCEMENTS["all"] = {k: v for e in ENHANCEMENTS.values() for k, v in e.items()}
# Further switches (not in "all", the paper's build), at their sources' settings.
ENHANCEMENTS.update({
    "ppsoft": dict(progressive_pruning="soft"),  # Bouzy: 100 visits per move, r_d 1
    "pphard": dict(progressive_pruning="hard"),
    "lcb": dict(move_choice="lcb"),
    "minroot": dict(min_root_visit_fraction=0.005),  # MantisShrimp: 4 of 800
    "bounds": dict(solver=True, solver_bounds=True),  # score-bounded solver (draw proofs)
    "gumbel": dict(root_policy="gumbel"),  # Gumbel root search, mctx's defaults
})
# Classic MCTS enhancements (docs/search_options.md#classic-mcts-enhancements).
ENHANCEMENTS.update({
    "rave": dict(rave=True, rave_b=0.1),
    "expvisits": dict(expansion_policy="visits", expansion_threshold=2),
    "expprob": dict(expansion_policy="probability", expansion_threshold=0.25),
    "depth1": dict(depth_i=1),
    "depth2": dict(depth_i=2),
})
# Enhancements of the leaf evaluation (eval_fn), not SearchConfig switches.
# The benchmark has no trained network: "mix" mixes the uniform evaluator
# (value 0) with the rollout, lam = 0.5 (AlphaGo's lambda), so it measures
# the value's scale only; with a network, pass it as `network_eval`.
EVAL_ENHANCEMENTS = ("mix",)
ACCURACY_DEFAULT_SEARCHES = ("mcgs", "tree", "openspiel")

# The MCGS-vs-MCTS study (`mcgs_jax.benchmarks.mcgs_vs_mcts`): its networks,
# --network name -> the folder of its agent (`weak`: a snapshot of RUN) ...
RUN = "docs/learning/runs/connect4_v1"
NETWORKS = {"shipped": "networks/pretrained/connect4", "v3": "docs/learning/runs/connect4_v3",
            "v2": "docs/learning/runs/connect4", "v1": RUN, "weak": RUN}
# ... and the paper's switches at its settings (docs/search_options.md, "The
# paper's build"), each against plain mcgs.
ABLATIONS = {
    "solver": dict(solver=True),
    "epsgreedy": dict(eps_greedy=0.05),
    "qvalue": dict(q_value_weight=2.0),
    "constraint": dict(eps_constraint=0.01),
    "temperature": dict(node_temperature=1.7),
}
ABLATIONS["all"] = {k: v for switches in ABLATIONS.values() for k, v in switches.items()}

# The Dual MCTS experiment (`mcgs_jax.benchmarks.dual_mcts`): its games,
# algorithms and backups.
GAMES = ("hsr:4,4,16", "nim:3,20", "connect4")
ALGOS = ("alphazero", "mpv", "dual")
# `--recipe` also runs two ablations of AlphaZero, each over the one before:
# self-play that starts every move afresh, as the two searches' does (the
# recipe otherwise keeps the played child's subgraph, `reuse_graph`), and
# then with T_L's 35 simulations instead of 85 (its policy targets come from
# 35 visits, as the two-search runs' large network's do); both evaluate with
# 85 as AlphaZero does.
RECIPE_ABLATIONS = ("alphazero_noreuse", "alphazero_35")
RECIPE_ALGOS = ALGOS + RECIPE_ABLATIONS
BACKUPS = ("tree", "mcgs")

# Graph against tree in self-play (`mcgs_jax.benchmarks.graph_vs_tree`): the
# searches, seeds and the recipe of each game.
GRAPH_VS_TREE_SEARCHES = ("mcgs", "tree")
GRAPH_VS_TREE_SEEDS = (0, 1, 2)
# The recipe of each game: (env id, --config fields over the env's defaults,
# CPU seconds per run).
GRAPH_VS_TREE_GAMES = {
    "connect4": ("connect4", dict(eval_every_s=300.0), 1800.0),
    "nim": ("nim", dict(network_kwargs={"hidden_sizes": [32, 32]}, eval_every=5), 300.0),
    # Nim again with a network whose evaluations outweigh the graph's
    # bookkeeping (its self-play costs about 1.1x the tree's there, against
    # 1.3x with the small MLP).
    "nim-wide": ("nim", dict(network_kwargs={"hidden_sizes": [512, 512]}, eval_every=5), 300.0),
    # Nim with the small MLP and an evaluation budget: up to 256 simulations
    # and 64 network evaluations per move, a simulation that needs no
    # network call (a transposition, a terminal) selecting again within its
    # step, so the graph turns the evaluations it saves into simulations.
    # Its moves cost about 6x the plain recipe's: twice the CPU seconds.
    "nim-budget": ("nim", dict(network_kwargs={"hidden_sizes": [32, 32]}, eval_every=5,
                               search=dict(num_simulations=256, max_nn_evals=64)), 600.0),
}

# The faults `mcgs_jax.benchmarks.fault_sweep` injects.
FAULTS = ("kill", "truncate-step", "delete-step-file", "truncate-metrics", "delete-metrics",
          "truncate-config", "delete-config", "truncate-agent", "delete-agent", "disk-full",
          "second-process")

# mcgs_jax.benchmarks.loop_copies (`mcgs-jax loop-copies`): name ->
# SearchConfig switches, every backup mode, then the solver's loops.
LOOP_COPY_VARIANTS = {mode: dict(backup=mode) for mode in modes.names()}
LOOP_COPY_VARIANTS.update({
    "solver": dict(backup="mcgs", solver=True),
    "bounds": dict(backup="mcgs", solver=True, solver_bounds=True),
})

# Two runs side by side (`mcgs_jax.benchmarks.race`, `mcgs-jax race`): the
# baseline's name in the ladder and the two runs' default names.
RACE_BASELINE = "rollout"
RACE_NAMES = ("ours", "peer")
