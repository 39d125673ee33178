"""The process-wide patches, installed by one explicit call.

`install()` makes TensorFlow behave as TF1 for TF1 code only (user functions the engine
calls, TF1 graphs), leaving TF2 code as it was: TF1 `Dimension`s (tf1_behaviour/shapes.py), hashable
variables and tensors, `variable.op` with the TF1 name, v1 optimizer slots of eagerly created
variables (tf1_behaviour/variables.py), TF1 convolution layers' `_convolution_op` once tf_keras
is imported (tf1_behaviour/keras_layers.py). `TPUEstimator` / `Estimator` construction and
`import tpu_estimator_compat.v1` call it; idempotent. Everything else that touches TensorFlow
(tf1_behaviour/patches.py, tf1_behaviour/iterators.py, the hooks' and inputs' context managers) is active only
while the estimator runs the user's code. The private symbols are in `tf_internals`.
"""
from tpu_estimator_compat.tf1_behaviour import keras_layers
from tpu_estimator_compat.tf1_behaviour import shapes
from tpu_estimator_compat.tf1_behaviour import variables


def install():
    """Installs the TF1-for-TF1-code policies; leaves explicit TF1 choices of the program
    (`disable_v2_tensorshape()`, `disable_tensor_equality()`) alone."""
    shapes.install()
    variables.install()
    keras_layers.install()
