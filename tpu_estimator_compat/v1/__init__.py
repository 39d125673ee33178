"""`import tpu_estimator_compat.v1 as tf`: the TensorFlow 1 API that TPUEstimator programs use.

Every name of `tf.compat.v1` is served as it is at the moment it is read (so temporary
patches of `tf.compat.v1.train.init_from_checkpoint` and the like are seen), except these:

| name | what it is |
|---|---|
| `layers` | the legacy `tf.layers` (`dense`, `Conv2D`, `batch_normalization`, ...) from `tf_keras` |
| `keras` | the Keras 2 v1 API (`tf_keras`), which, unlike Keras 3, runs in TF1 graphs |
| `contrib` | `tpu`, `cluster_resolver`, `data`, `layers`, `summary`, `training`, `framework` |
| `estimator` | `Estimator`, `EstimatorSpec`, `ModeKeys`, `RunConfig`, hooks, `export`, `tpu`, ... |
| `tpu` | `tf.compat.v1.tpu` with `CrossShardOptimizer` and `cross_replica_sum` that work on any tf.distribute strategy |
| `distribute` | `tf.compat.v1.distribute` with a `cluster_resolver.TPUClusterResolver` that can be built without a TPU |
| `compat` | `tf.compat` whose `v1` is this namespace (for `tf.compat.v1.estimator...` in TF 1.15 code) |

`flags`, `app` (absl), `logging`, `gfile`, `python_io`, `data` (datasets with
`make_one_shot_iterator()`), `train`, `metrics`, `losses` and `summary` are TensorFlow's own
`tf.compat.v1` modules.

Process-global changes made by importing this namespace (nothing else is changed):

1. TensorFlow is imported.
2. Tensor shapes index to TF1 `Dimension`s (so `x.shape[-1].value` works) in TF1 code only.
   TensorFlow's switch `tensor_shape._TENSORSHAPE_V2_OVERRIDE` (True after
   `import tensorflow`) is replaced by a policy object that gives `Dimension`s (a) while a
   graph is built in TF1 graph mode: inside `with tf.Graph().as_default():`, in the global
   graph after `disable_eager_execution()`, and in functions traced inside such graphs
   (`tf.data` map functions, control-flow bodies); and (b) on a thread inside the engine's
   `tf1_shapes()` block, which wraps the calls to model_fn, input_fn, metric_fn, host_call
   and scaffold_fn. Eager code and `tf.function` traces of plain TF2 code (Keras 3 among
   it) still get ints and `None`. Why: TF1 code reads `shape[i].value`; the only
   alternative, `tf.compat.v1.disable_v2_tensorshape()`, would give every TF2 library in
   the process `Dimension`s. Not done if the process already chose TF1 shapes; an explicit
   `enable_v2_tensorshape()`, `disable_v2_tensorshape()` or `disable_v2_behavior()` call
   made later replaces the policy.

Done lazily, on first use of the name, and not global in effect: `layers` and `keras`
import `tf_keras` (Keras 2); `tf.keras` and Keras 3 are unaffected (`TF_USE_LEGACY_KERAS`
is not set). Eager execution, resource variables, control flow v2, tensor equality,
logging and absl flags are left as TensorFlow 2 has them.
"""
from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.v1 import _shapes

_shapes.install()

_lazy.install(
    globals(),
    names={
        "layers": "tf_keras.api._v1.keras.__internal__.legacy.layers",
        "keras": "tf_keras.api._v1.keras",
        "contrib": "tpu_estimator_compat.v1.contrib",
        "estimator": "tpu_estimator_compat.v1.estimator",
        "tpu": "tpu_estimator_compat.v1.tpu",
        "distribute": "tpu_estimator_compat.v1.distribute",
        "compat": "tpu_estimator_compat.v1.compat",
    },
    fallback="tensorflow:compat.v1",
)
