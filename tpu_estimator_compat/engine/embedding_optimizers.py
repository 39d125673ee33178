"""The TPU embedding optimizers (`AdagradParameters`...) over mirrored tables.

Each table's gradients are summed over the replicas (and over repeated ids, as the TPU's
gradient accumulation does), then every copy of the table gets the TPU embedding engine's
update of the rows looked up:

    SGD:      table -= lr * g
    Adagrad:  accumulator += g**2;  table -= lr * g / sqrt(accumulator)
    Adam:     m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g**2;
              table -= lr * m / sqrt(v + epsilon**2)   (sum_inside_sqrt; else sqrt(v) + eps)
              no bias correction; lazy (only the rows looked up) unless lazy_adam=False
    FTRL:     TensorFlow's FTRL-proximal (`beta` added to l2 as beta / (2 lr))

then `clip_gradient_min/max` clip the summed gradient and `clip_weight_min/max` the rows.
`lr` is the column's `learning_rate_fn(global_step)` if it has one, else the parameters'.
Slots are named as the original's TPU checkpoints name them, after the table's TF1 name.
"""
import tensorflow as tf

from tpu_estimator_compat.api import embedding_spec

_v1 = tf.compat.v1


def apply_gradients(parameters, tables, grads, global_step):
    """Call in replica context: sums `grads` (one IndexedSlices per `engine.embeddings.Table`
    of `tables`, or None) over the replicas and updates the tables once; returns the op."""
    if parameters.weight_decay_factor:
        raise ValueError(
            "optimization_parameters.weight_decay_factor is not supported by "
            "tpu_estimator_compat's TPU embeddings; leave it None (add the decay to the loss).")
    rule = {embedding_spec.StochasticGradientDescentParameters: _Sgd,
            embedding_spec.AdagradParameters: _Adagrad,
            embedding_spec.AdamParameters: _Adam,
            embedding_spec.FtrlParameters: _Ftrl}[type(parameters)](parameters)
    present = [(table, grad) for table, grad in zip(tables, grads) if grad is not None]
    learning_rates = [table.learning_rate_fn(global_step) if table.learning_rate_fn
                      else parameters.learning_rate for table, _ in present]
    replica_context = tf.distribute.get_replica_context()
    apply_rule = rule.apply
    if isinstance(replica_context.strategy, tf.distribute.MultiWorkerMirroredStrategy):
        # A collective all-reduce needs one shape on every worker and at every step: each
        # replica sends a table-shaped sum of its rows with their lookup counts.
        present = [(table, _rows_and_lookups(grad, table.variable.shape[0]))
                   for table, grad in present]
        def apply_rule(var, summed, lr, *slots):
            return rule.apply(var, _looked_up_rows(summed), lr, *slots)

    def apply_summed(strategy, grads_and_vars):
        summed = _sum_over_replicas(strategy, grads_and_vars)
        updates = []
        for (table, _), grad, lr in zip(present, summed, learning_rates):
            with tf.init_scope():
                slots = [_slot(table, suffix, getattr(parameters, initial) if initial else 0.0)
                         for suffix, initial in rule.SLOTS]
            updates.append(strategy.extended.update(
                table.variable, apply_rule, args=(grad, lr, *slots), group=True))
        return tf.group(updates)

    return replica_context.merge_call(
        apply_summed, args=([(grad, table.variable) for table, grad in present],))


def _sum_over_replicas(strategy, grads_and_vars):
    """The gradients summed over the replicas, on each table's devices.

    In one process the replicas' rows are concatenated on one device and copied to the
    others: TensorFlow's collective all-gather of IndexedSlices fails inside the device loop
    once their number of rows changes from step to step ("Shape mismatch in the collective
    instance"), as the ids of each batch make it; between workers (where it also fails when
    the workers' row counts differ) the gradients arrive dense (`_rows_and_lookups`)."""
    if isinstance(strategy, tf.distribute.MirroredStrategy):
        return tf.distribute.ReductionToOneDevice().batch_reduce(
            tf.distribute.ReduceOp.SUM, grads_and_vars)
    return strategy.extended.batch_reduce_to(tf.distribute.ReduceOp.SUM, grads_and_vars)


def _rows_and_lookups(grad, rows):
    """A replica's gradient of a table of `rows` rows as one dense `[rows, dim + 1]` tensor:
    each row's gradient summed over its lookups, then the number of lookups."""
    if isinstance(grad, tf.IndexedSlices):
        values, ids = grad.values, grad.indices
    else:  # dense: every row
        values, ids = tf.convert_to_tensor(grad), tf.range(rows)
    lookups = tf.ones_like(values[:, :1])
    return tf.math.unsorted_segment_sum(tf.concat([values, lookups], axis=1), ids, rows)


