"""Replicas' copies of the model's variables: kept as TF1 kept them, and checked.

Each replica holds its own copy of every (mirrored) variable. In TF1 on a TPU every
Session.run sent the host's value of each variable to every core and wrote replica 0's back
at its end; TF1 with a strategy (Estimator's `train_distribute`) saved and restored replica
0's. What that means here, for the variables a traced TRAIN step writes:

- **synchronized** variables (those a CrossShardOptimizer applied summed gradients to, their
  slots, what the wrapped optimizer asked for while applying them, e.g. BERT's moments, the
  global step) get the same update on every replica, so their copies must stay identical
  (up to rounding, below). `verify()` checks it, before every checkpoint written after a
  step and at the end of train(); a difference is a bug in the program or in this package,
  and raises `ReplicaDriftError` naming the variables before anything is written.
- every **other** variable the step writes (per-replica batch-norm statistics, an optimizer
  not wrapped in CrossShardOptimizer, plain assigns of per-replica values) may differ between
  replicas, as on a TPU. `sync()` gives every replica the value a checkpoint holds: with
  TPU semantics replica 0's, after each loop (TF1's write-back after each Session.run; a
  variable synchronised on read, as Keras's batch-norm statistics, then saves replica 0's
  too); otherwise at the end of train(), replica 0's for a mirrored variable and the
  aggregate (e.g. the replicas' mean) for one synchronised on read, as TF1's strategies saved
  them. So evaluate()/predict()/export after train() in the same process use exactly what a
  fresh process restores from the checkpoint.

Both run as one small program over the strategy's replicas (all-reduces), so they work on
one host, on several workers and on a TPU. The check compares each copy with replica 0's,
element by element; a difference within rounding (the same update computed on two CPU
devices can differ in the last bits) passes, and every replica then takes replica 0's
copy, so rounding never accumulates across checkpoints.
"""
import functools

import tensorflow as tf

from tpu_estimator_compat.tf_internals import distribute
from tpu_estimator_compat.tf_internals import graphs

_READS = frozenset(graphs.RESOURCE_READ_OPS) | {"VarIsInitializedOp", "Identity"}
_NAMES_SHOWN = 10
RELATIVE_TOLERANCE = 1e-5  # of a variable's largest value: more than rounding (see _differs)


class ReplicaDriftError(RuntimeError):
    """Replicas hold different values of variables TF1 kept identical on every replica."""

    def __init__(self, step, names, latest_checkpoint):
        shown = ", ".join(names[:_NAMES_SHOWN])
        more = f" (and {len(names) - _NAMES_SHOWN} more)" if len(names) > _NAMES_SHOWN else ""
        super().__init__(
            f"At global step {step} the replicas hold different values of {len(names)} "
            f"variable(s) that TF1 kept identical on every replica: {shown}{more}. They are "
            "updated through CrossShardOptimizer, so every replica must apply the same "
            "update; something else also changed them with per-replica values (an assign "
            "from the replica's own batch, or a second optimizer not wrapped in "
            "CrossShardOptimizer). Update them only through the CrossShardOptimizer, or "
            "reduce the value first (tf.compat.v1.tpu.cross_replica_sum). Nothing was "
            f"written for this step; the last checkpoint is {latest_checkpoint}.")
        self.step = step
        self.names = list(names)


