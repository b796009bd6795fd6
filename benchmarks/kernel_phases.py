"""Kernel time and launches by phase of the search, read off jax's profiler
on the CPU (`mcgs-jax bench-graph-tax --profile`).

XLA's CPU runtime records one profiler event per thunk it runs (a fusion, a
copy, a loop), named by its HLO instruction. The compiled program's text maps
each instruction to the jax source path that made it, which carries the
engine's named scopes (`descend/select`, `descend/lookup`, `evaluate`,
`expand_and_backup`, ...; self-play adds `reroot`), so the events' durations
and counts (kernel launches) add up by phase. An instruction without a
source path (a copy XLA inserted) takes the phase of the other instructions
of its computation. Loops and
conditionals are not counted themselves (their bodies' thunks are), so
nothing counts twice. The sums are kernel time: launch gaps, the runtime's
own work and the profiler's are not in them, and thunks on the two threads
overlap, so they do not add up to the call's time; they tell which phase a
difference between two programs lies in. The launches depend on the work
alone: two programs that compute the same results on the same inputs are
compared by them exactly, where this machine's timings vary by several
percent.
"""

from __future__ import annotations

import collections
import glob
import os
import re
import shutil
from typing import Callable

import jax

from mcgs_jax.benchmarks import names

# Phases in the order a simulation runs them, then what runs between moves.
PHASES = names.KERNEL_PHASES
# Thunks of these opcodes run others (their time includes their bodies').
_CONTROL = frozenset({"while", "conditional", "call"})
_NOT_RUN = frozenset({"parameter", "constant", "get-tuple-element", "tuple", "bitcast"})


def phase_of(op_name: str) -> str | None:
  """The phase of a jax source path (an instruction's `op_name`).

  Args:
    op_name: e.g. "jit(play)/while/body/.../descend/select/while/body/...".

  Returns:
    One of `PHASES`, or None for an empty path.
  """
  if not op_name:
    return None
  for scope, phase in (("/reroot", "reroot"), ("descend/select", "descent"),
                       ("descend/lookup", "lookup"), ("descend/transition", "transition"),
                       ("/evaluate", "network"), ("(backup)", "backup"),
                       ("expand_and_backup", "expansion")):
    if scope in op_name:
      return phase
  return "other"


_COMPUTATION = re.compile(r"^(?:ENTRY )?%?([\w.\-]+) .*\{\s*$")
_INSTRUCTION = re.compile(r"^\s+(?:ROOT )?%?([\w.\-]+) = .*? ([\w\-]+)\(")
_OP_NAME = re.compile(r'op_name="([^"]*)"')


def module_name(hlo_text: str) -> str:
  """The HLO module's name (the profiler's `hlo_module` of its events).

  Args:
    hlo_text: `jax.stages.Compiled.as_text()`.

  Returns:
    e.g. "jit_play".
  """
  return re.match(r"HloModule ([\w.\-]+)", hlo_text).group(1)


def instruction_phases(hlo_text: str) -> dict[str, str]:
  """Each thunk-making instruction of a compiled program -> its phase.

  Args:
    hlo_text: `jax.stages.Compiled.as_text()`.

  Returns:
    Instruction name -> phase, for every instruction of the non-fused
    computations but loops, conditionals, calls and the free ones
    (parameters, constants, tuples, bitcasts).
  """
  phases, computation, pending = {}, None, []

  def close():
    known = collections.Counter(phase for _, phase in pending if phase)
    fallback = known.most_common(1)[0][0] if known else "other"
    phases.update({name: phase or fallback for name, phase in pending})

  for line in hlo_text.splitlines():
    match = _COMPUTATION.match(line)
    if match and not line.startswith(" "):
      close()
      computation, pending = match.group(1), []
      continue
    match = _INSTRUCTION.match(line)
    if computation is None or match is None or computation.startswith("fused_"):
      continue
    name, opcode = match.groups()
    if opcode in _CONTROL or opcode in _NOT_RUN:
      continue
    op_name = _OP_NAME.search(line)
    pending.append((name, phase_of(op_name.group(1) if op_name else "")))
  close()
  return phases


# The source path of an instruction without one (a copy XLA inserted).
NO_SOURCE = "(no source path)"


def instruction_sources(hlo_text: str) -> dict[str, str]:
  """Each thunk-making instruction of a compiled program -> its jax source
  path without the program's own name (`NO_SOURCE` where it has none).

  Args:
    hlo_text: `jax.stages.Compiled.as_text()`.

  Returns:
    Instruction name -> source path (e.g. "while/body/descend/select/..."),
    for the instructions `instruction_phases` maps.
  """
  sources = dict.fromkeys(instruction_phases(hlo_text), NO_SOURCE)
  for line in hlo_text.splitlines():
    match, op_name = _INSTRUCTION.match(line), _OP_NAME.search(line)
    if match and op_name and match.group(1) in sources:
      sources[match.group(1)] = re.sub(r"^jit\([^)]*\)/", "", op_name.group(1))
  return sources


def _traced(call: Callable[[], object], module: str, directory: str):
  """(instruction name, milliseconds) of each thunk of `module` that one
  call runs, traced with jax's profiler into `directory` (replaced)."""
  shutil.rmtree(directory, ignore_errors=True)
  with jax.profiler.trace(directory):
    jax.block_until_ready(call())
  path = max(glob.glob(os.path.join(directory, "**", "*.xplane.pb"), recursive=True),
             key=os.path.getmtime)
  for plane in jax.profiler.ProfileData.from_file(path).planes:
    for line in plane.lines:
      for event in line.events:
        if dict(event.stats).get("hlo_module") == module:
          yield event.name, event.duration_ns / 1e6


def kernels(call: Callable[[], object], hlo_text: str,
            directory: str) -> tuple[dict[str, float], dict[str, int]]:
  """Kernel milliseconds and launches by phase of one call, traced with
  jax's profiler.

  Args:
    call: runs the compiled program once (already compiled and warm).
    hlo_text: its program's `Compiled.as_text()`.
    directory: a folder for the trace (replaced).

  Returns:
    (ms, launches): phase -> kernel milliseconds, phase -> thunks run, every
    phase of `PHASES`; the events of other programs the call runs (a key
    split) are left out. The launches depend only on the work (the same
    program on the same inputs runs the same thunks), not on the machine.
  """
  phases = instruction_phases(hlo_text)
  totals, launches = dict.fromkeys(PHASES, 0.0), dict.fromkeys(PHASES, 0)
  for name, ms in _traced(call, module_name(hlo_text), directory):
    phase = phases.get(name)
    if phase is not None:
      totals[phase] += ms
      launches[phase] += 1
  return totals, launches


def source_kernels(call: Callable[[], object], hlo_text: str, directory: str,
                   phase: str) -> tuple[dict[str, float], dict[str, int]]:
  """`kernels` of one phase, by jax source path (`instruction_sources`):
  which operations of the phase take its time.

  Args:
    call: runs the compiled program once (already compiled and warm).
    hlo_text: its program's `Compiled.as_text()`.
    directory: a folder for the trace (replaced).
    phase: one of `PHASES`.

  Returns:
    (ms, launches): source path -> kernel milliseconds and thunks run, for
    the paths of the phase's instructions that ran.
  """
  phases, sources = instruction_phases(hlo_text), instruction_sources(hlo_text)
  totals, launches = collections.Counter(), collections.Counter()
  for name, ms in _traced(call, module_name(hlo_text), directory):
    if phases.get(name) == phase:
      totals[sources[name]] += ms
      launches[sources[name]] += 1
  return dict(totals), dict(launches)
