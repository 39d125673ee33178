"""TF 1.x's `tf.contrib.opt` optimizers that TPU programs use, for v1 graphs: `LARSOptimizer`,
`LazyAdamOptimizer` and `MovingAverageOptimizer` (the decoupled weight decay ones are in
`weight_decay.py`). Written from TF 1.15's documented behaviour, with its slot and variable
names, so that TF1 checkpoints load:

- `LARSOptimizer` (You et al., "Large Batch Training of Convolutional Networks"): for each
  dense variable not matched by `skip_list`,
  `trust = eeta * |w| / (|g| + weight_decay * |w| + epsilon)` (1 when |w| or |g| is 0),
  `g <- g + weight_decay * w`, then momentum with learning rate 1 on `g * lr * trust`:
  `m <- momentum * m + g * lr * trust; w <- w - m` (Nesterov: `w <- w - (g * lr * trust +
  momentum * m)`). Variables of `skip_list` (any of its strings in the variable's name) get
  plain momentum on `g * lr`; sparse gradients plain momentum too. Slot: `<var>/<name>`.
- `LazyAdamOptimizer`: Adam, but a sparse gradient updates only the rows of `m`, `v` and the
  variable that it touches.
- `MovingAverageOptimizer`: the wrapped optimizer's update, then (after it, or at the same
  time with `sequential_update=False`) an `ExponentialMovingAverage` of the updated
  variables; `swapping_saver()` saves each average under its variable's name and the
  variable under the average's, so that a plain Saver restoring the checkpoint loads the
  averages.
"""
import tensorflow as tf

from tpu_estimator_compat.tf_internals import training as tf_training

_v1 = tf.compat.v1


