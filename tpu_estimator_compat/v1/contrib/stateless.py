"""`tf.contrib.stateless`: TensorFlow's stateless random ops under their contrib names
(contrib re-exported the same functions that are now `tf.random.stateless_*`)."""
from tpu_estimator_compat.v1 import _lazy

_lazy.install(
    globals(),
    names={f"stateless_{contrib}": f"tensorflow:compat.v1.random.stateless_{now}"
           for contrib, now in (("random_uniform", "uniform"), ("random_normal", "normal"),
                                ("truncated_normal", "truncated_normal"),
                                ("multinomial", "multinomial"))},
)
