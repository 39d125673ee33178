"""`tf.contrib.data`: dataset transformations for `dataset.apply(...)`, with TF1 semantics.

`batch_and_drop_remainder`, `padded_batch_and_drop_remainder` and `AUTOTUNE` are
`rebuilt_apis/contrib_data.py`'s; `map_and_batch`, `parallel_interleave`, `shuffle_and_repeat`
and the other names of `tf.compat.v1.data.experimental` are TensorFlow's own (same signatures
as in contrib).
"""
from tpu_estimator_compat.v1 import _lazy

_OWN = "tpu_estimator_compat.rebuilt_apis.contrib_data"

_lazy.install(
    globals(),
    names={name: f"{_OWN}:{name}"
           for name in ("AUTOTUNE", "batch_and_drop_remainder", "padded_batch_and_drop_remainder")},
    fallback="tensorflow:compat.v1.data.experimental",
)
