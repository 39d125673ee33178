"""`tf.contrib.summary`: `tpu_estimator_compat.rebuilt_apis.contrib_summary`, loaded on first use."""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(globals(), fallback="tpu_estimator_compat.rebuilt_apis.contrib_summary")