class ReplicaSync:
    """`verify()` and `sync()` of one traced TRAIN step's variables (module docstring)."""

    def __init__(self, strategy, synchronized, free, tpu_semantics):
        """`synchronized`, `free`: {tf1_name: variable}, each sorted by name."""
        self._strategy = strategy
        self._synchronized = synchronized
        on_read = {n for n, v in free.items()
                   if v.synchronization == tf.VariableSynchronization.ON_READ}
        self._free = free
        self._from_first_replica = [v for n, v in free.items()
                                    if tpu_semantics or n not in on_read]
        self._aggregated = [v for n, v in free.items() if not tpu_semantics and n in on_read]
        self._verified_step = None
        self._copies_differ = tf.function(self._differences, autograph=False)
        self._to_first_replica = tf.function(
            functools.partial(self._broadcast_first, self._from_first_replica), autograph=False)
        self._synchronized_to_first = tf.function(
            functools.partial(self._broadcast_first, list(synchronized.values())),
            autograph=False)
        self._to_aggregate = tf.function(self._assign_aggregates, autograph=False)

    @classmethod
    def for_step(cls, strategy, store, step_graph_ops, captures, synchronized_variables,
                 tpu_semantics):
        """The ReplicaSync of a traced TRAIN step, or None with one replica.

        `step_graph_ops`: the step's ops; `captures`: its graph's (external, internal)
        captures; `synchronized_variables`: what CrossShardOptimizers updated.
        """
        if strategy.num_replicas_in_sync == 1:
            return None
        named = store.model_variables()
        written = _written_variable_names(named, strategy, step_graph_ops, captures)
        synchronized_ids = {id(v) for v in synchronized_variables} | {id(store.global_step)}
        synchronized = {n: v for n, v in sorted(named.items())
                        if id(v) in synchronized_ids and _checkable(v)}
        free = {n: named[n] for n in sorted(written)
                if n not in synchronized and _checkable(named[n])}
        return cls(strategy, synchronized, free, tpu_semantics)

    def sync(self):
        """Gives every replica the checkpoint's value of the variables that may differ."""
        if self._from_first_replica:
            self._to_first_replica()
        if self._aggregated:
            self._to_aggregate()

    def verify(self, step, latest_checkpoint):
        """Raises ReplicaDriftError if the replicas' copies of a synchronized variable
        differ by more than rounding, else gives every replica replica 0's copy (checked
        once per global step)."""
        if not self._synchronized or step == self._verified_step:
            return
        mismatch = self._strategy.experimental_local_results(self._copies_differ())[0]
        names = [n for n, bad in zip(self._synchronized, mismatch.numpy()) if bad]
        if names:
            raise ReplicaDriftError(step, names, latest_checkpoint)
        self._synchronized_to_first()
        self._verified_step = step

    def _differences(self):
        variables = list(self._synchronized.values())

        def replica_fn():
            context = tf.distribute.get_replica_context()
            values = [_summable(v.read_value()) for v in variables]
            firsts = _first_replicas(context, values)
            differs = tf.stack([_differs(value, first) for value, first in zip(values, firsts)])
            return context.all_reduce(tf.distribute.ReduceOp.SUM, tf.cast(differs, tf.int32))
        return self._strategy.run(replica_fn)

    def _assign_aggregates(self):
        for variable in self._aggregated:
            variable.assign(variable.read_value())

    def _broadcast_first(self, variables):
        def replica_fn():
            context = tf.distribute.get_replica_context()
            kept = _first_replicas(context, [_summable(v.read_value()) for v in variables])
            return [v.assign(tf.cast(value, v.dtype)) for v, value in zip(variables, kept)]
        self._strategy.run(replica_fn)


def _first_replicas(context, values):
    """Replica 0's `values` on every replica: an all-reduce to which only replica 0
    contributes (x + 0 + ... + 0 is x, bit for bit)."""
    first = tf.equal(context.replica_id_in_sync_group, 0)
    masked = [tf.where(first, value, tf.zeros_like(value)) for value in values]
    kept = [None] * len(masked)
    by_dtype = {}  # one all-reduce per dtype (a batch of mixed dtypes cannot be packed)
    for index, value in enumerate(masked):
        by_dtype.setdefault(value.dtype, []).append(index)
    for indices in by_dtype.values():
        reduced = context.all_reduce(tf.distribute.ReduceOp.SUM, [masked[i] for i in indices])
        for index, value in zip(indices, reduced):
            kept[index] = value
    return kept


def _differs(value, first):
    """Whether a copy differs from replica 0's by more than rounding: the same update
    computed on two CPU devices can differ in the last bits (vectorised paths depend on
    the memory's alignment), never by RELATIVE_TOLERANCE of the variable's largest value."""
    if not value.dtype.is_floating:
        return tf.reduce_any(tf.not_equal(value, first))
    scale = tf.reduce_max(tf.abs(first)) if first.shape.num_elements() else 0.0
    return tf.reduce_any(tf.abs(value - first) > RELATIVE_TOLERANCE * scale)


def _checkable(variable):
    return variable.dtype.is_floating or variable.dtype.is_integer or variable.dtype == tf.bool


def _summable(value):
    """`value` in a dtype an all-reduce can sum (booleans as int32)."""
    return tf.cast(value, tf.int32) if value.dtype == tf.bool else value


def _written_variable_names(named, strategy, ops, captures):
    """Names of the variables in `named` that some op of `ops` may write (any op taking
    their handle that is not a read)."""
    by_handle = distribute.variable_names_by_handle(named, strategy)
    captured = {internal.op: by_handle.get(id(external))
                for external, internal in captures}
    written = set()
    for op in ops:
        if op.type in _READS:
            continue
        for tensor in op.inputs:
            if tensor.dtype != tf.resource:
                continue
            source = tensor.op
            while source.type == "Identity" and source.inputs:
                source = source.inputs[0].op
            name = captured.get(source)
            if name is not None:
                written.add(name)
    return written
