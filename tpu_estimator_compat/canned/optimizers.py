"""The `optimizer` argument of a canned estimator: a v1 optimizer, a callable making one,
or a name ('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD') built with the estimator's
default learning rate; for TF 2.x's V2 classes a legacy Keras optimizer
(`tf.keras.optimizers.legacy.*`, what TF 2.15's estimator built from a name), a callable
making one, or a name."""
import tensorflow as tf
import tf_keras

_train = tf.compat.v1.train
_BY_NAME = {
    "Adagrad": _train.AdagradOptimizer,
    "Adam": _train.AdamOptimizer,
    "Ftrl": _train.FtrlOptimizer,
    "RMSProp": _train.RMSPropOptimizer,
    "SGD": _train.GradientDescentOptimizer,
}

_KERAS = tf_keras.optimizers
_BY_NAME_V2 = {
    "Adagrad": _KERAS.legacy.Adagrad,
    "Adam": _KERAS.legacy.Adam,
    "Ftrl": _KERAS.legacy.Ftrl,
    "RMSProp": _KERAS.legacy.RMSprop,
    "SGD": _KERAS.legacy.SGD,
}

# settings of the new-style Keras optimizers the legacy ones do not have
_NEW_STYLE_ONLY = ("weight_decay", "use_ema", "ema_momentum", "ema_overwrite_frequency",
                   "jit_compile", "is_legacy_optimizer")


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


def get_optimizer_instance_v2(optimizer, learning_rate=None):
    """The legacy Keras optimizer that `optimizer` names or makes: a name with
    `learning_rate`, or the class's own default rate without one (0.001, SGD's 0.01).

    A new-style Keras optimizer (`tf.keras.optimizers.Adam`...) becomes its legacy twin with
    its settings: TF 2.0-2.10's `tf.keras.optimizers.Adam` was the legacy one (TF 2.15's
    estimator converted one only outside a graph, so never in a model_fn: it raised)."""
    if isinstance(optimizer, str):
        if optimizer not in _BY_NAME_V2:
            raise ValueError(f"Unsupported optimizer name: {optimizer}. Supported names are: "
                             f"{tuple(sorted(_BY_NAME_V2))}")
        if learning_rate is None:
            return _BY_NAME_V2[optimizer]()
        return _BY_NAME_V2[optimizer](learning_rate=learning_rate)
    if callable(optimizer):
        optimizer = optimizer()
    if isinstance(optimizer, _KERAS.Optimizer):
        tf.get_logger().warning(
            "%s is a new-style Keras optimizer; TF 2.x's canned estimators train with the "
            "legacy ones: using tf.keras.optimizers.legacy.%s with its settings.",
            type(optimizer).__name__, type(optimizer).__name__)
        optimizer = _legacy_twin(optimizer)
    if not isinstance(optimizer, _KERAS.legacy.Optimizer):
        raise ValueError(
            "The given object is not a tf.keras.optimizers.Optimizer instance. Given: "
            f"{optimizer}. TF 2.x's canned estimators take a Keras optimizer "
            "(tf.keras.optimizers.legacy.Adagrad(...)...), a function returning one, or one "
            f"of {tuple(sorted(_BY_NAME_V2))}; TF 1.x's (tf.compat.v1.estimator.*) take v1 "
            "optimizers.")
    return optimizer


def _legacy_twin(optimizer):
    """The legacy Keras optimizer of `optimizer`'s class and settings."""
    config = {key: value for key, value in optimizer.get_config().items()
              if key not in _NEW_STYLE_ONLY}
    if isinstance(optimizer.learning_rate, _KERAS.schedules.LearningRateSchedule):
        config["learning_rate"] = optimizer.learning_rate  # its config cannot be read back
    return _KERAS.deserialize({"class_name": type(optimizer).__name__.lower(), "config": config},
                              use_legacy_optimizer=True)
