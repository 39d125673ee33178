"""`CrossShardOptimizer` and `cross_replica_sum` on tf.distribute replicas.

Under a tf.distribute strategy a v1 optimizer's `apply_gradients` already SUMS gradients
across replicas (it all-reduces them in a merge call). The original CrossShardOptimizer
scaled the loss by 1/num_shards in `compute_gradients` (MEAN) and summed gradients with
`CrossReplicaSum` in `apply_gradients`; we keep exactly that split, with the strategy's
all-reduce doing the sum. So code that calls `tf.gradients` and then `apply_gradients`
(BERT does) still gets summed gradients, as it did on TPU.
"""
import tensorflow as tf

_v1 = tf.compat.v1
_REDUCTIONS = (_v1.losses.Reduction.SUM, _v1.losses.Reduction.MEAN)
_usage = {"used": False}  # set during tracing, read by the engine (replicas run in threads)


def _num_replicas():
    return tf.distribute.get_strategy().num_replicas_in_sync


def _validate_group_assignment(group_assignment):
    if group_assignment is None:
        return
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
    if len(group_assignment) != 1:
        raise NotImplementedError(
            f"group_assignment with {len(group_assignment)} subgroups is not supported by "
            "tpu_estimator_compat: gradients are reduced over all replicas. Pass "
            "group_assignment=None (one group of all replicas).")


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
        """Scales the loss by 1/num_replicas for MEAN, then computes this replica's grads."""
        _validate_group_assignment(self._group_assignment)
        mark_cross_shard_optimizer_used()
        num_replicas = _num_replicas()
        if num_replicas > 1 and self._reduction == _v1.losses.Reduction.MEAN:
            loss = loss * (1.0 / num_replicas)
        return self._opt.compute_gradients(loss, var_list=var_list, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Applies the gradients summed across replicas (the strategy's all-reduce)."""
        mark_cross_shard_optimizer_used()
        return self._opt.apply_gradients(grads_and_vars, global_step, name)

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self):
        return self._opt.variables()


def cross_replica_sum(x, group_assignment=None, name=None):
    """Sums `x` across replicas (replica context); the identity with one replica."""
    del name
    _validate_group_assignment(group_assignment)
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return tf.identity(x)
    return context.all_reduce(tf.distribute.ReduceOp.SUM, x)


def mark_cross_shard_optimizer_used():
    _usage["used"] = True


def reset_cross_shard_optimizer_usage():
    _usage["used"] = False


def cross_shard_optimizer_used():
    return _usage["used"]
