"""TF 1.15's `tf.contrib.estimator.replicate_model_fn` and `TowerOptimizer` on one device.

On one device (no GPU or one, or `devices` of one) TF1 ran the model_fn as it is, with
no loss scaling, and `TowerOptimizer` forwarded to the optimizer it wraps (made by it when
a function): so do these. Towers on several devices (the batch split, gradients summed on
a consolidation device) are not provided: TF 1.15 deprecated them for MirroredStrategy,
which `RunConfig(train_distribute=...)` serves; the error says so.
"""
import inspect

import tensorflow as tf

_v1 = tf.compat.v1
_MIRRORED = (
    "replicate_model_fn over {n} devices (towers) is not provided by tpu_estimator_compat "
    "(TF 1.15 deprecated it for MirroredStrategy). Pass the model_fn itself, with its plain "
    "optimizer, to an Estimator with "
    "RunConfig(train_distribute=tf.distribute.MirroredStrategy({devices})): each replica "
    "then takes a whole input_fn batch (make the batch 1/{n} of today's for the same global "
    "batch), and tf.losses' mean reductions average the loss over the replicas as the towers "
    "did.")


def replicate_model_fn(model_fn, loss_reduction=_v1.losses.Reduction.SUM_BY_NONZERO_WEIGHTS,
                       devices=None):
    """`model_fn` on one device, as TF1 ran it there; several devices raise."""
    if loss_reduction == _v1.losses.Reduction.NONE:
        raise ValueError(f"Tower losses need to be reduced in some way, yet {loss_reduction} "
                         "reduction is specified.")
    if not devices:
        devices = [d.name for d in tf.config.list_logical_devices("GPU")] or ["/CPU:0"]
    if len(devices) > 1:
        raise NotImplementedError(_MIRRORED.format(n=len(devices), devices=list(devices)))
    taken = inspect.signature(model_fn).parameters

    def single_device_model_fn(features, labels, mode, params=None, config=None):
        optional = {name: value for name, value in (("params", params), ("config", config))
                    if name in taken}
        return model_fn(features=features, labels=labels, mode=mode, **optional)

    return single_device_model_fn


class TowerOptimizer(_v1.train.Optimizer):
    """The optimizer `optimizer_or_optimizer_fn` (or the one that function makes, when
    first used), on the one tower of `replicate_model_fn`."""

    def __init__(self, optimizer_or_optimizer_fn):  # pylint: disable=super-init-not-called
        # TF1's did not initialise the base Optimizer either: every call is forwarded.
        self._optimizer_or_optimizer_fn = optimizer_or_optimizer_fn

    def _optimizer(self):
        if callable(self._optimizer_or_optimizer_fn):
            self._optimizer_or_optimizer_fn = self._optimizer_or_optimizer_fn()
        return self._optimizer_or_optimizer_fn

    def get_slot(self, *args, **kwargs):
        return self._optimizer().get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer().get_slot_names(*args, **kwargs)

    def get_name(self, *args, **kwargs):
        return self._optimizer().get_name(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer().variables(*args, **kwargs)

    def compute_gradients(self, loss, *args, **kwargs):  # pylint: disable=arguments-differ
        return self._optimizer().compute_gradients(loss, *args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, **kwargs):
        return self._optimizer().apply_gradients(grads_and_vars, global_step, **kwargs)
