"""The accelerator report's training section: one update of the Connect-4 recipe's network
on synthetic examples, timed per batch size.
"""

import functools
import math
import statistics

import jax
import jax.numpy as jnp

from mcgs_jax import networks
from mcgs_jax.benchmarks import measure
from mcgs_jax.benchmarks import report_plan
from mcgs_jax.learning import config as config_lib
from mcgs_jax.learning import example as example_lib
from mcgs_jax.learning import trainer


def synthetic_examples(rng: jax.Array, batch: int) -> tuple[example_lib.Example, jax.Array]:
  """A batch of random Connect-4 training examples and their weights.

  Args:
    rng: a PRNG key.
    batch: B.

  Returns:
    (Example [B], f32[B] weights of 1).
  """
  obs_rng, policy_rng, value_rng = jax.random.split(rng, 3)
  examples = example_lib.Example(
      observation=jax.random.bernoulli(obs_rng, 0.3, (batch,) + report_plan.OBSERVATION_SHAPE),
      legal_action_mask=jnp.ones((batch, report_plan.NUM_ACTIONS), bool),
      policy=jax.nn.softmax(jax.random.normal(policy_rng, (batch, report_plan.NUM_ACTIONS))),
      player=jnp.zeros((batch,), jnp.int32), value=jax.random.randint(value_rng, (batch,), -1,
                                                                      2).astype(jnp.float32))
  return examples, jnp.ones((batch,), jnp.float32)


def training_section(plan: report_plan.Plan, net: report_plan.ReportNetwork,
                     budget_s: float) -> tuple[list[dict], list[dict]]:
  """Section 5: `trainer.update` steps per second on the ResNet.

  The optimizer is `TrainConfig`'s default (Adam, its learning rate and
  weight decay), built as `mcgs_jax.learning.loop` builds it; the loss AlphaZero's.

  Args:
    plan: the Plan.
    net: the ResNet.
    budget_s: the section's seconds.

  Returns:
    (rows of `TRAINING_FIELDS`, skipped).
  """
  deadline = report_plan.clock() + budget_s
  defaults = config_lib.TrainConfig()
  optimizer = networks.make_optimizer(defaults.learning_rate, defaults.weight_decay,
                                      kind=defaults.optimizer)
  opt_state = optimizer.init(net.params["params"])
  update = jax.jit(
      functools.partial(trainer.update, network=net.module, optimizer=optimizer,
                        loss_config=trainer.LossConfig(kind=defaults.loss)))
  rows, skipped, last_s = [], [], 0.0
  for batch in plan.training_batches:
    cell = f"{net.description} batch {batch}"
    left = min(deadline - report_plan.clock(), plan.max_seconds)
    if left <= 0 or last_s > left:
      skipped.append(
          report_plan.skip(
              "training", cell, f"predicted {last_s:.0f} s > "
              f"{max(left, 0):.0f} s left of the budget"))
      continue
    cell_start = report_plan.clock()
    examples, weights = synthetic_examples(jax.random.key(batch), batch)
    try:
      timing = measure.compile_and_time(update, (net.params, opt_state, examples, weights),
                                        plan.repeats, left)
    except Exception as error:  # pylint: disable=broad-except
      skipped.append(report_plan.skip("training", cell, report_plan.failure(error)))
      continue
    last_s = report_plan.clock() - cell_start
    row = dict(network=net.description, batch=batch, status="ok", compile_s=timing.compile_s,
               repeats=len(timing.times), median_ms=math.nan, examples_per_s=math.nan)
    if timing.times:
      seconds = statistics.median(timing.times)
      row.update(median_ms=1e3 * seconds, examples_per_s=batch / seconds)
    else:
      row["status"] = f"skipped (first step {timing.first_call_s:.0f} s over the budget)"
      skipped.append(report_plan.skip("training", cell, row["status"]))
    rows.append(row)
    print(f"  {cell:<30} {row['median_ms']:10.2f} ms/step  compile {timing.compile_s:.1f} s",
          flush=True)
  return rows, skipped