def _looked_up_rows(summed):
    """The gradient rows some replica looked up, from the replicas' `_rows_and_lookups`
    summed: as the concatenated rows of one process give them."""
    ids = tf.reshape(tf.where(summed[:, -1] > 0), [-1])
    return tf.IndexedSlices(tf.gather(summed[:, :-1], ids), ids)


def _slot(table, suffix, initial_value):
    """The slot variable `<table>/<suffix>` (created once, by the engine's variable store)."""
    # A trailing '/' asks the engine's variable store for this exact TF1 name.
    return _v1.Variable(tf.fill(table.variable.shape, tf.constant(initial_value, tf.float32)),
                        trainable=False, name=f"{table.name}/{suffix}/",
                        collections=[_v1.GraphKeys.GLOBAL_VARIABLES])


class _Rule:
    """One optimizer's update of the rows looked up, on one copy of a table."""

    SLOTS = ()  # (suffix of the slot's TF1 name, attribute of its initial value or None)

    def __init__(self, parameters):
        self._parameters = parameters

    def apply(self, var, grad, lr, *slots):
        params = self._parameters
        grad, indices = _summed_by_id(grad)
        if params.clip_gradient_min is not None or params.clip_gradient_max is not None:
            grad = tf.clip_by_value(grad, _bound(params.clip_gradient_min, -1),
                                    _bound(params.clip_gradient_max, 1))
        update = self.update_rows(var, grad, indices, tf.cast(lr, var.dtype), *slots)
        if params.clip_weight_min is None and params.clip_weight_max is None:
            return update
        with tf.control_dependencies([update]):
            rows = tf.clip_by_value(tf.gather(var, indices), _bound(params.clip_weight_min, -1),
                                    _bound(params.clip_weight_max, 1))
            return var.scatter_update(tf.IndexedSlices(rows, indices))

    def update_rows(self, var, grad, indices, lr, *slots):
        raise NotImplementedError


class _Sgd(_Rule):
    def update_rows(self, var, grad, indices, lr):
        return var.scatter_sub(tf.IndexedSlices(lr * grad, indices))


class _Adagrad(_Rule):
    SLOTS = (("Adagrad", "initial_accumulator"),)

    def update_rows(self, var, grad, indices, lr, accumulator):
        rows = tf.gather(accumulator, indices) + tf.square(grad)
        with tf.control_dependencies([accumulator.scatter_update(tf.IndexedSlices(rows, indices))]):
            return var.scatter_sub(tf.IndexedSlices(lr * grad * tf.math.rsqrt(rows), indices))


class _Adam(_Rule):
    SLOTS = (("Adam/m", None), ("Adam/v", None))

    def update_rows(self, var, grad, indices, lr, m, v):
        params = self._parameters
        if not params.lazy_adam:  # every row: zero gradient where not looked up
            grad = tf.scatter_nd(tf.expand_dims(indices, -1), grad, tf.shape(var))
            indices = tf.range(tf.shape(var)[0], dtype=indices.dtype)
        m_rows = params.beta1 * tf.gather(m, indices) + (1 - params.beta1) * grad
        v_rows = params.beta2 * tf.gather(v, indices) + (1 - params.beta2) * tf.square(grad)
        if params.sum_inside_sqrt:
            step = lr * m_rows * tf.math.rsqrt(v_rows + params.epsilon ** 2)
        else:
            step = lr * m_rows / (tf.sqrt(v_rows) + params.epsilon)
        with tf.control_dependencies([m.scatter_update(tf.IndexedSlices(m_rows, indices)),
                                      v.scatter_update(tf.IndexedSlices(v_rows, indices))]):
            return var.scatter_sub(tf.IndexedSlices(step, indices))


class _Ftrl(_Rule):
    SLOTS = (("Ftrl", "initial_accumulator_value"), ("Ftrl_1", "initial_linear_value"))

    def update_rows(self, var, grad, indices, lr, accumulator, linear):
        params = self._parameters
        l2 = params.l2_regularization_strength + params.beta / (2.0 * lr)
        return tf.raw_ops.ResourceSparseApplyFtrlV2(
            var=var.handle, accum=accumulator.handle, linear=linear.handle, grad=grad,
            indices=indices, lr=lr, l1=tf.cast(params.l1_regularization_strength, var.dtype),
            l2=tf.cast(l2, var.dtype), l2_shrinkage=tf.constant(0.0, var.dtype),
            lr_power=tf.cast(params.learning_rate_power, var.dtype),
            multiply_linear_by_lr=params.multiply_linear_by_learning_rate)


def _summed_by_id(grad):
    """(rows, unique ids) of a gradient, the rows of repeated ids summed."""
    if not isinstance(grad, tf.IndexedSlices):
        grad = tf.convert_to_tensor(grad)
        return grad, tf.range(tf.shape(grad)[0], dtype=tf.int64)
    ids, positions = tf.unique(grad.indices)
    return tf.math.unsorted_segment_sum(grad.values, positions, tf.size(ids)), ids


def _bound(value, sign):
    return value if value is not None else sign * float("inf")
