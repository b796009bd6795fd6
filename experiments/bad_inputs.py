"""Bad input tried as a user would: the table of docs/reliability.md.

  mcgs-jax bad-inputs                         # every case, about 2 minutes on 2 cores
  mcgs-jax bad-inputs --cases nan diverging   # the cases whose names hold these words

Each case runs a real `mcgs-jax` command (or a few lines of the library) in
a fresh folder: a misspelt command or flag, a broken config file, a run
folder that is a file, read-only, held or too big for the device, a foreign
data file, a NaN network, a search call the engine cannot search. The table
shows its exit code, the lines on stderr, whether a traceback showed, whether
the run folder changed, and the first line the user sees.
"""

from __future__ import annotations

import sys

from mcgs_jax.learning import cli

# The library, loaded on first use: after the arguments are checked.
bad_inputs = cli.lazy("mcgs_jax.benchmarks.bad_inputs")
measure = cli.lazy("mcgs_jax.benchmarks.measure")


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--cases", nargs="+", help="only the cases whose names hold these words")
  parser.add_argument("--csv", default="results/bad_inputs.csv")
  args = parser.parse_args(argv)
  cases = [c for c in bad_inputs.CASES
           if not args.cases or any(w in c.name for w in args.cases)]
  if not cases:
    raise ValueError(f"no case's name holds {' or '.join(map(repr, args.cases))}")
  rows = []
  for case in cases:
    rows.append(bad_inputs.run_case(case))
    print(f"{case.kind}: {case.name}: exit {rows[-1]['exit_code']}, "
          f"{rows[-1]['stderr_lines']} line(s)", flush=True)
  print(bad_inputs.markdown(rows))
  measure.write_csv(args.csv, rows, bad_inputs.FIELDS)
  print(f"CSV: {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
