"""`CrossShardOptimizer` and `cross_replica_sum` on tf.distribute replicas, and how v1
optimizers apply gradients on replicas.

TF 1.15's CrossShardOptimizer scaled the loss by 1/num_shards in `compute_gradients` (MEAN)
and, in `apply_gradients`, summed every gradient across replicas (`CrossReplicaSum`) BEFORE
calling the wrapped optimizer's `apply_gradients`, whatever that optimizer overrides. Ours
does the same with the strategy's all-reduce. So code that calls `tf.gradients` and then
`apply_gradients` (BERT does) gets summed gradients, as on a TPU, and an optimizer that
overrides `apply_gradients` with plain assigns (BERT's AdamWeightDecay, LAMB, Adafactor)
updates every replica's copy with the same summed gradients.

A stock v1 optimizer under a tf.distribute strategy sums gradients across replicas itself
(in a merge call). `v1_apply_gradients(per_replica)` is what `tf.compat.v1.train.Optimizer.
apply_gradients` becomes while a model is traced: it skips that sum when the gradients were
already summed (inside CrossShardOptimizer), and, with `per_replica` (TPU semantics), for
an optimizer not wrapped in CrossShardOptimizer: each replica then applies its own
gradients to its own copy, as each TPU core did in TF1 (`replica_sync.py` makes every copy
replica 0's after each loop, as TF1 wrote back replica 0's values after each Session.run).

The variables a CrossShardOptimizer applies gradients to, and their slots, are recorded
while tracing (`synchronized_variables()`): TF1 kept them identical on every replica, and
the engine checks that they are.
"""
import contextlib
import threading

import tensorflow as tf

_v1 = tf.compat.v1
_REDUCTIONS = (_v1.losses.Reduction.SUM, _v1.losses.Reduction.MEAN)
_usage = {"used": False}  # set during tracing, read by the engine (replicas run in threads)
_synchronized = []  # (optimizer, variables) of each CrossShardOptimizer.apply_gradients traced
_applying_summed = threading.local()  # set while a replica applies gradients already summed
_stock_apply_gradients = _v1.train.Optimizer.apply_gradients


def _num_replicas():
    return tf.distribute.get_strategy().num_replicas_in_sync


def _validate_group_assignment(group_assignment):
    """The size of each subgroup (all replicas without `group_assignment`)."""
    if group_assignment is None:
        return _num_replicas()
    num_replicas = _num_replicas()
    members = sorted(r for group in group_assignment for r in group)
    if members != list(range(num_replicas)):
        raise ValueError(
            f"group_assignment must be a permutation of range({num_replicas}); got "
            f"{group_assignment}.")
    if len({len(group) for group in group_assignment}) != 1:
        raise ValueError(
            "The size of each subgroup in group_assignment must be equal; got "
            f"{group_assignment}.")
    return len(group_assignment[0])


def _sum_over_subgroups(context, values, group_assignment):
    """Each replica's `values` summed over the replicas of its subgroup (TF1's
    CrossReplicaSum with a group_assignment): every replica's values are gathered, and each
    replica adds up its subgroup's rows."""
    membership = [[0.0] * context.num_replicas_in_sync for _ in range(
        context.num_replicas_in_sync)]
    for group in group_assignment:
        for replica in group:
            for member in group:
                membership[replica][member] = 1.0
    weights = tf.gather(tf.constant(membership), context.replica_id_in_sync_group)
    gathered = context.all_gather([tf.convert_to_tensor(v)[tf.newaxis] for v in values],
                                  axis=0)
    return [tf.tensordot(tf.cast(weights, g.dtype), g, axes=1) for g in gathered]


