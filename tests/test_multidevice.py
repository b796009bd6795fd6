"""Data parallelism on two (virtual) CPU devices, in a subprocess because the
device count is fixed when jax starts."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_two_device_update_equals_one_device():
  # The suite's XLA flags (conftest.py) plus two host devices.
  flags = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
  env = dict(os.environ, XLA_FLAGS=flags.strip(), JAX_PLATFORMS="cpu")
  result = subprocess.run([sys.executable, "-m", "tests.multidevice_check"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  assert "multidevice ok" in result.stdout
