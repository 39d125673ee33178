"""`tf.contrib`: the parts that TPUEstimator programs use, each loaded on first use.

`tf.contrib` was removed in TensorFlow 2. `tpu`, `cluster_resolver`, `crf` (linear-chain
CRF), `data`, `distribute` (cross-device ops), `estimator` (early stopping and the Estimator
wrappers), `image` (its projective transforms), `layers`, `lookup` (lookup tables), `opt`
(LARS, LazyAdam, moving averages, decoupled weight decay), `predictor` (callable
predictors of SavedModels and estimators), `rnn` (core cells and functions),
`learn` (its downloader only), `stateless`, `summary`, `training` and `framework` are
provided by this package (with tf-slim's help for the last three); `slim` and `metrics` are
tf-slim's (`rebuilt_apis/tf_slim.py`); `gan` is TF-GAN's (TF 1.13's tf.contrib.gan; installed
separately). Other contrib modules are not provided; for some,
the error names what to use instead (`REPLACEMENTS`).
"""
from tpu_estimator_compat.v1 import _lazy

_OWN = ("cluster_resolver", "crf", "data", "distribute", "estimator", "framework", "gan",
        "image", "layers", "learn", "lookup", "opt", "predictor", "rnn", "stateless",
        "summary", "tpu", "training")
SUBMODULES = tuple(sorted(_OWN + ("metrics", "slim")))

# What to use instead of the contrib modules that programs use most and that are not served.
REPLACEMENTS = {
    "cloud": "tf.io.gfile and tf.data, which read gs:// paths directly (credentials come "
             "from GOOGLE_APPLICATION_CREDENTIALS or the VM's service account, without "
             "configure_gcs), and tensorflow-io's tfio.bigquery / tfio.bigtable instead of "
             "BigQueryReader / BigtableClient",
}


def _missing_hint(name):
    hint = (". tf.contrib was removed in TensorFlow 2; tpu_estimator_compat provides "
            f"tf.contrib.{{{', '.join(SUBMODULES)}}} only.")
    if name in REPLACEMENTS:
        hint += f" Instead of tf.contrib.{name}, use {REPLACEMENTS[name]}."
    return hint


_lazy.install(
    globals(),
    names={**{name: f"{__name__}.{name}" for name in _OWN},
           "slim": f"{__name__}.slim",  # tf_slim's names (`_paths`)
           "metrics": "tpu_estimator_compat.rebuilt_apis.tf_slim:slim_metrics"},
    missing_hint=_missing_hint,
)
