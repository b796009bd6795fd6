import mcgs_jax
from experiments import loop_copies
for sw in [dict(leaves_per_step=2), dict(max_nn_evals=6), dict(rave=True), dict(eps_greedy=0.1), dict(progressive_pruning="hard"), dict(root_policy="gumbel"), dict(expansion_policy="visits", expansion_threshold=2)]:
  try:
    cfg = mcgs_jax.SearchConfig(num_simulations=8, **sw)
    print(sw, dict(loop_copies.count_loop_copies(cfg, 3)), flush=True)
  except Exception as e:
    print(sw, "ERR", e)
