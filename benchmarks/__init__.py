"""What the benchmark and reproduction commands of `experiments/` measure with.

The commands (`mcgs-jax bench-search`, `bench_selfplay`,
`bench_phases`, `connect4_accuracy`, `device_report`, ...) parse their
arguments and print; the measuring lives here, so that one command can reuse
another's cells (the accelerator report runs the search, self-play and phase
benchmarks) without importing it:
  measure     timing with a compile warm-up, CSV and markdown tables, mctx's
              recurrent_fn over an env, device-event counts of a profile;
  phases      the network+env floor of a search and its phases jitted apart;
  search      search contestants (ours, mctx's) on Connect-4 and their cells;
  selfplay    self-play contestants (ours, mctx's loops) and their runners;
  accuracy    move accuracy on Pons' Connect-4 sets;
  report_*    the accelerator report's plan and sections.

`benchmarks` imports `mcgs_jax`, `envs`, `networks` and `learning`; only
`experiments` imports it.
"""
