"""A ring replay buffer of training examples, and symmetry augmentation.

Self-play emits examples in fixed-size batches [M] with a mask `valid` bool[M]
(only positions whose game has ended know their target value), so `add`
writes only the valid rows. We do not use flashbax (0.1.3): its item buffer
writes every row of a batch and advances its ring by the static batch size,
so the invalid rows of a masked batch would overwrite real examples and be
sampled.

The buffer is a plain pytree of arrays (orbax checkpoints it as it is) and
every function is pure and jittable; `capacity` and the batch sizes are
static (array shapes), the counters are traced. Filled slots are always the
first `size` ones: the ring starts at slot 0 and writes consecutive slots.
"""

import chex
import jax
import jax.numpy as jnp
import numpy as np

from mcgs_jax.envs import base
from mcgs_jax.learning import example as example_lib


@chex.dataclass(frozen=True)
class ReplayBuffer:
  """Up to C examples in a ring; the oldest is overwritten first.

  Attributes:
    data: `Example` with arrays [C, ...]; slots [0, size) are filled.
    size: int32 [], the number of filled slots, min(total_added, C).
    next_index: int32 [], the slot the next example goes to (the oldest one
      once the buffer is full).
    total_added: int32 [], examples added since `init` (overwritten ones
      included; int32 wraps after 2^31 examples).
  """
  data: example_lib.Example
  size: chex.Array
  next_index: chex.Array
  total_added: chex.Array

  @property
  def capacity(self) -> int:
    """C, the number of slots (static)."""
    return jax.tree.leaves(self.data)[0].shape[0]


def init(example_item: example_lib.Example, capacity: int) -> ReplayBuffer:
  """An empty buffer for examples shaped like `example_item`.

  Args:
    example_item: ONE example (no batch dim); only its shapes and dtypes are
      read, so `jax.ShapeDtypeStruct` leaves (`jax.eval_shape`) do as well.
    capacity: C, the number of examples kept.

  Returns:
    A `ReplayBuffer` with zero-filled data [C, ...] and zero counters.

  Raises:
    ValueError: if `capacity` is not a positive int.
  """
  capacity = _positive_int("capacity", capacity)
  data = jax.tree.map(lambda x: jnp.zeros((capacity,) + tuple(x.shape), x.dtype), example_item)
  zero = jnp.zeros((), jnp.int32)
  return ReplayBuffer(data=data, size=zero, next_index=zero, total_added=zero)


def add(buffer: ReplayBuffer, items: example_lib.Example, valid: jax.Array) -> ReplayBuffer:
  """Writes the valid rows of `items`, in order, to consecutive ring slots.

  When more than C rows are valid only the newest C are kept, so the result
  is the same as adding the valid rows one at a time.

  Args:
    buffer: the buffer, capacity C.
    items: `Example` with arrays [M, ...], the per-row shapes and dtypes of
      `buffer.data`; any M (M > C included).
    valid: bool[M], the rows to add.

  Returns:
    The updated buffer.

  Raises:
    ValueError: if `items` or `valid` do not match the buffer's layout.
  """
  valid = jnp.asarray(valid)
  if valid.ndim != 1 or valid.dtype != jnp.bool_:
    raise ValueError(f"valid must be bool[M], got {valid.dtype}{list(valid.shape)}")
  _check_rows(buffer, items, valid.shape[0])
  capacity = buffer.capacity
  count = valid.sum(dtype=jnp.int32)
  # rank: the row's position among the valid rows.
  rank = jnp.cumsum(valid, dtype=jnp.int32) - 1
  # Of the valid rows beyond capacity only the newest C survive: their slots
  # are distinct and the older rows would be overwritten in the same call.
  keep = valid & (rank >= count - capacity)
  # Rows not kept go to distinct slots past the end, which the scatter drops;
  # with every index distinct the scatter needs no conflict handling.
  past_end = capacity + jnp.arange(valid.shape[0], dtype=jnp.int32)
  slot = jnp.where(keep, (buffer.next_index + rank) % capacity, past_end)
  data = jax.tree.map(
      lambda stored, new: stored.at[slot].set(new, mode="drop", unique_indices=True),
      buffer.data, items)
  return ReplayBuffer(
      data=data,
      size=jnp.minimum(buffer.size + count, capacity),
      next_index=(buffer.next_index + count) % capacity,
      total_added=buffer.total_added + count,
  )


