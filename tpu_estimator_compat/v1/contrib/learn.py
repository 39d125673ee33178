"""`tf.contrib.learn`: only `datasets.base.maybe_download` (`rebuilt_apis/learn_datasets.py`), which data
preparation scripts still call; the rest of contrib.learn (its Estimator, Experiment,
RunConfig) was superseded by tf.estimator in TF 1.x itself and is not provided."""
from tpu_estimator_compat.v1 import _lazy

INSTEAD = ("tf.estimator (Estimator, RunConfig, ModeKeys, export; served here) with tf.data "
           "input functions, as TF 1.x's deprecation notices of tf.contrib.learn said")

_lazy.install(
    globals(),
    names={"datasets": f"{__name__}.datasets"},
    missing_hint=(". tpu_estimator_compat provides tf.contrib.learn.datasets.base.maybe_download "
                  f"only. Instead of the rest of tf.contrib.learn, use {INSTEAD}."),
)
