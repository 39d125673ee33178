"""`tf.contrib.layers`: contrib's layers, initializers and regularizers that TF1 TPU models use
(`rebuilt_apis/contrib_layers.py`, TF1 variable names, `arg_scope`), every other name tf-slim's
`tf_slim.layers`."""
from tpu_estimator_compat.rebuilt_apis import contrib_layers as _contrib_layers
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={name: f"{_contrib_layers.__name__}:{name}" for name in _contrib_layers.__all__},
    fallback="tpu_estimator_compat.rebuilt_apis.tf_slim:slim_layers",
)