class CrossShardOptimizer(_v1.train.Optimizer):
    """An optimizer that averages (MEAN) or sums (SUM) gradients across replicas."""

    def __init__(self, opt, reduction=_v1.losses.Reduction.MEAN,
                 name="CrossShardOptimizer", group_assignment=None):
        if reduction not in _REDUCTIONS:
            raise ValueError(
                f"Argument `reduction` should be one of {_REDUCTIONS}. Received: {reduction}")
        if not isinstance(opt, _v1.train.Optimizer):
            raise TypeError(
                "CrossShardOptimizer only works with tf.compat.v1.train.Optimizer and not "
                f"Keras Optimizer. Received: {opt}. Use a v1 optimizer such as "
                "tf.compat.v1.train.AdamOptimizer.")
        super().__init__(use_locking=False, name=name)
        self._opt = opt
        self._reduction = reduction
        self._group_assignment = group_assignment

    def compute_gradients(self, loss, var_list=None, **kwargs):
        """Scales the loss by 1/(replicas in the subgroup) for MEAN, then computes this
        replica's grads."""
        subgroup_size = _validate_group_assignment(self._group_assignment)
        mark_cross_shard_optimizer_used()
        if _num_replicas() > 1 and self._reduction == _v1.losses.Reduction.MEAN:
            loss = loss * (1.0 / subgroup_size)
        return self._opt.compute_gradients(loss, var_list=var_list, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Sums each gradient across replicas (of the subgroup), then calls the wrapped
        `apply_gradients`."""
        _validate_group_assignment(self._group_assignment)
        mark_cross_shard_optimizer_used()
        grads_and_vars = _summed_across_replicas(list(grads_and_vars), self._group_assignment)
        subgroups = _has_subgroups(self._group_assignment)
        if not subgroups:  # subgroups' copies differ, as in TF1
            _synchronized.append((self._opt, [v for g, v in grads_and_vars if g is not None]))
        previous = getattr(_applying_summed, "value", None)
        _applying_summed.value = "subgroups" if subgroups else "all replicas"
        try:
            return self._opt.apply_gradients(grads_and_vars, global_step, name)
        finally:
            _applying_summed.value = previous

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self):
        return self._opt.variables()


def _has_subgroups(group_assignment):
    return group_assignment is not None and len(group_assignment) > 1


def _summed_across_replicas(grads_and_vars, group_assignment):
    """`grads_and_vars` with every gradient summed across the replicas (one all-reduce), or
    across the replicas of each subgroup of `group_assignment`."""
    context = tf.distribute.get_replica_context()
    present = [index for index, (grad, _) in enumerate(grads_and_vars) if grad is not None]
    if context is None or context.num_replicas_in_sync == 1 or not present:
        return grads_and_vars
    grads = [grads_and_vars[index][0] for index in present]
    if _has_subgroups(group_assignment):
        summed = _sum_over_subgroups(context, grads, group_assignment)
    else:
        summed = context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
    result = list(grads_and_vars)
    for index, grad in zip(present, summed):
        result[index] = (grad, grads_and_vars[index][1])
    return result


def v1_apply_gradients(per_replica):
    """`tf.compat.v1.train.Optimizer.apply_gradients` while a model is traced: no second sum
    of gradients CrossShardOptimizer summed, and with `per_replica` (TPU semantics) no sum
    at all: each replica applies its own gradients (see the module docstring)."""
    def apply_gradients(self, grads_and_vars, global_step=None, name=None,
                        skip_gradients_aggregation=False):
        skip = (skip_gradients_aggregation or per_replica
                or getattr(_applying_summed, "value", None) is not None)
        return _stock_apply_gradients(self, grads_and_vars, global_step, name,
                                      skip_gradients_aggregation=skip)
    return apply_gradients


def cross_replica_sum(x, group_assignment=None, name=None):
    """Sums `x` across replicas, or across each subgroup's replicas (replica context); the
    identity with one replica."""
    del name
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return tf.identity(x)
    _validate_group_assignment(group_assignment)
    if _has_subgroups(group_assignment):
        return _sum_over_subgroups(context, [x], group_assignment)[0]
    return context.all_reduce(tf.distribute.ReduceOp.SUM, x)


def mark_cross_shard_optimizer_used():
    _usage["used"] = True


def reset_cross_shard_optimizer_usage():
    _usage["used"] = False
    _synchronized.clear()


def note_variable_requested(variable):
    """Called by the variable store for every variable model code asks for: one asked for
    while a CrossShardOptimizer applies gradients summed over all replicas (BERT's
    AdamWeightDecay creates its moments there with get_variable) is synchronized too."""
    if getattr(_applying_summed, "value", None) == "all replicas":
        _synchronized.append((None, [variable]))


def synchronized_variables():
    """The variables CrossShardOptimizers applied summed gradients to since the last reset,
    with their slots and the variables asked for while applying them: identical on every
    replica in TF1."""
    found = []
    for optimizer, variables in _synchronized:
        found.extend(variables)
        for variable in variables if optimizer is not None else ():
            for slot_name in optimizer.get_slot_names():
                slot = optimizer.get_slot(variable, slot_name)
                if slot is not None:
                    found.append(slot)
    return found


def cross_shard_optimizer_used():
    return _usage["used"]
