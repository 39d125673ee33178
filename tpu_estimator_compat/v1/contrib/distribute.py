"""`tf.contrib.distribute`: its cross-device ops and strategy-context functions, which
TensorFlow 2 keeps under `tf.distribute` (and `AllReduceCrossDeviceOps`, the NCCL /
hierarchical-copy all-reduce contrib exported, in `tensorflow.python.distribute`).

The strategies are TensorFlow 2's: `MirroredStrategy(devices, cross_device_ops)` and
`OneDeviceStrategy(device)` take the arguments they took in contrib; contrib's
`MirroredStrategy(num_gpus=...)` is TF1-only (pass `devices`).
"""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={"AllReduceCrossDeviceOps":
           "tensorflow.python.distribute.cross_device_ops:AllReduceCrossDeviceOps"},
    fallback="tensorflow:compat.v1.distribute",
    missing_hint=". tpu_estimator_compat serves tf.contrib.distribute's AllReduceCrossDeviceOps "
                 "and the names TensorFlow 2 keeps in tf.compat.v1.distribute.",
)
