"""The README's first API example runs as written."""

import pathlib
import re

import numpy as np

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs():
  blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
  namespace = {}
  exec(compile(blocks[0], "README.md", "exec"), namespace)
  out = namespace["out"]
  assert out.action.shape == (8,)
  np.testing.assert_allclose(np.asarray(out.action_weights).sum(-1), 1.0, rtol=1e-5)
  assert np.all(np.asarray(out.stats.simulations) == 200)