def sample(buffer: ReplayBuffer, rng: jax.Array,
           batch_size: int) -> tuple[example_lib.Example, jax.Array]:
  """Draws `batch_size` filled rows uniformly, with replacement.

  An empty buffer cannot raise under jit (its size is traced): it returns its
  zero rows with weight 0, so a loss weighted by `weights` ignores them.

  Args:
    buffer: the buffer.
    rng: PRNG key.
    batch_size: B, static.

  Returns:
    (items, weights): `Example` [B, ...] and f32[B], all 1 when the buffer
    holds an example, all 0 when it is empty.

  Raises:
    ValueError: if `batch_size` is not a positive int.
  """
  batch_size = _positive_int("batch_size", batch_size)
  slots = jax.random.randint(rng, (batch_size,), 0, jnp.maximum(buffer.size, 1))
  items = jax.tree.map(lambda stored: stored[slots], buffer.data)
  weights = jnp.broadcast_to(buffer.size > 0, (batch_size,)).astype(jnp.float32)
  return items, weights


def augment(env: base.Env, rng: jax.Array, items: example_lib.Example) -> example_lib.Example:
  """Applies an independent, uniformly random symmetry of `env` to each row.

  Observation, policy and legal mask are transformed together
  (`env.symmetry`), and the opponent policy where there is one; player and
  value are unchanged. Under `jax.jit`, pass
  `env` as a static argument.

  Args:
    env: the game; with `env.num_symmetries == 1` the items are returned as
      they are.
    rng: PRNG key.
    items: `Example` with arrays [N, ...].

  Returns:
    `Example` [N, ...], transformed.
  """
  if env.num_symmetries == 1:
    return items
  num_rows = items.policy.shape[0]
  chex.assert_shape(items.legal_action_mask, (num_rows, env.num_actions))
  chex.assert_shape(items.policy, (num_rows, env.num_actions))
  index = jax.random.randint(rng, (num_rows,), 0, env.num_symmetries)
  if items.opponent_policy is not None:
    # A symmetry permutes the actions the same way in the next position.
    _, opponent, _ = jax.vmap(env.symmetry)(index, items.observation, items.opponent_policy,
                                            items.legal_action_mask)
    items = items.replace(opponent_policy=opponent)
  observation, policy, legal = jax.vmap(env.symmetry)(
      index, items.observation, items.policy, items.legal_action_mask)
  return items.replace(observation=observation, policy=policy, legal_action_mask=legal)


def _check_rows(buffer: ReplayBuffer, items: example_lib.Example, num_rows: int) -> None:
  """Raises ValueError unless `items` is `buffer.data`'s layout with [num_rows]
  leading rows."""
  if jax.tree.structure(items) != jax.tree.structure(buffer.data):
    raise ValueError(f"items must have the buffer's structure {jax.tree.structure(buffer.data)}, "
                     f"got {jax.tree.structure(items)}")
  paths = jax.tree_util.tree_flatten_with_path(buffer.data)[0]
  for (path, stored), new in zip(paths, jax.tree.leaves(items)):
    expected = (num_rows,) + stored.shape[1:]
    if tuple(new.shape) != expected or new.dtype != stored.dtype:
      raise ValueError(f"items{jax.tree_util.keystr(path)} must be {stored.dtype}{list(expected)} "
                       f"(rows as the buffer's, [M] as valid's), got {new.dtype}{list(new.shape)}")


def _positive_int(name: str, value) -> int:
  """`value` as an int; ValueError unless it is a positive (Python or numpy)
  integer."""
  if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
    raise ValueError(f"{name} must be a positive int, got {value!r}")
  return int(value)
