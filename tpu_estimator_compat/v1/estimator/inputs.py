"""`tf.estimator.inputs`: TF 1.x's `numpy_input_fn` and `pandas_input_fn`
(`rebuilt_apis/numpy_inputs.py`, on tf.data)."""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={name: f"tpu_estimator_compat.rebuilt_apis.numpy_inputs:{name}"
           for name in ("numpy_input_fn", "pandas_input_fn")},
)
