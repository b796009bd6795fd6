"""The program fingerprints that show a change is a pure move."""

from mcgs_jax.benchmarks import program_hashes


def test_a_fingerprint_is_stable_and_tells_programs_apart():
  default = program_hashes.program_hash({}, num_simulations=4)
  assert program_hashes.program_hash({}, num_simulations=4) == default
  assert program_hashes.program_hash({"solver": True}, num_simulations=4) != default
  assert set(program_hashes.CASES) >= {"default", "gumbel", "solver", "rave"}
