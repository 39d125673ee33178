"""`import tpu_estimator_compat.v1 as tf`: the TensorFlow 1 API that TPUEstimator programs use.

Every name of `tf.compat.v1` is served as it is at the moment it is read, so temporary patches
(the engine's of `tf.compat.v1.train.init_from_checkpoint`, for one) are seen. These differ:

| name | what it is |
|---|---|
| `layers` | legacy `tf.layers` (`dense`, `Conv2D`, `batch_normalization`...) from tf_keras |
| `keras` | the Keras 2 v1 API (tf_keras), which unlike Keras 3 runs in TF1 graphs; `Input(tensor=t)` in TF1 code is `t`, as in TF 1.x |
| `contrib` | `tpu`, `cluster_resolver`, `data`, `layers`, `opt`, `rnn`, `summary`, `training`, `framework`, `slim`, `metrics`... |
| `estimator` | `Estimator`, `EstimatorSpec`, `ModeKeys`, `RunConfig`, hooks, `export`, `tpu`... |
| `tpu` | `tf.compat.v1.tpu`; `CrossShardOptimizer`, `cross_replica_sum` work off-TPU |
| `nn` | `tf.compat.v1.nn`; `rnn_cell` is tf_keras' legacy cells (TF1 variable names) |
| `config` | `tf.compat.v1.config`; `experimental_connect_to_cluster` also works in graph mode |
| `summary` | `tf.compat.v1.summary`; `FileWriter` and `FileWriterCache` also work eagerly |
| `distribute` | `tf.compat.v1.distribute`; `cluster_resolver.TPUClusterResolver` needs no TPU |
| `compat` | `tf.compat` with `v1` = this namespace (for `tf.compat.v1.estimator...`) |
| `python` | `tensorflow.python`, with TF1's estimator and TPU modules (`_paths`) |

`flags` and `app` (absl-backed), `logging`, `gfile`, `python_io`, `data` (datasets keep
`make_one_shot_iterator()`), `train`, `metrics` and `losses` are TensorFlow's own
`tf.compat.v1` modules.

Process-global changes made by importing this namespace:

1. TensorFlow is imported (`import tensorflow`).
2. TensorFlow's switch `tensor_shape._TENSORSHAPE_V2_OVERRIDE` (True after `import
   tensorflow`) is replaced by a policy object, so that `TensorShape` indexing and
   iteration give TF1 `Dimension`s (`x.shape[-1].value`) in TF1 code and ints/None in all
   other code. TF1 code is: (a) anything built in TF1 graph mode: inside
   `with tf.Graph().as_default():`, in the global graph after `disable_eager_execution()`,
   and in functions traced inside such a graph (`tf.data` map functions, `tf.cond` and
   `tf.while_loop` bodies); (b) code run on a thread inside
   `tpu_estimator_compat.tf1_behaviour.shapes.tf1_shapes()`, which the engine enters around its calls
   to model_fn, input_fn, metric_fn, host_call and scaffold_fn. Eager code and `tf.function`
   traces of plain TF2 code (Keras 3 included) keep ints and None. Why: TF1 code reads
   `shape[i].value`; the alternative, `tf.compat.v1.disable_v2_tensorshape()`, would hand
   `Dimension`s to every TF2 library in the process. Cost: under 1 us more per shape
   index (measured: +0.3 us eagerly, +0.7 us in a trace). The policy is not installed if
   the process already chose TF1 shapes, and a later `enable_v2_tensorshape()`,
   `disable_v2_tensorshape()` or `disable_v2_behavior()` call replaces it, as asked.
3. In the same TF1 code, eagerly created variables and tensors are hashable and
   `variable.op.name` is the TF1 name (`tf1_behaviour/variables.py`); TF2 code keeps tensor equality.
   2 and 3 are `tf1.process_patches.install()`, which TPUEstimator also calls.
4. TensorFlow's log handler gets `tpu_estimator_compat.log`'s filter, so that under
   `tf.app.run` each `tf.logging` line is printed once (absl's format), also before any
   estimator exists.
5. tf-slim, when the program or a library imports it (`import tf_slim as slim`, `from
   tf_slim import metrics`), is repaired for TensorFlow 2.21 as `contrib.slim` is; one
   imported earlier is repaired now (`rebuilt_apis/tf_slim_import_hook.py`). tf-slim is not
   imported by this.

Nothing else: eager execution, resource variables, control flow v2,
`tf.keras` (Keras 3; `TF_USE_LEGACY_KERAS` is not set), log levels and absl flags stay as
TensorFlow 2 has them. Reading `layers` or `keras` for the first time imports tf_keras
(Keras 2), as any `import tf_keras` would; `tf.keras` and Keras 3 are unaffected. Other
modules of this package load when first read.

Every module path of the namespace is importable (`import tpu_estimator_compat.v1.compat.v1`,
`from tpu_estimator_compat.v1.python.estimator import estimator`): `_finder` serves them,
`_paths` lists the TF1 module paths that are not attributes.
"""
from tpu_estimator_compat import log as _log  # noqa: F401  (item 4 above, on import)
from tpu_estimator_compat.v1 import _finder
from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.rebuilt_apis import tf_slim_import_hook as _tf_slim_import_hook
from tpu_estimator_compat.tf1_behaviour import process_patches as _process_patches

_process_patches.install()
_finder.install()
_tf_slim_import_hook.install()

_lazy.install(
    globals(),
    names={
        "layers": "tpu_estimator_compat.v1.layers",
        "keras": "tpu_estimator_compat.v1.keras",  # `_paths`
        "contrib": "tpu_estimator_compat.v1.contrib",
        "estimator": "tpu_estimator_compat.v1.estimator",
        "tpu": "tpu_estimator_compat.v1.tpu",
        "config": "tpu_estimator_compat.v1.config",  # `_paths`
        "nn": "tpu_estimator_compat.v1.nn",  # `_paths`
        "summary": "tpu_estimator_compat.v1.summary",  # `_paths`
        "distribute": "tpu_estimator_compat.v1.distribute",
        "compat": "tpu_estimator_compat.v1.compat",
        "python": "tpu_estimator_compat.v1.python",
        "__version__": "tensorflow:__version__",  # programs print or compare it
    },
    fallback="tensorflow:compat.v1",
)
