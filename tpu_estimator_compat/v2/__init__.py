"""`import tpu_estimator_compat.v2 as tf`: TensorFlow 2, with the estimator API it had.

For TF 2.x-era programs: eager code, `tf.function`, `tf.data`, `tf.summary` and the rest
stay TensorFlow 2.21's own; what TensorFlow 2.16 removed comes back as TensorFlow 2.15
had it:

| name | what it is |
|---|---|
| `estimator` | this package's `tf.estimator` (Estimator, TPUEstimator under `tpu`, specs, RunConfig, hooks, exporters, `train_and_evaluate`...) with TensorFlow 2's canned estimators (`DNNClassifier`..., the V2 classes: Keras optimizers, v2 heads; `estimator.py`) |
| `keras` | Keras 2 (tf_keras), TensorFlow 2.15's `tf.keras`; TensorFlow 2.21's is Keras 3; its `estimator.model_to_estimator` is this package's (`keras.py`) |
| `compat` | `tf.compat` with `v1` = `tpu_estimator_compat.v1` (so `tf.compat.v1.estimator.tpu.TPUEstimator`, `tf.compat.v1.train...` work) and `v2` = this namespace |

Every other name is `tensorflow`'s, read at access time. Importing this namespace makes the
process-global changes `tpu_estimator_compat.v1` lists (TF1 shapes only in TF1 code).
"""
from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.tf1_behaviour import process_patches as _process_patches

_process_patches.install()

_lazy.install(
    globals(),
    names={
        "estimator": "tpu_estimator_compat.v2.estimator",
        "keras": "tpu_estimator_compat.v2.keras",
        "compat": "tpu_estimator_compat.v2.compat",
    },
    fallback="tensorflow",
)
