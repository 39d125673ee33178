"""The `optimizer` argument of a canned estimator: a v1 optimizer, a callable making one,
or a name ('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD') built with the estimator's
default learning rate."""
import tensorflow as tf

_train = tf.compat.v1.train
_BY_NAME = {
    "Adagrad": _train.AdagradOptimizer,
    "Adam": _train.AdamOptimizer,
    "Ftrl": _train.FtrlOptimizer,
    "RMSProp": _train.RMSPropOptimizer,
    "SGD": _train.GradientDescentOptimizer,
}


def get_optimizer_instance(optimizer, learning_rate):
    """The `tf.compat.v1.train.Optimizer` that `optimizer` names or makes."""
    if isinstance(optimizer, str):
        if optimizer not in _BY_NAME:
            raise ValueError(f"Unsupported optimizer name: {optimizer}. Supported names are: "
                             f"{tuple(sorted(_BY_NAME))}")
        return _BY_NAME[optimizer](learning_rate=learning_rate)
    if callable(optimizer) and not isinstance(optimizer, _train.Optimizer):
        optimizer = optimizer()
    if not isinstance(optimizer, _train.Optimizer):
        raise ValueError(
            f"The given object is not an Optimizer instance. Given: {optimizer}. Pass a "
            "tf.compat.v1.train optimizer (TF 1.x's canned estimators take v1 optimizers, "
            "not Keras ones), a function returning one, or one of "
            f"{tuple(sorted(_BY_NAME))}.")
    return optimizer