class LARSOptimizer(_v1.train.Optimizer):
    """Layer-wise Adaptive Rate Scaling (TF 1.x's `tf.contrib.opt.LARSOptimizer`)."""

    def __init__(self, learning_rate, momentum=0.9, weight_decay=0.0001, eeta=0.001,
                 epsilon=0.0, name="LARSOptimizer", skip_list=None, use_nesterov=False):
        if momentum < 0.0:
            raise ValueError(f"momentum should be positive: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"weight_decay should be positive: {weight_decay}")
        super().__init__(use_locking=False, name=name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._weight_decay = weight_decay
        self._eeta = eeta
        self._epsilon = epsilon
        self._skip_list = skip_list
        self._use_nesterov = use_nesterov
        self._learning_rate_tensor = self._momentum_tensor = None

    def _create_slots(self, var_list):
        for var in var_list:
            self._zeros_slot(var, "momentum", self._name)

    def _prepare(self):
        def tensor(value, name):
            return tf.convert_to_tensor(value() if callable(value) else value, name=name)
        self._learning_rate_tensor = tensor(self._learning_rate, "learning_rate")
        self._momentum_tensor = tensor(self._momentum, "momentum")

    def _skipped(self, var):
        return bool(self._skip_list) and any(part in var.name for part in self._skip_list)

    def _scaled_step(self, grad, var):
        """The step momentum accumulates for `var`: `(grad + weight_decay * var) * lr * trust`,
        or `grad * lr` for a variable of `skip_list`."""
        dtype = var.dtype.base_dtype
        learning_rate = tf.cast(self._learning_rate_tensor, dtype)
        if self._skipped(var):
            return grad * learning_rate
        w_norm = tf.norm(var, ord=2)
        g_norm = tf.norm(grad, ord=2)
        trust = tf.where(
            w_norm > 0,
            tf.where(g_norm > 0,
                     self._eeta * w_norm / (g_norm + self._weight_decay * w_norm + self._epsilon),
                     tf.ones_like(w_norm)),
            tf.ones_like(w_norm))
        return (grad + self._weight_decay * var) * learning_rate * trust

    def _momentum_args(self, var):
        return {"lr": tf.constant(1.0, var.dtype.base_dtype),
                "momentum": tf.cast(self._momentum_tensor, var.dtype.base_dtype),
                "use_locking": False, "use_nesterov": self._use_nesterov}

    def _apply_dense(self, grad, var):
        return tf.raw_ops.ApplyMomentum(
            var=var, accum=self.get_slot(var, "momentum"), grad=self._scaled_step(grad, var),
            **self._momentum_args(var))

    def _resource_apply_dense(self, grad, var):
        return tf.raw_ops.ResourceApplyMomentum(
            var=var.handle, accum=self.get_slot(var, "momentum").handle,
            grad=self._scaled_step(grad, var), **self._momentum_args(var))

    def _sparse_momentum_args(self, var):
        dtype = var.dtype.base_dtype
        return {"lr": tf.cast(self._learning_rate_tensor, dtype),
                "momentum": tf.cast(self._momentum_tensor, dtype),
                "use_locking": self._use_locking, "use_nesterov": self._use_nesterov}

    def _apply_sparse(self, grad, var):
        return tf.raw_ops.SparseApplyMomentum(
            var=var, accum=self.get_slot(var, "momentum"), grad=grad.values,
            indices=grad.indices, **self._sparse_momentum_args(var)).op

    def _resource_apply_sparse(self, grad, var, indices):
        return tf.raw_ops.ResourceSparseApplyMomentum(
            var=var.handle, accum=self.get_slot(var, "momentum").handle, grad=grad,
            indices=indices, **self._sparse_momentum_args(var))


class LazyAdamOptimizer(_v1.train.AdamOptimizer):
    """Adam whose sparse updates touch only the gradient's rows of `m`, `v` and the variable
    (TF 1.x's `tf.contrib.opt.LazyAdamOptimizer`)."""

    def _apply_sparse(self, grad, var):
        return self._apply_rows(grad.values, var, grad.indices)

    def _resource_apply_sparse(self, grad, var, indices):
        return self._apply_rows(grad, var, indices)

    def _apply_rows(self, grad, var, indices):
        """Adam on the rows `indices` (unique: the base class sums duplicates first)."""
        dtype = var.dtype.base_dtype
        beta1_power, beta2_power = (tf.cast(p, dtype) for p in self._get_beta_accumulators())
        lr_t, beta1_t, beta2_t, epsilon_t = (
            tf.cast(t, dtype) for t in (self._lr_t, self._beta1_t, self._beta2_t, self._epsilon_t))
        learning_rate = lr_t * tf.sqrt(1 - beta2_power) / (1 - beta1_power)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_rows = beta1_t * tf.gather(m, indices) + (1 - beta1_t) * grad
        v_rows = beta2_t * tf.gather(v, indices) + (1 - beta2_t) * tf.square(grad)
        updates = [_v1.scatter_update(m, indices, m_rows, use_locking=self._use_locking),
                   _v1.scatter_update(v, indices, v_rows, use_locking=self._use_locking)]
        step = learning_rate * m_rows / (tf.sqrt(v_rows) + epsilon_t)
        updates.append(_v1.scatter_sub(var, indices, step, use_locking=self._use_locking))
        return tf.group(*updates)


class MovingAverageOptimizer(_v1.train.Optimizer):
    """An optimizer keeping an exponential moving average of the variables it updates (TF
    1.x's `tf.contrib.opt.MovingAverageOptimizer`); see the module docstring."""

    def __init__(self, opt, average_decay=0.9999, num_updates=None, sequential_update=True):
        super().__init__(use_locking=False, name="MovingAverageOptimizer")
        self._optimizer = opt
        self._ema = _v1.train.ExponentialMovingAverage(average_decay, num_updates=num_updates)
        self._swapped_variable_name_map = None
        self._sequential_update = sequential_update

    def compute_gradients(self, *args, **kwargs):
        return self._optimizer.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = list(grads_and_vars)
        train_op = self._optimizer.apply_gradients(grads_and_vars, global_step=global_step,
                                                   name=name)
        var_list = [var for grad, var in grads_and_vars if grad is not None]
        if self._sequential_update:
            with tf.control_dependencies([train_op]):
                average_op = self._ema.apply(var_list)
        else:
            average_op = self._ema.apply(var_list)
        self._swapped_variable_name_map = {}
        for var in var_list:
            average = self._ema.average(var)
            self._swapped_variable_name_map[var.op.name] = average.op.name
            self._swapped_variable_name_map[average.op.name] = var.op.name
        return tf.group(train_op, average_op, name="train_with_avg")

    def swapping_saver(self, var_list=None, name="swapping_saver", **kwargs):
        """A `tf.train.Saver` saving each moving average under its variable's name (and the
        variable under the average's); call it after `minimize` / `apply_gradients`.

        Raises:
          RuntimeError: `minimize` / `apply_gradients` was not called yet.
          ValueError: `var_list` holds a variable but not its average (or the reverse).
        """
        if self._swapped_variable_name_map is None:
            raise RuntimeError("Must call apply_gradients or minimize before creating the "
                               "swapping_saver")
        if var_list is None:
            var_list = _v1.global_variables()
        if not isinstance(var_list, dict):
            var_list = tf_training.op_list_to_dict(var_list)
        by_name = {}
        for key, value in var_list.items():
            if isinstance(value, (list, tf_training.PartitionedVariable)):
                by_name.update((part.op.name, part) for part in value)
            else:
                by_name[key] = value
        swapped = {}
        for key, value in var_list.items():
            if isinstance(value, list):
                swapped[key] = [self._swapped(by_name, part.op.name, part) for part in value]
            else:
                swapped[key] = self._swapped(by_name, key, value)
        return _v1.train.Saver(swapped, name=name, **kwargs)

    def _swapped(self, by_name, name, value):
        swapped_name = self._swapped_variable_name_map.get(name)
        if swapped_name is None:
            return value
        if swapped_name not in by_name:
            raise ValueError(f"Variable to swap {swapped_name} is not part of variables to "
                             "save. This breaks MovingAverageOptimizer.")
        return by_name[swapped_name]
