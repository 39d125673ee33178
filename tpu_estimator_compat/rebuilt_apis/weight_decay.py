"""TF 1.x's `tf.contrib.opt` decoupled weight decay (Loshchilov & Hutter, "Decoupled Weight
Decay Regularization") for v1 optimizers: `DecoupledWeightDecayExtension`,
`extend_with_decoupled_weight_decay`, `AdamWOptimizer`, `MomentumWOptimizer`.

No maintained library serves these for `tf.compat.v1.train.Optimizer`s (TensorFlow Addons'
AdamW, itself unmaintained, and Keras' `weight_decay` extend Keras optimizers), so they are
written here, with TF 1.x's semantics: in each variable's update, before the base optimizer's
update and in the same step, the variable is decayed as

    var <- var - weight_decay * var

`weight_decay` is NOT multiplied by the learning rate (TF 1.x did not: programs pass
`weight_decay=lr * wd` themselves when they want it scheduled). For a sparse gradient only the
rows it touches are decayed. `minimize` and `apply_gradients` take `decay_var_list`: when
given, only those variables are decayed. `weight_decay` may be a callable returning the value.
`LARSOptimizer`, `LazyAdamOptimizer` and `MovingAverageOptimizer` are in `contrib_opt.py`.
"""
import tensorflow as tf

from tpu_estimator_compat.tf_internals import tensors

_v1 = tf.compat.v1


def _key(var):
    """The identity of `var` for `decay_var_list`: a replica's copy of a mirrored variable
    (what optimizers update under a strategy) counts as the mirrored variable."""
    return tensors.value_container(var).ref()


class DecoupledWeightDecayExtension:
    """Mix-in adding decoupled weight decay to a `tf.compat.v1.train.Optimizer` subclass.

    Put it first among the bases (`extend_with_decoupled_weight_decay` does); its
    `__init__` takes `weight_decay` (a float, tensor or callable) before the base optimizer's
    own arguments.
    """

    def __init__(self, weight_decay, *args, **kwargs):
        self._decay_var_list = None
        self._weight_decay = weight_decay
        self._weight_decay_tensor = None
        super().__init__(*args, **kwargs)

    def minimize(self, loss, global_step=None, var_list=None,
                 gate_gradients=_v1.train.Optimizer.GATE_OP, aggregation_method=None,
                 colocate_gradients_with_ops=False, name=None, grad_loss=None,
                 decay_var_list=None):
        """`Optimizer.minimize`; only the variables of `decay_var_list` (default: all) decay."""
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name,
                                    decay_var_list=decay_var_list)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None,
                        decay_var_list=None):
        """`Optimizer.apply_gradients`; only `decay_var_list` (default: all) decays."""
        self._set_decay_var_list(decay_var_list)
        return super().apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def _set_decay_var_list(self, decay_var_list):
        self._decay_var_list = ({_key(var) for var in decay_var_list}
                                if decay_var_list else None)

    def _prepare(self):
        weight_decay = self._weight_decay() if callable(self._weight_decay) else self._weight_decay
        self._weight_decay_tensor = tf.convert_to_tensor(weight_decay, name="weight_decay")
        super()._prepare()

    def _decays(self, var):
        return self._decay_var_list is None or _key(var) in self._decay_var_list

    def _decay(self, var):
        """The op decaying all of `var` (a no-op if `var` is not to decay)."""
        if not self._decays(var):
            return tf.no_op()
        decay = tf.cast(self._weight_decay_tensor, var.dtype.base_dtype)
        return var.assign_sub(decay * var, use_locking=self._use_locking)

    def _decay_rows(self, var, indices):
        """The op decaying the rows `indices` (duplicates allowed) of `var`."""
        if not self._decays(var):
            return tf.no_op()
        indices = tf.unique(indices).y
        decay = tf.cast(self._weight_decay_tensor, var.dtype.base_dtype)
        rows = tf.IndexedSlices(decay * tf.gather(var, indices), indices)
        return var.scatter_sub(rows, use_locking=self._use_locking)

    def _apply_dense(self, grad, var):
        with tf.control_dependencies([self._decay(var)]):
            return super()._apply_dense(grad, var)

    def _resource_apply_dense(self, grad, var, *args, **kwargs):
        with tf.control_dependencies([self._decay(var)]):
            return super()._resource_apply_dense(grad, var, *args, **kwargs)

    # The sparse entry points (each optimizer either de-duplicates the indices and calls its
    # `_(resource_)apply_sparse`, or, as GradientDescent, updates the rows itself).
    def _apply_sparse_duplicate_indices(self, grad, var):
        with tf.control_dependencies([self._decay_rows(var, grad.indices)]):
            return super()._apply_sparse_duplicate_indices(grad, var)

    def _resource_apply_sparse_duplicate_indices(self, grad, var, indices, *args, **kwargs):
        with tf.control_dependencies([self._decay_rows(var, indices)]):
            return super()._resource_apply_sparse_duplicate_indices(
                grad, var, indices, *args, **kwargs)


def extend_with_decoupled_weight_decay(base_optimizer):
    """A subclass of the v1 optimizer class `base_optimizer` with decoupled weight decay:
    built as `Class(weight_decay, <base_optimizer's arguments>)`.

    Raises:
      TypeError: `base_optimizer` is not a `tf.compat.v1.train.Optimizer` subclass.
    """
    if not (isinstance(base_optimizer, type)
            and issubclass(base_optimizer, _v1.train.Optimizer)):
        raise TypeError(
            "extend_with_decoupled_weight_decay needs a tf.compat.v1.train.Optimizer subclass "
            f"(e.g. tf.train.AdamOptimizer), got {base_optimizer!r}. Keras optimizers take "
            "`weight_decay=` themselves.")

    class OptimizerWithDecoupledWeightDecay(DecoupledWeightDecayExtension, base_optimizer):
        __doc__ = f"`{base_optimizer.__name__}` with decoupled weight decay."

    return OptimizerWithDecoupledWeightDecay


class AdamWOptimizer(DecoupledWeightDecayExtension, _v1.train.AdamOptimizer):
    """`tf.train.AdamOptimizer` with decoupled weight decay (TF 1.x's `AdamWOptimizer`)."""

    def __init__(self, weight_decay, learning_rate=0.001, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, use_locking=False, name="AdamW"):
        super().__init__(weight_decay, learning_rate=learning_rate, beta1=beta1, beta2=beta2,
                         epsilon=epsilon, use_locking=use_locking, name=name)


class MomentumWOptimizer(DecoupledWeightDecayExtension, _v1.train.MomentumOptimizer):
    """`tf.train.MomentumOptimizer` with decoupled weight decay (TF 1.x's)."""

    def __init__(self, weight_decay, learning_rate, momentum, use_locking=False,
                 name="MomentumW", use_nesterov=False):
        super().__init__(weight_decay, learning_rate=learning_rate, momentum=momentum,
                         use_locking=use_locking, name=name, use_nesterov=use_nesterov)

